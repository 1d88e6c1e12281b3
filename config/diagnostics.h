#pragma once

// Diagnostics: what config/ reports about a configuration file — an error (the configuration is
// refused) or a warning (it loads, but something it says is not honoured as written). Each names
// the file, the document inside the file, the path inside the document
// (`teams[2].compute[0].accelerators`), the line and column when known, and the reason.
//
// Value types; not synchronised.

#include <string>
#include <vector>

namespace taskgov::config {

// A position in a file, 1-based; line 0 means unknown.
struct Mark {
  int line = 0;
  int column = 0;
};

enum class Severity { kError, kWarning };

struct Diagnostic {
  Severity severity = Severity::kError;
  std::string file;   // the file's name inside the configuration directory
  int document = -1;  // 0-based index of the YAML document in the file; -1: the whole file
  std::string path;   // path inside the document; empty: the document or file itself
  Mark mark;
  std::string message;

  // "teams.yaml: document 2: teams[2].compute[0].accelerators (line 14, column 7): <message>".
  // The document part is omitted for single-document files (document_count <= 1).
  [[nodiscard]] std::string ToString(int document_count = 1) const;
};

// Collects diagnostics; the number of documents per file decides whether messages mention the
// document index.
class Diagnostics {
 public:
  void Add(Diagnostic d) { items_.push_back(std::move(d)); }
  void Error(std::string file, int document, std::string path, Mark mark, std::string message);
  void Warn(std::string file, int document, std::string path, Mark mark, std::string message);

  [[nodiscard]] const std::vector<Diagnostic>& items() const { return items_; }
  [[nodiscard]] size_t error_count() const;
  [[nodiscard]] size_t warning_count() const;
  [[nodiscard]] bool has_errors() const { return error_count() > 0; }

 private:
  std::vector<Diagnostic> items_;
};

}  // namespace taskgov::config
