#include "scheduler/ledger/quota_book.h"

#include <bitset>

#include "common/log.h"

namespace taskgov::scheduler {

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
    shard.map.erase(it);
  }
  std::variant<Charge, Refusal> result = session.Reserve(team, flavor, request, mode);
  if (const Charge* charge = std::get_if<Charge>(&result)) {
    Reservation reservation;
    reservation.charge = *charge;
    reservation.state = ReservationState::kAssumed;
    reservation.expires_ms = clock_->NowMs() + ttl_ms;
    reservation.meta = meta;
    reservation.meta.admitted_ms = clock_->NowMs();
    shard.map.emplace(std::string(uid), reservation);
  }
  return result;
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
          r.state = ReservationState::kBound;
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
          it->second = reservation;
        } else {
          shard.map.emplace(std::string(uid), reservation);
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
  Shard& shard = ShardOf(uid);
  std::unique_lock<std::mutex> lock = Lock(shard);
  auto it = shard.map.find(uid);
  if (it == shard.map.end()) return false;
  GiveBack(session, uid, it->second.charge);
  shard.map.erase(it);
  return true;
}

size_t QuotaBook::ExpireAssumed() {
  const int64_t now = clock_->NowMs();
  size_t expired = 0;
  for (Shard& shard : shards_) {
    Ledger::Session session(ledger_);
    std::unique_lock<std::mutex> lock = Lock(shard);
    for (auto it = shard.map.begin(); it != shard.map.end();) {
      if (it->second.state == ReservationState::kAssumed && it->second.expires_ms <= now) {
        GiveBack(session, it->first, it->second.charge);
        it = shard.map.erase(it);
        ++expired;
      } else {
        ++it;
      }
    }
  }
  return expired;
}

std::optional<Reservation> QuotaBook::Find(std::string_view uid) const {
  Shard& shard = ShardOf(uid);
  std::unique_lock<std::mutex> lock = Lock(shard);
  auto it = shard.map.find(uid);
  if (it == shard.map.end()) return std::nullopt;
  return it->second;
}

void QuotaBook::ForEach(
    const std::function<void(std::string_view uid, const Reservation&)>& fn) const {
  for (Shard& shard : shards_) {
    std::unique_lock<std::mutex> lock = Lock(shard);
    for (const auto& [uid, reservation] : shard.map) fn(uid, reservation);
  }
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
  std::vector<std::unique_lock<std::mutex>> locks;
  std::vector<Ledger::Drift> drift = ledger_.Rebuild([&] {
    // No session is open now; hold every shard until the counters are rebuilt.
    std::vector<Charge*> charges;
    for (Shard& shard : shards_) {
      locks.emplace_back(shard.mu);
      for (auto& [uid, reservation] : shard.map) charges.push_back(&reservation.charge);
    }
    return charges;
  });
  return drift;
}

}  // namespace taskgov::scheduler
