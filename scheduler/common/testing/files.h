#pragma once

// ReadFile: the whole of a file (its bytes), for the tests that read their inputs, goldens and
// shipped files; "" when it cannot be read. Test support.

#include <fstream>
#include <sstream>
#include <string>

namespace taskgov::common::testing {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace taskgov::common::testing
