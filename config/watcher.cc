#include "config/watcher.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>

#include "scheduler/common/log.h"

namespace taskgov::config {

namespace {

constexpr std::string_view kComponent = "config";
constexpr size_t kLoggedDiagnostics = 20;
constexpr uint32_t kWatchMask = IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM |
                                IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF |
                                IN_MOVE_SELF | IN_ONLYDIR;

using Clock = std::chrono::steady_clock;

// The content hash, with read errors folded in so that a file becoming readable is a change.
std::string SnapshotHash(const DirectorySnapshot& snapshot) {
  std::string hash = ContentHash(snapshot.files);
  for (const Diagnostic& e : snapshot.errors) hash += "|" + e.file + ":" + e.message;
  return hash;
}

}  // namespace

ConfigWatcher::ConfigWatcher(PolicyStore* store, WatcherOptions options)
    : store_(store), options_(std::move(options)) {
  if (!options_.sleep) {
    options_.sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  }
  if (!options_.now_unix_ms) {
    options_.now_unix_ms = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  }
}

ConfigWatcher::~ConfigWatcher() { Stop(); }

int64_t ConfigWatcher::Now() const { return options_.now_unix_ms(); }

LoadResult ConfigWatcher::Attempt(const DirectorySnapshot& snapshot, const std::string& hash) {
  LoadResult result = LoadSnapshot(snapshot, published_ ? &in_force_ : nullptr);
  last_attempt_hash_ = hash;
  attempted_ = true;
  if (result.ok()) {
    in_force_ = snapshot.files;
    published_ = true;
  }
  const int64_t now = Now();
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    status_.attempts++;
    status_.last_attempt_unix_ms = now;
    status_.last_error_count = result.error_count();
    status_.last_warning_count = result.warning_count();
    if (result.ok()) {
      status_.successes++;
      status_.last_success = true;
      status_.last_success_unix_ms = now;
      status_.last_error.clear();
      status_.current_hash = result.policy->source_hash;
    } else {
      status_.failures++;
      status_.last_success = false;
      status_.last_error = result.FirstError();
    }
  }
  size_t logged = 0;
  for (const Diagnostic& d : result.diagnostics) {
    if (logged++ == kLoggedDiagnostics) break;
    if (d.severity == Severity::kError) {
      common::log::Error(kComponent, "configuration error",
                         {{"dir", options_.dir}, {"error", result.Format(d)}});
    } else {
      common::log::Warn(kComponent, "configuration warning",
                        {{"dir", options_.dir}, {"warning", result.Format(d)}});
    }
  }
  if (result.ok()) store_->Publish(result.policy);
  // Observers first (the metrics): whoever reads the log line then sees the reload counted.
  if (options_.on_reload) options_.on_reload(result);
  if (result.ok()) {
    common::log::Info(kComponent, "configuration loaded",
                      {{"dir", options_.dir},
                       {"hash", result.policy->source_hash},
                       {"files", static_cast<uint64_t>(result.files.size())},
                       {"teams", static_cast<uint64_t>(result.policy->teams.size())},
                       {"warnings", static_cast<uint64_t>(result.warning_count())}});
  } else {
    common::log::Error(
        kComponent, "invalid configuration refused; the previous one stays in force",
        {{"dir", options_.dir},
         {"hash", hash},
         {"errors", static_cast<uint64_t>(result.error_count())},
         {"first_error", result.FirstError()},
         {"teams_in_force", static_cast<uint64_t>(store_->Current()->teams.size())}});
  }
  return result;
}

void ConfigWatcher::WaitUntilStable(DirectorySnapshot* snapshot, std::string* hash) {
  if (options_.settle.count() <= 0) return;
  const Clock::time_point deadline = Clock::now() + options_.settle_timeout;
  while (true) {
    options_.sleep(options_.settle);
    DirectorySnapshot again = ReadConfigDirectory(options_.dir);
    std::string again_hash = SnapshotHash(again);
    const bool stable = again_hash == *hash;
    *snapshot = std::move(again);
    *hash = std::move(again_hash);
    if (stable) return;
    if (Clock::now() >= deadline) break;
  }
  snapshot->errors.push_back(Diagnostic{
      Severity::kError, "", -1, "", Mark{},
      "the configuration was still changing after " +
          std::to_string(options_.settle_timeout.count()) +
          " ms (a write in progress?): not loaded; it is read again at the next change"});
  *hash += "|unsettled";
}

LoadResult ConfigWatcher::Reload() {
  std::lock_guard<std::mutex> lock(reload_mu_);
  DirectorySnapshot snapshot = ReadConfigDirectory(options_.dir);
  std::string hash = SnapshotHash(snapshot);
  WaitUntilStable(&snapshot, &hash);
  return Attempt(snapshot, hash);
}

void ConfigWatcher::RequestReload() {
  if (!thread_.joinable()) {
    (void)Reload();
    return;
  }
  reload_requested_.store(true, std::memory_order_release);  // read after the wake-up
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

bool ConfigWatcher::CheckForChanges() {
  std::lock_guard<std::mutex> lock(reload_mu_);
  DirectorySnapshot snapshot = ReadConfigDirectory(options_.dir);
  std::string hash = SnapshotHash(snapshot);
  {
    std::lock_guard<std::mutex> status_lock(status_mu_);
    status_.checks++;
  }
  if (attempted_ && hash == last_attempt_hash_) return false;
  WaitUntilStable(&snapshot, &hash);
  if (attempted_ && hash == last_attempt_hash_) return false;  // changed back meanwhile
  (void)Attempt(snapshot, hash);
  return true;
}

bool ConfigWatcher::AddWatch() {
  if (inotify_fd_ < 0) return false;
  watch_ = inotify_add_watch(inotify_fd_, options_.dir.c_str(), kWatchMask);
  return watch_ >= 0;
}

common::Status ConfigWatcher::Start() {
  if (thread_.joinable()) return common::Status::Ok();
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return common::Error{std::string("eventfd: ") + std::strerror(errno)};
  if (options_.use_inotify) {
    inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_fd_ < 0) {
      const std::string why = std::strerror(errno);
      Stop();
      return common::Error{"inotify_init1: " + why};
    }
    if (!AddWatch()) {
      const std::string why = std::strerror(errno);
      Stop();
      return common::Error{"cannot watch config directory '" + options_.dir + "': " + why};
    }
  }
  stop_requested_.store(false, std::memory_order_relaxed);  // before the thread exists
  thread_ = std::thread([this] {
    if (options_.nice != 0) {
      (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), options_.nice);
    }
    Run();
  });
  return common::Status::Ok();
}

void ConfigWatcher::Stop() {
  if (thread_.joinable()) {
    stop_requested_.store(true, std::memory_order_release);  // read after the wake-up
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
    thread_.join();
  }
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  inotify_fd_ = -1;
  wake_fd_ = -1;
  watch_ = -1;
}

void ConfigWatcher::Run() {
  Clock::time_point next_poll = Clock::now() + options_.poll_interval;
  bool pending = false;  // a change was seen; reload at pending_at (debounce)
  Clock::time_point pending_at{};
  alignas(inotify_event) char buffer[8192];
  while (true) {
    const Clock::time_point now = Clock::now();
    Clock::time_point deadline = next_poll;
    if (pending && pending_at < deadline) deadline = pending_at;
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
    const int nfds = inotify_fd_ >= 0 ? 2 : 1;
    const int ready =
        ::poll(fds, nfds, wait > 0 ? static_cast<int>(std::min<int64_t>(wait, 60000)) : 0);
    if (ready < 0 && errno != EINTR) {
      common::log::Error(kComponent, "poll failed", {{"error", std::strerror(errno)}});
    }
    if (ready > 0 && (fds[0].revents & POLLIN)) {
      uint64_t count = 0;
      (void)!::read(wake_fd_, &count, sizeof count);  // non-blocking; resets the eventfd
      if (stop_requested_.load(std::memory_order_acquire)) return;
      if (reload_requested_.exchange(false, std::memory_order_acq_rel)) {
        common::log::Info(kComponent, "reload requested", {{"dir", options_.dir}});
        (void)Reload();
        next_poll = Clock::now() + options_.poll_interval;
      }
    }
    if (ready > 0 && nfds == 2 && (fds[1].revents & POLLIN)) {
      bool changed = false;
      bool lost_watch = false;
      while (true) {
        const ssize_t n = ::read(inotify_fd_, buffer, sizeof buffer);
        if (n <= 0) break;
        for (ssize_t off = 0; off < n;) {
          const auto* event = reinterpret_cast<const inotify_event*>(buffer + off);
          changed = true;
          if (event->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) lost_watch = true;
          off += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
        }
      }
      if (lost_watch) {
        if (watch_ >= 0) inotify_rm_watch(inotify_fd_, watch_);
        watch_ = -1;
        (void)AddWatch();  // the directory may be back already; else the periodic check retries
      }
      if (changed) {
        pending = true;
        pending_at = Clock::now() + options_.debounce;
      }
    }
    const Clock::time_point after = Clock::now();
    if (pending && after >= pending_at) {
      pending = false;
      (void)CheckForChanges();
      next_poll = Clock::now() + options_.poll_interval;
    } else if (after >= next_poll) {
      if (inotify_fd_ >= 0 && watch_ < 0) (void)AddWatch();
      (void)CheckForChanges();
      next_poll = Clock::now() + options_.poll_interval;
    }
  }
}

ReloadStatus ConfigWatcher::status() const {
  std::lock_guard<std::mutex> lock(status_mu_);
  return status_;
}

}  // namespace taskgov::config
