#pragma once

// EventLoop: virtual time for the simulator. Actions are queued at a time (Unix ms, the
// FakeClock's wall time) and run in time order, ties in the order they were queued; running one
// moves the clock to its time first. Nothing happens between actions: a simulated day costs the
// actions it holds, not its length.
//
// Not synchronised: one thread runs the loop and queues from inside actions.

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "scheduler/common/clock.h"

namespace taskgov::scheduler::sim {

class EventLoop {
 public:
  explicit EventLoop(common::FakeClock* clock) : clock_(clock) {}

  [[nodiscard]] int64_t now_ms() const { return clock_->NowMs(); }
  // Runs `action` at `at_ms` (at once, after what is queued for now, when in the past).
  void At(int64_t at_ms, std::function<void()> action) {
    queue_.push(Item{std::max(at_ms, now_ms()), ++seq_, std::move(action)});
  }
  void After(int64_t delay_ms, std::function<void()> action) {
    At(now_ms() + delay_ms, std::move(action));
  }
  // The time of the next action; false when none is queued.
  [[nodiscard]] bool Next(int64_t* at_ms) const {
    if (queue_.empty()) return false;
    *at_ms = queue_.top().at_ms;
    return true;
  }
  // Moves the clock to the next action's time and runs it; false when none is queued.
  bool RunNext() {
    if (queue_.empty()) return false;
    Item item = queue_.top();
    queue_.pop();
    if (item.at_ms > now_ms()) clock_->Advance(item.at_ms - now_ms());
    ++ran_;
    item.action();
    return true;
  }
  [[nodiscard]] uint64_t ran() const { return ran_; }
  [[nodiscard]] size_t queued() const { return queue_.size(); }

 private:
  struct Item {
    int64_t at_ms;
    uint64_t seq;
    std::function<void()> action;
    bool operator>(const Item& o) const { return at_ms != o.at_ms ? at_ms > o.at_ms : seq > o.seq; }
  };
  common::FakeClock* const clock_;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> queue_;
  uint64_t seq_ = 0;
  uint64_t ran_ = 0;
};

}  // namespace taskgov::scheduler::sim
