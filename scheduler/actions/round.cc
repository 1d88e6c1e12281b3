#include "scheduler/actions/round.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "scheduler/model/interner.h"

namespace taskgov::scheduler::actions {

using decisions::PreemptionReason;
using model::IsAccelerator;
using model::NameId;
using model::ResourceAmount;
using model::ResourceList;
using model::ResourceNames;
using model::TeamNames;

namespace {

// The resource a status line counts: the pod's largest accelerator request, else cpu, else the
// first it requests.
std::string MainResource(const ResourceList& request) {
  std::string best;
  int64_t biggest = 0;
  for (const ResourceAmount& r : request) {
    if (IsAccelerator(r.name) && r.amount > biggest) {
      biggest = r.amount;
      best = r.name;
    }
  }
  if (!best.empty()) return best;
  if (request.Has("cpu")) return "cpu";
  return request.empty() ? std::string("cpu") : request.begin()->name;
}

}  // namespace

bool EvictionDue(const RoundVictim& victim, int64_t now_ms) {
  return victim.phase == VictimPhase::kToEvict ||
         (victim.phase == VictimPhase::kBlocked && victim.retry_at_ms <= now_ms);
}

Freed FreedBy(const Round& round) {
  Freed out;
  out.resource = MainResource(round.preemptor.request);
  const std::optional<NameId> resource_id = ResourceNames().Find(out.resource);
  for (const RoundVictim& v : round.victims) {
    out.reclaim = out.reclaim || v.reason == PreemptionReason::kReclaim ||
                  v.reason == PreemptionReason::kReclaimWhileBorrowing;
    out.fair = out.fair || v.reason == PreemptionReason::kFairShare;
    const std::string& team = TeamNames().Name(v.team);
    auto t = std::find_if(out.teams.begin(), out.teams.end(),
                          [&](const auto& x) { return x.first == team; });
    if (t == out.teams.end()) t = out.teams.insert(out.teams.end(), {team, {}});
    if (std::find(t->second.begin(), t->second.end(), v.reason) == t->second.end()) {
      t->second.push_back(v.reason);
    }
    if (resource_id && v.flavor == round.flavor) {
      for (const auto& [id, a] : v.charged) {
        if (id == *resource_id) out.amount += a;
      }
    }
  }
  return out;
}

std::string PodCount(size_t n) { return std::to_string(n) + (n == 1 ? " pod" : " pods"); }

}  // namespace taskgov::scheduler::actions
