#include "config/diagnostics.h"

#include <algorithm>

namespace taskgov::config {

std::string Diagnostic::ToString(int document_count) const {
  std::string out = file.empty() ? std::string("<config>") : file;
  if (document >= 0 && document_count > 1) out += ": document " + std::to_string(document + 1);
  if (!path.empty()) out += ": " + path;
  if (mark.line > 0) {
    out += " (line " + std::to_string(mark.line) + ", column " + std::to_string(mark.column) + ")";
  }
  out += ": ";
  out += message;
  return out;
}

void Diagnostics::Error(std::string file, int document, std::string path, Mark mark,
                        std::string message) {
  items_.push_back(Diagnostic{Severity::kError, std::move(file), document, std::move(path), mark,
                              std::move(message)});
}

void Diagnostics::Warn(std::string file, int document, std::string path, Mark mark,
                       std::string message) {
  items_.push_back(Diagnostic{Severity::kWarning, std::move(file), document, std::move(path), mark,
                              std::move(message)});
}

size_t Diagnostics::error_count() const {
  return static_cast<size_t>(std::count_if(items_.begin(), items_.end(), [](const Diagnostic& d) {
    return d.severity == Severity::kError;
  }));
}

size_t Diagnostics::warning_count() const { return items_.size() - error_count(); }

}  // namespace taskgov::config
