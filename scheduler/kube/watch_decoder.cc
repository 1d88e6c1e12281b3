#include "scheduler/kube/watch_decoder.h"

#include <cstring>

namespace taskgov::scheduler::kube {
namespace {

// A string member; "" when absent or of another type.
std::string StringMember(const rapidjson::Value& object, const char* name) {
  const rapidjson::Value* v = JsonMember(object, name);
  if (v == nullptr || !v->IsString()) return "";
  return std::string(v->GetString(), v->GetStringLength());
}

const rapidjson::Value& EmptyObject() {
  static const rapidjson::Value* empty = new rapidjson::Value(rapidjson::kObjectType);
  return *empty;
}

}  // namespace

std::optional<std::string> LineSplitter::NextLine() {
  if (scan_ < start_) scan_ = start_;
  const char* base = buffer_.data();
  const void* nl = std::memchr(base + scan_, '\n', buffer_.size() - scan_);
  if (nl == nullptr) {
    scan_ = buffer_.size();
    // Compact once the consumed prefix dominates, so the buffer does not grow without bound.
    if (start_ > 0 && start_ >= buffer_.size() / 2) {
      buffer_.erase(0, start_);
      scan_ -= start_;
      start_ = 0;
    }
    return std::nullopt;
  }
  const size_t end = static_cast<size_t>(static_cast<const char*>(nl) - base);
  size_t line_end = end;
  if (line_end > start_ && buffer_[line_end - 1] == '\r') --line_end;
  std::string line = buffer_.substr(start_, line_end - start_);
  start_ = end + 1;
  scan_ = start_;
  if (start_ == buffer_.size()) {
    buffer_.clear();
    start_ = scan_ = 0;
  }
  return line;
}

bool LineSplitter::blank() const {
  for (size_t i = start_; i < buffer_.size(); ++i) {
    char c = buffer_[i];
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return false;
  }
  return true;
}

const char* WatchEventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "?";
}

const rapidjson::Value& WatchEvent::object() const {
  const rapidjson::Value* v = JsonMember(doc, "object");
  return v != nullptr && v->IsObject() ? *v : EmptyObject();
}

std::string WatchEvent::resource_version() const {
  const rapidjson::Value* meta = JsonMember(object(), "metadata");
  return meta == nullptr ? "" : StringMember(*meta, "resourceVersion");
}

common::Result<WatchEvent> ParseWatchEvent(std::string_view line) {
  WatchEvent event;
  event.doc.Parse(line.data(), line.size());
  if (event.doc.HasParseError()) {
    return common::Error{"watch event is not valid JSON (at byte " +
                         std::to_string(event.doc.GetErrorOffset()) + ")"};
  }
  if (!event.doc.IsObject()) return common::Error{"watch event is not a JSON object"};
  const rapidjson::Value* type = JsonMember(event.doc, "type");
  if (type == nullptr || !type->IsString())
    return common::Error{"watch event: missing string 'type'"};
  std::string_view t(type->GetString(), type->GetStringLength());
  if (t == "ADDED") {
    event.type = WatchEventType::kAdded;
  } else if (t == "MODIFIED") {
    event.type = WatchEventType::kModified;
  } else if (t == "DELETED") {
    event.type = WatchEventType::kDeleted;
  } else if (t == "BOOKMARK") {
    event.type = WatchEventType::kBookmark;
  } else if (t == "ERROR") {
    event.type = WatchEventType::kError;
  } else {
    return common::Error{"watch event: unknown type '" + std::string(t.substr(0, 32)) + "'"};
  }
  const rapidjson::Value* object = JsonMember(event.doc, "object");
  if (object == nullptr || !object->IsObject()) {
    return common::Error{"watch event " + std::string(t) + ": missing object 'object'"};
  }
  if (event.type == WatchEventType::kError) {
    StatusInfo status = ReadStatus(*object);
    event.error_code = status.code;
    event.error_reason = status.reason;
    event.error_message = status.message;
  } else if (event.type != WatchEventType::kBookmark) {
    common::Result<ObjectMeta> meta = ReadObjectMeta(*object);
    if (!meta.ok()) return meta.error().Wrap("watch event " + std::string(t));
    if (meta->name.empty())
      return common::Error{"watch event " + std::string(t) + ": object has no name"};
  }
  return event;
}

common::Result<ObjectMeta> ReadObjectMeta(const rapidjson::Value& object) {
  ObjectMeta meta;
  const rapidjson::Value* md = JsonMember(object, "metadata");
  if (md == nullptr || md->IsNull()) return meta;
  if (!md->IsObject()) return common::Error{"metadata: expected an object"};
  struct Field {
    const char* name;
    std::string* out;
  };
  for (const Field& f :
       {Field{"namespace", &meta.ns}, Field{"name", &meta.name}, Field{"uid", &meta.uid},
        Field{"resourceVersion", &meta.resource_version}}) {
    common::Result<std::string> v =
        OptionalJsonString(*md, f.name, std::string("metadata.") + f.name);
    if (!v.ok()) return v.error();
    *f.out = std::move(*v);
  }
  if (const rapidjson::Value* status = JsonMember(object, "status")) {
    const rapidjson::Value* phase = JsonMember(*status, "phase");
    if (phase != nullptr && phase->IsString()) meta.phase = phase->GetString();
  }
  return meta;
}

const rapidjson::Value* JsonMember(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(name);
  return it == object.MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
}

common::Result<std::string> OptionalJsonString(const rapidjson::Value& object, const char* name,
                                               std::string_view path) {
  const rapidjson::Value* v = JsonMember(object, name);
  if (v == nullptr) return std::string();
  if (!v->IsString()) return common::Error{std::string(path) + ": expected a string"};
  return std::string(v->GetString(), v->GetStringLength());
}

StatusInfo ReadStatus(const rapidjson::Value& status) {
  StatusInfo info;
  if (!status.IsObject()) return info;
  const rapidjson::Value* code = JsonMember(status, "code");
  if (code != nullptr && code->IsInt()) info.code = code->GetInt();
  info.status = StringMember(status, "status");
  info.reason = StringMember(status, "reason");
  info.message = StringMember(status, "message");
  const rapidjson::Value* details = JsonMember(status, "details");
  if (details != nullptr && details->IsObject()) {
    const rapidjson::Value* causes = JsonMember(*details, "causes");
    if (causes != nullptr && causes->IsArray()) {
      for (const auto& cause : causes->GetArray()) {
        std::string reason = StringMember(cause, "reason");
        if (!reason.empty()) info.causes.push_back(std::move(reason));
      }
    }
    const rapidjson::Value* retry = JsonMember(*details, "retryAfterSeconds");
    if (retry != nullptr && retry->IsInt64()) info.retry_after_seconds = retry->GetInt64();
  }
  return info;
}

}  // namespace taskgov::scheduler::kube
