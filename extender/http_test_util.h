#pragma once

// Test support for the HTTP server tests and benchmarks: runfiles paths of the TLS test
// certificates, bounded waits on conditions, and raw sockets for clients that misbehave on
// purpose. Thread-safety: free functions without shared state.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

namespace taskgov::extender::testing {

// The path of extender/testdata/tls/<name> in the runfiles of a test (TEST_SRCDIR) or of a
// `bazel run` binary (whose working directory is the workspace's runfiles root).
inline std::string TlsTestFile(std::string_view name) {
  std::string path = "extender/testdata/tls/" + std::string(name);
  if (const char* srcdir = std::getenv("TEST_SRCDIR")) {
    return std::string(srcdir) + "/taskgov/" + path;
  }
  return path;
}

inline std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Replaces `path` atomically (write a sibling, rename over), as the kubelet's secret volume does.
inline bool WriteFileAtomically(const std::filesystem::path& path, const std::string& content) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

// Polls `condition` until it holds or `limit` passed; returns its last value. For conditions
// with no event to wait on (counters the server bumps after the client saw the outcome).
inline bool Eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A blocking TCP connection to 127.0.0.1:port whose reads give up after `read_timeout`.
inline int RawConnect(uint16_t port,
                      std::chrono::milliseconds read_timeout = std::chrono::seconds(10)) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(read_timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((read_timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Reads until the peer closes the connection (or an error / the read timeout). `closed` tells
// which: true for an orderly close or reset by the peer, false for the timeout.
inline std::string ReadUntilClosed(int fd, bool* closed = nullptr) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (closed != nullptr) *closed = n == 0 || errno == ECONNRESET;
    return out;
  }
}

}  // namespace taskgov::extender::testing
