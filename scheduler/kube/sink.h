#pragma once

// TypedSink<Traits>: the store behind a reflector, keyed by namespace/name, holding each object's
// uid and resourceVersion and what the observer needs to hear of its delete (Traits::Kept: for
// most kinds nothing, the key and uid say it; the object itself is the observer's to keep), and
// telling the observer only what changed:
//  * an ADDED or MODIFIED identical (uid, resourceVersion) to the stored one is a duplicate:
//    nothing is told (duplicate ADDED, relists of unchanged objects);
//  * a MODIFIED for an unknown object is an add (MODIFIED-before-ADDED);
//  * the same name with a new uid (the object was deleted and re-created while we were not
//    watching) tells the delete of the old one, then the add of the new one;
//  * a DELETED for an unknown object, or for another uid than the stored one, is ignored; a
//    delete reports the *stored* identity (the uid the observer last saw);
//  * an object that fails to decode keeps the stored version (fail closed: its usage stays
//    counted) and is reported as kDecodeError;
//  * EndList deletes every stored object the relist did not mention.
//
// Traits provides: `using Object`, `using Kept`, `Result<Object> Decode(const rapidjson::Value&)`,
// `void OnUpsert(const Object&)`, `Kept Keep(const Object&)` and
// `void OnDelete(const Kept&, const StoredName&)`.
// Not synchronised: called from one reflector thread.

#include <rapidjson/document.h>

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "scheduler/kube/reflector.h"

namespace taskgov::scheduler::kube {

// The stored identity of an object a delete reports.
struct StoredName {
  std::string_view ns;  // empty for a cluster-scoped object
  std::string_view name;
  std::string_view uid;
  // The status.phase the DELETED event gave (ObjectMeta::phase); empty for an object that
  // vanished from a relist or was replaced under a new uid.
  std::string_view phase;
};

// Nothing kept beyond the identity.
struct KeepNothing {};

template <typename Traits>
class TypedSink final : public ObjectSink {
 public:
  using Object = typename Traits::Object;
  using Kept = typename Traits::Kept;
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
      traits_.OnDelete(it->second.kept, Name(key, it->second.uid));
      outcome = ApplyOutcome::kReplaced;
    }
    Entry& entry = it != store_.end() ? it->second : store_[key];
    entry.uid = meta.uid;
    entry.resource_version = meta.resource_version;
    entry.kept = traits_.Keep(*decoded);
    traits_.OnUpsert(*decoded);
    return outcome;
  }

  ApplyOutcome Delete(const ObjectMeta& meta) override {
    auto it = store_.find(meta.key());
    if (it == store_.end()) return ApplyOutcome::kUnknownDelete;
    if (!meta.uid.empty() && !it->second.uid.empty() && meta.uid != it->second.uid) {
      return ApplyOutcome::kStaleDelete;
    }
    const std::string key = it->first;
    Entry entry = std::move(it->second);
    store_.erase(it);
    StoredName name = Name(key, entry.uid);
    name.phase = meta.phase;
    traits_.OnDelete(entry.kept, name);
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
      const std::string key = it->first;
      Entry entry = std::move(it->second);
      it = store_.erase(it);
      traits_.OnDelete(entry.kept, Name(key, entry.uid));
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

 private:
  struct Entry {
    std::string uid;
    std::string resource_version;
    [[no_unique_address]] Kept kept;
  };
  // A key is "namespace/name", or "name" for a cluster-scoped object.
  static StoredName Name(std::string_view key, std::string_view uid) {
    const size_t slash = key.find('/');
    if (slash == std::string_view::npos) return {{}, key, uid, {}};
    return {key.substr(0, slash), key.substr(slash + 1), uid, {}};
  }
  Traits traits_;
  std::map<std::string, Entry> store_;
  std::set<std::string> marked_;
  bool listing_ = false;
};

}  // namespace taskgov::scheduler::kube
