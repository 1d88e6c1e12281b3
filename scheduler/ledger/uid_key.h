#pragma once

// UidKey: a pod UID as a hash-map key in 40 bytes. An API server's UIDs are 36-byte UUIDs: kept
// inline, where a std::string was 32 bytes plus a 48-byte heap block. A longer UID (any string is
// accepted) goes to the heap. Compares and hashes as the string it holds.

#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>

namespace taskgov::scheduler::ledger {

class UidKey {
 public:
  explicit UidKey(std::string_view uid) { Assign(uid); }
  UidKey(const UidKey& other) { Assign(other.view()); }
  UidKey(UidKey&& other) noexcept {
    std::memcpy(bytes_, other.bytes_, sizeof(bytes_));
    tag_ = std::exchange(other.tag_, 0);  // a heap block changes hands; `other` is now ""
  }
  UidKey& operator=(UidKey other) noexcept {
    std::swap(bytes_, other.bytes_);
    std::swap(tag_, other.tag_);
    return *this;
  }
  ~UidKey() {
    if (tag_ == kHeap) delete[] Heap().first;
  }

  [[nodiscard]] std::string_view view() const {
    if (tag_ != kHeap) return {bytes_, tag_};
    const auto [data, size] = Heap();
    return {data, size};
  }
  operator std::string_view() const { return view(); }  // NOLINT: a key reads as its string
  friend bool operator==(const UidKey& a, std::string_view b) { return a.view() == b; }
  friend bool operator==(const UidKey& a, const UidKey& b) { return a.view() == b.view(); }

  static constexpr size_t kInline = 39;

 private:
  static constexpr uint8_t kHeap = 0xff;

  void Assign(std::string_view uid) {
    if (uid.size() <= kInline) {
      std::memcpy(bytes_, uid.data(), uid.size());
      tag_ = static_cast<uint8_t>(uid.size());
      return;
    }
    char* data = new char[uid.size()];
    std::memcpy(data, uid.data(), uid.size());
    const size_t size = uid.size();
    std::memcpy(bytes_, &data, sizeof(data));
    std::memcpy(bytes_ + sizeof(data), &size, sizeof(size));
    tag_ = kHeap;
  }
  [[nodiscard]] std::pair<char*, size_t> Heap() const {
    char* data;
    size_t size;
    std::memcpy(&data, bytes_, sizeof(data));
    std::memcpy(&size, bytes_ + sizeof(data), sizeof(size));
    return {data, size};
  }

  char bytes_[kInline];  // the UID (tag_ its length), or a heap block's pointer and size
  uint8_t tag_ = 0;
};

static_assert(sizeof(UidKey) == 40);

}  // namespace taskgov::scheduler::ledger
