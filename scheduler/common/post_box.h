#pragma once

// PostBox<T>: a lock-free multi-producer, single-consumer hand-over of values.
//
// Producers Post() from any thread without taking a lock or waiting (one allocation and a
// compare-exchange loop on the head of an intrusive stack, Treiber style). The consumer — whoever
// holds the lock that guards the state the values apply to — takes everything posted so far with
// TakeAll(), in posting order (per producer; producers interleave in the order their posts
// landed). Nothing is ever lost: a value posted concurrently with TakeAll() is either in that
// batch or in the next.
//
// Memory orders: Post publishes the node with a release compare-exchange so the consumer's
// acquire exchange in TakeAll sees the node's value; a failed compare-exchange only needs the
// current head (relaxed). Empty() is an acquire load: a consumer that sees the box non-empty also
// sees the posted values. ABA cannot happen: nodes are only ever removed all at once by exchange,
// never popped one by one.
//
// Thread-safety: Post and Empty from any thread; TakeAll from one thread at a time (the holder of
// the consumer's lock).

#include <atomic>
#include <utility>
#include <vector>

namespace taskgov::common {

template <typename T>
class PostBox {
 public:
  PostBox() = default;
  PostBox(const PostBox&) = delete;
  PostBox& operator=(const PostBox&) = delete;
  ~PostBox() { (void)TakeAll(); }

  void Post(T value) {
    Node* node = new Node{std::move(value), head_.load(std::memory_order_relaxed)};
    // release: the consumer's acquire exchange sees `value`; relaxed on failure: only the new
    // head is needed to retry.
    while (!head_.compare_exchange_weak(node->next, node, std::memory_order_release,
                                        std::memory_order_relaxed)) {
    }
  }

  // Everything posted so far, oldest first.
  [[nodiscard]] std::vector<T> TakeAll() {
    // acquire: pairs with Post's release, so every taken node's value is visible.
    Node* node = head_.exchange(nullptr, std::memory_order_acquire);
    std::vector<T> out;
    for (; node != nullptr;) {
      out.push_back(std::move(node->value));
      Node* next = node->next;
      delete node;
      node = next;
    }
    // The stack holds newest first.
    for (size_t i = 0, j = out.size(); i + 1 < j; ++i, --j) std::swap(out[i], out[j - 1]);
    return out;
  }

  // acquire: a caller that sees a post also sees its value (see TakeAll).
  [[nodiscard]] bool Empty() const { return head_.load(std::memory_order_acquire) == nullptr; }

 private:
  struct Node {
    T value;
    Node* next;
  };
  std::atomic<Node*> head_{nullptr};
};

}  // namespace taskgov::common
