#pragma once

// Document: the parsed form of one YAML (or JSON) document, as a small tree of maps, sequences
// and scalars that remembers where each node came from. It is the boundary with yaml-cpp:
// ParseDocuments is the only function that calls the parser, and it never throws — malformed
// text becomes an error with its line and column. Every dialect decoder reads this tree, so
// there is one parser for the format and one tree walker per dialect.
//
// JSON is read as YAML (YAML 1.2 is a superset of JSON), so a `.json` HyperPod request and a
// multi-document `kubectl get -o yaml` dump go through the same parser.
//
// Limits that keep hostile input cheap: at most kMaxDocumentBytes of text, kMaxDepth levels of
// nesting and kMaxNodes nodes per call (aliases are expanded while copying, so an alias bomb
// hits the node limit instead of exhausting memory).
//
// Value types; ParseDocuments is thread-safe.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "config/diagnostics.h"

namespace taskgov::config {

inline constexpr size_t kMaxDocumentBytes = 4 << 20;
inline constexpr int kMaxDepth = 64;
inline constexpr size_t kMaxNodes = 200000;

class Node {
 public:
  enum class Kind { kNull, kScalar, kMap, kSequence };

  struct Entry;  // a map entry: key and value

  Node() = default;
  static Node Null(Mark mark);
  static Node Scalar(std::string text, bool quoted, Mark mark);
  static Node Map(Mark mark);
  static Node Sequence(Mark mark);

  [[nodiscard]] Kind kind() const { return kind_; }
  [[nodiscard]] bool is_null() const { return kind_ == Kind::kNull; }
  [[nodiscard]] bool is_scalar() const { return kind_ == Kind::kScalar; }
  [[nodiscard]] bool is_map() const { return kind_ == Kind::kMap; }
  [[nodiscard]] bool is_sequence() const { return kind_ == Kind::kSequence; }
  [[nodiscard]] Mark mark() const { return mark_; }

  // Scalars: the text, and whether it was quoted in the source (a quoted "8" is a string).
  [[nodiscard]] const std::string& text() const { return text_; }
  [[nodiscard]] bool quoted() const { return quoted_; }

  // Maps, in source order; duplicate keys are kept (the reader reports them).
  [[nodiscard]] const std::vector<Entry>& entries() const { return entries_; }
  // The first entry's value with this key, or nullptr.
  [[nodiscard]] const Node* Find(std::string_view key) const;
  void Add(std::string key, Mark key_mark, Node value);

  // Sequences.
  [[nodiscard]] const std::vector<Node>& items() const { return items_; }
  void Append(Node item);

  // "map", "sequence", "string", "number", "boolean", "null" — for messages.
  [[nodiscard]] std::string_view TypeName() const;

 private:
  Kind kind_ = Kind::kNull;
  Mark mark_;
  std::string text_;
  bool quoted_ = false;
  std::vector<Entry> entries_;
  std::vector<Node> items_;
};

struct Node::Entry {
  std::string key;
  Mark key_mark;
  Node value;
};

// The documents of one file, or why it could not be parsed.
struct ParsedText {
  std::vector<Node> documents;
  bool ok = true;
  std::string error;  // e.g. "end of map flow not found"
  Mark error_mark;
};

// Parses every document of `text` (separated by `---`). Empty documents become null nodes.
// Never throws.
[[nodiscard]] ParsedText ParseDocuments(std::string_view text);

}  // namespace taskgov::config
