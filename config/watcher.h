#pragma once

// ConfigWatcher: hot reload of the mounted ConfigMap directory (DESIGN §6).
//
// A background thread watches the directory with inotify — the kubelet updates a ConfigMap
// volume by writing a new `..<timestamp>` directory and renaming a `..data_tmp` symlink over
// `..data`, which shows up as IN_MOVED_TO in the watched directory; plain edits show up as
// IN_CLOSE_WRITE / IN_CREATE / IN_DELETE — and, as a safety net, compares a hash of the files'
// contents every `poll_interval`. Events are debounced (`debounce` after the last one). A change
// of content is then waited out until it is stable: the directory is read again `settle` later,
// and again, until two reads in a row have the same content hash (a ConfigMap update is atomic,
// so this costs one extra read; a directory written file by file, or a file written in several
// steps, is loaded only once the writer is done). Content that is still changing after
// `settle_timeout` is refused. Stable content is parsed and validated as a whole set, with the
// fail-safe rules of loader.h — including, once a policy is in force, that no file may shrink to
// a prefix of its version in force; a valid set is published to the PolicyStore atomically, an
// invalid one is logged and recorded while the last good snapshot stays in force. Content that
// was already tried (valid or not) is not re-parsed, except by Reload / RequestReload.
//
// RequestReload (SIGHUP) asks the watcher thread to Reload now, from any thread, without
// blocking.
//
// Observability: status() returns counters (checks, attempts, successes, failures), whether the
// last attempt succeeded, timestamps (from the injectable wall clock) and the first error, for the
// metrics exporter; `on_reload` is called after every attempt with the full LoadResult. The
// watcher logs every attempt itself (each diagnostic, then loaded or refused): on_reload need not.
//
// Thread-safety: Reload(), CheckForChanges() and the watcher thread are serialised by one mutex;
// status() and RequestReload() may be called from any thread. on_reload runs on the thread that
// made the attempt (the watcher thread, or the caller of Reload / CheckForChanges) while that mutex
// is held, so it must not call back into the watcher. Stop() (and the destructor) wake the thread
// and join it.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/loader.h"
#include "config/policy_store.h"
#include "scheduler/common/result.h"

namespace taskgov::config {

struct ReloadStatus {
  // Examinations of the directory by CheckForChanges (the debounced inotify trigger, the
  // periodic check, or a caller): each reads and hashes the files, and loads them when the
  // content changed. A burst of events within the debounce window is one check.
  uint64_t checks = 0;
  uint64_t attempts = 0;   // loads of new content (and explicit Reload calls)
  uint64_t successes = 0;  // published
  uint64_t failures = 0;   // refused; the previous snapshot stayed
  bool last_success = false;
  int64_t last_attempt_unix_ms = 0;
  int64_t last_success_unix_ms = 0;
  std::string last_error;  // the first error of the last failed attempt
  size_t last_error_count = 0;
  size_t last_warning_count = 0;
  std::string current_hash;  // content hash of the published snapshot
};

struct WatcherOptions {
  std::string dir;
  // The periodic content check.
  std::chrono::milliseconds poll_interval{std::chrono::seconds(10)};
  // Quiet time after the last inotify event before reloading.
  std::chrono::milliseconds debounce{std::chrono::milliseconds(200)};
  // Interval between the reads that must agree before changed content is loaded (0: one read),
  // and how long to wait for agreement before refusing the content as still changing.
  std::chrono::milliseconds settle{std::chrono::milliseconds(200)};
  std::chrono::milliseconds settle_timeout{std::chrono::seconds(5)};
  // How the watcher waits `settle` between reads; defaults to sleeping. (Tests write to the
  // directory from here to play a writer that is not done yet.)
  std::function<void(std::chrono::milliseconds)> sleep;
  // false: rely on the periodic check only (tests; file systems without inotify).
  bool use_inotify = true;
  // Wall clock for the status timestamps (Unix milliseconds); defaults to the system clock.
  std::function<int64_t()> now_unix_ms;
  // Called after every attempt, valid or not.
  std::function<void(const LoadResult&)> on_reload;
  // The watcher thread's nice value (Linux: setpriority on its thread id). A reload parses,
  // validates and builds a policy generation — seconds of CPU for a 1 MiB ConfigMap — on this
  // thread; a positive value keeps that from taking CPU from the webhooks (the ledger swap that
  // ends it is short: ledger.h). 0: the process's own.
  int nice = 0;
};

class ConfigWatcher {
 public:
  ConfigWatcher(PolicyStore* store, WatcherOptions options);
  ~ConfigWatcher();
  ConfigWatcher(const ConfigWatcher&) = delete;
  ConfigWatcher& operator=(const ConfigWatcher&) = delete;

  // Reads the directory (once stable) and validates it now, whatever its hash, and publishes it
  // when valid. Use it for the initial load before Start().
  LoadResult Reload();
  // Asks for a Reload on the watcher thread (a SIGHUP); returns at once. Without a running
  // thread, reloads on the caller's. Thread-safe.
  void RequestReload();
  // Reloads only when the content differs from the last attempt. Returns whether it did.
  bool CheckForChanges();
  // Starts the watcher thread. An error when inotify cannot be set up (the directory missing);
  // with use_inotify false it cannot fail.
  [[nodiscard]] common::Status Start();
  // Stops and joins the thread; idempotent.
  void Stop();

  [[nodiscard]] ReloadStatus status() const;

 private:
  LoadResult Attempt(const DirectorySnapshot& snapshot, const std::string& hash);
  // Reads the directory again every `settle` until two reads agree, starting from `snapshot`
  // (read already, with `hash`); content still changing at `settle_timeout` gets an error.
  void WaitUntilStable(DirectorySnapshot* snapshot, std::string* hash);
  void Run();
  bool AddWatch();
  int64_t Now() const;

  PolicyStore* store_;
  WatcherOptions options_;

  std::mutex reload_mu_;              // serialises attempts
  std::string last_attempt_hash_;     // guarded by reload_mu_
  bool attempted_ = false;            // guarded by reload_mu_
  std::vector<SourceFile> in_force_;  // guarded by reload_mu_: the files last published
  bool published_ = false;            // guarded by reload_mu_
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> reload_requested_{false};

  mutable std::mutex status_mu_;
  ReloadStatus status_;  // guarded by status_mu_

  int inotify_fd_ = -1;
  int watch_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
};

}  // namespace taskgov::config
