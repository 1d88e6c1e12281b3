#include "e2e/browser.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

namespace taskgov::e2e {
namespace {

using Clock = std::chrono::steady_clock;

// `text` as a JSON string literal.
std::string Quote(std::string_view text) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string Serialize(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  v.Accept(w);
  return std::string(buffer.GetString(), buffer.GetSize());
}

const rapidjson::Value* Member(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(name);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

std::string StringAt(const rapidjson::Value& v, const char* name) {
  const rapidjson::Value* m = Member(v, name);
  return m != nullptr && m->IsString() ? std::string(m->GetString(), m->GetStringLength()) : "";
}

bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Moves `fd` to a number >= 10, so that dup2 onto 3 and 4 cannot clobber the other pipe end.
int High(int fd) {
  const int high = ::fcntl(fd, F_DUPFD, 10);
  ::close(fd);
  return high;
}

}  // namespace

std::optional<std::string> DecodeBase64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    if (c == '=') break;
    const int v = value(c);
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  return out;
}

common::Result<std::unique_ptr<Browser>> Browser::Start(const std::string& chromium,
                                                        const std::string& profile_dir, int width,
                                                        int height) {
  int to[2], from[2];
  if (::pipe(to) != 0 || ::pipe(from) != 0) {
    return common::Error{std::string("pipe: ") + std::strerror(errno)};
  }
  const std::vector<std::string> args = {
      chromium,
      "--headless=new",
      "--remote-debugging-pipe",
      "--ignore-certificate-errors",  // the tests' self-signed console certificates
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-extensions",
      "--disable-background-networking",
      "--disable-sync",
      "--user-data-dir=" + profile_dir,
      "--window-size=" + std::to_string(width) + "," + std::to_string(height),
      "about:blank"};
  const std::string log = profile_dir + ".log";
  const pid_t pid = ::fork();
  if (pid < 0) return common::Error{std::string("fork: ") + std::strerror(errno)};
  if (pid == 0) {
    ::setpgid(0, 0);  // its renderers and helpers join its group, ended with it
    const int in = High(to[0]);
    const int out = High(from[1]);
    ::close(to[1]);
    ::close(from[0]);
    ::dup2(in, 3);
    ::dup2(out, 4);
    const int sink = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (sink >= 0) {
      ::dup2(sink, 1);
      ::dup2(sink, 2);
    }
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(chromium.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(to[0]);
  ::close(from[1]);
  ::fcntl(to[1], F_SETFD, FD_CLOEXEC);
  ::fcntl(from[0], F_SETFD, FD_CLOEXEC);
  std::unique_ptr<Browser> b(new Browser());
  b->pid_ = pid;
  b->to_browser_ = to[1];
  b->from_browser_ = from[0];
  common::Result<rapidjson::Document> target =
      b->Call("Target.createTarget", R"({"url":"about:blank"})", true, std::chrono::seconds(60));
  if (!target.ok()) {
    return common::Error{"chromium did not answer (" + target.error().message + "); its log is " +
                         log};
  }
  const std::string target_id = StringAt(*target, "targetId");
  common::Result<rapidjson::Document> attached = b->Call(
      "Target.attachToTarget", R"({"targetId":)" + Quote(target_id) + R"(,"flatten":true})", true);
  if (!attached.ok()) return attached.error();
  b->session_ = StringAt(*attached, "sessionId");
  for (const char* domain : {"Page.enable", "Runtime.enable", "Log.enable"}) {
    if (common::Result<rapidjson::Document> r = b->Call(domain, "{}"); !r.ok()) return r.error();
  }
  if (common::Status s = b->SetViewport(width, height); !s.ok()) return s.error();
  return b;
}

Browser::~Browser() { Stop(); }

void Browser::Stop() {
  if (pid_ <= 0) return;
  (void)Call("Browser.close", "{}", true, std::chrono::seconds(5));
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (Clock::now() >= deadline) {
      ::kill(-pid_, SIGKILL);  // the group this object started
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // bounded by the deadline
  }
  ::kill(-pid_, SIGKILL);  // helpers left in its group
  pid_ = -1;
  ::close(to_browser_);
  ::close(from_browser_);
}

bool Browser::ReadMessage(Clock::time_point deadline, std::string* message) {
  while (true) {
    const size_t end = buffer_.find('\0');
    if (end != std::string::npos) {
      *message = buffer_.substr(0, end);
      buffer_.erase(0, end + 1);
      return true;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{from_browser_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char chunk[65536];
    const ssize_t n = ::read(from_browser_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

common::Result<rapidjson::Document> Browser::Call(const std::string& method,
                                                  const std::string& params, bool browser_level,
                                                  std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return common::Error{"the browser is not running"};
  const int id = next_id_++;
  std::string message =
      R"({"id":)" + std::to_string(id) + R"(,"method":)" + Quote(method) + R"(,"params":)" + params;
  if (!browser_level) message += R"(,"sessionId":)" + Quote(session_);
  message += "}";
  message.push_back('\0');
  if (!WriteAll(to_browser_, message)) return common::Error{method + ": the pipe to it closed"};
  const auto deadline = Clock::now() + timeout;
  std::string reply;
  while (ReadMessage(deadline, &reply)) {
    rapidjson::Document doc;
    if (doc.Parse(reply.c_str()).HasParseError() || !doc.IsObject()) continue;
    const rapidjson::Value* reply_id = Member(doc, "id");
    if (reply_id == nullptr) {
      Collect(doc);
      continue;
    }
    if (!reply_id->IsInt() || reply_id->GetInt() != id) continue;
    if (const rapidjson::Value* error = Member(doc, "error")) {
      return common::Error{method + ": " + Serialize(*error)};
    }
    rapidjson::Document result;
    if (const rapidjson::Value* r = Member(doc, "result")) {
      result.CopyFrom(*r, result.GetAllocator());
    } else {
      result.SetObject();
    }
    return result;
  }
  return common::Error{method + ": no reply within " + std::to_string(timeout.count()) + " ms"};
}

void Browser::Collect(const rapidjson::Document& event) {
  const std::string method = StringAt(event, "method");
  const rapidjson::Value* params = Member(event, "params");
  if (params == nullptr) return;
  if (method == "Runtime.consoleAPICalled") {
    std::string text;
    if (const rapidjson::Value* args = Member(*params, "args"); args && args->IsArray()) {
      for (const rapidjson::Value& a : args->GetArray()) {
        const rapidjson::Value* v = Member(a, "value");
        text += (text.empty() ? "" : " ") + (v != nullptr && v->IsString()
                                                 ? std::string(v->GetString())
                                                 : StringAt(a, "description"));
      }
    }
    messages_.push_back("console." + StringAt(*params, "type") + ": " + text);
  } else if (method == "Runtime.exceptionThrown") {
    const rapidjson::Value* details = Member(*params, "exceptionDetails");
    const rapidjson::Value* exception = details ? Member(*details, "exception") : nullptr;
    messages_.push_back("exception: " + (exception ? StringAt(*exception, "description")
                                                   : (details ? StringAt(*details, "text") : "")));
  } else if (method == "Log.entryAdded") {
    const rapidjson::Value* entry = Member(*params, "entry");
    if (entry == nullptr) return;
    messages_.push_back("log." + StringAt(*entry, "level") + ": " + StringAt(*entry, "text") +
                        " (" + StringAt(*entry, "url") + ")");
  }
}

common::Status Browser::Navigate(const std::string& url) {
  common::Result<rapidjson::Document> r = Call("Page.navigate", R"({"url":)" + Quote(url) + "}");
  if (!r.ok()) return r.error();
  if (std::string failed = StringAt(*r, "errorText"); !failed.empty()) {
    return common::Error{"navigating to " + url + ": " + failed};
  }
  common::Result<rapidjson::Document> loaded = Evaluate(
      "new Promise(ok => { const t0 = Date.now(); (function wait() {"
      " if (document.readyState === 'complete') ok(true);"
      " else if (Date.now() - t0 > 15000) ok(false); else setTimeout(wait, 20); })(); })");
  if (!loaded.ok()) return loaded.error();
  if (!loaded->IsBool() || !loaded->GetBool()) {
    return common::Error{url + " did not finish loading within 15 s"};
  }
  return common::Status::Ok();
}

common::Result<rapidjson::Document> Browser::Evaluate(const std::string& expression,
                                                      std::chrono::milliseconds timeout) {
  common::Result<rapidjson::Document> r = Call(
      "Runtime.evaluate",
      R"({"expression":)" + Quote(expression) + R"(,"awaitPromise":true,"returnByValue":true})",
      false, timeout);
  if (!r.ok()) return r.error();
  if (const rapidjson::Value* e = Member(*r, "exceptionDetails")) {
    const rapidjson::Value* exception = Member(*e, "exception");
    return common::Error{"the page threw: " +
                         (exception ? StringAt(*exception, "description") : StringAt(*e, "text"))};
  }
  rapidjson::Document value;
  const rapidjson::Value* result = Member(*r, "result");
  const rapidjson::Value* v = result ? Member(*result, "value") : nullptr;
  if (v != nullptr) {
    value.CopyFrom(*v, value.GetAllocator());
  } else {
    value.SetNull();  // undefined
  }
  return value;
}

std::string Browser::Text(const std::string& expression, std::string* error) {
  common::Result<rapidjson::Document> v = Evaluate(expression);
  if (!v.ok()) {
    if (error != nullptr) *error = v.error().message;
    return "";
  }
  if (v->IsString()) return std::string(v->GetString(), v->GetStringLength());
  return Serialize(*v);
}

common::Status Browser::SetViewport(int width, int height) {
  common::Result<rapidjson::Document> r =
      Call("Emulation.setDeviceMetricsOverride", R"({"width":)" + std::to_string(width) +
                                                     R"(,"height":)" + std::to_string(height) +
                                                     R"(,"deviceScaleFactor":1,"mobile":false})");
  return r.ok() ? common::Status::Ok() : common::Status(r.error());
}

common::Status Browser::Screenshot(const std::string& path, bool full_page) {
  std::string params = R"({"format":"png")";
  if (full_page) {
    common::Result<rapidjson::Document> metrics = Call("Page.getLayoutMetrics", "{}");
    if (!metrics.ok()) return metrics.error();
    const rapidjson::Value* size = Member(*metrics, "cssContentSize");
    if (size == nullptr) return common::Error{"Page.getLayoutMetrics: no cssContentSize"};
    params += R"(,"captureBeyondViewport":true,"clip":{"x":0,"y":0,"width":)" +
              Serialize((*size)["width"]) + R"(,"height":)" + Serialize((*size)["height"]) +
              R"(,"scale":1})";
  }
  params += "}";
  common::Result<rapidjson::Document> shot = Call("Page.captureScreenshot", params);
  if (!shot.ok()) return shot.error();
  std::optional<std::string> png = DecodeBase64(StringAt(*shot, "data"));
  if (!png || png->empty()) return common::Error{"Page.captureScreenshot: no image"};
  std::ofstream out(path, std::ios::binary);
  out << *png;
  return out ? common::Status::Ok() : common::Error{"cannot write " + path};
}

std::vector<std::string> Browser::Messages() {
  // Events that arrived since the last call: read what is there without waiting.
  std::string message;
  while (ReadMessage(Clock::now() + std::chrono::milliseconds(1), &message)) {
    rapidjson::Document doc;
    if (!doc.Parse(message.c_str()).HasParseError() && doc.IsObject() && !doc.HasMember("id")) {
      Collect(doc);
    }
  }
  return messages_;
}

void Browser::ClearMessages() {
  (void)Messages();
  messages_.clear();
}

common::Status ShowConsoleRoute(Browser& browser, const std::string& route) {
  rapidjson::Value quoted;
  const std::string hash = "#/" + route;
  quoted.SetString(hash.c_str(), static_cast<rapidjson::SizeType>(hash.size()));
  const std::string h = Serialize(quoted);
  common::Result<rapidjson::Document> shown = browser.Evaluate(
      "new Promise(ok => { document.body.dataset.route = '';"
      " if (location.hash === " +
      h + ") render(); else location.hash = " + h +
      ";"
      " const t0 = Date.now(); (function wait() {"
      " if (document.body.dataset.route === " +
      h +
      ") ok(true);"
      " else if (Date.now() - t0 > 15000) ok(false); else setTimeout(wait, 20); })(); })");
  if (!shown.ok()) return common::Error{hash + ": " + shown.error().message};
  if (!shown->IsBool() || !shown->GetBool()) {
    return common::Error{hash + " did not render within 15 s; the page: " +
                         browser.Text("document.body.outerHTML.slice(0, 2000)")};
  }
  return common::Status::Ok();
}

}  // namespace taskgov::e2e
