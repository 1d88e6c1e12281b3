#include "scheduler/ledger/quota_book.h"

#include <algorithm>
#include <bitset>
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

QuotaBook::Records::Claim QuotaBook::Acquire(Shard& shard, std::string_view uid, size_t hash) {
  Records::Claim claim = shard.table.Acquire(uid, hash, &claim_waits_);
  if (!claim) compaction_due_.store(true, std::memory_order_relaxed);
  return claim;
}

QuotaBook::Records::Claim QuotaBook::FindPresent(std::string_view uid) const {
  const size_t hash = Records::Hash(uid);
  Records::Claim claim = ShardOf(hash).table.Find(uid, hash, &claim_waits_);
  if (claim && !claim->present) return Records::Claim();
  return claim;
}

QuotaBook::Gangs::Claim QuotaBook::ClaimGang(std::string_view workload, bool create) const {
  Gangs::Claim claim =
      create ? gangs_.Acquire(workload, &claim_waits_) : gangs_.Find(workload, &claim_waits_);
  if (create && !claim) compaction_due_.store(true, std::memory_order_relaxed);
  return claim;
}

Refusal QuotaBook::Busy(NameId team, NameId flavor) {
  Refusal refusal;
  refusal.kind = RefusalKind::kBusy;
  refusal.team = team;
  refusal.flavor = flavor;
  return refusal;
}

void QuotaBook::Tally(const Reservation& r, int sign) {
  TeamTally::Counts* c = tally_.At(r.charge.team);
  if (c == nullptr) return;
  (r.state == ReservationState::kBound ? c->running : c->assumed)
      .fetch_add(sign, std::memory_order_relaxed);
  if (r.meta.workload.empty()) c->lone.fetch_add(sign, std::memory_order_relaxed);
  for (uint8_t i = 0; i < r.charge.count; ++i) {
    TeamTally::AddCell(*c, r.charge.flavor, r.charge.items[i].resource,
                       sign * r.charge.items[i].amount);
  }
}

void QuotaBook::Put(Shard& shard, Records::Record& record, Reservation r) {
  if (r.state == ReservationState::kAssumed) shard.Due(r.expires_ms);
  Tally(r, +1);
  record.value = std::move(r);
  record.present = true;
  present_.fetch_add(1, std::memory_order_relaxed);
}

void QuotaBook::Erase(Records::Record& record) {
  Tally(record.value, -1);
  record.value = Reservation{};  // its pooled gang key goes
  record.present = false;
  present_.fetch_sub(1, std::memory_order_relaxed);
}

void QuotaBook::Drop(Ledger::Session& session, std::string_view uid, Records::Record& record) {
  GiveBack(session, uid, record.value.charge);
  Gangs::Claim gang;  // a gang member's: it no longer holds quota of its gang
  if (!record.value.meta.workload.empty()) {
    gang = ClaimGang(record.value.meta.workload.view(), false);
  }
  Erase(record);
  if (gang && gang->present) MemberGone(*gang);
}

GangHold& QuotaBook::NewHold(Gangs::Record& gang, NameId team) {
  gang.value = GangHold{};
  gang.value.key = model::PooledString(gang.key.view());  // the pool's lock: once per gang
  gang.value.team = team;
  gang.present = true;
  return gang.value;
}

void QuotaBook::DropHold(Gangs::Record& gang) {
  gang.value = GangHold{};
  gang.present = false;
}

void QuotaBook::GiveBackParts(Ledger::Session& session, std::string_view workload, GangHold* hold) {
  for (uint8_t p = 0; p < hold->parts; ++p) {
    if (!Empty(hold->remaining[p])) GiveBack(session, workload, hold->remaining[p]);
    Zero(&hold->remaining[p]);
  }
}

void QuotaBook::HolderJoined(GangHold& hold) {
  if (hold.holders++ != 0) return;
  if (TeamTally::Counts* c = tally_.At(hold.team)) c->gangs.fetch_add(1, std::memory_order_relaxed);
}

void QuotaBook::HolderLeft(GangHold& hold) {
  if (--hold.holders != 0) return;
  if (TeamTally::Counts* c = tally_.At(hold.team)) c->gangs.fetch_sub(1, std::memory_order_relaxed);
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
  const size_t hash = Records::Hash(uid);
  Shard& shard = ShardOf(hash);
  Records::Claim record = Acquire(shard, uid, hash);
  if (!record) return Busy(team, flavor);
  if (record->present) {
    const Reservation& r = record->value;
    if (r.state == ReservationState::kBound) return r.charge;
    Drop(session, uid, *record);  // a re-filter replaces the assumed reservation
  }
  std::variant<Charge, Refusal> result = session.Reserve(team, flavor, request, mode);
  if (const Charge* charge = std::get_if<Charge>(&result)) {
    Reservation reservation;
    reservation.charge = *charge;
    reservation.state = ReservationState::kAssumed;
    reservation.expires_ms = clock_->NowMs() + ttl_ms;
    reservation.meta = meta;
    reservation.meta.admitted_ms = clock_->NowMs();
    Put(shard, *record, std::move(reservation));
  }
  return result;
}

std::variant<Charge, Refusal> QuotaBook::AssumeMember(
    Ledger::Session& session, std::string_view uid, std::string_view workload, int32_t size,
    NameId team, NameId flavor, const IdAmounts& request, Ledger::Mode mode, int64_t ttl_ms,
    int64_t gang_ttl_ms, const PodMeta& meta, const IdAmounts* gang_need,
    std::span<const FlavorNeed> elsewhere) {
  const int64_t now = clock_->NowMs();
  const size_t hash = Records::Hash(uid);
  Shard& shard = ShardOf(hash);
  Records::Claim record = Acquire(shard, uid, hash);
  if (!record) return Busy(team, flavor);
  // The gang of the reservation it holds ("" for none): a view of the pooled key that reservation
  // holds, valid until the record is erased below.
  std::string_view from;
  if (record->present) {
    Reservation& r = record->value;
    if (r.state == ReservationState::kBound) return r.charge;
    if (r.meta.workload.view() == workload && r.charge.flavor == flavor) {
      r.expires_ms = now + ttl_ms;  // a re-filter keeps its share
      shard.Due(r.expires_ms);
      return r.charge;
    }
    from = r.meta.workload.view();
  }
  // The gangs' holds, in key order: its own (created when it has none yet) and the one its
  // reservation was taken from, when that is another.
  const bool other = !from.empty() && from != workload;
  Gangs::Claim from_gang;
  if (other && from < workload) from_gang = ClaimGang(from, false);
  Gangs::Claim gang = ClaimGang(workload, true);
  if (other && from > workload) from_gang = ClaimGang(from, false);
  if (!gang) return Busy(team, flavor);
  // The hold its reservation came from: the other gang's, or its own.
  Gangs::Record* from_hold = nullptr;
  if (other && from_gang) from_hold = &*from_gang;
  if (!other && !from.empty()) from_hold = &*gang;
  if (record->present) GiveUpForMember(session, uid, *record, from_hold);
  GangHold* hold = gang->present ? &gang->value : nullptr;
  Charge share;
  // part: the gang's charge on this flavor the share comes out of (null: a reservation alone).
  Charge* part = hold != nullptr ? hold->Part(flavor) : nullptr;
  if (part == nullptr || !ShareOf(*part, request, &share)) {
    // Nothing held for it: with nothing held for anyone, this member reserves for every member
    // not holding a reservation yet; otherwise (more members than declared, or a member
    // recreated after the others took their shares) it reserves alone.
    const bool for_gang = hold == nullptr || !hold->holds_quota();
    const int32_t holders = hold == nullptr ? 0 : hold->holders;
    const int64_t members = for_gang ? std::max<int64_t>(1, size - holders) : 1;
    const IdAmounts need =
        members > 1 && gang_need != nullptr ? *gang_need : Times(request, members);
    std::array<Charge, kMaxGangFlavors> parts;
    uint8_t count = 0;
    if (std::optional<Refusal> refusal = ReserveParts(
            session, workload, team, flavor, need,
            members > 1 ? elsewhere : std::span<const FlavorNeed>(), mode, &parts, &count)) {
      return *refusal;
    }
    if (hold == nullptr) hold = &NewHold(*gang, team);
    hold->size = size;
    if (members > 1) {
      hold->reserved_ms = now;
      hold->expires_ms = now + gang_ttl_ms;
      hold->remaining = parts;
      hold->parts = count;
      part = &hold->remaining[0];
      // The need counts this member's request; a need without it: it takes it all, nothing is
      // lost.
      if (!ShareOf(*part, request, &share)) share = *part;
    } else {
      share = parts[0];
      part = nullptr;
    }
  }
  if (part != nullptr) Move(share, -1, part);
  MemberJoined(session, workload, hold, now, gang_ttl_ms);
  Reservation reservation;
  reservation.charge = share;
  reservation.state = ReservationState::kAssumed;
  reservation.expires_ms = now + ttl_ms;
  reservation.meta = meta;
  reservation.meta.workload = hold->key;  // a copy of the pooled key: no lock
  reservation.meta.admitted_ms = now;
  Put(shard, *record, std::move(reservation));
  return share;
}

std::optional<Refusal> QuotaBook::ReserveParts(Ledger::Session& session, std::string_view workload,
                                               NameId team, NameId flavor, const IdAmounts& need,
                                               std::span<const FlavorNeed> elsewhere,
                                               Ledger::Mode mode,
                                               std::array<Charge, kMaxGangFlavors>* parts,
                                               uint8_t* count) {
  *count = 0;
  std::variant<Charge, Refusal> result = session.Reserve(team, flavor, need, mode);
  if (const Refusal* refusal = std::get_if<Refusal>(&result)) return *refusal;
  (*parts)[(*count)++] = std::get<Charge>(result);
  for (const FlavorNeed& other : elsewhere) {
    if (*count == kMaxGangFlavors || other.flavor == flavor) break;  // the caller keeps to it
    std::variant<Charge, Refusal> there = session.Reserve(team, other.flavor, other.need, mode);
    if (const Refusal* refusal = std::get_if<Refusal>(&there)) {
      for (uint8_t p = 0; p < *count; ++p) GiveBack(session, workload, (*parts)[p]);
      *count = 0;
      return *refusal;  // all or nothing
    }
    (*parts)[(*count)++] = std::get<Charge>(there);
  }
  return std::nullopt;
}

void QuotaBook::GiveUpForMember(Ledger::Session& session, std::string_view uid,
                                Records::Record& record, Gangs::Record* from_hold) {
  // Held on another flavor or for another gang: give it back, to its gang while that holds.
  const Reservation& r = record.value;
  Charge* part =
      from_hold != nullptr && from_hold->present ? from_hold->value.Part(r.charge.flavor) : nullptr;
  if (part != nullptr && Covers(*part, r.charge)) {
    Move(r.charge, +1, part);
  } else {
    GiveBack(session, uid, r.charge);
  }
  if (from_hold != nullptr && from_hold->present) MemberGone(*from_hold);
  Erase(record);
}

void QuotaBook::MemberJoined(Ledger::Session& session, std::string_view workload, GangHold* hold,
                             int64_t now, int64_t gang_ttl_ms) {
  HolderJoined(*hold);
  hold->ttl_ms = gang_ttl_ms;
  if (hold->holders >= hold->size) {
    hold->expires_ms = GangHold::kNever;  // whole: what the estimate held beyond it goes back
    GiveBackParts(session, workload, hold);
  } else if (hold->expires_ms == GangHold::kNever) {
    hold->reserved_ms = now;  // waiting for the others from now on
    hold->expires_ms = now + gang_ttl_ms;
  }
}

std::vector<QuotaBook::ExpiredGang> QuotaBook::TakeExpiredGangs() {
  std::lock_guard<std::mutex> lock(expired_mu_);
  return std::exchange(expired_gangs_, {});
}

std::optional<GangHold> QuotaBook::FindGang(std::string_view workload) const {
  Ledger::Session session(ledger_);
  Gangs::Claim gang = ClaimGang(workload, false);
  if (!gang || !gang->present) return std::nullopt;
  return gang->value;
}

void QuotaBook::MemberGone(Gangs::Record& gang, bool lost) {
  GangHold& hold = gang.value;
  HolderLeft(hold);
  if (hold.holders <= 0 && !hold.holds_quota()) {
    DropHold(gang);
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
      const size_t hash = Records::Hash(uid);
      Shard& shard = ShardOf(hash);
      Records::Claim record = Acquire(shard, uid, hash);
      if (!record) {
        compaction_due_.store(true, std::memory_order_relaxed);
      } else {
        if (record->present) {
          Reservation& r = record->value;
          if (r.state == ReservationState::kBound) return ConfirmOutcome::kAlreadyBound;
          if (r.charge.team == team && r.charge.flavor == flavor) {
            Tally(r, -1);
            r.state = ReservationState::kBound;
            Tally(r, +1);
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
          // Assumed for another flavor or team than it was bound to: charge what is real. A
          // member staying in its gang keeps its place there; one that changed gang leaves it.
          bool joins = !meta.workload.empty();
          if (record->present) {
            const Reservation& old = record->value;
            GiveBack(session, uid, old.charge);
            Gangs::Claim left;
            if (old.meta.workload.view() == meta.workload.view()) {
              joins = false;
            } else if (!old.meta.workload.empty()) {
              left = ClaimGang(old.meta.workload.view(), false);
            }
            Erase(*record);
            if (left && left->present) MemberGone(*left);
          }
          Put(shard, *record, std::move(reservation));
          if (joins) HoldForBoundMember(meta.workload.view(), team);
          return ConfirmOutcome::kCharged;
        }
      }
    }
    // Outside the session: make room, or create the cells this usage needs; then try again.
    if (missing.empty()) {
      Compact();
    } else {
      ledger_.EnsureCells(missing);
    }
  }
}

void QuotaBook::HoldForBoundMember(std::string_view workload, NameId team) {
  // A member bound without a share (seen after a restart): it holds quota of its gang.
  Gangs::Claim gang = ClaimGang(workload, true);
  if (!gang) return;  // counted once the table has room again
  GangHold& hold = gang->present ? gang->value : NewHold(*gang, team);
  HolderJoined(hold);
}

bool QuotaBook::Release(std::string_view uid) {
  Ledger::Session session(ledger_);
  Records::Claim record = FindPresent(uid);
  if (!record) return false;
  Drop(session, uid, *record);
  return true;
}

bool QuotaBook::ReturnToGang(std::string_view uid) {
  Ledger::Session session(ledger_);
  Records::Claim record = FindPresent(uid);
  if (!record || record->value.state != ReservationState::kAssumed ||
      record->value.meta.workload.empty()) {
    return false;
  }
  Gangs::Claim gang = ClaimGang(record->value.meta.workload.view(), false);
  if (!ReturnShare(record->value, gang ? &*gang : nullptr)) return false;
  Erase(*record);
  return true;
}

bool QuotaBook::MoveGang(std::string_view from, std::string_view to) {
  Ledger::Session session(ledger_);
  GangHold hold;
  {
    Gangs::Claim source = ClaimGang(from, false);
    if (!source || !source->present || source->value.holders != 0 || !source->value.holds_quota())
      return false;
    hold = source->value;
    DropHold(*source);
  }
  // One gang claimed at a time: the charges travel in `hold` meanwhile (canonical per cell, the
  // ledger's counters do not change).
  Gangs::Claim target = ClaimGang(to, true);
  if (!target || target->present) {
    GiveBackParts(session, from, &hold);
    return false;
  }
  const GangHold& created = NewHold(*target, hold.team);
  hold.key = created.key;
  target->value = std::move(hold);
  return true;
}

void QuotaBook::DetachFromGang(std::string_view uid, bool lost) {
  Ledger::Session session(ledger_);
  Records::Claim record = FindPresent(uid);
  if (!record || record->value.meta.workload.empty()) return;
  Tally(record->value, -1);
  const model::PooledString workload = std::move(record->value.meta.workload);  // now ""
  Tally(record->value, +1);
  if (Gangs::Claim gang = ClaimGang(workload.view(), false); gang && gang->present) {
    MemberGone(*gang, lost);
  }
}

bool QuotaBook::ReturnShare(const Reservation& r, Gangs::Record* gang) {
  // With the member's and its gang's records claimed.
  Charge* part = gang != nullptr && gang->present ? gang->value.Part(r.charge.flavor) : nullptr;
  if (part == nullptr || !Covers(*part, r.charge)) return false;
  if (gang->value.expires_ms <= clock_->NowMs()) return false;  // the hold goes too
  Move(r.charge, +1, part);
  MemberGone(*gang);
  return true;
}

void QuotaBook::ExpireGangs(Ledger::Session& session, int64_t now) {
  gangs_.ForEach([&](Gangs::Record& gang) {
    GangHold& hold = gang.value;
    if (hold.expires_ms > now || hold.holders >= hold.size) return;
    common::log::Warn("ledger", "gang not whole in time: its held quota is released",
                      {{"workload", gang.key.view()},
                       {"members_admitted", static_cast<int64_t>(hold.holders)},
                       {"members_declared", static_cast<int64_t>(hold.size)},
                       {"waited_s", (now - hold.reserved_ms) / 1000}});
    GiveBackParts(session, gang.key.view(), &hold);
    gangs_expired_.fetch_add(1, std::memory_order_relaxed);
    if (hold.holders > 0) {
      std::lock_guard<std::mutex> lock(expired_mu_);
      if (expired_gangs_.size() < kMaxExpiredGangs) {
        expired_gangs_.push_back(ExpiredGang{std::string(gang.key.view()), hold.team, hold.holders,
                                             hold.size, (now - hold.reserved_ms) / 1000});
      }
    }
    if (hold.holders <= 0) {
      DropHold(gang);
      return;
    }
    hold.reserved_ms = now;  // reported again if still not whole a timeout later
    hold.expires_ms = now + hold.ttl_ms;
  });
}

size_t QuotaBook::ExpireAssumed() {
  bool due = compaction_due_.load(std::memory_order_relaxed) || gangs_.NeedsCompaction();
  for (const Shard& shard : shards_) due = due || shard.table.NeedsCompaction();
  if (due) Compact();
  const int64_t now = clock_->NowMs();
  size_t expired = 0;
  for (Shard& shard : shards_) {
    if (shard.next_due_ms.load(std::memory_order_relaxed) > now) continue;
    // Rebuilt from what stays assumed; an assumption meanwhile lowers it again itself.
    shard.next_due_ms.store(std::numeric_limits<int64_t>::max(), std::memory_order_relaxed);
    Ledger::Session session(ledger_);
    shard.table.ForEach([&](Records::Record& record) {
      Reservation& r = record.value;
      if (r.state != ReservationState::kAssumed) return;
      if (r.expires_ms > now) {
        shard.Due(r.expires_ms);
        return;
      }
      if (r.meta.workload.empty()) {
        GiveBack(session, record.key.view(), r.charge);
      } else {
        Gangs::Claim gang = ClaimGang(r.meta.workload.view(), false);
        if (!ReturnShare(r, gang ? &*gang : nullptr)) {
          GiveBack(session, record.key.view(), r.charge);
          if (gang && gang->present) MemberGone(*gang);
        }
      }
      Erase(record);
      ++expired;
    });
  }
  Ledger::Session session(ledger_);
  ExpireGangs(session, now);
  return expired;
}

void QuotaBook::Compact() {
  compaction_due_.store(false, std::memory_order_relaxed);
  ledger_.Quiesce([&] {
    for (Shard& shard : shards_) shard.table.Compact();
    gangs_.Compact();
  });
}

std::optional<Reservation> QuotaBook::Find(std::string_view uid) const {
  Ledger::Session session(ledger_);
  Records::Claim record = FindPresent(uid);
  if (!record) return std::nullopt;
  return record->value;
}

bool QuotaBook::Holds(std::string_view uid) const {
  Ledger::Session session(ledger_);
  return static_cast<bool>(FindPresent(uid));
}

bool QuotaBook::HoldsFor(std::string_view uid, std::string_view workload) const {
  Ledger::Session session(ledger_);
  if (!workload.empty()) {
    if (Gangs::Claim gang = ClaimGang(workload, false); gang && gang->present) return true;
  }
  return static_cast<bool>(FindPresent(uid));
}

void QuotaBook::ForEach(
    const std::function<void(std::string_view uid, const Reservation&)>& fn) const {
  Ledger::Session session(ledger_);
  for (Shard& shard : shards_) {
    shard.table.ForEach([&](Records::Record& record) { fn(record.key.view(), record.value); });
  }
}

std::unordered_map<NameId, QuotaBook::TeamCounts> QuotaBook::CountByTeam() const {
  std::unordered_map<NameId, TeamCounts> counts;
  tally_.ForEach([&](NameId team, const TeamTally::Counts& c) {
    const int64_t running = c.running.load(std::memory_order_relaxed);
    const int64_t assumed = c.assumed.load(std::memory_order_relaxed);
    if (running == 0 && assumed == 0) return;
    counts[team] = TeamCounts{
        running, assumed,
        c.lone.load(std::memory_order_relaxed) + c.gangs.load(std::memory_order_relaxed)};
  });
  return counts;
}

size_t QuotaBook::size() const {
  return static_cast<size_t>(std::max<int64_t>(0, present_.load(std::memory_order_relaxed)));
}

std::vector<Ledger::Drift> QuotaBook::Reconcile() {
  // Both run while no session is open (Ledger::Verify): every record and tally is at rest.
  auto sums = [&] {
    std::vector<Ledger::CellSum> out;
    gangs_.ForEachQuiescent([&](Gangs::Record& gang) {
      if (!gang.present) return;
      for (uint8_t p = 0; p < gang.value.parts; ++p) {
        const Charge& c = gang.value.remaining[p];
        for (uint8_t i = 0; i < c.count; ++i) {
          out.push_back({CellKey{c.team, c.flavor, c.items[i].resource}, c.items[i].amount});
        }
      }
    });
    tally_.ForEach([&](NameId team, const TeamTally::Counts& counts) {
      for (const TeamTally::Cell* cell = counts.cells.load(std::memory_order_acquire);
           cell != nullptr; cell = cell->next) {
        out.push_back({CellKey{team, cell->flavor, cell->resource},
                       cell->amount.load(std::memory_order_relaxed)});
      }
    });
    return out;
  };
  auto charges = [&] {
    std::vector<Charge*> out;
    gangs_.ForEachQuiescent([&](Gangs::Record& gang) {
      if (!gang.present) return;
      for (uint8_t p = 0; p < gang.value.parts; ++p) out.push_back(&gang.value.remaining[p]);
    });
    for (Shard& shard : shards_) {
      shard.table.ForEachQuiescent([&](Records::Record& record) {
        if (record.present) out.push_back(&record.value.charge);
      });
    }
    return out;
  };
  return ledger_.Verify(sums, charges);
}

}  // namespace taskgov::scheduler::ledger
