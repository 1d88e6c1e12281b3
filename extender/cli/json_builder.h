#pragma once

// JsonBuilder: building RapidJSON values in one document's allocator, for the -o json / yaml
// renderings (render.cc, job_render.cc). Thread-compatible.

#include <rapidjson/document.h>

#include <map>
#include <string>
#include <string_view>

namespace taskgov::cli {

class JsonBuilder {
 public:
  explicit JsonBuilder(rapidjson::Document* doc) : a_(doc->GetAllocator()) {}

  rapidjson::Value Str(std::string_view s) {
    return rapidjson::Value(s.data(), static_cast<rapidjson::SizeType>(s.size()), a_);
  }
  void Add(rapidjson::Value* obj, const char* key, rapidjson::Value v) {
    obj->AddMember(rapidjson::StringRef(key), v, a_);
  }
  void Push(rapidjson::Value* array, rapidjson::Value v) { array->PushBack(v, a_); }
  rapidjson::Value Map(const std::map<std::string, std::string>& m) {
    rapidjson::Value v(rapidjson::kObjectType);
    for (const auto& [k, x] : m) v.AddMember(Str(k), Str(x), a_);
    return v;
  }

 protected:
  rapidjson::Document::AllocatorType& a_;
};

}  // namespace taskgov::cli
