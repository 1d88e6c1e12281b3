#include "scheduler/ledger/quota_book.h"

#include <algorithm>
#include <bitset>
#include <set>
#include <string>
#include <utility>

#include "scheduler/common/log.h"

namespace taskgov::scheduler::ledger {

using model::FlavorNames;
using model::IdAmounts;
using model::NameId;
using model::PolicyPtr;
using model::ResourceList;
using model::ResourceNames;
using model::SaturatingTimes;
using model::TeamNames;

namespace {

// Every amount of `charge` to zero (its resources and cells kept: a hold's shape).
void Zero(Charge* charge) {
  for (uint8_t i = 0; i < charge->count; ++i) charge->items[i].amount = 0;
}

bool Empty(const Charge& charge) {
  for (uint8_t i = 0; i < charge.count; ++i) {
    if (charge.items[i].amount != 0) return false;
  }
  return true;
}

// The part of `gang` that one member asking `request` takes, with the gang's cells; false when
// the gang's charge does not hold that much of every resource it charges.
bool ShareOf(const Charge& gang, const IdAmounts& request, Charge* share) {
  if (Empty(gang)) return false;
  *share = gang;
  share->count = 0;
  for (uint8_t i = 0; i < gang.count; ++i) {
    const Charge::Item& item = gang.items[i];
    int64_t want = 0;
    for (const IdAmount& r : request) {
      if (r.first == item.resource) want = r.second;
    }
    if (want <= 0) continue;
    if (item.amount < want) return false;
    share->items[share->count++] = Charge::Item{item.resource, item.cell, want};
  }
  return true;
}

// to += sign × part, resource by resource (part's resources are all in `to`).
void Move(const Charge& part, int64_t sign, Charge* to) {
  for (uint8_t i = 0; i < part.count; ++i) {
    for (uint8_t j = 0; j < to->count; ++j) {
      if (to->items[j].resource == part.items[i].resource) {
        to->items[j].amount += sign * part.items[i].amount;
      }
    }
  }
}

// Whether `part` can go back into `to`: the same team and flavor, every resource of it charged.
bool Covers(const Charge& to, const Charge& part) {
  if (to.team != part.team || to.flavor != part.flavor || to.generation != part.generation) {
    return false;
  }
  for (uint8_t i = 0; i < part.count; ++i) {
    bool found = false;
    for (uint8_t j = 0; j < to.count; ++j)
      found = found || to.items[j].resource == part.items[i].resource;
    if (!found) return false;
  }
  return true;
}

IdAmounts Times(const IdAmounts& request, int64_t n) {
  IdAmounts out = request;
  for (IdAmount& r : out) r.second = SaturatingTimes(r.second, n);
  return out;
}

}  // namespace

QuotaBook::QuotaBook(PolicyPtr policy, const common::Clock* clock)
    : ledger_(std::move(policy)), clock_(clock) {}

std::unique_lock<std::mutex> QuotaBook::Lock(Shard& shard) const {
  std::unique_lock<std::mutex> lock(shard.mu, std::try_to_lock);
  if (!lock.owns_lock()) {
    lock_waits_.fetch_add(1, std::memory_order_relaxed);
    lock.lock();
  }
  return lock;
}

void QuotaBook::GiveBack(Ledger::Session& session, std::string_view uid, const Charge& charge) {
  std::bitset<kMaxChargedResources> refused;
  if (session.Release(charge, &refused)) return;
  for (uint8_t i = 0; i < charge.count; ++i) {
    if (!refused[i]) continue;
    const Charge::Item& item = charge.items[i];
    common::log::Warn("ledger",
                      "release refused: the cell holds less than the charge (counters drifted)",
                      {{"uid", uid},
                       {"team", TeamNames().Name(charge.team)},
                       {"flavor", FlavorNames().Name(charge.flavor)},
                       {"resource", ResourceNames().Name(item.resource)},
                       {"amount", item.amount},
                       {"in_use", session.View(charge.team, charge.flavor, item.resource).usage}});
  }
}

std::variant<Charge, Refusal> QuotaBook::Assume(std::string_view uid, NameId team, NameId flavor,
                                                const ResourceList& request, Ledger::Mode mode,
                                                int64_t ttl_ms, const PodMeta& meta) {
  return Assume(uid, team, flavor, KnownIdAmounts(request), mode, ttl_ms, meta);
}

std::variant<Charge, Refusal> QuotaBook::Assume(std::string_view uid, NameId team, NameId flavor,
                                                const IdAmounts& request, Ledger::Mode mode,
                                                int64_t ttl_ms, const PodMeta& meta) {
  Ledger::Session session(ledger_);
  return Assume(session, uid, team, flavor, request, mode, ttl_ms, meta);
}

std::variant<Charge, Refusal> QuotaBook::Assume(Ledger::Session& session, std::string_view uid,
                                                NameId team, NameId flavor,
                                                const ResourceList& request, Ledger::Mode mode,
                                                int64_t ttl_ms, const PodMeta& meta) {
  return Assume(session, uid, team, flavor, KnownIdAmounts(request), mode, ttl_ms, meta);
}

std::variant<Charge, Refusal> QuotaBook::Assume(Ledger::Session& session, std::string_view uid,
                                                NameId team, NameId flavor,
                                                const IdAmounts& request, Ledger::Mode mode,
                                                int64_t ttl_ms, const PodMeta& meta) {
  Shard& shard = ShardOf(uid);
  std::unique_lock<std::mutex> lock = Lock(shard);
  auto it = shard.map.find(uid);
  if (it != shard.map.end()) {
    if (it->second.state == ReservationState::kBound) return it->second.charge;
    GiveBack(session, uid, it->second.charge);  // a re-filter replaces the assumed reservation
    shard.Erase(it);
  }
  std::variant<Charge, Refusal> result = session.Reserve(team, flavor, request, mode);
  if (const Charge* charge = std::get_if<Charge>(&result)) {
    Reservation reservation;
    reservation.charge = *charge;
    reservation.state = ReservationState::kAssumed;
    reservation.expires_ms = clock_->NowMs() + ttl_ms;
    reservation.meta = meta;
    reservation.meta.admitted_ms = clock_->NowMs();
    shard.Due(reservation.expires_ms);
    shard.Insert(uid, std::move(reservation));
  }
  return result;
}

std::variant<Charge, Refusal> QuotaBook::AssumeMember(Ledger::Session& session,
                                                      std::string_view uid, int32_t size,
                                                      NameId team, NameId flavor,
                                                      const IdAmounts& request, Ledger::Mode mode,
                                                      int64_t ttl_ms, int64_t gang_ttl_ms,
                                                      PodMeta meta, const IdAmounts* gang_need) {
  const int64_t now = clock_->NowMs();
  std::lock_guard<std::shared_mutex> gangs(workloads_mu_);
  Shard& shard = ShardOf(uid);
  std::unique_lock<std::mutex> lock = Lock(shard);
  auto it = shard.map.find(uid);
  const std::string_view workload = meta.workload.view();
  auto gang = gangs_.find(workload);
  if (it != shard.map.end()) {
    Reservation& r = it->second;
    if (r.state == ReservationState::kBound) return r.charge;
    if (r.meta.workload.view() == workload && r.charge.flavor == flavor) {
      r.expires_ms = now + ttl_ms;  // a re-filter keeps its share
      shard.Due(r.expires_ms);
      return r.charge;
    }
    // Held on another flavor or for another gang: give it back, to its gang while that holds.
    auto from = gangs_.find(r.meta.workload.view());
    if (from != gangs_.end() && Covers(from->second.remaining, r.charge)) {
      Move(r.charge, +1, &from->second.remaining);
    } else {
      GiveBack(session, uid, r.charge);
    }
    if (from != gangs_.end()) MemberGoneLocked(r.meta.workload.view());
    shard.Erase(it);
    gang = gangs_.find(workload);
  }
  Charge share;
  // take: the share comes out of the gang's hold.
  bool take = gang != gangs_.end() && gang->second.flavor == flavor &&
              ShareOf(gang->second.remaining, request, &share);
  if (!take) {
    // Nothing held for it: with nothing held for anyone, this member reserves for every member
    // not holding a reservation yet; otherwise (more members than declared, or a member
    // recreated after the others took their shares) it reserves alone.
    const bool for_gang = gang == gangs_.end() || Empty(gang->second.remaining);
    const int32_t holders = gang == gangs_.end() ? 0 : gang->second.holders;
    const int64_t members = for_gang ? std::max<int64_t>(1, size - holders) : 1;
    const IdAmounts need =
        members > 1 && gang_need != nullptr ? *gang_need : Times(request, members);
    std::variant<Charge, Refusal> result = session.Reserve(team, flavor, need, mode);
    const Charge* charge = std::get_if<Charge>(&result);
    if (charge == nullptr) return result;
    if (gang == gangs_.end()) gang = gangs_.emplace(workload, GangHold{}).first;
    gang->second.size = size;
    if (members > 1) {
      GangHold& hold = gang->second;
      hold.flavor = flavor;
      hold.reserved_ms = now;
      hold.expires_ms = now + gang_ttl_ms;
      hold.remaining = *charge;
      take = ShareOf(hold.remaining, request, &share);  // the need counts this member's request
      if (!take) {  // a need without this member's request: it takes it all, nothing is lost
        share = hold.remaining;
        take = true;
      }
    } else {
      share = *charge;
    }
  }
  if (take) Move(share, -1, &gang->second.remaining);
  MemberJoinedLocked(session, workload, &gang->second, now, gang_ttl_ms);
  Reservation reservation;
  reservation.charge = share;
  reservation.state = ReservationState::kAssumed;
  reservation.expires_ms = now + ttl_ms;
  reservation.meta = std::move(meta);  // its gang key changes hands, not pooled again
  reservation.meta.admitted_ms = now;
  shard.Due(reservation.expires_ms);
  shard.Insert(uid, std::move(reservation));
  return share;
}

void QuotaBook::MemberJoinedLocked(Ledger::Session& session, std::string_view workload,
                                   GangHold* hold, int64_t now, int64_t gang_ttl_ms) {
  ++hold->holders;
  hold->ttl_ms = gang_ttl_ms;
  if (hold->holders >= hold->size) {
    hold->expires_ms = GangHold::kNever;  // whole: what the estimate held beyond it goes back
    if (!Empty(hold->remaining)) {
      GiveBack(session, workload, hold->remaining);
      Zero(&hold->remaining);
    }
  } else if (hold->expires_ms == GangHold::kNever) {
    hold->reserved_ms = now;  // waiting for the others from now on
    hold->expires_ms = now + gang_ttl_ms;
  }
}

std::vector<QuotaBook::ExpiredGang> QuotaBook::TakeExpiredGangs() {
  std::lock_guard<std::shared_mutex> gangs(workloads_mu_);
  return std::exchange(expired_gangs_, {});
}

std::optional<GangHold> QuotaBook::FindGang(std::string_view workload) const {
  std::shared_lock gangs(workloads_mu_);  // the filter path reads it: shared
  auto it = gangs_.find(workload);
  if (it == gangs_.end()) return std::nullopt;
  return it->second;
}

void QuotaBook::MemberGoneLocked(std::string_view workload, bool lost) {
  auto it = gangs_.find(workload);
  if (it == gangs_.end()) return;
  GangHold& hold = it->second;
  if (--hold.holders <= 0 && Empty(hold.remaining)) {
    gangs_.erase(it);
    return;
  }
  if (lost && hold.holders < hold.size && hold.expires_ms == GangHold::kNever) {
    hold.reserved_ms = clock_->NowMs();  // no longer whole: its timeout to be whole again
    hold.expires_ms = hold.reserved_ms + hold.ttl_ms;
  }
}

QuotaBook::ConfirmOutcome QuotaBook::ConfirmBound(std::string_view uid, NameId team, NameId flavor,
                                                  const ResourceList& request,
                                                  const PodMeta& meta) {
  return ConfirmBound(uid, team, flavor, KnownIdAmounts(request), meta);
}

QuotaBook::ConfirmOutcome QuotaBook::ConfirmBound(std::string_view uid, NameId team, NameId flavor,
                                                  const IdAmounts& request, const PodMeta& meta) {
  while (true) {
    std::vector<CellKey> missing;
    {
      Ledger::Session session(ledger_);
      Shard& shard = ShardOf(uid);
      std::unique_lock<std::mutex> lock = Lock(shard);
      auto it = shard.map.find(uid);
      if (it != shard.map.end()) {
        Reservation& r = it->second;
        if (r.state == ReservationState::kBound) return ConfirmOutcome::kAlreadyBound;
        if (r.charge.team == team && r.charge.flavor == flavor) {
          shard.Count(r, -1);
          r.state = ReservationState::kBound;
          shard.Count(r, +1);
          r.meta.node = meta.node;
          return ConfirmOutcome::kConfirmedAssumed;
        }
      }
      Charge charge;
      if (session.ForceCharge(team, flavor, request, &charge, &missing)) {
        Reservation reservation;
        reservation.charge = charge;
        reservation.state = ReservationState::kBound;
        reservation.meta = meta;
        if (reservation.meta.admitted_ms == 0) reservation.meta.admitted_ms = clock_->NowMs();
        if (it != shard.map.end()) {
          // Assumed for another flavor or team than it was bound to: charge what is real.
          GiveBack(session, uid, it->second.charge);
          shard.Count(it->second, -1);
          it->second = reservation;
          shard.Count(it->second, +1);
        } else {
          shard.Insert(uid, reservation);
          if (!meta.workload.empty()) {
            // A member bound without a share (seen after a restart): it holds quota of its gang.
            lock.unlock();
            std::lock_guard<std::shared_mutex> gangs(workloads_mu_);
            auto held = gangs_.find(meta.workload.view());
            if (held == gangs_.end()) {
              held = gangs_.emplace(meta.workload.view(), GangHold{}).first;
            }
            GangHold& hold = held->second;
            if (hold.size == 0) hold.flavor = flavor;
            ++hold.holders;
          }
        }
        return ConfirmOutcome::kCharged;
      }
    }
    // Outside the session: create the cells this usage needs, then try again.
    ledger_.EnsureCells(missing);
  }
}

bool QuotaBook::Release(std::string_view uid) {
  Ledger::Session session(ledger_);
  model::PooledString workload;
  {
    Shard& shard = ShardOf(uid);
    std::unique_lock<std::mutex> lock = Lock(shard);
    auto it = shard.map.find(uid);
    if (it == shard.map.end()) return false;
    GiveBack(session, uid, it->second.charge);
    workload = it->second.meta.workload;
    shard.Erase(it);
  }
  if (!workload.empty()) {
    std::lock_guard<std::shared_mutex> gangs(workloads_mu_);
    MemberGoneLocked(workload.view());
  }
  return true;
}

void QuotaBook::DetachFromGang(std::string_view uid, bool lost) {
  std::lock_guard<std::shared_mutex> gangs(workloads_mu_);
  Shard& shard = ShardOf(uid);
  std::unique_lock<std::mutex> lock = Lock(shard);
  auto it = shard.map.find(uid);
  if (it == shard.map.end() || it->second.meta.workload.empty()) return;
  shard.Count(it->second, -1);
  const model::PooledString workload = std::move(it->second.meta.workload);  // now ""
  shard.Count(it->second, +1);
  MemberGoneLocked(workload.view(), lost);
}

bool QuotaBook::ReturnShare(const Reservation& r) {
  // With workloads_mu_ and the member's shard held.
  auto gang = gangs_.find(r.meta.workload.view());
  if (gang == gangs_.end() || !Covers(gang->second.remaining, r.charge)) return false;
  if (gang->second.expires_ms <= clock_->NowMs()) return false;  // the hold goes too
  Move(r.charge, +1, &gang->second.remaining);
  MemberGoneLocked(r.meta.workload.view());
  return true;
}

void QuotaBook::ExpireGangs(Ledger::Session& session, int64_t now) {
  std::lock_guard<std::shared_mutex> gangs(workloads_mu_);
  for (auto it = gangs_.begin(); it != gangs_.end();) {
    GangHold& hold = it->second;
    if (hold.expires_ms > now || hold.holders >= hold.size) {
      ++it;
      continue;
    }
    common::log::Warn("ledger", "gang not whole in time: its held quota is released",
                      {{"workload", it->first},
                       {"members_admitted", static_cast<int64_t>(hold.holders)},
                       {"members_declared", static_cast<int64_t>(hold.size)},
                       {"waited_s", (now - hold.reserved_ms) / 1000}});
    if (!Empty(hold.remaining)) GiveBack(session, it->first, hold.remaining);
    Zero(&hold.remaining);
    gangs_expired_.fetch_add(1, std::memory_order_relaxed);
    if (hold.holders > 0 && expired_gangs_.size() < kMaxExpiredGangs) {
      expired_gangs_.push_back(ExpiredGang{it->first, hold.remaining.team, hold.holders, hold.size,
                                           (now - hold.reserved_ms) / 1000});
    }
    if (hold.holders <= 0) {
      it = gangs_.erase(it);
      continue;
    }
    hold.reserved_ms = now;  // reported again if still not whole a timeout later
    hold.expires_ms = now + hold.ttl_ms;
    ++it;
  }
}

size_t QuotaBook::ExpireAssumed() {
  const int64_t now = clock_->NowMs();
  size_t expired = 0;
  for (Shard& shard : shards_) {
    if (shard.next_due_ms.load(std::memory_order_relaxed) > now) continue;
    Ledger::Session session(ledger_);
    std::lock_guard<std::shared_mutex> gangs(workloads_mu_);
    std::unique_lock<std::mutex> lock = Lock(shard);
    int64_t next_due = std::numeric_limits<int64_t>::max();
    for (auto it = shard.map.begin(); it != shard.map.end();) {
      Reservation& r = it->second;
      if (r.state != ReservationState::kAssumed || r.expires_ms > now) {
        if (r.state == ReservationState::kAssumed) next_due = std::min(next_due, r.expires_ms);
        ++it;
        continue;
      }
      if (r.meta.workload.empty() || !ReturnShare(r)) {
        GiveBack(session, it->first, r.charge);
        if (!r.meta.workload.empty()) MemberGoneLocked(r.meta.workload.view());
      }
      it = shard.Erase(it);
      ++expired;
    }
    shard.next_due_ms.store(next_due, std::memory_order_relaxed);
  }
  Ledger::Session session(ledger_);
  ExpireGangs(session, now);
  return expired;
}

std::optional<Reservation> QuotaBook::Find(std::string_view uid) const {
  Shard& shard = ShardOf(uid);
  std::unique_lock<std::mutex> lock = Lock(shard);
  auto it = shard.map.find(uid);
  if (it == shard.map.end()) return std::nullopt;
  return it->second;
}

bool QuotaBook::Holds(std::string_view uid) const {
  Shard& shard = ShardOf(uid);
  std::unique_lock<std::mutex> lock = Lock(shard);
  return shard.map.contains(uid);
}

void QuotaBook::ForEach(
    const std::function<void(std::string_view uid, const Reservation&)>& fn) const {
  for (Shard& shard : shards_) {
    std::unique_lock<std::mutex> lock = Lock(shard);
    for (const auto& [uid, reservation] : shard.map) fn(uid, reservation);
  }
}

void QuotaBook::Shard::Count(const Reservation& r, int sign) {
  auto it = counts.try_emplace(r.charge.team).first;
  Counts& c = it->second;
  (r.state == ReservationState::kBound ? c.running : c.assumed) += sign;
  for (uint8_t i = 0; i < r.charge.count; ++i) {
    const Charge::Item& item = r.charge.items[i];
    auto cell = std::find_if(c.cells.begin(), c.cells.end(), [&](const Counts::Cell& x) {
      return x.flavor == r.charge.flavor && x.resource == item.resource;
    });
    if (cell == c.cells.end()) cell = c.cells.insert(cell, {r.charge.flavor, item.resource, 0});
    cell->amount += sign * item.amount;
  }
  if (r.meta.workload.empty()) {
    c.lone += sign;
  } else {
    const std::string_view gang = r.meta.workload.view();
    auto members = c.gangs.find(gang);
    if (members == c.gangs.end()) members = c.gangs.emplace(gang, 0).first;
    if ((members->second += sign) <= 0) c.gangs.erase(members);
  }
  if (c.running == 0 && c.assumed == 0) counts.erase(it);
}

std::unordered_map<NameId, QuotaBook::TeamCounts> QuotaBook::CountByTeam() const {
  std::unordered_map<NameId, TeamCounts> counts;
  std::set<std::pair<NameId, std::string>> gangs;
  for (Shard& shard : shards_) {
    std::unique_lock<std::mutex> lock = Lock(shard);
    for (const auto& [team, c] : shard.counts) {
      TeamCounts& out = counts[team];
      out.running += c.running;
      out.assumed += c.assumed;
      out.workloads += c.lone;
      for (const auto& [gang, members] : c.gangs) gangs.emplace(team, gang);
    }
  }
  for (const auto& [team, workload] : gangs) ++counts[team].workloads;
  return counts;
}

size_t QuotaBook::size() const {
  size_t n = 0;
  for (Shard& shard : shards_) {
    std::unique_lock<std::mutex> lock = Lock(shard);
    n += shard.map.size();
  }
  return n;
}

std::vector<Ledger::Drift> QuotaBook::Reconcile() {
  std::unique_lock<std::shared_mutex> gangs_lock(workloads_mu_, std::defer_lock);
  std::vector<std::unique_lock<std::mutex>> locks;
  // No session is open while these run; the first takes every lock (gangs' first: the lock
  // order), held until the counters are checked or rebuilt.
  auto lock_all = [&] {
    if (!locks.empty()) return;
    gangs_lock.lock();
    for (Shard& shard : shards_) locks.emplace_back(shard.mu);
  };
  auto sums = [&] {
    lock_all();
    size_t n = 0;
    for (const Shard& shard : shards_) {
      for (const auto& [team, counts] : shard.counts) n += counts.cells.size();
    }
    std::vector<Ledger::CellSum> out;
    out.reserve(n + gangs_.size() * kMaxChargedResources);
    for (auto& [workload, hold] : gangs_) {
      for (uint8_t i = 0; i < hold.remaining.count; ++i) {
        const Charge& c = hold.remaining;
        out.push_back({CellKey{c.team, c.flavor, c.items[i].resource}, c.items[i].amount});
      }
    }
    for (const Shard& shard : shards_) {
      for (const auto& [team, counts] : shard.counts) {
        for (const Shard::Counts::Cell& cell : counts.cells) {
          out.push_back({CellKey{team, cell.flavor, cell.resource}, cell.amount});
        }
      }
    }
    return out;
  };
  auto charges = [&] {
    lock_all();
    std::vector<Charge*> out;
    for (auto& [workload, hold] : gangs_) out.push_back(&hold.remaining);
    for (Shard& shard : shards_) {
      for (auto& [uid, reservation] : shard.map) out.push_back(&reservation.charge);
    }
    return out;
  };
  return ledger_.Verify(sums, charges);
}

}  // namespace taskgov::scheduler::ledger
