#pragma once

// Command-line parsing for the taskgov CLI: a tree of commands, each with its flags, parsed the
// way kubectl (cobra) parses: command words first (flags may come anywhere), `--name value`,
// `--name=value`, `-n value`, `-nvalue`, `-A`, `--` ends the flags. Flags keep their command-line
// order, so a command can group repeated flags (quota lines: every `--instance-type` starts one).
//
// Parsing never prints: a usage problem comes back as a UsageError with the message the user
// sees and the command whose `--help` explains it. Value types; thread-safe (no shared state).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskgov::cli {

enum class FlagKind {
  kBool,           // --all-namespaces; also --all-namespaces=true|false
  kValue,          // --namespace NS, --namespace=NS
  kOptionalValue,  // --dry-run (= its implicit value) or --dry-run=server
};

struct FlagSpec {
  std::string name;     // "namespace"
  char short_name = 0;  // 'n'
  FlagKind kind = FlagKind::kValue;
  bool repeatable = false;
  std::string value_name;           // "NS", for help
  std::string help;                 // one line
  std::string implicit_value;       // kOptionalValue: the value when given without '='
  std::vector<std::string> values;  // the accepted values when they are a fixed set (completion)

  // Builder steps: ValueFlag("namespace", "NS", "...").Short('n').Repeatable().
  FlagSpec& Short(char c) {
    short_name = c;
    return *this;
  }
  FlagSpec& Repeatable() {
    repeatable = true;
    return *this;
  }
  FlagSpec& Values(std::vector<std::string> accepted) {
    values = std::move(accepted);
    return *this;
  }
  // The value may be left out (`--dry-run`), meaning `implicit`.
  FlagSpec& Optional(std::string implicit) {
    kind = FlagKind::kOptionalValue;
    implicit_value = std::move(implicit);
    return *this;
  }
};

// `s` in double quotes, as messages quote what the user typed.
[[nodiscard]] inline std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

[[nodiscard]] inline FlagSpec ValueFlag(std::string name, std::string value_name,
                                        std::string help) {
  FlagSpec f;
  f.name = std::move(name);
  f.value_name = std::move(value_name);
  f.help = std::move(help);
  return f;
}

[[nodiscard]] inline FlagSpec BoolFlag(std::string name, std::string help) {
  FlagSpec f;
  f.name = std::move(name);
  f.kind = FlagKind::kBool;
  f.help = std::move(help);
  return f;
}

// One flag occurrence, in command-line order; `name` is the long name.
struct FlagValue {
  std::string name;
  std::string value;  // "true" for a bare kBool
};

struct ParsedArgs {
  std::vector<std::string> command;  // the command words: {"quota", "create"}
  std::vector<std::string> positional;
  std::vector<FlagValue> flags;

  [[nodiscard]] bool Has(std::string_view name) const;
  // The value of a flag given once (parsing refuses a second non-repeatable occurrence).
  [[nodiscard]] std::optional<std::string> Get(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> All(std::string_view name) const;
  // A kBool flag: true when given as bare or =true.
  [[nodiscard]] bool Bool(std::string_view name) const;
};

struct UsageError {
  std::string message;  // "unknown flag: --cont"
  std::string command;  // the command path for "see 'taskgov <command> --help'"
};

// The command tree as the parser needs it: names, flags and children. A node with children and
// no handler of its own is a group.
struct CommandNode {
  std::string name;
  std::vector<FlagSpec> flags;
  std::vector<const CommandNode*> children;
};

struct ParseOutcome {
  ParsedArgs args;
  const CommandNode* command = nullptr;  // the deepest command the words name
  std::optional<UsageError> error;
};

// Parses `argv` (without the program name) against `root` and the `global` flags every command
// accepts. Flags before a command word must be global or belong to a command named so far.
[[nodiscard]] ParseOutcome ParseCommandLine(const std::vector<std::string>& argv,
                                            const CommandNode& root,
                                            const std::vector<FlagSpec>& global);

// Flags of `node` and `global` by long name; nullptr when neither has it.
[[nodiscard]] const FlagSpec* FindFlag(const CommandNode& node, const std::vector<FlagSpec>& global,
                                       std::string_view name);

}  // namespace taskgov::cli
