#include "config/policy_store.h"

#include <cassert>
#include <thread>

namespace taskgov::config {

namespace {

scheduler::model::PolicyPtr EmptyPolicy() {
  auto policy = std::make_shared<scheduler::model::Policy>();
  policy->Finalize();
  return policy;
}

}  // namespace

PolicyStore::PolicyStore() : PolicyStore(EmptyPolicy()) {}

PolicyStore::PolicyStore(scheduler::model::PolicyPtr initial) {
  if (!initial) initial = EmptyPolicy();
  slots_[0] = initial;
  slots_[1] = std::move(initial);
}

scheduler::model::PolicyPtr PolicyStore::Current() const {
  // The algorithm needs one total order over the indicator updates and the two index variables
  // (a reader that registers after the writer checked its indicator must see the new
  // left_right_), hence seq_cst on those; the departure is a release that the writer's
  // acquire-load of the indicator pairs with, so the copy below happens-before the slot is
  // overwritten.
  const int v = version_.load(std::memory_order_seq_cst);
  readers_[v].fetch_add(1, std::memory_order_seq_cst);
  const int lr = left_right_.load(std::memory_order_seq_cst);
  scheduler::model::PolicyPtr policy = slots_[lr];
  readers_[v].fetch_sub(1, std::memory_order_release);
  return policy;
}

void PolicyStore::Publish(scheduler::model::PolicyPtr policy) {
  assert(policy != nullptr);
  if (policy == nullptr) return;
  std::lock_guard<std::mutex> lock(writer_mu_);
  // relaxed: only writers store left_right_ and version_, and they hold writer_mu_.
  const int lr = left_right_.load(std::memory_order_relaxed);
  slots_[1 - lr] = policy;  // no reader copies from 1 - lr (see the waits of the last Publish)
  // seq_cst (a release at least): readers that load the new index see the slot's new pointer.
  left_right_.store(1 - lr, std::memory_order_seq_cst);
  const int v = version_.load(std::memory_order_relaxed);
  // seq_cst: a reader whose registration precedes the toggle of left_right_ in the total order
  // is seen here; and (as an acquire) it pairs with the readers' release departures.
  while (readers_[1 - v].load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  version_.store(1 - v, std::memory_order_seq_cst);
  while (readers_[v].load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  // Every reader that could have picked slot lr has left; new ones pick 1 - lr.
  slots_[lr] = policy;
  // release: a reader that observes the new generation (acquire) also observes the new pointer.
  generation_.fetch_add(1, std::memory_order_release);
  for (const auto& apply : subscribers_) apply(policy);
}

void PolicyStore::Subscribe(std::function<void(const scheduler::model::PolicyPtr&)> apply) {
  std::lock_guard<std::mutex> lock(writer_mu_);
  // relaxed: left_right_ is only stored by writers, which hold writer_mu_.
  apply(slots_[left_right_.load(std::memory_order_relaxed)]);
  subscribers_.push_back(std::move(apply));
}

uint64_t PolicyStore::generation() const {
  // acquire: pairs with the release increment in Publish.
  return generation_.load(std::memory_order_acquire);
}

}  // namespace taskgov::config
