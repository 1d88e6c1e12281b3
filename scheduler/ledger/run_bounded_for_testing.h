#pragma once

// RunBounded: runs a test step on a thread of its own and turns a deadlock into a test failure.
// If the step has not finished by the deadline, the failure is reported and the process exits
// (blocked threads cannot be joined), so a regression fails the test instead of hanging it.
// Test-only.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <string>
#include <thread>

namespace taskgov::scheduler::ledger::testing {

inline void RunBounded(const std::string& what, const std::function<void()>& step,
                       std::chrono::seconds deadline = std::chrono::seconds(60)) {
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread runner([&] {
    step();
    done.set_value();
  });
  if (finished.wait_for(deadline) != std::future_status::ready) {
    ADD_FAILURE() << what << ": still blocked after " << deadline.count() << " s (deadlock)";
    std::fflush(nullptr);
    std::_Exit(1);
  }
  runner.join();
}

}  // namespace taskgov::scheduler::ledger::testing
