#pragma once

// VictimPlanner: one run's victim decisions (DESIGN §4), for one preemptor at a time, over the
// cluster as it will be — pure given its inputs:
//  * Candidates: running pods of teams that may be victims, and pods already going (deleted
//    with a grace period, evicted, or victims of rounds in flight), which count as freed.
//  * Per flavor, built on its first use: the ledger's numbers (QuotaSim) minus what is going,
//    the flavor's nodes with what they hold minus what is going, plus the claims of the rounds
//    in flight (quota, and room on their nodes) — so no second round evicts for capacity that
//    is already on its way to a preemptor.
//  * Plan(): the preemptor's flavors in its team's order (those its nodeSelector allows), each
//    with the nodes that accept it (taints, nodeSelector, required node affinity: placement.h),
//    judged once per flavor. A flavor none of whose nodes accept it is skipped, with why:
//    evicting there would free room it cannot use. If it fits on one now, it claims its request
//    there (kFits). Else the first flavor where VictimSelector finds victims (kVictims; nothing
//    claimed until Commit). Else kNoVictims with every flavor's reason, "; "-joined.
//  * Commit(): the victims leave the candidates and count as freed; the preemptor claims its
//    request on the chosen node. After a refused eviction the controller releases the claim,
//    returns dropped victims (ReturnVictims) and chooses again (Choose) on the round's flavor.
//
// Thread-compatible: one planner per run, used by the run's thread only. PlanSource calls are
// made on the first use of each flavor.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scheduler/actions/round.h"
#include "scheduler/decisions/placement.h"
#include "scheduler/decisions/preemption.h"
#include "scheduler/ledger/ledger.h"
#include "scheduler/model/policy.h"
#include "scheduler/state/cluster_state.h"

namespace taskgov::scheduler::actions {

// Where the planner reads the cluster: the ledger and ClusterState in production.
class PlanSource {
 public:
  virtual ~PlanSource() = default;
  // Every cell and pool of the ledger's current generation (Ledger::ReadUsage).
  [[nodiscard]] virtual ledger::Ledger::Usage Usage() const = 0;
  // The nodes of a flavor, any order (ClusterState::NodesOfFlavor).
  [[nodiscard]] virtual std::vector<std::pair<std::string, state::NodeView>> NodesOfFlavor(
      model::NameId flavor) const = 0;
};

class VictimPlanner {
 public:
  struct Inputs {
    const model::Policy* policy = nullptr;  // outlives the planner
    int64_t now_ms = 0;
    const PlanSource* source = nullptr;             // outlives the planner
    decisions::VictimSelector* selector = nullptr;  // scratch buffers, reused across runs
    std::vector<decisions::Candidate> running;      // may be victims
    std::vector<decisions::Candidate> terminating;  // count as freed
    std::vector<Claim> claims;                      // held back for rounds in flight
  };
  explicit VictimPlanner(Inputs inputs);

  // The decision for one preemptor of `team` (see the header comment). kFits: its request is
  // claimed; kVictims: `victims` on `node` of `flavor`; kNoVictims: `explanation`.
  // A gang member whose gang requires one topology domain (Preemptor::required_topology) stands
  // for `members` members asking its request: on each flavor whose levels include the level,
  // every domain at it is tried — the members placed one at a time on the domain's nodes, each
  // where it fits or else with the victims VictimSelector chooses for it among the pods running
  // inside the domain (the first member's also free its gang's quota) — and the domain needing
  // the fewest victims wins (ties: the first by its label values); kFits when one holds them all
  // now. Victims outside the chosen domain are never taken: room freed elsewhere would not let
  // the gang run. Cost: domains × members selections, domains that could not hold the members
  // even empty skipped first. Any other gang's `members` members are placed alike across the
  // flavor's accepting nodes (one domain of them all): victims that make room for some of its
  // members only are never taken — the gang runs whole or not at all.
  [[nodiscard]] decisions::Selection Plan(const model::Team& team, const state::PendingPod& pending,
                                          const decisions::Preemptor& p, int members = 1);
  // Whether `p`, once `chosen`'s victims are gone, would borrow on `chosen.flavor`: need beyond
  // its team's nominal quota on some resource it asks for. A `chosen` that fits (kFits) claimed
  // `p`'s request in this run already: it is not counted twice.
  [[nodiscard]] bool BorrowsAfter(const decisions::Preemptor& p,
                                  const decisions::Selection& chosen);
  // Where a starving preemptor (decisions::Starving) will run once its nodes drain: on the
  // first flavor it may use where its quota admits it now, a node for each of its `members`
  // still to come (its request on each; members share a node while it can ever hold them),
  // those closest to having room first — for a gang that requires one topology domain, inside
  // the domain whose nodes lack the least together; flavors in `skip` are passed by, and with
  // `within_nominal` those where its team would use more than its nominal quota. The nodes are
  // claimed for the rest of the run, so that no other drain holds them. A drain stays where it
  // was (`kept`: the nodes held for it by the last run) while those nodes can ever take it and no
  // other node has room for it now: moving it to a node with more room today would give up what
  // the held nodes freed so far (without a required topology, on the first flavor that takes
  // it). Nothing when its quota admits it on no flavor, or some member
  // fits on no accepting node however empty.
  struct Drain {
    model::NameId flavor = 0;
    std::vector<std::pair<std::string, model::ResourceList>> nodes;
  };
  [[nodiscard]] std::optional<Drain> PlanDrain(const model::Team& team,
                                               const state::PendingPod& pending,
                                               const decisions::Preemptor& p, int members,
                                               const std::vector<model::NameId>& skip,
                                               bool within_nominal,
                                               const std::vector<std::string>& kept = {});
  // Whether some schedulable node of `flavor` accepts `pending` (taints, nodeSelector, required
  // affinity) and could hold its request were it empty: else nothing done on the flavor would
  // ever let it run there.
  [[nodiscard]] bool CouldEverRun(const state::PendingPod& pending, model::NameId flavor);
  // A round starts with `chosen`: its victims, taken (TakeVictims), and the preemptor's claim.
  [[nodiscard]] std::vector<RoundVictim> Commit(const decisions::Preemptor& p,
                                                const decisions::Selection& chosen);

  // Choosing again for a round in flight.
  // Chooses for `p` on `flavor`, on the nodes its constraints accept, with what is committed.
  [[nodiscard]] decisions::Selection Choose(const decisions::Preemptor& p, model::NameId flavor,
                                            const model::Labels& node_selector,
                                            const model::PodPlacementSpec* placement);
  // The victims of `sel`: no longer candidates, counted as freed.
  [[nodiscard]] std::vector<RoundVictim> TakeVictims(const decisions::Selection& sel);
  // A claim held back from / handed back to the decisions that follow.
  void Hold(const Claim& claim);
  void Release(const Claim& claim);
  // A victim taken out of its round: no longer counts as freed.
  void Unfree(const RoundVictim& victim);
  // Victims dropped from a round after `refused_uid`'s eviction was refused: no longer freed,
  // candidates again — except the refused pod itself, which is PDB-blocked for the rest of the
  // run, and excluded when `refused_for_good` (its eviction failed for another reason).
  void ReturnVictims(const std::vector<RoundVictim>& dropped, std::string_view refused_uid,
                     bool refused_for_good);

  [[nodiscard]] const decisions::CandidateSet& candidates() const { return set_; }

 private:
  // The decision state of one flavor during the run.
  struct FlavorCtx {
    decisions::QuotaSim quota;
    decisions::FlavorNodes nodes;
    std::vector<std::shared_ptr<const model::NodePlacement>> placement;  // parallel to nodes.nodes
  };
  FlavorCtx& Ctx(model::NameId flavor);
  void BuildCtx(model::NameId flavor, FlavorCtx* ctx);
  void HoldUnbound(model::NameId flavor, decisions::QuotaSim* quota) const;
  // A claim (sign +1) or its release (−1).
  void ApplyClaim(const Claim& claim, int sign);
  // A victim counts as freed (sign +1), or no longer (−1).
  void ApplyVictim(const RoundVictim& victim, int sign);
  [[nodiscard]] decisions::SelectionInput Input(const decisions::Preemptor& p, model::NameId flavor,
                                                const std::vector<uint8_t>& eligible);
  // The flavors `pending` may use, each with the nodes that accept it, into eligibility_
  // [0, return); the clauses of flavors none of whose nodes accept it, into `why`.
  size_t UsableFlavors(const model::Team& team, const state::PendingPod& pending, std::string* why);
  [[nodiscard]] int64_t CandidateIndex(std::string_view uid) const;
  // Plan's choice for a gang of `members` members that requires no domain: the first of the first
  // `usable` flavors of eligibility_ where they all fit now, else the first where victims make
  // room for them all; `why` holds the reasons gathered so far.
  [[nodiscard]] decisions::Selection PlanGang(const decisions::Preemptor& p, size_t usable,
                                              int members, std::string why);
  // Plan's choice for a gang that requires one domain, over the first `usable` flavors of
  // eligibility_; `why` holds the reasons gathered so far.
  [[nodiscard]] decisions::Selection PlanInOneDomain(const decisions::Preemptor& p, size_t usable,
                                                     int members, std::string why);
  // The members placed inside one domain (`domain`: its nodes' indexes in the flavor's nodes),
  // as a trial undone before returning: the victims and the first member's node, or nothing
  // when some member cannot be placed there.
  [[nodiscard]] std::optional<decisions::Selection> TryDomain(const decisions::Preemptor& p,
                                                              model::NameId flavor,
                                                              const std::vector<uint8_t>& accepts,
                                                              const std::vector<uint32_t>& domain,
                                                              int members);
  // The accepting node of `nodes` closest to room for `request` on top of what it uses and
  // `planned` on it (the least shortfall, each resource's in parts of the node's allocatable,
  // added to `*shortfall` when set), or -1 when none could ever hold it. A drain's `hints`
  // (parallel to the nodes): a kept node goes first unless another has room now, and of nodes
  // as close, the one whose newest pod started first (its pods likely end first; a node with
  // pods taskgov does not know counts as started now).
  struct DrainHints {
    std::vector<uint8_t> kept;
    std::vector<int64_t> newest_start_ms;  // 0: no pod
  };
  [[nodiscard]] static int64_t ClosestToRoom(const decisions::FlavorNodes& nodes,
                                             const std::vector<uint8_t>& accepts,
                                             const std::vector<model::IdAmounts>& planned,
                                             const model::IdAmounts& request,
                                             double* shortfall = nullptr,
                                             const DrainHints* hints = nullptr);
  // PlanDrain's nodes for `members` members on `accepts` of the flavor's nodes, into `planned`
  // (parallel to the nodes); false when some member fits on none however empty. `*shortfall`:
  // what they lack together.
  // PlaceMembers inside the domain at `level` whose nodes lack the least together; false when
  // no domain can hold them.
  [[nodiscard]] bool PlaceInOneDomain(const FlavorCtx& ctx, const std::vector<uint8_t>& accepts,
                                      model::NameId flavor, std::string_view level, int members,
                                      const model::IdAmounts& request,
                                      std::vector<model::IdAmounts>* planned);
  [[nodiscard]] static bool PlaceMembers(const decisions::FlavorNodes& nodes,
                                         const std::vector<uint8_t>& accepts, int members,
                                         const model::IdAmounts& request,
                                         std::vector<model::IdAmounts>* planned, double* shortfall,
                                         const DrainHints* hints = nullptr);

  const model::Policy& policy_;
  const int64_t now_ms_;
  const PlanSource& source_;
  decisions::VictimSelector& selector_;
  decisions::CandidateSet set_;
  std::vector<decisions::Candidate> terminating_;
  std::vector<Claim> claims_;
  ledger::Ledger::Usage usage_;
  bool have_usage_ = false;
  std::unordered_map<model::NameId, FlavorCtx> ctxs_;
  std::vector<std::pair<model::NameId, decisions::NodeEligibility>>
      eligibility_;  // per usable flavor, reused
};

}  // namespace taskgov::scheduler::actions
