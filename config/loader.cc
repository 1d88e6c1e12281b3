#include "config/loader.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "config/dialects.h"
#include "config/document.h"
#include "config/resolve.h"

namespace taskgov::config {

namespace {

constexpr int kSnapshotAttempts = 5;

Diagnostic FileError(std::string file, std::string message) {
  return Diagnostic{Severity::kError, std::move(file), -1, "", Mark{}, std::move(message)};
}

std::string ErrnoText(int err) { return std::strerror(err); }

std::string EmptyFileMessage(const std::string& content) {
  return (content.empty() ? std::string("the file is empty (0 bytes)")
                          : "the file holds no document (only blanks or comments)") +
         ": refused, as an emptied file would remove its part of the policy. Delete the file "
         "instead, or give it content";
}

// Reads a whole file, refusing more than kMaxDocumentBytes.
bool ReadFile(const std::string& path, std::string* out, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open: " + ErrnoText(errno);
    return false;
  }
  out->clear();
  char buffer[16384];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = "cannot read: " + ErrnoText(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    out->append(buffer, static_cast<size_t>(n));
    if (out->size() > kMaxDocumentBytes) {
      *error = "file is larger than " + std::to_string(kMaxDocumentBytes) + " bytes";
      ::close(fd);
      return false;
    }
  }
  ::close(fd);
  return true;
}

// Regular files of `dir` (following symlinks), names not starting with '.', sorted.
bool ListFiles(const std::string& dir, std::vector<std::string>* names, std::string* error) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    *error = "cannot read directory '" + dir + "': " + ErrnoText(errno);
    return false;
  }
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.') continue;
    struct stat st;
    if (::stat((dir + "/" + name).c_str(), &st) != 0) continue;  // dangling symlink
    if (!S_ISREG(st.st_mode)) continue;
    names->push_back(name);
  }
  ::closedir(d);
  std::sort(names->begin(), names->end());
  return true;
}

bool ReadLink(const std::string& path, std::string* target) {
  char buffer[4096];
  const ssize_t n = ::readlink(path.c_str(), buffer, sizeof buffer - 1);
  if (n < 0) return false;
  target->assign(buffer, static_cast<size_t>(n));
  return true;
}

}  // namespace

DirectorySnapshot ReadConfigDirectory(const std::string& dir) {
  DirectorySnapshot snapshot;
  const std::string data_link = dir + "/..data";
  for (int attempt = 0; attempt < kSnapshotAttempts; ++attempt) {
    snapshot = DirectorySnapshot{};
    snapshot.dir = dir;
    std::string read_dir = dir;
    std::string target;
    const bool kubelet = ReadLink(data_link, &target);
    if (kubelet) {
      snapshot.data_target = target;
      read_dir = target.starts_with("/") ? target : dir + "/" + target;
    }
    std::vector<std::string> names;
    std::string error;
    if (!ListFiles(read_dir, &names, &error)) {
      if (kubelet && attempt + 1 < kSnapshotAttempts) continue;  // swapped away: retry
      snapshot.errors.push_back(FileError("", error));
      return snapshot;
    }
    for (const std::string& name : names) {
      SourceFile file;
      file.name = name;
      if (!ReadFile(read_dir + "/" + name, &file.content, &error)) {
        snapshot.errors.push_back(FileError(name, error));
        continue;
      }
      snapshot.files.push_back(std::move(file));
    }
    std::string after;
    if (!kubelet || (ReadLink(data_link, &after) && after == target)) return snapshot;
  }
  snapshot.errors.push_back(
      FileError("", "'..data' kept changing while the configuration was read; try again"));
  return snapshot;
}

std::string ContentHash(const std::vector<SourceFile>& files) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a 64
  auto mix = [&h](std::string_view bytes) {
    for (unsigned char c : bytes) {
      h ^= c;
      h *= 1099511628211ULL;
    }
  };
  for (const SourceFile& f : files) {
    mix(f.name);
    mix(std::string_view("\0", 1));
    mix(std::to_string(f.content.size()));
    mix(std::string_view("\0", 1));
    mix(f.content);
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

size_t LoadResult::error_count() const {
  return static_cast<size_t>(std::count_if(diagnostics.begin(), diagnostics.end(),
                                           [](auto& d) { return d.severity == Severity::kError; }));
}

size_t LoadResult::warning_count() const { return diagnostics.size() - error_count(); }

std::string LoadResult::Format(const Diagnostic& d) const {
  auto it = document_counts.find(d.file);
  return d.ToString(it == document_counts.end() ? 1 : it->second);
}

std::string LoadResult::FirstError() const {
  for (const Diagnostic& d : diagnostics) {
    if (d.severity == Severity::kError) return Format(d);
  }
  return "";
}

ConfigSet DecodeSources(const std::vector<SourceFile>& files, Diagnostics* diagnostics,
                        std::map<std::string, int>* document_counts) {
  std::map<std::string, int> counts;
  ConfigSet set;
  std::vector<SourceFile> sorted = files;
  std::sort(sorted.begin(), sorted.end(),
            [](const SourceFile& a, const SourceFile& b) { return a.name < b.name; });
  for (const SourceFile& file : sorted) {
    ParsedText parsed = ParseDocuments(file.content);
    if (!parsed.ok) {
      diagnostics->Error(file.name, -1, "", parsed.error_mark,
                         "invalid YAML/JSON: " + parsed.error);
      counts[file.name] = 1;
      continue;
    }
    if (std::all_of(parsed.documents.begin(), parsed.documents.end(),
                    [](const Node& d) { return d.is_null(); })) {
      diagnostics->Error(file.name, -1, "", Mark{}, EmptyFileMessage(file.content));
      counts[file.name] = 1;
      continue;
    }
    counts[file.name] = static_cast<int>(parsed.documents.size());
    for (size_t i = 0; i < parsed.documents.size(); ++i) {
      DocContext ctx(file.name, static_cast<int>(i), diagnostics);
      DecodeDocument(parsed.documents[i], ctx, &set);
    }
  }
  if (document_counts != nullptr) *document_counts = std::move(counts);
  return set;
}

LoadResult LoadSources(const std::vector<SourceFile>& files) {
  LoadResult result;
  Diagnostics diagnostics;
  std::vector<SourceFile> sorted = files;
  std::sort(sorted.begin(), sorted.end(),
            [](const SourceFile& a, const SourceFile& b) { return a.name < b.name; });
  for (const SourceFile& file : sorted) result.files.push_back(file.name);
  ConfigSet set = DecodeSources(sorted, &diagnostics, &result.document_counts);
  std::shared_ptr<scheduler::model::Policy> policy = Resolve(std::move(set), &diagnostics);
  result.content_hash = ContentHash(sorted);
  policy->source_hash = result.content_hash;
  result.draft = policy;
  // Diagnostics file by file (stable: within a file, in the order they were found).
  result.diagnostics = diagnostics.items();
  std::stable_sort(result.diagnostics.begin(), result.diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.file < b.file; });
  if (diagnostics.error_count() == 0) result.policy = policy;
  return result;
}

LoadResult LoadDirectory(const std::string& dir) { return LoadSnapshot(ReadConfigDirectory(dir)); }

std::vector<Diagnostic> TruncationErrors(const std::vector<SourceFile>& files,
                                         const std::vector<SourceFile>& in_force) {
  std::vector<Diagnostic> errors;
  for (const SourceFile& f : files) {
    auto old = std::find_if(in_force.begin(), in_force.end(),
                            [&](const SourceFile& g) { return g.name == f.name; });
    if (old == in_force.end() || f.content.empty() || f.content.size() >= old->content.size() ||
        !old->content.starts_with(f.content)) {
      continue;  // new, empty (reported as such), or not a prefix
    }
    const std::string_view cut = std::string_view(old->content).substr(f.content.size());
    if (cut.find_first_not_of(" \t\r\n") == std::string_view::npos) continue;
    errors.push_back(FileError(
        f.name, "the file shrank to its first " + std::to_string(f.content.size()) + " of " +
                    std::to_string(old->content.size()) +
                    " bytes in force: it looks truncated (a partial or interrupted write) and is "
                    "refused. If the end was removed on purpose, change anything else in the file "
                    "as well (a comment will do)"));
  }
  return errors;
}

LoadResult LoadSnapshot(const DirectorySnapshot& snapshot,
                        const std::vector<SourceFile>* in_force) {
  LoadResult result = LoadSources(snapshot.files);
  std::vector<Diagnostic> errors = snapshot.errors;
  if (in_force != nullptr) {
    std::vector<Diagnostic> cut = TruncationErrors(snapshot.files, *in_force);
    errors.insert(errors.end(), cut.begin(), cut.end());
  }
  if (snapshot.files.empty() && snapshot.errors.empty()) {
    result.diagnostics.insert(result.diagnostics.begin(),
                              Diagnostic{Severity::kWarning, "", -1, "", Mark{},
                                         "the directory '" + snapshot.dir +
                                             "' holds no configuration file (names starting with "
                                             "'.' and subdirectories are skipped)"});
  }
  if (!errors.empty()) {
    result.policy = nullptr;
    result.diagnostics.insert(result.diagnostics.begin(), errors.begin(), errors.end());
    std::stable_sort(result.diagnostics.begin(), result.diagnostics.end(),
                     [](const Diagnostic& a, const Diagnostic& b) { return a.file < b.file; });
    for (const Diagnostic& e : errors) {
      if (!e.file.empty() &&
          std::find(result.files.begin(), result.files.end(), e.file) == result.files.end()) {
        result.files.push_back(e.file);
      }
    }
    std::sort(result.files.begin(), result.files.end());
  }
  return result;
}

}  // namespace taskgov::config
