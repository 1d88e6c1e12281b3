#pragma once

// RoundTable: the preemption rounds in flight (DESIGN §4), one per preemptor, and the index
// victim → round. A round is one preemptor's set of victims (round.h).
//
// Following (Follow, once a run, and OnPodGone, as the informer reports pods gone):
//  * A victim is gone when its pod is deleted or terminal.
//  * From its start to its end, a round holds the room it frees on its nodes for its preemptor
//    (RoundWorld::HoldRoom: NodeCache's held room), so that the victims' recreated pods, or
//    anything else, cannot take it while the preemptor waits for the victims to go and for
//    kube-scheduler to try it again (DESIGN §3.7). The hold lasts until the round ends, at the
//    latest its deadline plus nomination_ttl_ms — once nominated, as long as the nomination.
//  * When every victim of a round is gone, the capacity is handed to the preemptor: a
//    nomination (RoundWorld::Nominate: an assumed reservation expiring after nomination_ttl_ms),
//    so that pods of other teams cannot take what was freed for it before the scheduler retries
//    it. A preemptor the filter admitted already needs none.
//  * A round ends: succeeded when its preemptor is bound; cancelled when the preemptor is
//    deleted, ends, or — known only from filter calls — is no longer filtered; abandoned when its
//    nomination expired unused, the freed capacity was taken before it could be nominated, or its
//    victims did not go by the deadline (the grace period plus round_slack_ms after the last
//    eviction). A preemptor whose round was abandoned so is backed off for retry_backoff_ms: a pod
//    the scheduler cannot place for other reasons must not make the controller evict again and
//    again. Ended rounds leave the table at the next Follow.
//  * What live rounds hold back (Followed): their preemptors' claims, their victims not gone
//    (they count as terminating), and whether an eviction is due.
// It also remembers the pods evicted and not gone (the "preempted" gauge, and terminating for
// later decisions), and the preemptors backed off (BackOff: also the controller's no-victims
// backoff).
//
// Status (StatusOf): the note for a waiting preemptor's refusal reason, e.g. "reclaiming 4
// nvidia.com/gpu from team-a, 1 pod terminating, 1 pod to evict, capacity reserved on
// ml.p5.48xlarge".
//
// Thread-compatible: not synchronised. The controller guards the table with its mutex and never
// holds it across a KubeActions call; the table calls its RoundWorld (ClusterState and QuotaBook
// reads, QuotaBook::Assume) from within that critical section.

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "scheduler/actions/round.h"

namespace taskgov::scheduler::actions {

// The world the table follows its rounds in: ClusterState and QuotaBook in production, a fake
// in tests.
class RoundWorld {
 public:
  // What the table reads of a pod.
  struct PodFacts {
    bool known = false;     // the informer reported it
    bool terminal = false;  // Succeeded or Failed
    bool deleting = false;  // has a deletion timestamp
    bool bound = false;     // has a node
  };
  enum class Reservation { kNone, kAssumed, kBound };

  virtual ~RoundWorld() = default;
  [[nodiscard]] virtual PodFacts FindPod(std::string_view uid) const = 0;
  [[nodiscard]] virtual Reservation FindReservation(std::string_view uid) const = 0;
  // A preemptor the informer has not seen still waits while the filter keeps seeing it.
  [[nodiscard]] virtual bool FilterPending(const decisions::Preemptor& preemptor) const = 0;
  // Holds the preemptor's request on `flavor` for `ttl_ms` (an assumed reservation, borrowing
  // allowed); false, with why not in `why`, when quota is short.
  [[nodiscard]] virtual bool Nominate(const decisions::Preemptor& preemptor, model::NameId flavor,
                                      int64_t ttl_ms, std::string* why) = 0;
  // Holds the room the round frees for its preemptor until `until_ms` (replacing what it held),
  // and gives it back.
  virtual void HoldRoom(const Round& round, int64_t until_ms) = 0;
  virtual void ReleaseRoom(const Round& round) = 0;
};

class RoundTable {
 public:
  struct Options {
    int64_t nomination_ttl_ms = 60'000;
    int64_t round_slack_ms = 60'000;
    int64_t retry_backoff_ms = 300'000;
  };
  // Monotonic.
  struct Counts {
    uint64_t started = 0;
    uint64_t succeeded = 0;  // preemptor bound
    uint64_t cancelled = 0;  // preemptor deleted or ended
    uint64_t abandoned = 0;  // victims stuck, nomination lost or expired, no victims left
  };
  // What the rounds in flight hold back, for the run's decisions.
  struct Followed {
    std::vector<Claim> claims;
    std::set<std::string> committed;  // victims of live rounds, not gone: count as terminating
    bool evictions_due = false;       // some victim's eviction is due (EvictionDue)
  };

  // `world` outlives the table.
  RoundTable(RoundWorld* world, Options options);

  // Follows every round (see the header comment), drops ended rounds and expired backoffs.
  [[nodiscard]] Followed Follow(int64_t now_ms);
  // A pod was deleted or ended: true when it was a victim of a round in flight (whose status
  // changed; it may be nominated now) or the preemptor of one (the round ends: its held room
  // goes back at once).
  bool OnPodGone(std::string_view uid, int64_t now_ms);

  // A new round (its preemptor has none).
  void Start(Round round);
  // The round of a preemptor, ended or not; nullptr when none.
  [[nodiscard]] Round* Find(const std::string& preemptor_uid);
  [[nodiscard]] bool Has(const std::string& preemptor_uid) const;
  // Preemptors of the rounds in flight, in uid order.
  [[nodiscard]] std::vector<std::string> InFlight() const;
  // The flavors of the rounds in flight (each once).
  [[nodiscard]] std::vector<model::NameId> FlavorsInFlight() const;
  // Hands the capacity to the round's preemptor when every victim is gone (see above).
  void MaybeNominate(Round& round, int64_t now_ms);
  // Ends the round, abandoned (nothing left to evict for it).
  void Abandon(Round& round);

  // A round's victims.
  [[nodiscard]] static RoundVictim* FindVictim(Round& round, std::string_view uid);
  // The API server accepted its eviction: terminating (unless already gone); the round waits a
  // grace period plus the slack from now.
  void MarkEvicted(Round& round, RoundVictim& victim, int64_t now_ms, int64_t grace_s);
  // Its pod is gone already.
  void MarkGone(RoundVictim& victim);
  // A PodDisruptionBudget refused its eviction: said in the round's status.
  static void RefusedByPdb(Round& round, const RoundVictim& victim, const std::string& detail);
  // Takes the victims `drop` selects out of the round, in order.
  std::vector<RoundVictim> Drop(Round& round, const std::function<bool(const RoundVictim&)>& drop);
  // More victims for the round.
  void Add(Round& round, std::vector<RoundVictim> victims);

  // Preemptor backoff: no new round for it until `until_ms`. `nothing_started`: its decision
  // started nothing (no victims, nothing to remedy, not its turn), so it is decided for again
  // before a pod ranked below it in its team gets a round (PreemptionController::PickFromTeam);
  // a round started for it clears that.
  void BackOff(const std::string& preemptor_uid, int64_t until_ms, bool nothing_started = false);
  [[nodiscard]] bool BackedOff(const std::string& preemptor_uid) const;
  // Backed off with nothing started (BackOff).
  [[nodiscard]] bool NothingStarted(const std::string& preemptor_uid) const;
  // Every preemptor backed off now.
  [[nodiscard]] std::unordered_set<std::string> BackedOffUids() const;

  // The status of each round in flight, by preemptor uid.
  [[nodiscard]] std::unordered_map<std::string, std::string> Statuses() const;
  [[nodiscard]] static std::string StatusOf(const Round& round);
  // Pods evicted and not gone: their uids, and their count by team.
  [[nodiscard]] std::set<std::string> EvictedUids() const;
  [[nodiscard]] std::map<std::string, int64_t> PreemptedPods() const;
  [[nodiscard]] size_t in_flight() const;
  [[nodiscard]] const Counts& counts() const { return counts_; }

 private:
  enum class Ending { kSucceeded, kCancelled, kAbandoned };
  // Follows one live round; adds what it holds back to `out` unless it ends.
  void FollowRound(const std::string& uid, Round& round, int64_t now_ms, Followed* out);
  void End(Round& round, Ending ending);
  // (Re)holds the round's room until its deadline plus the nomination's TTL, or `until_ms`.
  void Hold(const Round& round);
  void Hold(const Round& round, int64_t until_ms);
  // End(kAbandoned), and the preemptor backs off.
  void AbandonAndBackOff(Round& round, int64_t now_ms);
  void ForgetEnded();

  RoundWorld* const world_;
  const Options options_;
  std::map<std::string, Round> rounds_;                        // by preemptor uid
  std::unordered_map<std::string, std::string> victim_round_;  // victim uid → preemptor uid
  std::unordered_map<std::string, model::NameId> evicted_;  // evicted and not gone: uid → its team
  struct Backoff {
    int64_t until_ms = 0;
    bool nothing_started = false;
  };
  std::unordered_map<std::string, Backoff> backoff_until_;  // by preemptor uid
  Counts counts_;
};

}  // namespace taskgov::scheduler::actions
