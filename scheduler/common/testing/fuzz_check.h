#pragma once

// FUZZ_CHECK: the property a fuzz target asserts about the code it feeds. A violated property is
// a finding: it prints the condition and what the target was checking, then aborts, so libFuzzer
// saves the input (tools/fuzz reports it). Used only by taskgov_fuzz_target binaries.

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, what)                                                                     \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: %s\n", __FILE__, __LINE__, #cond, what); \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)
