#pragma once

// A preemption round as data: one preemptor, the victims evicted for it, and what they free
// (DESIGN §4). The round table (round_table.h) owns the rounds in flight; the victim planner
// (victim_planner.h) makes their victims; the event writer (event_writer.h) and the round table's
// status say what they free through FreedBy.
//
// Value types and pure functions; thread-compatible.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/decisions/preemption.h"
#include "scheduler/model/objects.h"

namespace taskgov::scheduler::actions {

enum class VictimPhase {
  kToEvict,  // chosen, not evicted yet (rate limit, or a failure to retry)
  kEvicted,  // the API server accepted the eviction: terminating
  kBlocked,  // refused; retried at retry_at_ms (part of its gang is gone already)
  kGone,     // deleted or terminal
};

struct RoundVictim {
  std::string uid;
  std::string ns;
  std::string name;
  model::NameId team = 0;
  model::NameId flavor = 0;
  std::string node;
  std::string gang;
  model::IdAmounts charged;   // what it holds in the ledger on `flavor`
  model::IdAmounts occupies;  // what it holds on `node`
  decisions::PreemptionReason reason = decisions::PreemptionReason::kReclaim;
  std::string note;           // Selection::Victim::note: why it goes, for whom
  int64_t checkpoint_ms = 0;  // Candidate::checkpoint_ms: its last checkpoint, 0 if unknown
  VictimPhase phase = VictimPhase::kToEvict;
  int attempts = 0;  // failed evictions (not PDB refusals)
  int64_t retry_at_ms = 0;
};

// The victim's eviction is due at `now_ms`: not tried yet, or blocked and its retry time come.
[[nodiscard]] bool EvictionDue(const RoundVictim& victim, int64_t now_ms);

struct Round {
  decisions::Preemptor preemptor;
  // Its placement constraints, for choosing again after a refused eviction.
  model::Labels node_selector;
  std::shared_ptr<const model::PodPlacementSpec> placement;
  model::NameId flavor = 0;
  std::string node;
  std::vector<RoundVictim> victims;
  int64_t started_ms = 0;
  int64_t deadline_ms = 0;
  bool nominated = false;
  bool ended = false;
  std::string blocked_note;  // the last PDB refusal, for the status
};

// What a round in flight holds back for its preemptor, so that no other decision of the run
// counts it as free.
struct Claim {
  model::NameId team = 0;
  model::NameId flavor = 0;
  std::string node;
  model::ResourceList request;  // on the node
  bool quota = false;           // no reservation yet: the quota is claimed too, not only the node
  model::ResourceList
      need;  // from the quota, when it differs from `request` (a gang's; see Preemptor)

  [[nodiscard]] const model::ResourceList& quota_request() const {
    return need.empty() ? request : need;
  }
};

// What a round frees for its preemptor: the teams it takes from in victim order, each with its
// reasons, and the amount of the preemptor's main resource (its largest accelerator request,
// else cpu, else the first it requests) the victims are charged on the round's flavor.
struct Freed {
  std::string resource;
  int64_t amount = 0;
  std::vector<std::pair<std::string, std::vector<decisions::PreemptionReason>>> teams;
  bool reclaim = false;  // some victim is taken by Reclaim
  bool fair = false;     // some victim is taken by FairShare
};
[[nodiscard]] Freed FreedBy(const Round& round);

// "1 pod", "2 pods".
[[nodiscard]] std::string PodCount(size_t n);

}  // namespace taskgov::scheduler::actions
