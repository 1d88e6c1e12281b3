#pragma once

// Decoding a Kubernetes watch stream: newline-delimited JSON events
//   {"type":"ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR","object":{...}}
// that arrive split at arbitrary byte boundaries (HTTP chunks and TCP segments are unrelated to
// event boundaries). LineSplitter buffers bytes up to each newline; ParseWatchEvent decodes one
// line. An ERROR event's object is a metav1.Status (code 410 means: relist).
//
// Untrusted input: every failure is an error value naming what is wrong; nothing throws.
// Value types; not synchronised.

#include <rapidjson/document.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/common/result.h"

namespace taskgov::scheduler::kube {

class LineSplitter {
 public:
  explicit LineSplitter(size_t max_line_bytes = 64 * 1024 * 1024) : max_line_(max_line_bytes) {}

  void Feed(std::string_view bytes) { buffer_.append(bytes.data(), bytes.size()); }
  // The next complete line without its '\n' (and a trailing '\r'), or nullopt when none is
  // complete yet.
  [[nodiscard]] std::optional<std::string> NextLine();
  // True when the incomplete tail is longer than the limit (the stream must be abandoned).
  [[nodiscard]] bool overflow() const { return buffer_.size() - start_ > max_line_; }
  // True when only whitespace is buffered.
  [[nodiscard]] bool blank() const;
  [[nodiscard]] size_t buffered() const { return buffer_.size() - start_; }

 private:
  size_t max_line_;
  std::string buffer_;
  size_t start_ = 0;  // bytes before start_ are consumed
  size_t scan_ = 0;   // bytes before scan_ hold no newline
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };
[[nodiscard]] const char* WatchEventTypeName(WatchEventType type);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  rapidjson::Document doc;  // the whole event
  // kError: the Status fields.
  int error_code = 0;
  std::string error_reason;
  std::string error_message;

  // The event's "object" (an object; checked by ParseWatchEvent).
  [[nodiscard]] const rapidjson::Value& object() const;
  // object.metadata.resourceVersion, or "" when absent.
  [[nodiscard]] std::string resource_version() const;
};

// Parses one line of a watch stream.
[[nodiscard]] common::Result<WatchEvent> ParseWatchEvent(std::string_view line);

// Metadata every object carries, read with type checks. Absent fields are "".
struct ObjectMeta {
  std::string ns;
  std::string name;
  std::string uid;
  std::string resource_version;
  // status.phase when the object has one (a pod's): what a DELETED event says it became — a pod
  // that left a field-selected watch because it Succeeded or Failed is DELETED in that state.
  std::string phase;
  [[nodiscard]] std::string key() const { return ns.empty() ? name : ns + "/" + name; }
};
[[nodiscard]] common::Result<ObjectMeta> ReadObjectMeta(const rapidjson::Value& object);

// Member `name` of `object`: nullptr when `object` is not an object or the member is absent or
// null (Kubernetes omits and nulls an unset optional field alike). Of duplicate keys, the first.
[[nodiscard]] const rapidjson::Value* JsonMember(const rapidjson::Value& object, const char* name);
// A string member: "" when absent or null, the error "<path>: expected a string" when of another
// type.
[[nodiscard]] common::Result<std::string> OptionalJsonString(const rapidjson::Value& object,
                                                             const char* name,
                                                             std::string_view path);

// Reads a metav1.Status object (an error body or an ERROR event): code, reason, message,
// details.causes[].reason and details.retryAfterSeconds. Wrong types are skipped.
struct StatusInfo {
  int code = 0;
  std::string status;
  std::string reason;
  std::string message;
  std::vector<std::string> causes;
  int64_t retry_after_seconds = 0;
};
[[nodiscard]] StatusInfo ReadStatus(const rapidjson::Value& status);

}  // namespace taskgov::scheduler::kube
