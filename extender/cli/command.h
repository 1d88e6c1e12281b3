#pragma once

// The CLI's command framework: a tree of Commands (groups and leaves), each with its flags,
// argument count, accepted output formats, help text and example; one dispatcher that parses,
// checks the kubectl-style global flags, prints help (`--help`, `-h`, `help CMD`) and runs the
// leaf; and shell completion generated from the same tree, so a command added later (the job and
// live commands of issue 13) gets help, usage errors and completion by being added to the tree.
//
// Exit codes: 0 ok, 1 the operation failed, 2 usage (printed as "error: ..." and a pointer to
// the command's --help). Thread-compatible: one Cli runs one command line at a time.

#include <chrono>
#include <functional>
#include <istream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "extender/cli/args.h"
#include "extender/cli/configmap_store.h"
#include "extender/cli/render.h"
#include "scheduler/common/result.h"

namespace taskgov::scheduler::kube {
class KubeClient;
}

namespace taskgov::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

// The kubectl flags every command accepts, decoded.
struct GlobalOptions {
  std::string kubeconfig;
  std::string context;
  std::vector<std::string> namespaces;  // -n, repeatable
  bool all_namespaces = false;
  std::string as;
  // Per API request; unset: 30 s. kubectl's "0" (no timeout) is a day.
  std::optional<std::chrono::milliseconds> request_timeout;
  OutputFormat output = OutputFormat::kTable;
  ConfigMapRef configmap;
  // The extender's admin API: its Service through the API server's service proxy, or a URL.
  ConsoleRef console;
};

// What a command may touch: its streams and the way to reach the policy ConfigMap.
struct Environment {
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  // Where a command that asks before it writes reads the answer (a take-over); null, or not
  // `interactive` (stdin is no terminal): nobody to ask, so such a command needs --yes.
  std::istream* in = nullptr;
  bool interactive = false;
  std::string program = "taskgov";  // "kubectl taskgov" when run as the kubectl plugin
  std::function<common::Result<std::unique_ptr<ConfigMapStore>>(const GlobalOptions&)> connect;
  // The API server with the user's credentials (jobs, pods, discovery, the service proxy); for
  // ConsoleRef::url, a client of that URL with the same credentials.
  std::function<common::Result<std::unique_ptr<scheduler::kube::KubeClient>>(
      const GlobalOptions&, const std::string& server_url)>
      kube;
};

class Cli;

struct Invocation {
  const ParsedArgs& args;
  const GlobalOptions& global;
  Environment& env;
  std::string command_path;  // "quota create"
  const Cli& cli;            // the tree the command belongs to (completion prints it)

  [[nodiscard]] std::ostream& out() const { return *env.out; }
  [[nodiscard]] std::ostream& err() const { return *env.err; }
  // Prints a usage error for this command and returns kExitUsage.
  int Usage(const std::string& message) const;
  // Prints "error: message" and returns kExitFailed.
  int Failed(const std::string& message) const;
};

struct Command {
  std::string name;
  std::string summary;      // one line, for the parent's list
  std::string args;         // "TEAM", "DIR", "bash|zsh"
  std::string description;  // paragraphs for --help; may be empty
  std::string example;      // lines, each a command line or a "# comment"
  std::vector<FlagSpec> flags;
  size_t min_args = 0;
  size_t max_args = 0;
  std::vector<OutputFormat> formats;          // the first is the default; empty: no -o
  std::function<int(const Invocation&)> run;  // empty: a group
  std::vector<Command> children;
};

class Cli {
 public:
  explicit Cli(Command root);
  [[nodiscard]] int Run(const std::vector<std::string>& argv, Environment& env) const;
  // The completion script for `shell` ("bash" or "zsh"; for `taskgov` and `kubectl-taskgov`);
  // empty for another shell.
  [[nodiscard]] std::string Completion(std::string_view shell) const;
  [[nodiscard]] const std::vector<FlagSpec>& global_flags() const { return global_; }

 private:
  struct Node {
    const Command* command;
    CommandNode parse;
    std::vector<std::unique_ptr<Node>> children;
    std::string path;  // "quota create"
  };
  std::unique_ptr<Node> Build(const Command& c, const std::string& path);
  const Node* Find(const CommandNode* parsed) const;
  const Node* FindPath(const std::vector<std::string>& words) const;
  std::string Help(const Node& node, std::string_view program) const;
  int Dispatch(const Node& node, const ParsedArgs& args, Environment& env) const;
  void AppendBashCases(const Node& node, std::string* out) const;

  Command root_;
  std::vector<FlagSpec> global_;
  std::unique_ptr<Node> tree_;
};

// The global flags: --kubeconfig, --context, -n/--namespace, -A/--all-namespaces, --as,
// --request-timeout, -o/--output, --configmap, --configmap-namespace, --console-service,
// --console-url, -h/--help.
[[nodiscard]] std::vector<FlagSpec> GlobalFlags();

// --console-service NS/NAME:PORT; nullopt when malformed.
[[nodiscard]] std::optional<ConsoleRef> ParseConsoleService(std::string_view text);

// kubectl's --request-timeout: "0" (none), a whole number of seconds, or digits with ms|s|m|h.
[[nodiscard]] std::optional<std::chrono::milliseconds> ParseTimeout(std::string_view text);

}  // namespace taskgov::cli
