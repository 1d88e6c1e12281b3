#include "config/policy_store.h"

#include <cassert>

namespace taskgov::config {

namespace {

scheduler::PolicyPtr EmptyPolicy() {
  auto policy = std::make_shared<scheduler::Policy>();
  policy->Finalize();
  return policy;
}

}  // namespace

PolicyStore::PolicyStore() : PolicyStore(EmptyPolicy()) {}

PolicyStore::PolicyStore(scheduler::PolicyPtr initial)
    : current_(initial ? std::move(initial) : EmptyPolicy()) {}

scheduler::PolicyPtr PolicyStore::Current() const {
  // acquire: pairs with the release store in Publish, so the policy's contents are visible.
  return current_.load(std::memory_order_acquire);
}

void PolicyStore::Publish(scheduler::PolicyPtr policy) {
  assert(policy != nullptr);
  if (policy == nullptr) return;
  // release: every write that built `policy` happens-before a reader's acquire load of it.
  current_.store(std::move(policy), std::memory_order_release);
  // release: a reader that observes the new generation (acquire) also observes the new pointer.
  generation_.fetch_add(1, std::memory_order_release);
}

uint64_t PolicyStore::generation() const {
  // acquire: pairs with the release increment in Publish.
  return generation_.load(std::memory_order_acquire);
}

}  // namespace taskgov::config
