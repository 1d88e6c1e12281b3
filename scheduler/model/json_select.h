#pragma once

// Reading large JSON bodies while keeping only what taskgov needs.
//
// SelectiveParse runs RapidJSON's iterative SAX reader over the text once (strict JSON, nesting
// capped — the iterative reader keeps its stack on the heap, so hostile nesting costs no call
// stack) and builds a DOM of only the members a FieldSelector tree selects; everything else is
// skipped without allocating. Kept keys and strings must be valid UTF-8; skipped ones are not
// checked (Go's decoder accepts invalid UTF-8 anywhere, so this is stricter only where taskgov
// reads). A selector can also ask for the byte span of
// each value it selects, so a caller can echo those values exactly as received.
//
// Key matching is exact (Kubernetes objects: keys are json tags) or Go-folded (types without
// json tags, such as the extender arguments: Go's encoding/json matches keys case-insensitively,
// including the Unicode folds of ASCII letters — K (U+212A) for k, ſ (U+017F) for s, and, since
// Go 1.21, İ (U+0130) and ı (U+0131) for i).
//
// Duplicate keys are kept as they appear; lookups (FindMember*) return the last occurrence, as
// Go's decoder lets the last one win.
//
// Pure functions and immutable selectors; thread-safe.

#include <rapidjson/document.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scheduler/common/result.h"

namespace taskgov::scheduler::model {

// Which members of a JSON value to keep. Arrays are transparent: the selector of an array applies
// to each of its elements. A scalar where the selector expects an object is kept as it is (so
// decoders can report the type error).
struct FieldSelector {
  // A member to keep: its key and the selector for its value. (A struct, not std::pair: a pair
  // needs FieldSelector complete where this vector is declared.)
  struct Field;

  // Keep the whole value.
  bool keep_all = false;
  // Match this object's keys the way Go's encoding/json does (`fields` keys are then lower-case).
  bool fold_keys = false;
  // Record the byte span of every non-array value this selector applies to (array elements are
  // recorded one by one; scalars get an empty span), in document order.
  bool capture = false;
  // Members to keep, by key.
  std::vector<Field> fields;
  // The selector for keys not in `fields` (e.g. maps keyed by node name); null: skip them.
  std::shared_ptr<const FieldSelector> any;
};

struct FieldSelector::Field {
  std::string key;
  FieldSelector selector;
};

// A selector that keeps the whole value.
[[nodiscard]] FieldSelector KeepAll();
// A selector that keeps the listed members, matching keys exactly.
[[nodiscard]] FieldSelector Select(std::vector<FieldSelector::Field> fields);
// Like Select, with keys matched the way Go does (give the keys in any case).
[[nodiscard]] FieldSelector SelectFolded(std::vector<FieldSelector::Field> fields);

struct JsonSpan {
  size_t begin = 0;
  size_t end = 0;  // one past the last byte; begin == end for captured scalars
};

struct SelectedJson {
  rapidjson::Document doc;         // the kept values; doc is the root value
  std::vector<JsonSpan> captures;  // spans recorded by `capture` selectors, in document order
};

struct SelectOptions {
  size_t max_depth = 512;
  // Stop after the first complete value and ignore what follows (as Go's json.Decoder.Decode
  // does); otherwise anything but whitespace after it is an error.
  bool stop_when_done = false;
};

// Parses `text`, keeping what `selector` selects. Errors name the byte offset and the problem:
// "malformed JSON at offset 17: Missing a comma or '}' after an object member".
[[nodiscard]] common::Status SelectiveParse(std::string_view text, const FieldSelector& selector,
                                            SelectedJson* out, const SelectOptions& options = {});

// Parses the whole of `text` (SelectiveParse with KeepAll()).
[[nodiscard]] common::Status ParseJson(std::string_view text, rapidjson::Document* out,
                                       const SelectOptions& options = {});

// Go's key folding: ASCII letters and their Unicode fold variants become lower-case ASCII; other
// bytes are unchanged. Two keys match case-insensitively iff their folds are equal.
[[nodiscard]] std::string FoldJsonKey(std::string_view key);

// The last member of `object` whose key is exactly `key` / whose fold equals `folded_key`
// (lower-case ASCII), or nullptr. `object` must be an object.
[[nodiscard]] const rapidjson::Value* FindMemberExact(const rapidjson::Value& object,
                                                      std::string_view key);
[[nodiscard]] const rapidjson::Value* FindMemberFolded(const rapidjson::Value& object,
                                                       std::string_view folded_key);

// "object", "array", "string", "number", "true", "false", "null" — for error messages.
[[nodiscard]] const char* JsonTypeName(const rapidjson::Value& value);

}  // namespace taskgov::scheduler::model
