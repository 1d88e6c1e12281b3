#pragma once

// Browser: one headless Chromium driven over the DevTools protocol, for the console's browser
// tests. Test support.
//
// Chromium is started with --remote-debugging-pipe: it reads protocol messages (JSON, each
// ended by a NUL byte) on its fd 3 and writes replies and events on its fd 4. One page target is
// opened and attached (flattened session) at Start(); every call goes to it. So a test keeps one
// browser process for all its pages — navigating by URL or by the hash the console routes on —
// evaluates JavaScript in the page (the console's own DOM is the truth a test reads), changes
// the viewport, and takes screenshots.
//
// Console messages, uncaught exceptions and browser log entries (failed requests, CSP
// violations) are collected as the events arrive; Messages() returns them, ClearMessages() drops
// them (before a phase whose failures are expected).
//
// Every wait is bounded: a call that gets no reply within its timeout fails (the process is then
// killed). The destructor closes the browser and ends the process it started, by its pid.
// Thread-compatible: one test thread drives it.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "scheduler/common/result.h"

namespace taskgov::e2e {

class Browser {
 public:
  // Starts `chromium` with a fresh profile under `profile_dir` and a `width` x `height` window,
  // and opens a blank page.
  [[nodiscard]] static common::Result<std::unique_ptr<Browser>> Start(
      const std::string& chromium, const std::string& profile_dir, int width = 1366,
      int height = 900);
  ~Browser();
  Browser(const Browser&) = delete;
  Browser& operator=(const Browser&) = delete;

  // Loads `url` (Page.navigate) and waits until the document has loaded.
  [[nodiscard]] common::Status Navigate(const std::string& url);
  // Evaluates `expression` in the page (a promise is awaited); its value as JSON. An exception
  // thrown by the expression is an error with its text.
  [[nodiscard]] common::Result<rapidjson::Document> Evaluate(
      const std::string& expression, std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // The value of `expression` as a string (JSON.stringify of anything else); "" on error, with
  // the error in *error when given.
  [[nodiscard]] std::string Text(const std::string& expression, std::string* error = nullptr);
  // The page's viewport, as a device of that size would have it.
  [[nodiscard]] common::Status SetViewport(int width, int height);
  // A PNG of the viewport (full_page: of the whole page) written to `path`.
  [[nodiscard]] common::Status Screenshot(const std::string& path, bool full_page = false);

  // Console messages ("console.<type>: text"), uncaught exceptions ("exception: text") and
  // browser log entries ("log.<level>: text (url)") since the start or the last ClearMessages.
  [[nodiscard]] std::vector<std::string> Messages();
  void ClearMessages();

  [[nodiscard]] pid_t pid() const { return pid_; }

 private:
  Browser() = default;
  // Sends a command (to the page's session unless `browser_level`) and waits for its reply;
  // the reply's "result" object. Events that arrive meanwhile are collected.
  common::Result<rapidjson::Document> Call(
      const std::string& method, const std::string& params, bool browser_level = false,
      std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Reads one message; false at the deadline or when the pipe closed.
  bool ReadMessage(std::chrono::steady_clock::time_point deadline, std::string* message);
  void Collect(const rapidjson::Document& event);
  void Stop();

  pid_t pid_ = -1;
  int to_browser_ = -1;
  int from_browser_ = -1;
  int next_id_ = 1;
  std::string session_;
  std::string buffer_;  // bytes read, not yet a whole message
  std::vector<std::string> messages_;
};

// The console (extender/console) at `route` ("dashboard", "tasks?team=a"), freshly rendered: its
// hash set — or, when the page is there already, render() called — and a render of that route
// finished, successful or not (every render sets the body's data-route). Bounded: 15 s; the
// error says what the page shows instead.
[[nodiscard]] common::Status ShowConsoleRoute(Browser& browser, const std::string& route);

// Decodes standard base64 (the protocol's binary fields); nullopt on a malformed input.
[[nodiscard]] std::optional<std::string> DecodeBase64(std::string_view text);

}  // namespace taskgov::e2e
