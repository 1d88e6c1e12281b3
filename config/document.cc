#include "config/document.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <exception>
#include <sstream>

namespace taskgov::config {

Node Node::Null(Mark mark) {
  Node n;
  n.kind_ = Kind::kNull;
  n.mark_ = mark;
  return n;
}

Node Node::Scalar(std::string text, bool quoted, Mark mark) {
  Node n;
  n.kind_ = Kind::kScalar;
  n.text_ = std::move(text);
  n.quoted_ = quoted;
  n.mark_ = mark;
  return n;
}

Node Node::Map(Mark mark) {
  Node n;
  n.kind_ = Kind::kMap;
  n.mark_ = mark;
  return n;
}

Node Node::Sequence(Mark mark) {
  Node n;
  n.kind_ = Kind::kSequence;
  n.mark_ = mark;
  return n;
}

const Node* Node::Find(std::string_view key) const {
  for (const Entry& e : entries_) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

void Node::Append(Node item) { items_.push_back(std::move(item)); }

void Node::Add(std::string key, Mark key_mark, Node value) {
  entries_.push_back(Entry{std::move(key), key_mark, std::move(value)});
}

std::string_view Node::TypeName() const {
  switch (kind_) {
    case Kind::kNull:
      return "null";
    case Kind::kMap:
      return "map";
    case Kind::kSequence:
      return "list";
    case Kind::kScalar:
      break;
  }
  if (quoted_) return "string";
  if (text_ == "true" || text_ == "false" || text_ == "True" || text_ == "False" ||
      text_ == "TRUE" || text_ == "FALSE") {
    return "boolean";
  }
  if (!text_.empty() && (text_[0] == '-' || text_[0] == '+' || text_[0] == '.' ||
                         (text_[0] >= '0' && text_[0] <= '9'))) {
    return "number";
  }
  return "string";
}

namespace {

Mark ToMark(const YAML::Mark& m, Mark fallback) {
  if (m.line < 0 || m.is_null()) return fallback;
  return Mark{m.line + 1, m.column + 1};
}

// Copies a yaml-cpp tree into a Node tree, bounded in depth and size. Returns false and sets
// `error` when a limit is hit or the tree has a shape config/ does not accept.
class Converter {
 public:
  bool Convert(const YAML::Node& in, Mark parent_mark, int depth, Node* out) {
    if (depth > kMaxDepth) {
      return Fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels", parent_mark);
    }
    if (++nodes_ > kMaxNodes) {
      return Fail("more than " + std::to_string(kMaxNodes) +
                      " nodes in the file (an alias expanding too far?)",
                  parent_mark);
    }
    const Mark mark = ToMark(in.Mark(), parent_mark);
    switch (in.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        *out = Node::Null(mark);
        return true;
      case YAML::NodeType::Scalar:
        *out = Node::Scalar(in.Scalar(), in.Tag() == "!", mark);
        return true;
      case YAML::NodeType::Sequence: {
        *out = Node::Sequence(mark);
        for (const YAML::Node& item : in) {
          Node child;
          if (!Convert(item, mark, depth + 1, &child)) return false;
          out->Append(std::move(child));
        }
        return true;
      }
      case YAML::NodeType::Map: {
        *out = Node::Map(mark);
        for (auto it = in.begin(); it != in.end(); ++it) {
          const Mark key_mark = ToMark(it->first.Mark(), mark);
          if (!it->first.IsScalar()) {
            return Fail("map keys must be strings", key_mark);
          }
          Node value;
          if (!Convert(it->second, key_mark, depth + 1, &value)) return false;
          out->Add(it->first.Scalar(), key_mark, std::move(value));
        }
        return true;
      }
    }
    return Fail("unsupported YAML node", mark);
  }

  const std::string& error() const { return error_; }
  Mark error_mark() const { return error_mark_; }

 private:
  bool Fail(std::string message, Mark mark) {
    error_ = std::move(message);
    error_mark_ = mark;
    return false;
  }

  size_t nodes_ = 0;
  std::string error_;
  Mark error_mark_;
};

// yaml-cpp 0.7 reads a flow indicator outside any flow collection (a lone ",", "[a],", "- a\n,")
// as an endless series of empty documents, each starting where the one before it started:
// YAML::LoadAll would never return, allocating until the process is killed. This pass reads the
// events once, before LoadAll, and throws a ParserException at a document that starts where its
// predecessor started. Documents always advance otherwise (each consumes at least its start).
class ProgressGuard : public YAML::EventHandler {
 public:
  explicit ProgressGuard(std::string_view text) : text_(text) {}

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (documents_++ > 0 && mark.pos == last_start_.pos) {
      std::string what = "unexpected '";
      if (mark.pos >= 0 && static_cast<size_t>(mark.pos) < text_.size()) what += text_[mark.pos];
      throw YAML::ParserException(mark, what + "' outside a flow collection ([...] or {...})");
    }
    last_start_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  std::string_view text_;
  int64_t documents_ = 0;
  YAML::Mark last_start_;
};

// Throws YAML::Exception where LoadAll would fail, or never return (ProgressGuard).
void CheckProgress(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  ProgressGuard guard(text);
  while (parser.HandleNextDocument(guard)) {
  }
}

}  // namespace

ParsedText ParseDocuments(std::string_view text) {
  ParsedText result;
  if (text.size() > kMaxDocumentBytes) {
    result.ok = false;
    result.error = "file is larger than " + std::to_string(kMaxDocumentBytes) + " bytes";
    return result;
  }
  try {
    const std::string copy(text);
    CheckProgress(copy);
    std::vector<YAML::Node> docs = YAML::LoadAll(copy);
    Converter converter;
    for (const YAML::Node& doc : docs) {
      Node node;
      if (!converter.Convert(doc, Mark{1, 1}, 0, &node)) {
        result.ok = false;
        result.error = converter.error();
        result.error_mark = converter.error_mark();
        result.documents.clear();
        return result;
      }
      result.documents.push_back(std::move(node));
    }
  } catch (const YAML::Exception& e) {
    result.ok = false;
    result.error = e.msg.empty() ? std::string("invalid YAML") : e.msg;
    result.error_mark = ToMark(e.mark, Mark{});
    result.documents.clear();
  } catch (const std::exception& e) {
    result.ok = false;
    result.error = std::string("invalid YAML: ") + e.what();
    result.documents.clear();
  }
  return result;
}

}  // namespace taskgov::config
