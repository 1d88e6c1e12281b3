#pragma once

// Loading a policy from the ConfigMap directory (DESIGN §6).
//
// ReadConfigDirectory reads the directory as the kubelet mounts a ConfigMap: when a `..data`
// symlink is present, the files are read from the timestamped directory it points to, resolved
// once, and the read is retried if `..data` moved meanwhile — so a load never mixes two
// versions of the ConfigMap. Without `..data` (a plain directory, e.g. in development), every
// regular file is read, following symlinks. Names starting with '.' (the kubelet's `..data`,
// `..data_tmp` and `..2026_11_29_...` entries, editor files) and subdirectories are skipped.
//
// LoadSources parses every document of every file, decodes it in its dialect, resolves the whole
// set and reports all errors and warnings; the policy is set only when there is no error.
//
// Fail-safe (governance never switches off by accident): a file that holds no document (0 bytes,
// or only blanks and comments) is an error, and so is a configuration that defines no team —
// an empty directory, every file deleted — unless a TaskGovernancePolicy document says
// `emptyPolicy: true`. LoadSnapshot, given the files of the policy in force, also refuses a file
// that shrank to a prefix of its version in force (a truncated or interrupted write that may
// still parse). An empty directory is also a warning naming it.
//
// Functions are thread-safe (no shared state).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/diagnostics.h"
#include "config/spec.h"
#include "scheduler/model/policy.h"

namespace taskgov::config {

struct SourceFile {
  std::string name;  // the file's name in the directory
  std::string content;
};

struct DirectorySnapshot {
  std::vector<SourceFile> files;   // sorted by name
  std::vector<Diagnostic> errors;  // unreadable directory or files
  std::string data_target;         // where `..data` pointed, when present
  std::string dir;                 // the directory read
};

struct LoadResult {
  // The validated policy, finalized; nullptr when any error was reported.
  scheduler::model::PolicyPtr policy;
  // What resolution built, even with errors (the erroneous parts left out): for check-config.
  scheduler::model::PolicyPtr draft;
  std::vector<Diagnostic> diagnostics;  // errors and warnings, file by file
  std::vector<std::string> files;       // the files read, sorted
  std::map<std::string, int> document_counts;
  std::string content_hash;  // of the files' names and contents

  [[nodiscard]] bool ok() const { return policy != nullptr; }
  [[nodiscard]] size_t error_count() const;
  [[nodiscard]] size_t warning_count() const;
  // A diagnostic as one line, mentioning the document index only for multi-document files.
  [[nodiscard]] std::string Format(const Diagnostic& d) const;
  // The first error as one line; empty when there is none.
  [[nodiscard]] std::string FirstError() const;
};

[[nodiscard]] DirectorySnapshot ReadConfigDirectory(const std::string& dir);
// A stable hash of the files' names and contents (16 hex digits).
[[nodiscard]] std::string ContentHash(const std::vector<SourceFile>& files);
[[nodiscard]] LoadResult LoadSources(const std::vector<SourceFile>& files);
// The first half of LoadSources: every document of every file (in name order) parsed and decoded
// in its dialect into one ConfigSet, before resolution — what a tool needs to see where a value
// came from (each element keeps its Origin). Parse and decode problems go to `diagnostics`;
// `document_counts`, when given, receives each file's number of documents.
[[nodiscard]] ConfigSet DecodeSources(const std::vector<SourceFile>& files,
                                      Diagnostics* diagnostics,
                                      std::map<std::string, int>* document_counts = nullptr);
// LoadSources of the snapshot's files, with its read errors added (which refuse the policy).
// `in_force`, when given, holds the files of the policy in force: a file that is now a strict
// prefix of its version there (with more than blanks cut off) is an error.
[[nodiscard]] LoadResult LoadSnapshot(const DirectorySnapshot& snapshot,
                                      const std::vector<SourceFile>* in_force = nullptr);
// The errors of files that shrank to a prefix of their version in `in_force`.
[[nodiscard]] std::vector<Diagnostic> TruncationErrors(const std::vector<SourceFile>& files,
                                                       const std::vector<SourceFile>& in_force);
[[nodiscard]] LoadResult LoadDirectory(const std::string& dir);

}  // namespace taskgov::config
