#include "scheduler/decisions/admitted_pods.h"

#include <functional>

namespace taskgov::scheduler::decisions {

AdmittedPods::Shard& AdmittedPods::ShardOf(std::string_view uid) const {
  return shards_[std::hash<std::string_view>{}(uid) % kShards];
}

void AdmittedPods::Note(std::string_view uid, int64_t now_ms) {
  Shard& shard = ShardOf(uid);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto& map = shard.expires_ms;
  if (map.size() >= per_shard_ && map.find(std::string(uid)) == map.end()) {
    std::erase_if(map, [now_ms](const auto& entry) { return entry.second <= now_ms; });
    if (map.size() >= per_shard_) map.clear();
  }
  map[std::string(uid)] = now_ms + ttl_ms_;
}

bool AdmittedPods::Admitted(std::string_view uid, int64_t now_ms) const {
  Shard& shard = ShardOf(uid);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.expires_ms.find(std::string(uid));
  return it != shard.expires_ms.end() && it->second > now_ms;
}

}  // namespace taskgov::scheduler::decisions
