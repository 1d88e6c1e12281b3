#pragma once

// Typed, path-aware reading of Document trees for the dialect decoders.
//
// An ObjectReader wraps one map node and the path that leads to it. Each accessor marks its key
// as known, checks the value's type and range, and reports a problem as an error naming the file,
// the document, the path (`teams[2].compute[0].accelerators`), the line and the reason — then
// returns nullopt so decoding goes on and every error of a file is reported, not only the first.
// When the reader is destroyed, keys nobody asked for are reported as unknown fields (unless
// IgnoreRest() was called), and duplicate keys are reported when the reader is built.
//
// Not thread-safe; one decoder uses its readers on one thread.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/diagnostics.h"
#include "config/document.h"
#include "scheduler/model/quantity.h"

namespace taskgov::config {

// Where a decoder is reading: a file, a document in it, and the diagnostics sink.
class DocContext {
 public:
  DocContext(std::string file, int document, Diagnostics* diagnostics)
      : file_(std::move(file)), document_(document), diagnostics_(diagnostics) {}

  void Error(std::string path, Mark mark, std::string message) const {
    diagnostics_->Error(file_, document_, std::move(path), mark, std::move(message));
  }
  void Warn(std::string path, Mark mark, std::string message) const {
    diagnostics_->Warn(file_, document_, std::move(path), mark, std::move(message));
  }
  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] int document() const { return document_; }
  [[nodiscard]] Diagnostics* diagnostics() const { return diagnostics_; }

 private:
  std::string file_;
  int document_;
  Diagnostics* diagnostics_;
};

// `base.key`, or `base["key"]` when the key is not a plain identifier (resource names such as
// nvidia.com/gpu).
[[nodiscard]] std::string JoinPath(std::string_view base, std::string_view key);
// `base[index]`.
[[nodiscard]] std::string IndexPath(std::string_view base, size_t index);

class ObjectReader {
 public:
  // `node` may be nullptr or null (the object is absent: every accessor returns nullopt). A node
  // of another type is reported as an error and read as absent.
  ObjectReader(const DocContext* ctx, const Node* node, std::string path);
  ~ObjectReader();
  ObjectReader(ObjectReader&& other) noexcept;
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;
  ObjectReader& operator=(ObjectReader&&) = delete;

  [[nodiscard]] bool present() const { return node_ != nullptr; }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] Mark mark() const;
  [[nodiscard]] const DocContext& ctx() const { return *ctx_; }
  [[nodiscard]] bool Has(std::string_view key) const;

  // The value, marking the key known; nullptr when absent or null.
  const Node* Take(std::string_view key);
  // Marks a key known without reading it (descriptive fields such as Description, Tags).
  void Ignore(std::string_view key) { (void)Take(key); }
  // Marks every key known: for objects whose other fields carry no policy (metadata, status).
  void IgnoreRest() { ignore_rest_ = true; }
  // When present, warns that taskgov does not honour this field, with the reason.
  void NotHonoured(std::string_view key, std::string_view why);

  [[nodiscard]] std::string PathOf(std::string_view key) const { return JoinPath(path_, key); }
  [[nodiscard]] Mark MarkOf(std::string_view key) const;

  // Any scalar, as written. `required` reports a missing key as an error.
  std::optional<std::string> String(std::string_view key, bool required = false);
  // A plain (unquoted) integer within [min, max].
  std::optional<int64_t> Integer(std::string_view key, int64_t min, int64_t max,
                                 bool required = false);
  // A plain non-negative decimal number (digits, optional fraction) within [min, max].
  std::optional<double> Number(std::string_view key, double min, double max);
  // true / false (also True / TRUE / False / FALSE).
  std::optional<bool> Bool(std::string_view key);
  // One of the listed words, exactly.
  template <typename E>
  std::optional<E> Enum(std::string_view key,
                        std::initializer_list<std::pair<std::string_view, E>> values);
  // A Kubernetes quantity (string or number) of `resource`, in canonical units.
  std::optional<int64_t> Quantity(std::string_view key, std::string_view resource,
                                  bool required = false);
  // A plain decimal number (HyperPod VCpu 1.5, MemoryInGiB 5.25) converted exactly through the
  // quantity grammar: `suffix` is appended ("Gi" for GiB) and `unit` chosen (kMillis for vCPU).
  std::optional<int64_t> Decimal(std::string_view key, std::string_view suffix,
                                 scheduler::model::QuantityUnit unit);
  // A nested object (absent → a reader with present() == false).
  ObjectReader Object(std::string_view key);
  // A list; nullptr when absent or of the wrong type (reported).
  const Node* List(std::string_view key);
  // visit(item) with a reader of each map item of list `key` (path `key[i]`), in order; items of
  // another type are reported by the item's reader. A null item is skipped, or reported as
  // "must be a map, got null" when `null_is_error`. Returns List(key).
  template <typename Visit>
  const Node* ForEachObject(std::string_view key, Visit&& visit, bool null_is_error = false);
  // A map of string → string (node labels).
  std::optional<std::vector<std::pair<std::string, std::string>>> StringMap(std::string_view key);
  // A map of resource name → quantity (a v1.ResourceList), in canonical units; entries that do
  // not parse are reported and left out.
  std::optional<std::vector<std::pair<std::string, int64_t>>> ResourceMap(std::string_view key);
  // A list of strings.
  std::optional<std::vector<std::string>> StringList(std::string_view key);

 private:
  void Error(std::string_view key, const Node* value, std::string message) const;
  // Take, reporting a missing key as an error when `required`.
  const Node* TakeRequired(std::string_view key, bool required);
  // Take, for a plain non-negative decimal scalar (unquoted digits, optional fraction); nullptr
  // when absent or anything else (reported).
  const Node* TakePlainDecimal(std::string_view key);

  const DocContext* ctx_;
  const Node* node_ = nullptr;
  std::string path_;
  std::vector<bool> used_;
  bool ignore_rest_ = false;
};

// Free-standing checks on a scalar node, for list items and map values.
[[nodiscard]] std::optional<int64_t> ReadQuantity(const DocContext& ctx, const Node& node,
                                                  std::string_view resource,
                                                  const std::string& path);
[[nodiscard]] std::optional<std::string> ReadString(const DocContext& ctx, const Node& node,
                                                    const std::string& path);

template <typename Visit>
const Node* ObjectReader::ForEachObject(std::string_view key, Visit&& visit, bool null_is_error) {
  const Node* list = List(key);
  if (list == nullptr) return nullptr;
  const std::string base = PathOf(key);
  for (size_t i = 0; i < list->items().size(); ++i) {
    const Node& node = list->items()[i];
    ObjectReader item(ctx_, &node, IndexPath(base, i));
    if (item.present()) {
      visit(item);
    } else if (null_is_error && node.is_null()) {
      ctx_->Error(IndexPath(base, i), node.mark(), "must be a map, got null");
    }
  }
  return list;
}

template <typename E>
std::optional<E> ObjectReader::Enum(std::string_view key,
                                    std::initializer_list<std::pair<std::string_view, E>> values) {
  std::optional<std::string> text = String(key);
  if (!text) return std::nullopt;
  for (const auto& [word, value] : values) {
    if (*text == word) return value;
  }
  std::string expected;
  for (const auto& [word, value] : values) {
    if (!expected.empty()) expected += ", ";
    expected += word;
  }
  Error(key, Take(key), "must be one of " + expected + "; got '" + *text + "'");
  return std::nullopt;
}

}  // namespace taskgov::config
