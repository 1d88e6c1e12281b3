#pragma once

// TypedSink<Traits>: the store behind a reflector, keyed by namespace/name, holding the last
// decoded version of each object with its uid and resourceVersion, and telling the observer
// only what changed:
//  * an ADDED or MODIFIED identical (uid, resourceVersion) to the stored one is a duplicate:
//    nothing is told (duplicate ADDED, relists of unchanged objects);
//  * a MODIFIED for an unknown object is an add (MODIFIED-before-ADDED);
//  * the same name with a new uid (the object was deleted and re-created while we were not
//    watching) tells the delete of the old one, then the add of the new one;
//  * a DELETED for an unknown object, or for another uid than the stored one, is ignored; a
//    delete reports the *stored* object (what the observer last saw);
//  * an object that fails to decode keeps the stored version (fail closed: its usage stays
//    counted) and is reported as kDecodeError;
//  * EndList deletes every stored object the relist did not mention.
//
// Traits provides: `using Object`, `Result<Object> Decode(const rapidjson::Value&)`,
// `void OnUpsert(const Object&)`, `void OnDelete(const Object&)`.
// Not synchronised: called from one reflector thread.

#include <rapidjson/document.h>

#include <map>
#include <set>
#include <string>
#include <utility>

#include "scheduler/kube/reflector.h"

namespace taskgov::scheduler::kube {

template <typename Traits>
class TypedSink final : public ObjectSink {
 public:
  using Object = typename Traits::Object;
  explicit TypedSink(Traits traits) : traits_(std::move(traits)) {}

  ApplyOutcome Upsert(const ObjectMeta& meta, const rapidjson::Value& value,
                      std::string* error) override {
    const std::string key = meta.key();
    if (listing_) marked_.insert(key);
    auto it = store_.find(key);
    if (it != store_.end() && it->second.uid == meta.uid && !meta.resource_version.empty() &&
        it->second.resource_version == meta.resource_version) {
      return ApplyOutcome::kUnchanged;
    }
    common::Result<Object> decoded = traits_.Decode(value);
    if (!decoded.ok()) {
      *error = decoded.error().message;
      return ApplyOutcome::kDecodeError;
    }
    ApplyOutcome outcome = ApplyOutcome::kApplied;
    if (it != store_.end() && !meta.uid.empty() && !it->second.uid.empty() &&
        it->second.uid != meta.uid) {
      traits_.OnDelete(it->second.object);
      outcome = ApplyOutcome::kReplaced;
    }
    Entry& entry = store_[key];
    entry.uid = meta.uid;
    entry.resource_version = meta.resource_version;
    entry.object = std::move(*decoded);
    traits_.OnUpsert(entry.object);
    return outcome;
  }

  ApplyOutcome Delete(const ObjectMeta& meta) override {
    auto it = store_.find(meta.key());
    if (it == store_.end()) return ApplyOutcome::kUnknownDelete;
    if (!meta.uid.empty() && !it->second.uid.empty() && meta.uid != it->second.uid) {
      return ApplyOutcome::kStaleDelete;
    }
    Entry entry = std::move(it->second);
    store_.erase(it);
    traits_.OnDelete(entry.object);
    return ApplyOutcome::kDeleted;
  }

  void BeginList() override {
    listing_ = true;
    marked_.clear();
  }

  size_t EndList() override {
    size_t vanished = 0;
    for (auto it = store_.begin(); it != store_.end();) {
      if (marked_.count(it->first) != 0) {
        ++it;
        continue;
      }
      Entry entry = std::move(it->second);
      it = store_.erase(it);
      traits_.OnDelete(entry.object);
      ++vanished;
    }
    listing_ = false;
    marked_.clear();
    return vanished;
  }

  void AbortList() override {
    listing_ = false;
    marked_.clear();
  }

  size_t size() const override { return store_.size(); }

  // For tests: the stored object under `key`, or nullptr.
  const Object* Find(const std::string& key) const {
    auto it = store_.find(key);
    return it == store_.end() ? nullptr : &it->second.object;
  }

 private:
  struct Entry {
    std::string uid;
    std::string resource_version;
    Object object;
  };
  Traits traits_;
  std::map<std::string, Entry> store_;
  std::set<std::string> marked_;
  bool listing_ = false;
};

}  // namespace taskgov::scheduler::kube
