#pragma once

// Helpers for config/ tests: loading inline documents, finding quota lines, matching diagnostics,
// temporary directories and a canonical text form of a policy's teams and quotas.

#include <string>
#include <utility>
#include <vector>

#include "config/loader.h"
#include "scheduler/model/policy.h"

namespace taskgov::config::testing {

// Loads the given (name, content) files.
LoadResult Load(const std::vector<std::pair<std::string, std::string>>& files);
// Loads one file named `name`.
LoadResult LoadOne(const std::string& name, const std::string& content);

// Every diagnostic, one per line, for failure messages.
std::string Dump(const LoadResult& result);

// True when some diagnostic has this severity and file, its path equals `path` (when not empty)
// and its message contains `text`.
bool HasDiagnostic(const LoadResult& result, Severity severity, const std::string& file,
                   const std::string& path, const std::string& text);

const scheduler::model::ResourceQuota* FindQuota(const scheduler::model::Policy& policy,
                                                 const std::string& team, const std::string& flavor,
                                                 const std::string& resource);

// A canonical text form of what the four dialects must agree on: per team (sorted by name) its
// weight, preemption policies, state, and per flavor (in order) per resource its nominal,
// borrowing and lending limits; then the partition of teams into cohorts (cohort names left out).
std::string ModelSummary(const scheduler::model::Policy& policy);

// A fresh directory under $TEST_TMPDIR, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }
  // Writes a file (relative name) with `content`.
  void Write(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

// Publishes `files` into `dir` the way the kubelet updates a mounted ConfigMap: writes them into a
// new timestamped directory `..<stamp>`, points a `..data_tmp` symlink at it, renames it over
// `..data`, makes sure each top-level `name -> ..data/name` symlink exists, removes the top-level
// symlinks of files that are gone, and deletes the previous timestamped directory.
void KubeletPublish(const std::string& dir,
                    const std::vector<std::pair<std::string, std::string>>& files,
                    const std::string& stamp);

// Reads a file of the source tree (a runfile), aborting the test binary when it is missing.
std::string ReadRunfile(const std::string& path);

}  // namespace taskgov::config::testing
