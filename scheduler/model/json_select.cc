// RapidJSON is used without its SSE2 scanners everywhere: defining RAPIDJSON_SSE2 in one
// translation unit only would give its inline stream functions two definitions (an ODR
// violation the linker may resolve either way). SelectiveParse still pads its buffer, so turning
// SSE2 on project-wide (third_party/rapidjson.BUILD) stays safe for it.

#include "scheduler/model/json_select.h"

#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include <cstdint>
#include <cstring>

namespace taskgov::scheduler::model {
namespace {

using rapidjson::SizeType;
using rapidjson::Value;

// Reads one folded character of `key` at `*i` and advances past it. Go folds with
// unicode.ToUpper(unicode.ToLower(r)); the only non-ASCII runes that land on an ASCII letter are
// K (U+212A → k), ſ (U+017F → s), İ (U+0130 → i) and ı (U+0131 → i).
char NextFolded(std::string_view key, size_t* i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(key[k]); };
  const size_t n = key.size();
  const unsigned char c = b(*i);
  if (c < 0x80) {
    ++*i;
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : static_cast<char>(c);
  }
  if (c == 0xC5 && *i + 1 < n && b(*i + 1) == 0xBF) {
    *i += 2;
    return 's';
  }
  if (c == 0xC4 && *i + 1 < n && (b(*i + 1) == 0xB0 || b(*i + 1) == 0xB1)) {
    *i += 2;
    return 'i';
  }
  if (c == 0xE2 && *i + 2 < n && b(*i + 1) == 0x84 && b(*i + 2) == 0xAA) {
    *i += 3;
    return 'k';
  }
  ++*i;
  return static_cast<char>(c);
}

bool EqualsFolded(std::string_view key, std::string_view folded) {
  size_t i = 0;
  size_t j = 0;
  while (i < key.size()) {
    if (j >= folded.size() || NextFolded(key, &i) != folded[j]) return false;
    ++j;
  }
  return j == folded.size();
}

const FieldSelector& PlainKeepAll() {
  static const FieldSelector* const kAll = new FieldSelector(KeepAll());
  return *kAll;
}

// Well-formed UTF-8 (no overlong forms, surrogates or code points above U+10FFFF).
bool ValidUtf8(const char* s, size_t n) {
  const auto* p = reinterpret_cast<const unsigned char*>(s);
  const auto* end = p + n;
  while (p < end) {
    // ASCII, eight bytes at a time (no byte has its top bit set).
    while (end - p >= 8) {
      uint64_t word;
      std::memcpy(&word, p, sizeof word);
      if ((word & 0x8080808080808080ull) != 0) break;
      p += 8;
    }
    if (p == end) break;
    const unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (static_cast<size_t>(end - p) < len || p[1] < lo || p[1] > hi) return false;
    for (size_t k = 2; k < len; ++k) {
      if ((p[k] & 0xC0) != 0x80) return false;
    }
    p += len;
  }
  return true;
}

std::string_view KeyOf(const Value& name) {
  return std::string_view(name.GetString(), name.GetStringLength());
}

// The SAX handler behind SelectiveParse: filters the reader's events through the selectors and
// forwards the kept ones to a rapidjson::Document acting as the DOM builder (with a kept member
// count at each EndObject / EndArray, so objects get exactly the storage they need).
class SelectHandler {
 public:
  SelectHandler(std::string_view text, rapidjson::InsituStringStream* stream,
                const FieldSelector* root, rapidjson::Document* builder,
                std::vector<JsonSpan>* captures, size_t max_depth)
      : text_(text),
        stream_(stream),
        root_(root),
        builder_(builder),
        captures_(captures),
        max_depth_(max_depth) {
    frames_.reserve(32);
  }

  const std::string& error() const { return error_; }

  bool Null() {
    return Scalar([this] { return builder_->Null(); });
  }
  bool Bool(bool b) {
    return Scalar([&] { return builder_->Bool(b); });
  }
  bool Int(int i) {
    return Scalar([&] { return builder_->Int(i); });
  }
  bool Uint(unsigned u) {
    return Scalar([&] { return builder_->Uint(u); });
  }
  bool Int64(int64_t i) {
    return Scalar([&] { return builder_->Int64(i); });
  }
  bool Uint64(uint64_t u) {
    return Scalar([&] { return builder_->Uint64(u); });
  }
  bool Double(double d) {
    return Scalar([&] { return builder_->Double(d); });
  }
  bool RawNumber(const char* s, SizeType n, bool) {
    return Scalar([&] { return builder_->RawNumber(s, n, /*copy=*/true); });
  }
  bool String(const char* s, SizeType n, bool) {
    if (Current().second && !ValidUtf8(s, n)) return BadUtf8();
    // Copied: the in-situ buffer does not outlive the parse.
    return Scalar([&] { return builder_->String(s, n, /*copy=*/true); });
  }

  bool Key(const char* s, SizeType n, bool) {
    Frame& top = frames_.back();
    top.next_kept = false;
    if (!top.kept) return true;
    const FieldSelector* sel = top.sel;
    const FieldSelector* child = nullptr;
    if (sel->keep_all) {
      child = &PlainKeepAll();  // a captured value's members are not captured themselves
    } else {
      std::string_view key(s, n);
      for (const auto& [name, field] : sel->fields) {
        if (sel->fold_keys ? EqualsFolded(key, name) : key == name) {
          child = &field;
          break;
        }
      }
      if (child == nullptr) child = sel->any.get();
    }
    if (child == nullptr) return true;
    if (!ValidUtf8(s, n)) return BadUtf8();
    top.next_sel = child;
    top.next_kept = true;
    return builder_->Key(s, n, /*copy=*/true);
  }

  bool StartObject() { return Start(/*object=*/true); }
  bool StartArray() { return Start(/*object=*/false); }

  bool EndObject(SizeType) {
    const Frame frame = frames_.back();
    frames_.pop_back();
    if (!frame.kept) return true;
    if (frame.capture >= 0) {
      const size_t pos = stream_->Tell();
      // The iterative reader calls EndObject before consuming '}', the recursive one after.
      const size_t end = pos < text_.size() && text_[pos] == '}' ? pos + 1 : pos;
      (*captures_)[static_cast<size_t>(frame.capture)].end = end;
    }
    return builder_->EndObject(frame.kept_count) && Completed();
  }

  bool EndArray(SizeType) {
    const Frame frame = frames_.back();
    frames_.pop_back();
    if (!frame.kept) return true;
    return builder_->EndArray(frame.kept_count) && Completed();
  }

 private:
  struct Frame {
    const FieldSelector* sel;  // applies to the children (object members / array elements)
    bool kept;
    bool object;
    long capture;             // index in captures_ to complete at the end, or -1
    SizeType kept_count = 0;  // kept members / elements so far
    // Objects: the selection of the value after the last key.
    const FieldSelector* next_sel = nullptr;
    bool next_kept = false;
  };

  // The selector and kept-ness of the value that starts now.
  std::pair<const FieldSelector*, bool> Current() const {
    if (frames_.empty()) return {root_, true};
    const Frame& top = frames_.back();
    if (top.object) return {top.next_sel, top.next_kept};
    return {top.sel, top.kept};
  }

  // A kept value is complete: its container has one more kept child.
  bool Completed() {
    if (!frames_.empty()) ++frames_.back().kept_count;
    return true;
  }

  bool BadUtf8() {
    error_ = "invalid UTF-8 in the string ending at offset " + std::to_string(stream_->Tell());
    return false;
  }

  template <typename Forward>
  bool Scalar(Forward forward) {
    auto [sel, kept] = Current();
    if (!kept) return true;
    if (sel->capture) {
      const size_t pos = stream_->Tell();
      captures_->push_back(JsonSpan{pos, pos});
    }
    return forward() && Completed();
  }

  bool Start(bool object) {
    if (frames_.size() >= max_depth_) {
      error_ = "nesting deeper than " + std::to_string(max_depth_) + " levels at offset " +
               std::to_string(stream_->Tell());
      return false;
    }
    auto [sel, kept] = Current();
    long capture = -1;
    if (kept && object && sel->capture) {
      const size_t pos = stream_->Tell();
      // The iterative reader calls StartObject before consuming '{', the recursive one after.
      const size_t begin = pos < text_.size() && text_[pos] == '{' ? pos : pos - 1;
      capture = static_cast<long>(captures_->size());
      captures_->push_back(JsonSpan{begin, begin});
    }
    frames_.push_back(Frame{sel, kept, object, capture});
    if (!kept) return true;
    return object ? builder_->StartObject() : builder_->StartArray();
  }

  std::string_view text_;
  rapidjson::InsituStringStream* stream_;
  const FieldSelector* root_;
  rapidjson::Document* builder_;
  std::vector<JsonSpan>* captures_;
  const size_t max_depth_;
  std::vector<Frame> frames_;
  std::string error_;
};

}  // namespace

FieldSelector KeepAll() {
  FieldSelector s;
  s.keep_all = true;
  return s;
}

FieldSelector Select(std::vector<FieldSelector::Field> fields) {
  FieldSelector s;
  s.fields = std::move(fields);
  return s;
}

FieldSelector SelectFolded(std::vector<FieldSelector::Field> fields) {
  FieldSelector s;
  s.fold_keys = true;
  for (auto& [key, field] : fields) s.fields.push_back({FoldJsonKey(key), std::move(field)});
  return s;
}

common::Status SelectiveParse(std::string_view text, const FieldSelector& selector,
                              SelectedJson* out, const SelectOptions& options) {
  out->doc.SetNull();
  out->captures.clear();
  // In situ on a private, NUL-terminated copy: strings are unescaped in place instead of being
  // copied, which with the SIMD scan makes skipping 2-3x faster than reading from `text`.
  // The padding of NULs keeps the SIMD loads (16-byte aligned blocks up to the one holding the
  // terminator) inside the buffer.
  constexpr size_t kPadding = 16;
  std::string buffer;
  buffer.reserve(text.size() + kPadding);
  buffer.append(text);
  buffer.append(kPadding, '\0');
  rapidjson::InsituStringStream stream(buffer.data());
  rapidjson::Reader reader;
  // Iterative: nesting costs heap, not stack. Encoding is validated for the kept strings only
  // (validating everything disables the fast string scan and costs 40%).
  constexpr unsigned kFlags = rapidjson::kParseIterativeFlag | rapidjson::kParseInsituFlag;
  rapidjson::ParseResult result;
  std::string handler_error;
  // Document::Populate runs the generator with the document as the handler and, when it returns
  // true, takes the one value it built as the root.
  auto generate = [&](rapidjson::Document& builder) {
    SelectHandler handler(text, &stream, &selector, &builder, &out->captures, options.max_depth);
    result = options.stop_when_done
                 ? reader.Parse<kFlags | rapidjson::kParseStopWhenDoneFlag>(stream, handler)
                 : reader.Parse<kFlags>(stream, handler);
    handler_error = handler.error();
    // The stream reports a NUL byte as the end of input: anything left over is one.
    return !result.IsError() && (options.stop_when_done || stream.Tell() == text.size());
  };
  out->doc.Populate(generate);
  if (result.IsError()) {
    out->doc.SetNull();
    out->captures.clear();
    if (!handler_error.empty()) return common::Error{"malformed JSON: " + handler_error};
    if (result.Code() == rapidjson::kParseErrorDocumentEmpty) {
      return common::Error{"malformed JSON: the body is empty"};
    }
    return common::Error{"malformed JSON at offset " + std::to_string(result.Offset()) + ": " +
                         rapidjson::GetParseError_En(result.Code())};
  }
  if (!options.stop_when_done && stream.Tell() != text.size()) {
    out->doc.SetNull();
    out->captures.clear();
    return common::Error{"malformed JSON at offset " + std::to_string(stream.Tell()) +
                         ": unexpected NUL byte"};
  }
  return common::Status::Ok();
}

common::Status ParseJson(std::string_view text, rapidjson::Document* out,
                         const SelectOptions& options) {
  static const FieldSelector kAll = KeepAll();
  SelectedJson selected;
  common::Status s = SelectiveParse(text, kAll, &selected, options);
  if (!s.ok()) return s;
  out->Swap(selected.doc);
  return common::Status::Ok();
}

std::string FoldJsonKey(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (size_t i = 0; i < key.size();) out.push_back(NextFolded(key, &i));
  return out;
}

const Value* FindMemberExact(const Value& object, std::string_view key) {
  const Value* found = nullptr;
  for (auto it = object.MemberBegin(); it != object.MemberEnd(); ++it) {
    if (KeyOf(it->name) == key) found = &it->value;
  }
  return found;
}

const Value* FindMemberFolded(const Value& object, std::string_view folded_key) {
  const Value* found = nullptr;
  for (auto it = object.MemberBegin(); it != object.MemberEnd(); ++it) {
    if (EqualsFolded(KeyOf(it->name), folded_key)) found = &it->value;
  }
  return found;
}

const char* JsonTypeName(const Value& value) {
  switch (value.GetType()) {
    case rapidjson::kNullType:
      return "null";
    case rapidjson::kFalseType:
      return "false";
    case rapidjson::kTrueType:
      return "true";
    case rapidjson::kObjectType:
      return "object";
    case rapidjson::kArrayType:
      return "array";
    case rapidjson::kStringType:
      return "string";
    case rapidjson::kNumberType:
      return "number";
  }
  return "unknown";
}

}  // namespace taskgov::scheduler::model
