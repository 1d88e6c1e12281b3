#pragma once

// The repository's Dockerfile as its tests read it: stages (FROM and the instructions after it,
// continuation lines joined, comments dropped) and the packages a stage's `apt-get install`
// names. Test support; header-only.
//
// Thread-safety: pure functions.

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace taskgov::deploy::testing {

struct DockerStage {
  std::string from;  // what follows FROM, e.g. "debian:12 AS build"
  std::vector<std::string> instructions;
};

inline std::vector<std::string> Words(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

inline std::vector<DockerStage> ParseDockerfile(const std::string& path) {
  std::ifstream in(path);
  std::vector<DockerStage> stages;
  std::string joined;
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    if (line.back() == '\\') {
      joined += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    joined += line;
    if (joined.rfind("FROM ", 0) == 0) {
      stages.push_back({joined.substr(5), {}});
    } else if (!stages.empty()) {
      stages.back().instructions.push_back(joined);
    }
    joined.clear();
  }
  return stages;
}

// The packages `apt-get install` names in a stage's RUN instructions (options left out).
inline std::set<std::string> AptInstalled(const DockerStage& stage) {
  std::set<std::string> out;
  for (const std::string& inst : stage.instructions) {
    if (inst.rfind("RUN ", 0) != 0) continue;
    const std::vector<std::string> w = Words(inst);
    for (size_t i = 0; i + 1 < w.size(); ++i) {
      if (w[i] != "apt-get" || w[i + 1] != "install") continue;
      for (size_t j = i + 2; j < w.size(); ++j) {
        if (w[j] == "&&" || w[j] == ";" || w[j] == "||") break;
        if (w[j][0] != '-') out.insert(w[j]);
      }
    }
  }
  return out;
}

}  // namespace taskgov::deploy::testing
