#include "config/reader.h"

#include <charconv>
#include <set>

namespace taskgov::config {

namespace {

bool IsIdentifier(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool IsPlainDecimal(std::string_view text) {
  size_t i = 0;
  size_t digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    size_t fraction = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++fraction;
    if (fraction == 0) return false;
  }
  return digits > 0 && i == text.size();
}

std::string Quote(std::string_view text) {
  std::string out = "'";
  out.append(text.substr(0, 80));
  if (text.size() > 80) out += "...";
  out += "'";
  return out;
}

// Calls visit(entry, path) for each entry of a map node in order, reporting a repeated key as a
// "duplicate key" error and skipping it.
template <typename Visit>
void ForEachUniqueEntry(const DocContext& ctx, const Node& map, const std::string& base,
                        Visit&& visit) {
  std::set<std::string_view> seen;
  for (const Node::Entry& e : map.entries()) {
    const std::string path = JoinPath(base, e.key);
    if (!seen.insert(e.key).second) {
      ctx.Error(path, e.key_mark, "duplicate key");
      continue;
    }
    visit(e, path);
  }
}

}  // namespace

std::string JoinPath(std::string_view base, std::string_view key) {
  std::string out(base);
  if (IsIdentifier(key)) {
    if (!out.empty()) out += ".";
    out += key;
  } else {
    out += "[\"";
    out += key;
    out += "\"]";
  }
  return out;
}

std::string IndexPath(std::string_view base, size_t index) {
  return std::string(base) + "[" + std::to_string(index) + "]";
}

ObjectReader::ObjectReader(const DocContext* ctx, const Node* node, std::string path)
    : ctx_(ctx), path_(std::move(path)) {
  if (node == nullptr || node->is_null()) return;
  if (!node->is_map()) {
    ctx_->Error(path_, node->mark(),
                "must be a map (an object), got " + std::string(node->TypeName()));
    return;
  }
  node_ = node;
  used_.assign(node->entries().size(), false);
  ForEachUniqueEntry(*ctx_, *node, path_, [](const Node::Entry&, const std::string&) {});
}

ObjectReader::ObjectReader(ObjectReader&& other) noexcept
    : ctx_(other.ctx_),
      node_(other.node_),
      path_(std::move(other.path_)),
      used_(std::move(other.used_)),
      ignore_rest_(other.ignore_rest_) {
  other.node_ = nullptr;
}

ObjectReader::~ObjectReader() {
  if (node_ == nullptr || ignore_rest_) return;
  const auto& entries = node_->entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!used_[i]) {
      ctx_->Error(JoinPath(path_, entries[i].key), entries[i].key_mark, "unknown field");
    }
  }
}

Mark ObjectReader::mark() const { return node_ ? node_->mark() : Mark{}; }

bool ObjectReader::Has(std::string_view key) const {
  if (node_ == nullptr) return false;
  const Node* v = node_->Find(key);
  return v != nullptr && !v->is_null();
}

const Node* ObjectReader::Take(std::string_view key) {
  if (node_ == nullptr) return nullptr;
  const Node* found = nullptr;
  const auto& entries = node_->entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].key == key) {
      used_[i] = true;
      if (found == nullptr) found = &entries[i].value;
    }
  }
  if (found != nullptr && found->is_null()) return nullptr;
  return found;
}

Mark ObjectReader::MarkOf(std::string_view key) const {
  if (node_ == nullptr) return Mark{};
  for (const Node::Entry& e : node_->entries()) {
    if (e.key == key) return e.key_mark;
  }
  return node_->mark();
}

void ObjectReader::NotHonoured(std::string_view key, std::string_view why) {
  const Node* v = Take(key);
  if (v == nullptr) return;
  ctx_->Warn(PathOf(key), MarkOf(key), "not honoured: " + std::string(why));
}

void ObjectReader::Error(std::string_view key, const Node* value, std::string message) const {
  ctx_->Error(PathOf(key), value ? value->mark() : MarkOf(key), std::move(message));
}

const Node* ObjectReader::TakeRequired(std::string_view key, bool required) {
  const Node* v = Take(key);
  if (v == nullptr && required) ctx_->Error(PathOf(key), mark(), "required field is missing");
  return v;
}

const Node* ObjectReader::TakePlainDecimal(std::string_view key) {
  const Node* v = Take(key);
  if (v == nullptr) return nullptr;
  if (!v->is_scalar() || v->quoted() || !IsPlainDecimal(v->text())) {
    if (v->is_scalar() && !v->text().empty() && v->text()[0] == '-') {
      Error(key, v, "must not be negative, got " + Quote(v->text()));
    } else {
      Error(key, v,
            "must be a non-negative number, got " + std::string(v->TypeName()) +
                (v->is_scalar() ? " " + Quote(v->text()) : std::string()));
    }
    return nullptr;
  }
  return v;
}

std::optional<std::string> ObjectReader::String(std::string_view key, bool required) {
  const Node* v = TakeRequired(key, required);
  if (v == nullptr) return std::nullopt;
  if (!v->is_scalar()) {
    Error(key, v, "must be a string, got " + std::string(v->TypeName()));
    return std::nullopt;
  }
  return v->text();
}

std::optional<int64_t> ObjectReader::Integer(std::string_view key, int64_t min, int64_t max,
                                             bool required) {
  const Node* v = TakeRequired(key, required);
  if (v == nullptr) return std::nullopt;
  if (!v->is_scalar() || v->quoted()) {
    Error(key, v,
          "must be an integer, got " + std::string(v->TypeName()) +
              (v->is_scalar() ? " " + Quote(v->text()) : std::string()));
    return std::nullopt;
  }
  const std::string& text = v->text();
  int64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec == std::errc::result_out_of_range) {
    Error(key, v, "integer " + Quote(text) + " is out of range");
    return std::nullopt;
  }
  if (ec != std::errc() || ptr != end) {
    Error(key, v, "must be an integer, got " + Quote(text));
    return std::nullopt;
  }
  if (value < min || value > max) {
    Error(key, v,
          "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " +
              std::to_string(value));
    return std::nullopt;
  }
  return value;
}

std::optional<double> ObjectReader::Number(std::string_view key, double min, double max) {
  const Node* v = TakePlainDecimal(key);
  if (v == nullptr) return std::nullopt;
  double value = 0;
  const std::string& text = v->text();
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    Error(key, v, "must be a number, got " + Quote(text));
    return std::nullopt;
  }
  if (value < min || value > max) {
    Error(
        key, v,
        "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + text);
    return std::nullopt;
  }
  return value;
}

std::optional<bool> ObjectReader::Bool(std::string_view key) {
  const Node* v = Take(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_scalar() && !v->quoted()) {
    const std::string& t = v->text();
    if (t == "true" || t == "True" || t == "TRUE") return true;
    if (t == "false" || t == "False" || t == "FALSE") return false;
  }
  Error(key, v,
        "must be true or false, got " + std::string(v->TypeName()) +
            (v->is_scalar() ? " " + Quote(v->text()) : std::string()));
  return std::nullopt;
}

std::optional<int64_t> ReadQuantity(const DocContext& ctx, const Node& node,
                                    std::string_view resource, const std::string& path) {
  if (!node.is_scalar()) {
    ctx.Error(path, node.mark(), "must be a quantity, got " + std::string(node.TypeName()));
    return std::nullopt;
  }
  common::Result<int64_t> parsed = scheduler::model::ParseResourceQuantity(resource, node.text());
  if (!parsed.ok()) {
    ctx.Error(path, node.mark(), parsed.error().message);
    return std::nullopt;
  }
  return *parsed;
}

std::optional<std::string> ReadString(const DocContext& ctx, const Node& node,
                                      const std::string& path) {
  if (!node.is_scalar()) {
    ctx.Error(path, node.mark(), "must be a string, got " + std::string(node.TypeName()));
    return std::nullopt;
  }
  return node.text();
}

std::optional<int64_t> ObjectReader::Quantity(std::string_view key, std::string_view resource,
                                              bool required) {
  const Node* v = TakeRequired(key, required);
  if (v == nullptr) return std::nullopt;
  return ReadQuantity(*ctx_, *v, resource, PathOf(key));
}

std::optional<int64_t> ObjectReader::Decimal(std::string_view key, std::string_view suffix,
                                             scheduler::model::QuantityUnit unit) {
  const Node* v = TakePlainDecimal(key);
  if (v == nullptr) return std::nullopt;
  common::Result<int64_t> parsed =
      scheduler::model::ParseQuantity(v->text() + std::string(suffix), unit);
  if (!parsed.ok()) {
    Error(key, v, parsed.error().message);
    return std::nullopt;
  }
  return *parsed;
}

ObjectReader ObjectReader::Object(std::string_view key) {
  const Node* v = Take(key);
  return ObjectReader(ctx_, v, PathOf(key));
}

const Node* ObjectReader::List(std::string_view key) {
  const Node* v = Take(key);
  if (v == nullptr) return nullptr;
  if (!v->is_sequence()) {
    Error(key, v, "must be a list, got " + std::string(v->TypeName()));
    return nullptr;
  }
  return v;
}

std::optional<std::vector<std::pair<std::string, std::string>>> ObjectReader::StringMap(
    std::string_view key) {
  const Node* v = Take(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_map()) {
    Error(key, v, "must be a map of strings, got " + std::string(v->TypeName()));
    return std::nullopt;
  }
  std::vector<std::pair<std::string, std::string>> out;
  ForEachUniqueEntry(*ctx_, *v, PathOf(key), [&](const Node::Entry& e, const std::string& path) {
    std::optional<std::string> value = ReadString(*ctx_, e.value, path);
    if (value) out.emplace_back(e.key, *value);
  });
  return out;
}

std::optional<std::vector<std::pair<std::string, int64_t>>> ObjectReader::ResourceMap(
    std::string_view key) {
  const Node* v = Take(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_map()) {
    Error(key, v, "must be a map of resource name to quantity, got " + std::string(v->TypeName()));
    return std::nullopt;
  }
  std::vector<std::pair<std::string, int64_t>> out;
  ForEachUniqueEntry(*ctx_, *v, PathOf(key), [&](const Node::Entry& e, const std::string& path) {
    if (e.key.empty()) {
      ctx_->Error(path, e.key_mark, "resource name must not be empty");
      return;
    }
    std::optional<int64_t> q = ReadQuantity(*ctx_, e.value, e.key, path);
    if (q) out.emplace_back(e.key, *q);
  });
  return out;
}

std::optional<std::vector<std::string>> ObjectReader::StringList(std::string_view key) {
  const Node* v = List(key);
  if (v == nullptr) return std::nullopt;
  std::vector<std::string> out;
  const std::string base = PathOf(key);
  for (size_t i = 0; i < v->items().size(); ++i) {
    std::optional<std::string> s = ReadString(*ctx_, v->items()[i], IndexPath(base, i));
    if (s) out.push_back(*s);
  }
  return out;
}

}  // namespace taskgov::config
