#include "scheduler/actions/round_table.h"

#include <algorithm>

#include "scheduler/common/log.h"
#include "scheduler/model/interner.h"
#include "scheduler/model/quantity.h"

namespace taskgov::scheduler::actions {

using decisions::Preemptor;
using model::FlavorNames;
using model::FormatQuantity;
using model::NameId;
using model::TeamNames;

namespace {

constexpr std::string_view kComponent = "preemption";

}  // namespace

RoundTable::RoundTable(RoundWorld* world, Options options) : world_(world), options_(options) {}

// ---- following ----

RoundTable::Followed RoundTable::Follow(int64_t now_ms) {
  Followed out;
  for (auto it = evicted_.begin(); it != evicted_.end();) {
    const RoundWorld::PodFacts pod = world_->FindPod(it->first);
    it = (!pod.known || pod.terminal) ? evicted_.erase(it) : std::next(it);
  }
  for (auto& [uid, round] : rounds_) {
    if (!round.ended) FollowRound(uid, round, now_ms, &out);
  }
  ForgetEnded();
  for (auto it = backoff_until_.begin(); it != backoff_until_.end();) {
    it = it->second.until_ms <= now_ms ? backoff_until_.erase(it) : std::next(it);
  }
  return out;
}

void RoundTable::FollowRound(const std::string& uid, Round& round, int64_t now_ms, Followed* out) {
  bool went = false;
  for (RoundVictim& v : round.victims) {
    if (v.phase == VictimPhase::kGone) continue;
    const RoundWorld::PodFacts pod = world_->FindPod(v.uid);
    if (!pod.known || pod.terminal) {
      MarkGone(v);
      went = true;
    }
  }
  if (went && !round.nominated) Hold(round);
  const RoundWorld::PodFacts pod = world_->FindPod(uid);
  const RoundWorld::Reservation reservation = world_->FindReservation(uid);
  const bool reserved = reservation != RoundWorld::Reservation::kNone;
  // A preemptor known only from filter calls lives as long as the filter keeps seeing it.
  if (pod.known ? pod.terminal || pod.deleting
                : !reserved && !world_->FilterPending(round.preemptor)) {
    End(round, Ending::kCancelled);
    return;
  }
  if (pod.bound || reservation == RoundWorld::Reservation::kBound) {
    End(round, Ending::kSucceeded);
    common::log::Info(kComponent, "preemptor bound", {{"preemptor", round.preemptor.key}});
    return;
  }
  if (round.nominated && !reserved) {  // the nomination expired unused
    AbandonAndBackOff(round, now_ms);
    common::log::Warn(kComponent, "freed capacity was not used by the preemptor in time",
                      {{"preemptor", round.preemptor.key}});
    return;
  }
  const bool was_nominated = round.nominated;
  MaybeNominate(round, now_ms);
  if (round.ended) return;
  // A nomination made just now is a reservation the ledger holds: the claim must not count it
  // again.
  const bool holds_quota = reserved || (round.nominated && !was_nominated);
  if (!round.nominated && now_ms > round.deadline_ms) {
    AbandonAndBackOff(round, now_ms);
    common::log::Warn(kComponent, "victims did not go in time; round abandoned",
                      {{"preemptor", round.preemptor.key}});
    return;
  }
  out->claims.push_back(Claim{round.preemptor.team, round.flavor, round.node,
                              round.preemptor.request, !holds_quota, round.preemptor.need});
  for (const RoundVictim& v : round.victims) {
    if (v.phase != VictimPhase::kGone) out->committed.insert(v.uid);
    out->evictions_due = out->evictions_due || EvictionDue(v, now_ms);
  }
}

void RoundTable::MaybeNominate(Round& round, int64_t now_ms) {
  if (round.nominated || round.ended) return;
  for (const RoundVictim& v : round.victims) {
    if (v.phase != VictimPhase::kGone) return;
  }
  const Preemptor& p = round.preemptor;
  if (world_->FindReservation(p.uid) != RoundWorld::Reservation::kNone) {
    round.nominated = true;  // the filter admitted it already
    return;
  }
  // A preemptor that is gone, ending or already bound needs no capacity held for it.
  const RoundWorld::PodFacts pod = world_->FindPod(p.uid);
  if (pod.known ? pod.terminal || pod.deleting || pod.bound : !world_->FilterPending(p)) {
    End(round, Ending::kCancelled);
    return;
  }
  std::string why;
  if (!world_->Nominate(p, round.flavor, options_.nomination_ttl_ms, &why)) {
    common::log::Warn(kComponent, "freed capacity was taken before the preemptor was nominated",
                      {{"preemptor", p.key}, {"reason", why}});
    AbandonAndBackOff(round, now_ms);
    return;
  }
  round.nominated = true;
  round.deadline_ms = now_ms + options_.nomination_ttl_ms + options_.round_slack_ms;
  Hold(round, now_ms + options_.nomination_ttl_ms);  // as long as the nomination
  common::log::Info(kComponent, "victims gone; capacity reserved for the preemptor",
                    {{"preemptor", p.key}, {"flavor", FlavorNames().Name(round.flavor)}});
}

bool RoundTable::OnPodGone(std::string_view uid, int64_t now_ms) {
  const std::string key(uid);
  evicted_.erase(key);
  // A preemptor gone (deleted, or ended without running): the room held for it goes back now,
  // not at the next run — what the informer reports next may be admitted on it.
  if (auto own = rounds_.find(key); own != rounds_.end() && !own->second.ended) {
    End(own->second, Ending::kCancelled);
    return true;
  }
  auto it = victim_round_.find(key);
  if (it == victim_round_.end()) return false;
  auto round = rounds_.find(it->second);
  victim_round_.erase(it);
  if (round == rounds_.end() || round->second.ended) return false;
  for (RoundVictim& v : round->second.victims) {
    if (v.uid == key) v.phase = VictimPhase::kGone;
  }
  Hold(round->second);  // what the victim occupied is the preemptor's now
  MaybeNominate(round->second, now_ms);
  return true;
}

void RoundTable::Hold(const Round& round) {
  world_->HoldRoom(round,
                   std::max(round.deadline_ms, round.started_ms) + options_.nomination_ttl_ms);
}

void RoundTable::Hold(const Round& round, int64_t until_ms) { world_->HoldRoom(round, until_ms); }

void RoundTable::End(Round& round, Ending ending) {
  round.ended = true;
  world_->ReleaseRoom(round);
  switch (ending) {
    case Ending::kSucceeded:
      ++counts_.succeeded;
      break;
    case Ending::kCancelled:
      ++counts_.cancelled;
      break;
    case Ending::kAbandoned:
      ++counts_.abandoned;
      break;
  }
}

void RoundTable::AbandonAndBackOff(Round& round, int64_t now_ms) {
  End(round, Ending::kAbandoned);
  backoff_until_[round.preemptor.uid] = Backoff{now_ms + options_.retry_backoff_ms, false};
}

void RoundTable::Abandon(Round& round) { End(round, Ending::kAbandoned); }

void RoundTable::ForgetEnded() {
  for (auto it = rounds_.begin(); it != rounds_.end();) {
    if (!it->second.ended) {
      ++it;
      continue;
    }
    for (const RoundVictim& v : it->second.victims) victim_round_.erase(v.uid);
    it = rounds_.erase(it);
  }
}

// ---- rounds and victims ----

void RoundTable::Start(Round round) {
  const std::string uid = round.preemptor.uid;
  for (const RoundVictim& v : round.victims) victim_round_[v.uid] = uid;
  Round& started = rounds_[uid] = std::move(round);
  if (auto it = backoff_until_.find(uid); it != backoff_until_.end()) {
    it->second.nothing_started = false;
  }
  ++counts_.started;
  Hold(started);
}

Round* RoundTable::Find(const std::string& preemptor_uid) {
  auto it = rounds_.find(preemptor_uid);
  return it == rounds_.end() ? nullptr : &it->second;
}

bool RoundTable::Has(const std::string& preemptor_uid) const {
  return rounds_.count(preemptor_uid) > 0;
}

std::vector<std::string> RoundTable::InFlight() const {
  std::vector<std::string> out;
  for (const auto& [uid, round] : rounds_) {
    if (!round.ended) out.push_back(uid);
  }
  return out;
}

std::vector<NameId> RoundTable::FlavorsInFlight() const {
  std::vector<NameId> out;
  for (const auto& [uid, round] : rounds_) {
    if (!round.ended && std::find(out.begin(), out.end(), round.flavor) == out.end())
      out.push_back(round.flavor);
  }
  return out;
}

RoundVictim* RoundTable::FindVictim(Round& round, std::string_view uid) {
  auto it = std::find_if(round.victims.begin(), round.victims.end(),
                         [&](const RoundVictim& v) { return v.uid == uid; });
  return it == round.victims.end() ? nullptr : &*it;
}

void RoundTable::MarkEvicted(Round& round, RoundVictim& victim, int64_t now_ms, int64_t grace_s) {
  if (victim.phase != VictimPhase::kGone) victim.phase = VictimPhase::kEvicted;
  evicted_[victim.uid] = victim.team;
  round.deadline_ms =
      std::max(round.deadline_ms, now_ms + grace_s * 1000 + options_.round_slack_ms);
  Hold(round);
}

void RoundTable::MarkGone(RoundVictim& victim) {
  victim.phase = VictimPhase::kGone;
  victim_round_.erase(victim.uid);
}

void RoundTable::RefusedByPdb(Round& round, const RoundVictim& victim, const std::string& detail) {
  // The note reaches the preemptor's team (its filter refusal, FailedScheduling event, console):
  // another team's pod and budget are not named, only that team (issue 36, item 5).
  if (victim.team != round.preemptor.team) {
    round.blocked_note = "eviction of a pod of " + TeamNames().Name(victim.team) +
                         " refused by a PodDisruptionBudget";
    return;
  }
  round.blocked_note = "eviction of " + victim.ns + "/" + victim.name +
                       " refused by a PodDisruptionBudget" + (detail.empty() ? "" : ": " + detail);
}

std::vector<RoundVictim> RoundTable::Drop(Round& round,
                                          const std::function<bool(const RoundVictim&)>& drop) {
  std::vector<RoundVictim> out;
  for (auto x = round.victims.begin(); x != round.victims.end();) {
    if (!drop(*x)) {
      ++x;
      continue;
    }
    victim_round_.erase(x->uid);
    out.push_back(std::move(*x));
    x = round.victims.erase(x);
  }
  if (!out.empty() && !round.ended) Hold(round);
  return out;
}

void RoundTable::Add(Round& round, std::vector<RoundVictim> victims) {
  for (RoundVictim& v : victims) {
    victim_round_[v.uid] = round.preemptor.uid;
    round.victims.push_back(std::move(v));
  }
  Hold(round);
}

void RoundTable::BackOff(const std::string& preemptor_uid, int64_t until_ms, bool nothing_started) {
  backoff_until_[preemptor_uid] = Backoff{until_ms, nothing_started};
}

std::unordered_set<std::string> RoundTable::BackedOffUids() const {
  std::unordered_set<std::string> out;
  for (const auto& [uid, backoff] : backoff_until_) out.insert(uid);
  return out;
}

bool RoundTable::BackedOff(const std::string& preemptor_uid) const {
  return backoff_until_.count(preemptor_uid) > 0;
}

bool RoundTable::NothingStarted(const std::string& preemptor_uid) const {
  auto it = backoff_until_.find(preemptor_uid);
  return it != backoff_until_.end() && it->second.nothing_started;
}

// ---- reading ----

std::string RoundTable::StatusOf(const Round& round) {
  const Freed freed = FreedBy(round);
  size_t terminating = 0;
  size_t to_evict = 0;
  size_t blocked = 0;
  for (const RoundVictim& v : round.victims) {
    terminating += v.phase == VictimPhase::kEvicted;
    to_evict += v.phase == VictimPhase::kToEvict;
    blocked += v.phase == VictimPhase::kBlocked;
  }
  std::string out = freed.reclaim ? "reclaiming"
                    : freed.fair  ? "reclaiming (fair share)"
                                  : "preempting";
  out += " " + FormatQuantity(freed.resource, freed.amount) + " " + freed.resource + " from ";
  for (size_t i = 0; i < freed.teams.size(); ++i) {
    out += (i == 0 ? "" : ", ") + freed.teams[i].first;
  }
  if (terminating > 0) out += ", " + PodCount(terminating) + " terminating";
  if (to_evict > 0) out += ", " + PodCount(to_evict) + " to evict";
  if (blocked > 0) out += ", " + PodCount(blocked) + " waiting for a PodDisruptionBudget";
  if (!round.blocked_note.empty() && blocked == 0) out += ", " + round.blocked_note;
  if (round.nominated) out += ", capacity reserved on " + FlavorNames().Name(round.flavor);
  return out;
}

std::unordered_map<std::string, std::string> RoundTable::Statuses() const {
  std::unordered_map<std::string, std::string> out;
  for (const auto& [uid, round] : rounds_) {
    if (!round.ended) out[uid] = StatusOf(round);
  }
  return out;
}

std::set<std::string> RoundTable::EvictedUids() const {
  std::set<std::string> out;
  for (const auto& [uid, team] : evicted_) out.insert(uid);
  return out;
}

std::map<std::string, int64_t> RoundTable::PreemptedPods() const {
  std::map<std::string, int64_t> out;
  for (const auto& [uid, team] : evicted_) ++out[TeamNames().Name(team)];
  return out;
}

size_t RoundTable::in_flight() const {
  size_t n = 0;
  for (const auto& [uid, round] : rounds_) n += !round.ended;
  return n;
}

}  // namespace taskgov::scheduler::actions
