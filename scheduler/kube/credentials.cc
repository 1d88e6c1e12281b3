#include "scheduler/kube/credentials.h"
#include "scheduler/common/base64.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "scheduler/common/log.h"
#include "scheduler/common/time_format.h"
#include "scheduler/kube/watch_decoder.h"

extern char** environ;

namespace taskgov::scheduler::kube {
namespace {

constexpr std::string_view kComponent = "kube-credentials";
constexpr size_t kMaxProcessOutput = 1024 * 1024;

std::string TrimToken(std::string token) {
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  return token;
}

std::string ExecInfo(const ClusterConfig& config) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("apiVersion");
  w.String(config.exec->api_version.c_str());
  w.Key("kind");
  w.String("ExecCredential");
  w.Key("spec");
  w.StartObject();
  w.Key("interactive");
  w.Bool(false);
  if (config.exec->provide_cluster_info) {
    w.Key("cluster");
    w.StartObject();
    w.Key("server");
    w.String(config.server.c_str());
    if (!config.tls_server_name.empty()) {
      w.Key("tls-server-name");
      w.String(config.tls_server_name.c_str());
    }
    if (config.insecure_skip_tls_verify) {
      w.Key("insecure-skip-tls-verify");
      w.Bool(true);
    }
    if (!config.ca_pem.empty()) {
      w.Key("certificate-authority-data");
      const std::string data = common::Base64Encode(config.ca_pem);
      w.String(data.c_str());
    }
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  return buffer.GetString();
}

// The status of an ExecCredential.
struct ExecStatus {
  std::string token;
  std::string cert;
  std::string key;
  std::string expiry;  // RFC 3339; "" when none
};

// Decodes an exec plugin's output: an ExecCredential of `api_version` whose status has a token, a
// client certificate and key, or both. Errors are prefixed by `what`.
common::Result<ExecStatus> DecodeExecCredential(const std::string& out,
                                                const std::string& api_version,
                                                const std::string& what) {
  rapidjson::Document doc;
  doc.Parse(out.data(), out.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return common::Error{what + ": output is not a JSON object"};
  }
  common::Result<std::string> api =
      OptionalJsonString(doc, "apiVersion", "ExecCredential.apiVersion");
  if (!api.ok()) return api.error().Wrap(what);
  if (*api != api_version) {
    return common::Error{what + ": apiVersion '" + *api + "' does not match the configured '" +
                         api_version + "'"};
  }
  common::Result<std::string> kind = OptionalJsonString(doc, "kind", "ExecCredential.kind");
  if (!kind.ok()) return kind.error().Wrap(what);
  if (*kind != "ExecCredential")
    return common::Error{what + ": kind '" + *kind + "', want ExecCredential"};
  const rapidjson::Value* status = JsonMember(doc, "status");
  if (status == nullptr || !status->IsObject()) return common::Error{what + ": missing status"};
  common::Result<std::string> token = OptionalJsonString(*status, "token", "status.token");
  common::Result<std::string> cert =
      OptionalJsonString(*status, "clientCertificateData", "status.clientCertificateData");
  common::Result<std::string> key =
      OptionalJsonString(*status, "clientKeyData", "status.clientKeyData");
  common::Result<std::string> expiry =
      OptionalJsonString(*status, "expirationTimestamp", "status.expirationTimestamp");
  for (const common::Result<std::string>* r : {&token, &cert, &key, &expiry}) {
    if (!r->ok()) return r->error().Wrap(what);
  }
  if (cert->empty() != key->empty()) {
    return common::Error{what +
                         ": status.clientCertificateData and status.clientKeyData go together"};
  }
  if (token->empty() && cert->empty()) {
    return common::Error{what + ": status has neither a token nor a client certificate"};
  }
  return ExecStatus{std::move(*token), std::move(*cert), std::move(*key), std::move(*expiry)};
}

}  // namespace

CredentialProvider::CredentialProvider(const ClusterConfig& config, CredentialOptions options)
    : config_(config),
      options_(options),
      clock_(options.clock != nullptr ? options.clock : common::SystemClock::Get()) {
  current_.token = config_.token;
  SetCert(config_.client_cert_pem, config_.client_key_pem);
}

void CredentialProvider::SetCert(std::string cert, std::string key) {
  if (cert == current_.client_cert_pem && key == current_.client_key_pem) return;
  current_.client_cert_pem = std::move(cert);
  current_.client_key_pem = std::move(key);
  ++current_.tls_generation;
}

common::Result<Credentials> CredentialProvider::Get() {
  std::lock_guard<std::mutex> lock(mu_);
  const common::Clock::SteadyTime now = clock_->SteadyNow();
  if (config_.exec) {
    const bool expired = exec_expiry_micros_ && clock_->WallNowMicros() >= *exec_expiry_micros_;
    if (!exec_valid_ || stale_ || expired) {
      stale_ = false;
      if (common::Status s = RunExec(); !s.ok()) {
        ++stats_.exec_errors;
        exec_valid_ = false;
        return s.error();
      }
    }
    return current_;
  }
  if (!config_.token_file.empty() &&
      (!token_loaded_ || stale_ || now - token_read_at_ >= options_.token_reread_interval)) {
    stale_ = false;
    token_read_at_ = now;
    ++stats_.token_file_reads;
    common::Result<std::string> token = ReadFile(config_.token_file, "token file");
    if (token.ok() && !TrimToken(*token).empty()) {
      current_.token = TrimToken(*token);
      token_loaded_ = true;
    } else {
      ++stats_.token_file_errors;
      const std::string why =
          token.ok() ? "token file '" + config_.token_file + "' is empty" : token.error().message;
      if (!token_loaded_ && current_.token.empty()) return common::Error{why};
      common::log::Warn(kComponent, "keeping the previous token", {{"error", why}});
    }
  }
  return current_;
}

void CredentialProvider::Invalidate(const std::string& rejected_token) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.invalidations;
  if (rejected_token == current_.token) stale_ = true;
}

CredentialStats CredentialProvider::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

common::Status CredentialProvider::RunExec() {
  const ExecConfig& exec = *config_.exec;
  ++stats_.exec_runs;
  std::vector<std::pair<std::string, std::string>> env = exec.env;
  env.emplace_back("KUBERNETES_EXEC_INFO", ExecInfo(config_));
  const std::string what = "exec credential plugin '" + exec.command + "'";
  common::Result<ProcessOutput> run =
      RunProcess(exec.command, exec.args, env, options_.exec_timeout);
  if (!run.ok()) {
    std::string message = run.error().message;
    if (!exec.install_hint.empty()) message += " (" + exec.install_hint + ")";
    return common::Error{message}.Wrap(what);
  }
  if (run->exit_code != 0) {
    std::string err = run->err.substr(0, 512);
    return common::Error{what + ": exited with status " + std::to_string(run->exit_code) +
                         (err.empty() ? "" : ": " + TrimToken(err))};
  }
  common::Result<ExecStatus> status = DecodeExecCredential(run->out, exec.api_version, what);
  if (!status.ok()) return status.error();
  exec_expiry_micros_.reset();
  if (!status->expiry.empty()) {
    common::Result<int64_t> micros = common::ParseRfc3339Micros(status->expiry);
    if (!micros.ok()) return micros.error().Wrap(what + ": status.expirationTimestamp");
    exec_expiry_micros_ = *micros;
  }
  current_.token = status->token;
  if (!status->cert.empty()) {
    SetCert(status->cert, status->key);
  } else {
    SetCert(config_.client_cert_pem, config_.client_key_pem);
  }
  exec_valid_ = true;
  return common::Status::Ok();
}

namespace {

// This process's environment with `env` set over it, as sorted "name=value" strings.
std::vector<std::string> MergedEnvironment(
    const std::vector<std::pair<std::string, std::string>>& env) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    vars[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  for (const auto& [k, v] : env) vars[k] = v;
  std::vector<std::string> env_strings;
  env_strings.reserve(vars.size());
  for (const auto& [k, v] : vars) env_strings.push_back(k + "=" + v);
  return env_strings;
}

// The strings as a null-terminated char* array (argv, envp); valid while `strings` lives.
std::vector<char*> NullTerminated(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Starts `command` (looked up in PATH) with stdin from /dev/null and stdout / stderr into pipes
// whose read ends are stored in out_err[0] / out_err[1]; the caller closes them. Nothing is left
// open on failure.
common::Result<pid_t> Spawn(const std::string& command, std::vector<char*>& argv,
                            std::vector<char*>& envp, int out_err[2]) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    return common::Error{std::string("pipe: ") + strerror(errno)};
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return common::Error{std::string("pipe: ") + strerror(errno)};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, command.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return common::Error{"cannot run '" + command + "': " + strerror(rc)};
  }
  out_err[0] = out_pipe[0];
  out_err[1] = err_pipe[0];
  return pid;
}

// Reads fds[0] into *out and fds[1] into *err (each up to kMaxProcessOutput; the rest is
// dropped) until both end or `timeout` passes, and closes them. Returns false on timeout.
bool ReadOutputs(int fds[2], std::chrono::milliseconds timeout, std::string* out,
                 std::string* err) {
  std::string* sinks[2] = {out, err};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  while (fds[0] >= 0 || fds[1] >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfds[2];
    int n = 0;
    int index[2];
    for (int i = 0; i < 2; ++i) {
      if (fds[i] >= 0) {
        pfds[n] = pollfd{fds[i], POLLIN, 0};
        index[n++] = i;
      }
    }
    int ready = ::poll(pfds, static_cast<nfds_t>(n), static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    for (int j = 0; j < n; ++j) {
      if (pfds[j].revents == 0) continue;
      const int i = index[j];
      char buf[4096];
      ssize_t got = ::read(fds[i], buf, sizeof(buf));
      if (got <= 0) {
        ::close(fds[i]);
        fds[i] = -1;
      } else if (sinks[i]->size() < kMaxProcessOutput) {
        sinks[i]->append(buf, static_cast<size_t>(got));
      }
    }
  }
  for (int i = 0; i < 2; ++i) {
    if (fds[i] >= 0) ::close(fds[i]);
  }
  return !timed_out;
}

}  // namespace

common::Result<ProcessOutput> RunProcess(
    const std::string& command, const std::vector<std::string>& args,
    const std::vector<std::pair<std::string, std::string>>& env,
    std::chrono::milliseconds timeout) {
  std::vector<std::string> env_strings = MergedEnvironment(env);
  std::vector<char*> envp = NullTerminated(env_strings);
  std::vector<std::string> argv_strings;
  argv_strings.push_back(command);
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv = NullTerminated(argv_strings);

  int fds[2];
  common::Result<pid_t> pid = Spawn(command, argv, envp, fds);
  if (!pid.ok()) return pid.error();
  ProcessOutput output;
  const bool timed_out = !ReadOutputs(fds, timeout, &output.out, &output.err);
  if (timed_out) ::kill(*pid, SIGKILL);
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return common::Error{"'" + command + "' did not finish within " +
                         std::to_string(timeout.count()) + " ms"};
  }
  if (WIFEXITED(status)) {
    output.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    output.exit_code = 128 + WTERMSIG(status);
  }
  return output;
}

}  // namespace taskgov::scheduler::kube
