#include "extender/cli/args.h"

#include <algorithm>

namespace taskgov::cli {

namespace {

std::string PathOf(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

const FlagSpec* FindShort(const CommandNode& node, const std::vector<FlagSpec>& global, char c) {
  for (const std::vector<FlagSpec>* list : {&node.flags, &global}) {
    for (const FlagSpec& f : *list) {
      if (f.short_name == c) return &f;
    }
  }
  return nullptr;
}

const CommandNode* Child(const CommandNode& node, std::string_view word) {
  for (const CommandNode* c : node.children) {
    if (c->name == word) return c;
  }
  return nullptr;
}

// The parser's state over one command line.
class Parser {
 public:
  Parser(const std::vector<std::string>& argv, const CommandNode& root,
         const std::vector<FlagSpec>& global)
      : argv_(argv), global_(global), node_(&root) {}

  ParseOutcome Run() {
    while (i_ < argv_.size() && !out_.error) {
      const std::string& token = argv_[i_++];
      if (token == "--") {
        while (i_ < argv_.size()) out_.args.positional.push_back(argv_[i_++]);
      } else if (token.size() > 2 && token.starts_with("--")) {
        Long(token.substr(2));
      } else if (token.size() > 1 && token[0] == '-' && token[1] != '-') {
        Short(token);
      } else {
        Word(token);
      }
    }
    out_.command = node_;
    return std::move(out_);
  }

 private:
  void Fail(std::string message) {
    out_.error = UsageError{std::move(message), PathOf(out_.args.command)};
  }

  void Word(const std::string& token) {
    const CommandNode* child = out_.args.positional.empty() ? Child(*node_, token) : nullptr;
    if (child != nullptr) {
      node_ = child;
      out_.args.command.push_back(token);
      return;
    }
    out_.args.positional.push_back(token);
  }

  void Long(const std::string& body) {
    const size_t eq = body.find('=');
    const std::string name = body.substr(0, eq);
    const FlagSpec* spec = FindFlag(*node_, global_, name);
    if (spec == nullptr) return Fail("unknown flag: --" + name);
    if (eq != std::string::npos) return Add(*spec, body.substr(eq + 1), "--" + name);
    if (spec->kind == FlagKind::kBool) return Add(*spec, "true", "--" + name);
    if (spec->kind == FlagKind::kOptionalValue)
      return Add(*spec, spec->implicit_value, "--" + name);
    if (i_ >= argv_.size()) return Fail("flag needs an argument: --" + name);
    Add(*spec, argv_[i_++], "--" + name);
  }

  void Short(const std::string& token) {
    const char c = token[1];
    const FlagSpec* spec = FindShort(*node_, global_, c);
    if (spec == nullptr) {
      return Fail(std::string("unknown shorthand flag: '") + c + "' in " + token);
    }
    std::string rest = token.substr(2);
    if (!rest.empty() && rest[0] == '=') rest = rest.substr(1);
    if (spec->kind == FlagKind::kBool) {
      if (!rest.empty()) {
        return Fail(std::string("flag -") + c + " takes no value; got " + token);
      }
      return Add(*spec, "true", std::string("-") + c);
    }
    if (!rest.empty()) return Add(*spec, rest, std::string("-") + c);
    if (spec->kind == FlagKind::kOptionalValue) {
      return Add(*spec, spec->implicit_value, std::string("-") + c);
    }
    if (i_ >= argv_.size()) {
      return Fail(std::string("flag needs an argument: '") + c + "' in " + token);
    }
    Add(*spec, argv_[i_++], std::string("-") + c);
  }

  void Add(const FlagSpec& spec, std::string value, const std::string& spelled) {
    if (spec.kind == FlagKind::kBool && value != "true" && value != "false") {
      return Fail("invalid argument \"" + value + "\" for \"" + spelled +
                  "\" flag: use true or false");
    }
    if (!spec.repeatable) {
      auto prior = std::find_if(out_.args.flags.begin(), out_.args.flags.end(),
                                [&](const FlagValue& f) { return f.name == spec.name; });
      if (prior != out_.args.flags.end()) {
        return Fail("flag --" + spec.name + " given more than once (" + prior->value + ", then " +
                    value + "): give it once");
      }
    }
    out_.args.flags.push_back(FlagValue{spec.name, std::move(value)});
  }

  const std::vector<std::string>& argv_;
  const std::vector<FlagSpec>& global_;
  const CommandNode* node_;
  size_t i_ = 0;
  ParseOutcome out_;
};

}  // namespace

bool ParsedArgs::Has(std::string_view name) const {
  return std::any_of(flags.begin(), flags.end(),
                     [&](const FlagValue& f) { return f.name == name; });
}

std::optional<std::string> ParsedArgs::Get(std::string_view name) const {
  for (const FlagValue& f : flags) {
    if (f.name == name) return f.value;
  }
  return std::nullopt;
}

std::vector<std::string> ParsedArgs::All(std::string_view name) const {
  std::vector<std::string> out;
  for (const FlagValue& f : flags) {
    if (f.name == name) out.push_back(f.value);
  }
  return out;
}

bool ParsedArgs::Bool(std::string_view name) const { return Get(name) == "true"; }

const FlagSpec* FindFlag(const CommandNode& node, const std::vector<FlagSpec>& global,
                         std::string_view name) {
  for (const std::vector<FlagSpec>* list : {&node.flags, &global}) {
    for (const FlagSpec& f : *list) {
      if (f.name == name) return &f;
    }
  }
  return nullptr;
}

ParseOutcome ParseCommandLine(const std::vector<std::string>& argv, const CommandNode& root,
                              const std::vector<FlagSpec>& global) {
  return Parser(argv, root, global).Run();
}

}  // namespace taskgov::cli
