#include "extender/cli/command.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "scheduler/common/k8s_names.h"

namespace taskgov::cli {

namespace {

constexpr std::string_view kExitCodes =
    "Exit codes: 0 done, 1 the operation failed (nothing was written), 2 usage error.\n";

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string FlagColumn(const FlagSpec& f) {
  std::string out = f.short_name ? std::string("  -") + f.short_name + ", " : "      ";
  out += "--" + f.name;
  if (f.kind == FlagKind::kValue) out += " " + f.value_name;
  if (f.kind == FlagKind::kOptionalValue) out += "[=" + f.value_name + "]";
  return out;
}

void AppendFlags(const std::vector<FlagSpec>& flags, std::string* out) {
  size_t width = 0;
  for (const FlagSpec& f : flags) width = std::max(width, FlagColumn(f).size());
  for (const FlagSpec& f : flags) {
    std::string column = FlagColumn(f);
    column.resize(width + 3, ' ');
    *out += column + f.help + (f.repeatable ? " (repeatable)" : "") + "\n";
  }
}

std::string Words(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!w.empty()) out += (out.empty() ? "" : " ") + w;
  }
  return out;
}

// Usage errors of the global flags, or the decoded options.
std::optional<std::string> DecodeGlobals(const ParsedArgs& args, const Command& command,
                                         GlobalOptions* g) {
  g->kubeconfig = args.Get("kubeconfig").value_or("");
  g->context = args.Get("context").value_or("");
  g->namespaces = args.All("namespace");
  g->all_namespaces = args.Bool("all-namespaces");
  g->as = args.Get("as").value_or("");
  if (args.Has("as") && g->as.empty()) return "--as needs a user name";
  if (g->all_namespaces && !g->namespaces.empty()) {
    return "-A/--all-namespaces and -n/--namespace exclude each other: give one";
  }
  if (auto t = args.Get("request-timeout")) {
    std::optional<std::chrono::milliseconds> timeout = ParseTimeout(*t);
    if (!timeout) {
      return "invalid --request-timeout " + Quoted(*t) +
             ": use a duration such as 30s, 2m or 500ms, or 0 for no timeout";
    }
    g->request_timeout = timeout->count() == 0 ? std::chrono::hours(24) : *timeout;
  }
  if (auto c = args.Get("configmap")) g->configmap.name = *c;
  if (auto c = args.Get("configmap-namespace")) g->configmap.ns = *c;
  if (g->configmap.name.empty() || g->configmap.ns.empty()) {
    return "--configmap and --configmap-namespace must not be empty";
  }
  if (auto c = args.Get("console-service")) {
    std::optional<ConsoleRef> ref = ParseConsoleService(*c);
    if (!ref) {
      return "invalid --console-service " + Quoted(*c) +
             ": use [http:|https:]NAMESPACE/NAME:PORT, such as "
             "https:taskgov-system/taskgov-console:9091";
    }
    g->console = *ref;
  }
  if (auto f = args.Get("console-ca-file")) g->console.ca_file = *f;
  if (auto t = args.Get("console-token")) {
    g->console.token = *t;
  } else if (const char* env = std::getenv("TASKGOV_CONSOLE_TOKEN"); env != nullptr) {
    g->console.token = env;
  }
  if (auto u = args.Get("console-url")) {
    if (!(u->starts_with("http://") || u->starts_with("https://")) || u->size() < 9) {
      return "invalid --console-url " + Quoted(*u) +
             ": use https://HOST:PORT or http://HOST:PORT, such as https://127.0.0.1:9091";
    }
    if (args.Has("console-service")) {
      return "--console-service and --console-url exclude each other: give one";
    }
    g->console.url = *u;
    while (g->console.url.ends_with("/")) g->console.url.pop_back();
  }
  if (!command.formats.empty()) g->output = command.formats.front();
  if (auto o = args.Get("output")) {
    std::optional<OutputFormat> f = ParseOutputFormat(*o);
    if (!f) return "invalid output format " + Quoted(*o) + ": use table, wide, json, yaml or name";
    if (std::find(command.formats.begin(), command.formats.end(), *f) == command.formats.end()) {
      std::string accepted;
      for (OutputFormat a : command.formats) {
        accepted += (accepted.empty() ? "" : ", ") + std::string(OutputFormatName(a));
      }
      return "this command does not print -o " + *o +
             (accepted.empty() ? std::string(": it takes no -o") : ": use " + accepted);
    }
    g->output = *f;
  }
  return std::nullopt;
}

std::optional<std::string> CheckArgCount(const ParsedArgs& args, const Command& c) {
  const size_t n = args.positional.size();
  if (n < c.min_args) return "missing " + c.args;
  if (n > c.max_args) {
    const std::string extra = args.positional[c.max_args];
    if (c.max_args == 0) return "unexpected argument " + Quoted(extra);
    return "too many arguments: " + Quoted(extra) + " (the command takes " + c.args + ")";
  }
  return std::nullopt;
}

}  // namespace

int Invocation::Usage(const std::string& message) const {
  err() << "error: " << message << "\nSee '" << env.program
        << (command_path.empty() ? "" : " " + command_path) << " --help' for usage.\n";
  return kExitUsage;
}

int Invocation::Failed(const std::string& message) const {
  err() << "error: " << message << "\n";
  return kExitFailed;
}

std::optional<std::chrono::milliseconds> ParseTimeout(std::string_view text) {
  if (text.empty()) return std::nullopt;
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 9) return std::nullopt;
  const int64_t n = std::stoll(std::string(text.substr(0, digits)));
  const std::string_view unit = text.substr(digits);
  if (unit.empty() || unit == "s") return std::chrono::milliseconds(n * 1000);
  if (unit == "ms") return std::chrono::milliseconds(n);
  if (unit == "m") return std::chrono::milliseconds(n * 60'000);
  if (unit == "h") return std::chrono::milliseconds(n * 3'600'000);
  return std::nullopt;
}

std::optional<ConsoleRef> ParseConsoleService(std::string_view text) {
  ConsoleRef ref;
  for (const char* scheme : {"https:", "http:"}) {
    if (text.starts_with(scheme)) {
      ref.scheme = std::string(scheme, std::string_view(scheme).size() - 1);
      text.remove_prefix(std::string_view(scheme).size());
    }
  }
  const size_t slash = text.find('/');
  const size_t colon = text.rfind(':');
  if (slash == std::string_view::npos || colon == std::string_view::npos || colon < slash) {
    return std::nullopt;
  }
  ref.ns = std::string(text.substr(0, slash));
  ref.name = std::string(text.substr(slash + 1, colon - slash - 1));
  const std::string_view port = text.substr(colon + 1);
  if (!common::IsDnsLabel(ref.ns) || !common::IsDnsLabel(ref.name) || port.empty() ||
      port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  ref.port = std::stoi(std::string(port));
  if (ref.port < 1 || ref.port > 65535) return std::nullopt;
  return ref;
}

std::vector<FlagSpec> GlobalFlags() {
  const std::vector<std::string> formats = {"table", "wide", "json", "yaml", "name"};
  return {
      ValueFlag("kubeconfig", "FILE",
                "the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)"),
      ValueFlag("context", "NAME", "the kubeconfig context (default: its current-context)"),
      ValueFlag("namespace", "NS",
                "a namespace: the team's for quota create|update, a filter for quota list")
          .Short('n')
          .Repeatable(),
      BoolFlag("all-namespaces", "every namespace (quota list shows every team by default)")
          .Short('A'),
      ValueFlag("as", "USER", "act as this user (impersonation)"),
      ValueFlag("request-timeout", "DURATION",
                "per API request: 30s, 2m, 500ms; 0 for none (default 30s)"),
      ValueFlag("output", "FORMAT", "table, wide, json, yaml or name (what the command accepts)")
          .Short('o')
          .Values(formats),
      ValueFlag("configmap", "NAME", "the policy ConfigMap (default taskgov-config)"),
      ValueFlag("configmap-namespace", "NS", "its namespace (default taskgov-system)"),
      ValueFlag("console-service", "[http:]NS/NAME:PORT",
                "the extender's admin API Service, read through the API server's service proxy "
                "over TLS (default https:taskgov-system/taskgov-console:9091; http: for a "
                "console without TLS)"),
      ValueFlag("console-token", "TOKEN",
                "the bearer token the console gets, issued for its audience: kubectl create token "
                "SA --audience taskgov (default $TASKGOV_CONSOLE_TOKEN, else the kubeconfig's)"),
      ValueFlag("console-url", "URL",
                "read the admin API at this URL instead (e.g. https://127.0.0.1:9091 after "
                "kubectl port-forward)"),
      ValueFlag("console-ca-file", "FILE",
                "the CA that signed the console's certificate, for an https --console-url"),
      BoolFlag("help", "help for the command").Short('h'),
  };
}

Cli::Cli(Command root) : root_(std::move(root)), global_(GlobalFlags()) {
  tree_ = Build(root_, "");
}

std::unique_ptr<Cli::Node> Cli::Build(const Command& c, const std::string& path) {
  auto node = std::make_unique<Node>();
  node->command = &c;
  node->path = path;
  node->parse.name = c.name;
  node->parse.flags = c.flags;
  for (const Command& child : c.children) {
    node->children.push_back(Build(child, path.empty() ? child.name : path + " " + child.name));
    node->parse.children.push_back(&node->children.back()->parse);
  }
  return node;
}

const Cli::Node* Cli::Find(const CommandNode* parsed) const {
  std::vector<const Node*> stack = {tree_.get()};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (&n->parse == parsed) return n;
    for (const auto& c : n->children) stack.push_back(c.get());
  }
  return nullptr;
}

const Cli::Node* Cli::FindPath(const std::vector<std::string>& words) const {
  const Node* node = tree_.get();
  for (const std::string& w : words) {
    auto it = std::find_if(node->children.begin(), node->children.end(),
                           [&](const auto& c) { return c->command->name == w; });
    if (it == node->children.end()) return nullptr;
    node = it->get();
  }
  return node;
}

std::string Cli::Help(const Node& node, std::string_view program) const {
  const Command& c = *node.command;
  const std::string full = std::string(program) + (node.path.empty() ? "" : " " + node.path);
  std::string out = c.description.empty() ? c.summary + "\n" : c.description;
  out += "\nUsage:\n  " + full;
  if (!c.children.empty()) out += " COMMAND";
  if (!c.args.empty()) out += " " + c.args;
  out += " [flags]\n";
  if (!c.children.empty()) {
    out += "\nCommands:\n";
    std::vector<std::vector<std::string>> rows;
    for (const Command& child : c.children) rows.push_back({"  " + child.name, child.summary});
    std::ostringstream table;
    RenderTable(rows, table);
    out += table.str();
  }
  if (!c.example.empty()) {
    out += "\nExamples:\n";
    std::istringstream lines(c.example);
    for (std::string line; std::getline(lines, line);) out += "  " + line + "\n";
  }
  if (!c.flags.empty()) {
    out += "\nFlags:\n";
    AppendFlags(c.flags, &out);
  }
  out += "\nGlobal flags:\n";
  AppendFlags(global_, &out);
  out += "\n" + std::string(kExitCodes);
  return out;
}

int Cli::Run(const std::vector<std::string>& argv, Environment& env) const {
  // `help CMD...` is `CMD... --help`.
  if (!argv.empty() && argv[0] == "help") {
    std::vector<std::string> words(argv.begin() + 1, argv.end());
    const Node* node = FindPath(words);
    if (node == nullptr) {
      *env.err << "error: unknown command " << Quoted(Words(words)) << "\nSee '" << env.program
               << " --help' for usage.\n";
      return kExitUsage;
    }
    *env.out << Help(*node, env.program);
    return kExitOk;
  }
  ParseOutcome parsed = ParseCommandLine(argv, tree_->parse, global_);
  const Node* node = Find(parsed.command);
  GlobalOptions ignored;
  Invocation inv{parsed.args, ignored, env, node->path, *this};
  if (parsed.error) return inv.Usage(parsed.error->message);
  if (parsed.args.Bool("help")) {
    *env.out << Help(*node, env.program);
    return kExitOk;
  }
  return Dispatch(*node, parsed.args, env);
}

int Cli::Dispatch(const Node& node, const ParsedArgs& args, Environment& env) const {
  const Command& c = *node.command;
  GlobalOptions global;
  Invocation inv{args, global, env, node.path, *this};
  if (!c.run) {
    if (!args.positional.empty()) {
      std::string message = "unknown command " + Quoted(args.positional[0]) + " for " +
                            Quoted(Words({env.program, node.path}));
      for (const Command& child : c.children) {
        if (EditDistance(child.name, args.positional[0]) <= 2) {
          message += "; did you mean " + Quoted(child.name) + "?";
          break;
        }
      }
      return inv.Usage(message);
    }
    std::string names;
    for (const Command& child : c.children) names += (names.empty() ? "" : ", ") + child.name;
    return inv.Usage("a command is needed: " + names);
  }
  if (auto problem = DecodeGlobals(args, c, &global)) return inv.Usage(*problem);
  if (auto problem = CheckArgCount(args, c)) return inv.Usage(*problem);
  return c.run(inv);
}

void Cli::AppendBashCases(const Node& node, std::string* out) const {
  for (const auto& child : node.children) AppendBashCases(*child, out);
  std::string commands, flags, values;
  for (const Command& child : node.command->children) commands += " " + child.name;
  for (const std::vector<FlagSpec>* list : {&node.command->flags, &global_}) {
    for (const FlagSpec& f : *list) {
      flags += " --" + f.name;
      if (f.short_name) flags += std::string(" -") + f.short_name;
      if (f.values.empty()) continue;
      std::string words;
      for (const std::string& v : f.values) words += (words.empty() ? "" : " ") + v;
      values += "        --" + f.name + (f.short_name ? std::string("|-") + f.short_name : "") +
                ") COMPREPLY=($(compgen -W \"" + words + "\" -- \"$cur\")); return ;;\n";
    }
  }
  const std::string pattern =
      node.path.empty() ? "\"\"|*" : "\"" + node.path + "\"|\"" + node.path + " \"*";
  *out += "    " + pattern + ")\n      case \"$prev\" in\n" + values +
          "      esac\n      commands=\"" + (commands.empty() ? "" : commands.substr(1)) +
          "\"; flags=\"" + flags.substr(1) + "\" ;;\n";
}

std::string Cli::Completion(std::string_view shell) const {
  if (shell != "bash" && shell != "zsh") return "";
  const std::string program = "taskgov";
  const std::string fn = "_taskgov";
  std::string out;
  if (shell == "zsh") {
    out += std::string("#compdef taskgov kubectl-taskgov") + "\n# zsh completion for " +
           std::string(program) + ": load with `source <(" + std::string(program) +
           " completion zsh)`\nautoload -U +X bashcompinit && bashcompinit\n";
  } else {
    out += "# bash completion for " + std::string(program) + ": load with `source <(" +
           std::string(program) + " completion bash)`\n";
  }
  out += fn +
         "() {\n"
         "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
         "  local path=\"\" i commands flags\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    case \"${COMP_WORDS[i]}\" in -*) ;; *) path=\"${path:+$path }${COMP_WORDS[i]}\" ;; "
         "esac\n"
         "  done\n"
         "  case \"$path\" in\n";
  // Deepest paths first: bash takes the first matching pattern.
  AppendBashCases(*tree_, &out);
  out +=
      "  esac\n"
      "  if [[ \"$cur\" == -* ]]; then\n"
      "    COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
      "  else\n"
      "    COMPREPLY=($(compgen -W \"$commands\" -- \"$cur\"))\n"
      "  fi\n"
      "}\n"
      "complete -F " +
      fn + " taskgov kubectl-taskgov\n";
  return out;
}

}  // namespace taskgov::cli
