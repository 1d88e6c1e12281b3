#pragma once

// Taking over what was written by hand (issue 38, item 11): `taskgov quota take-over TEAM` moves a
// team defined in a hand-written key of the policy ConfigMap into the CLI's key, and `taskgov
// policy take-over` moves the hand-written TaskGovernancePolicy document — its cluster settings
// and the teams it lists — there; from then on `quota update|delete` and `policy set` change them.
//
// The hand-written key changes as little as possible: a `kind: Team` document, or the policy
// document, is cut out of its key as written (the rest byte for byte; a key left empty goes); a
// team listed inside a TaskGovernancePolicy is removed from that document's `teams`, which is
// then emitted again (its comments are lost — the diff shows it). A HyperPod document is taken
// only when it is its key's only document. Kueue and Volcano objects are not taken: what governs
// them (queues, flavors, cohorts as objects) has no native form the CLI writes.
//
// A take-over never changes what the extender enforces: PolicyDifference compares the policies
// the ConfigMap loads to before and after, team by team and setting by setting, and any
// difference refuses it.
// Pure functions over the decoded keys; thread-safe.

#include <optional>
#include <string>
#include <vector>

#include "config/loader.h"
#include "config/spec.h"
#include "extender/cli/owned_policy.h"
#include "scheduler/common/result.h"

namespace taskgov::cli {

struct TakeOver {
  OwnedPolicy owned;                       // the CLI's key after the move
  std::string key;                         // the hand-written key that changes
  std::optional<std::string> key_content;  // its new content; nullopt: the key goes
  std::string moved;                       // "quota/a", "the cluster policy and quota/a, quota/b"
};

// `team`, defined by hand in one of `files` (decoded as `decoded`), moved into `owned`.
[[nodiscard]] common::Result<TakeOver> TakeOverTeam(const std::vector<config::SourceFile>& files,
                                                    const config::ConfigSet& decoded,
                                                    const OwnedPolicy& owned,
                                                    const std::string& team);
// The hand-written TaskGovernancePolicy document of `files`, with the teams it lists, moved into
// `owned`.
[[nodiscard]] common::Result<TakeOver> TakeOverPolicy(const std::vector<config::SourceFile>& files,
                                                      const config::ConfigSet& decoded,
                                                      const OwnedPolicy& owned);

// "" when `before` and `after` load to policies that govern alike (teams, their quotas and
// settings, the cluster policy), else the first difference, as "team a: cohort hyperpod → ''".
[[nodiscard]] std::string PolicyDifference(const std::vector<config::SourceFile>& before,
                                           const std::vector<config::SourceFile>& after);

// The documents of a YAML text as written, split at its `---` lines (each keeps its own text).
[[nodiscard]] std::vector<std::string> SplitDocuments(const std::string& text);

}  // namespace taskgov::cli
