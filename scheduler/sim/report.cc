#include "scheduler/sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <set>
#include <sstream>
#include <tuple>

namespace taskgov::scheduler::sim {

using model::ResourceAmount;
using model::ResourceList;

namespace {

constexpr int64_t kPingPongWindowMs = 60'000;

int64_t Accelerators(const ResourceList& r) {
  int64_t n = 0;
  for (const ResourceAmount& a : r) {
    if (model::IsAccelerator(a.name)) n += a.amount;
  }
  return n;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

// First fit, largest pod first: every pod of `job` fits the free room of some node of `flavor`.
bool PodsFit(const TraceJob& job, std::map<std::string, ResourceList> free,
             const std::map<std::string, std::string>& node_flavor) {
  std::vector<const PodSet*> sets;
  for (const PodSet& s : job.pod_sets) sets.push_back(&s);
  std::sort(sets.begin(), sets.end(), [](const PodSet* a, const PodSet* b) {
    return Accelerators(a->requests) > Accelerators(b->requests);
  });
  for (const PodSet* s : sets) {
    for (int i = 0; i < s->count; ++i) {
      bool placed = false;
      for (auto& [node, room] : free) {
        if (!s->instance_type.empty() && node_flavor.at(node) != s->instance_type) continue;
        bool fits = true;
        for (const ResourceAmount& r : s->requests) {
          if (r.amount > room.Get(r.name)) fits = false;
        }
        if (!fits) continue;
        for (const ResourceAmount& r : s->requests) room.Set(r.name, room.Get(r.name) - r.amount);
        placed = true;
        break;
      }
      if (!placed) return false;
    }
  }
  return true;
}

// What PodsFit reads of a job, as a key: jobs of one shape fit the same free room alike.
std::string ShapeOf(const TraceJob& job) {
  std::string shape;
  for (const PodSet& s : job.pod_sets) {
    shape += std::to_string(s.count) + " " + s.instance_type;
    for (const ResourceAmount& r : s.requests)
      shape += " " + r.name + "=" + std::to_string(r.amount);
    shape += ";";
  }
  return shape;
}

std::string Fixed(double v, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << v;
  return out.str();
}

std::string Percent(double v) { return Fixed(100.0 * v, 1) + "%"; }

}  // namespace

Recorder::Recorder(const model::Policy& policy, const Trace& trace, const Api* api)
    : policy_(policy), api_(api) {
  for (const TraceJob& job : trace.jobs) {
    JobStats& s = jobs_[job.name];
    s.job = &job;
    s.gpus = Accelerators(job.Demand());
    s.team = TeamOf(job.ns);
    s.shape = ShapeOf(job);
    if (!job.pod_sets.empty()) s.flavor = job.pod_sets.front().instance_type;
  }
  for (const NodeGroup& g : trace.nodes) accelerators_ += g.count * Accelerators(g.allocatable);
  for (const model::Team& team : policy.teams) {
    root_of_team_[team.name] =
        team.cohort.empty() ? "" : std::string(policy.RootCohort(team.cohort));
    for (const model::FlavorQuota& fq : team.flavors) {
      Cell& cell = CellOf(team.name, fq.flavor);
      for (const model::ResourceQuota& q : fq.resources) {
        if (!model::IsAccelerator(q.resource)) continue;
        cell.nominal += q.nominal;
        cell.ceiling = q.borrowing_limit == model::kUnlimited || cell.ceiling == model::kUnlimited
                           ? model::kUnlimited
                           : cell.ceiling + q.nominal + q.borrowing_limit;
        const int64_t lend = team.cohort.empty() ? 0 : std::min(q.lending_limit, q.nominal);
        cell.lendable += lend;
        cell.guaranteed += q.nominal - lend;
      }
    }
  }
}

Recorder::Cell& Recorder::CellOf(const std::string& team, const std::string& flavor) {
  return cells_[{team, flavor}];
}

std::string Recorder::TeamOf(const std::string& ns) const {
  const model::Team* team = policy_.TeamOfNamespace(ns);
  return team == nullptr ? "" : team->name;
}

std::string Recorder::FlavorOfNode(const std::string& node) const {
  const model::Node* n = api_->FindNode(node);
  return n == nullptr ? "" : policy_.FlavorOfNode(n->labels);
}

void Recorder::Integrate(int64_t now_ms) {
  if (last_ms_ >= 0 && now_ms > last_ms_) {
    const double dt = static_cast<double>(now_ms - last_ms_);
    used_gpu_ms_ += dt * static_cast<double>(in_use_);
    for (const auto& [key, cell] : cells_) {
      if (cell.used > cell.nominal) {
        borrowed_gpu_ms_[key.first] += dt * static_cast<double>(cell.used - cell.nominal);
      }
    }
  }
  last_ms_ = now_ms;
}

void Recorder::OnEvent(const WatchEvent& event, int64_t now_ms) {
  changed_ = true;
  if (event.type == WatchEvent::Type::kNodeUpsert) return;
  Integrate(now_ms);
  const model::Pod& pod = event.pod;
  if (job_of_pod_.count(pod.uid) == 0) {
    if (const PodObject* o = api_->Find(pod.uid)) job_of_pod_[pod.uid] = o->tag.job;
  }
  const bool counts = event.type == WatchEvent::Type::kPodUpsert && pod.bound() && !pod.terminal();
  auto it = counted_.find(pod.uid);
  const std::string team = TeamOf(pod.namespace_);
  if (it != counted_.end() && !counts) {
    in_use_ -= it->second.second;
    if (!team.empty()) CellOf(team, FlavorOfNode(it->second.first)).used -= it->second.second;
    counted_.erase(it);
  } else if (it == counted_.end() && counts) {
    const PodObject* o = api_->Find(pod.uid);
    const int64_t gpus = o == nullptr ? 0 : Accelerators(o->request);
    counted_[pod.uid] = {pod.node_name, gpus};
    in_use_ += gpus;
    if (!team.empty()) CellOf(team, FlavorOfNode(pod.node_name)).used += gpus;
  }
  if (event.type == WatchEvent::Type::kPodDelete) job_of_pod_.erase(pod.uid);
}

void Recorder::Arrived(const TraceJob& job, int64_t now_ms) {
  Integrate(now_ms);
  changed_ = true;
  if (first_ms_ < 0) first_ms_ = now_ms;
  JobStats& s = jobs_[job.name];
  s.arrived_ms = now_ms;
  // A guarantee sample: the team waits for nothing of its own (no job of it waiting) and the job
  // fits within its nominal quota beside what its bound pods use.
  bool team_waits = false;
  for (const auto& [name, other_stats] : maybe_waiting_) {
    const JobStats& other = *other_stats;
    team_waits =
        team_waits || (name != job.name && other.arrived_ms >= 0 && other.completed_ms < 0 &&
                       !other.bound_now && other.job->ns == job.ns);
  }
  ++waiting_;
  MayWait(job.name);
  auto cell = cells_.find({s.team, s.flavor});
  s.within_nominal =
      !team_waits && cell != cells_.end() && cell->second.used + s.gpus <= cell->second.nominal;
}

void Recorder::MayWait(const std::string& name) {
  auto it = jobs_.try_emplace(name).first;
  maybe_waiting_.emplace(it->first, &it->second);
}

void Recorder::AllBound(const TraceJob& job, int64_t now_ms) {
  JobStats& s = jobs_[job.name];
  if (s.bound_now) return;
  changed_ = true;
  s.bound_now = true;
  --waiting_;
  maybe_waiting_.erase(job.name);
  if (s.first_bound_ms < 0) {
    s.first_bound_ms = now_ms;
    if (s.within_nominal) guarantee_s_.push_back((now_ms - s.arrived_ms) / 1000.0);
  }
}

void Recorder::Disrupted(const TraceJob& job, int64_t now_ms, int64_t lost_progress_ms,
                         std::string_view mechanism) {
  JobStats& s = jobs_[job.name];
  changed_ = true;
  if (s.bound_now) {
    s.bound_now = false;
    ++waiting_;
    MayWait(job.name);
  }
  ++disruptions_;
  ++by_mechanism_[std::string(mechanism)];
  if (s.last_disruption_ms >= 0 && now_ms - s.last_disruption_ms <= kPingPongWindowMs) {
    ++ping_pong_;
  }
  s.last_disruption_ms = now_ms;
  ++s.disruptions;
  lost_gpu_ms_ += static_cast<double>(lost_progress_ms) * static_cast<double>(s.gpus);
}

void Recorder::Completed(const TraceJob& job, int64_t now_ms) {
  Integrate(now_ms);
  changed_ = true;
  JobStats& s = jobs_[job.name];
  s.completed_ms = now_ms;
  if (!s.bound_now) --waiting_;
  s.bound_now = false;
  maybe_waiting_.erase(job.name);
  last_completion_ms_ = std::max(last_completion_ms_, now_ms);
}

bool Recorder::QuotaAdmits(const JobStats& job) const {
  const std::string& team = job.team;
  auto it = cells_.find({team, job.flavor});
  if (it == cells_.end()) return false;
  const Cell& mine = it->second;
  if (mine.ceiling != model::kUnlimited && mine.used + job.gpus > mine.ceiling) return false;
  const std::string& root = root_of_team_.at(team);
  if (root.empty()) return mine.used + job.gpus <= mine.nominal;
  int64_t above = 0;
  int64_t lendable = 0;
  for (const auto& [key, cell] : cells_) {
    if (key.second != job.flavor || root_of_team_.at(key.first) != root) continue;
    const int64_t used = cell.used + (key.first == team ? job.gpus : 0);
    above += std::max<int64_t>(0, used - cell.guaranteed);
    lendable += cell.lendable;
  }
  return above <= lendable;
}

void Recorder::Sample(int64_t now_ms, const std::map<std::string, ResourceList>& free_by_node) {
  const double dt = last_sample_ms_ < 0 ? 0 : static_cast<double>(now_ms - last_sample_ms_);
  last_sample_ms_ = now_ms;
  if (dt <= 0 || waiting_ <= 0) return;
  if (changed_ || free_by_node != last_free_) {
    last_stranded_ = FindStranded(free_by_node);
    last_contention_ = Contention();
    last_free_ = free_by_node;
    changed_ = false;
  }
  if (stranded_observer_ && !last_stranded_.note.empty()) stranded_observer_(last_stranded_.note);
  for (const int64_t stranded : last_stranded_.by_flavor) {
    stranded_gpu_ms_ += dt * static_cast<double>(stranded);
  }
  if (!last_contention_.empty()) contended_ms_ += dt;
  for (const FairPart& part : last_contention_) {
    ContendedShare& share = contended_[part.team];
    share.borrowed_gpu_ms += dt * static_cast<double>(part.borrowed);
    share.fair_gpu_ms += dt * part.fair;
  }
}

std::vector<Recorder::FairPart> Recorder::Contention() const {
  // What the waiting jobs of each (team, flavor) ask for: those that fit its ceiling beside what
  // it uses (a job that does not could borrow nothing now).
  std::map<std::pair<std::string, std::string>, int64_t> pending;
  for (const auto& [name, stats] : maybe_waiting_) {
    const JobStats& s = *stats;
    if (s.arrived_ms < 0 || s.completed_ms >= 0 || s.bound_now || s.gpus == 0) continue;
    auto cell = cells_.find({s.team, s.flavor});
    if (cell == cells_.end()) continue;
    if (cell->second.ceiling != model::kUnlimited &&
        cell->second.used + s.gpus > cell->second.ceiling) {
      continue;
    }
    pending[{s.team, s.flavor}] += s.gpus;
  }
  struct Side {
    const std::string* team = nullptr;
    double weight = 0;
    int64_t borrowed = 0;
    int64_t wants = 0;  // borrowed now + the waiting demand beyond nominal, up to the ceiling
    double fair = 0;
  };
  struct Group {
    std::vector<Side> sides;
    int64_t lendable = 0;  // the nominal quota its owners lend and neither use nor wait for
  };
  std::map<std::pair<std::string, std::string>, Group> groups;  // (cohort root, flavor)
  for (const auto& [key, cell] : cells_) {
    const std::string& root = root_of_team_.at(key.first);
    const model::Team* team = policy_.FindTeam(key.first);
    if (root.empty() || team == nullptr) continue;
    auto it = pending.find(key);
    const int64_t waits = it == pending.end() ? 0 : it->second;
    Group& g = groups[{root, key.second}];
    const int64_t borrowed = std::max<int64_t>(0, cell.used - cell.nominal);
    g.lendable += std::min(cell.lendable, std::max<int64_t>(0, cell.nominal - cell.used - waits));
    int64_t wants = std::max<int64_t>(0, cell.used + waits - cell.nominal);
    if (cell.ceiling != model::kUnlimited) wants = std::min(wants, cell.ceiling - cell.nominal);
    if (wants > 0 && team->fair_share_weight > 0) {
      g.sides.push_back({&key.first, team->fair_share_weight, borrowed, wants, 0});
    }
  }
  std::vector<FairPart> parts;
  for (auto& [key, g] : groups) {
    int64_t asked = 0;
    for (const Side& side : g.sides) asked += side.wants;
    // Contention: two or more teams want to borrow more than can be lent, and some can be.
    if (g.sides.size() < 2 || g.lendable <= 0 || asked <= g.lendable) continue;
    // Weighted max-min fair parts (water-filling): a side wanting less than its weight's part of
    // what is left gets what it wants; the rest share the remainder by weight.
    std::vector<Side*> open;
    for (Side& side : g.sides) open.push_back(&side);
    double left = static_cast<double>(g.lendable);
    for (bool capped = true; capped && !open.empty();) {
      capped = false;
      double weights = 0;
      for (const Side* side : open) weights += side->weight;
      const double per_weight = left / weights;
      for (auto it = open.begin(); it != open.end();) {
        if (static_cast<double>((*it)->wants) <= per_weight * (*it)->weight) {
          (*it)->fair = static_cast<double>((*it)->wants);
          left -= (*it)->fair;
          it = open.erase(it);
          capped = true;
        } else {
          ++it;
        }
      }
      if (!capped) {
        for (Side* side : open) side->fair = per_weight * side->weight;
      }
    }
    for (const Side& side : g.sides) parts.push_back({*side.team, side.borrowed, side.fair});
  }
  return parts;
}

Recorder::Stranded Recorder::FindStranded(
    const std::map<std::string, ResourceList>& free_by_node) const {
  std::map<std::string, std::string> node_flavor;
  std::map<std::string, int64_t> idle;
  for (const auto& [node, room] : free_by_node) {
    node_flavor[node] = FlavorOfNode(node);
    idle[node_flavor[node]] += std::max<int64_t>(0, Accelerators(room));
  }
  // No idle accelerator: nothing strands (a waiting job asks for some), nothing to look at.
  if (std::all_of(idle.begin(), idle.end(), [](const auto& f) { return f.second == 0; })) {
    return {};
  }
  std::map<std::string, int64_t> fitting;
  std::map<std::string_view, bool> fits_by_shape;
  // QuotaAdmits reads a job's team, flavor and accelerators alone.
  std::map<std::tuple<std::string_view, std::string_view, int64_t>, bool> admits_by_ask;
  std::string which;
  for (const auto& [name, stats] : maybe_waiting_) {
    const JobStats& s = *stats;
    if (s.arrived_ms < 0 || s.completed_ms >= 0 || s.bound_now || s.gpus == 0) continue;
    auto [admits, asked] = admits_by_ask.try_emplace({s.team, s.flavor, s.gpus});
    if (asked) admits->second = QuotaAdmits(s);
    if (!admits->second) continue;
    auto [fits, fresh] = fits_by_shape.try_emplace(s.shape);
    if (fresh) fits->second = PodsFit(*s.job, free_by_node, node_flavor);
    if (!fits->second) continue;
    fitting[s.flavor] += s.gpus;
    if (stranded_observer_) which.append(" ").append(name);  // the timeline's note only
  }
  Stranded found;
  if (!which.empty()) {
    std::string idle_text;
    for (const auto& [flavor, n] : idle) idle_text += " " + flavor + "=" + std::to_string(n);
    found.note = "stranded: idle" + idle_text + "; would fit:" + which;
  }
  for (const auto& [flavor, demand] : fitting) {
    found.by_flavor.push_back(std::min(idle[flavor], demand));
  }
  return found;
}

Report Recorder::Finish(int64_t now_ms) {
  Integrate(now_ms);
  Report r;
  r.accelerators = accelerators_;
  bool all_done = true;
  for (const auto& [name, s] : jobs_) all_done = all_done && s.completed_ms >= 0;
  // From the first arrival to the last completion, or to the end when jobs were left.
  const int64_t end = all_done && last_completion_ms_ >= 0 ? last_completion_ms_ : now_ms;
  r.makespan_s = first_ms_ < 0 ? 0 : (end - first_ms_) / 1000.0;
  const double capacity_ms = static_cast<double>(accelerators_) * r.makespan_s * 1000.0;
  r.used_gpu_s = used_gpu_ms_ / 1000.0;
  r.lost_gpu_s = lost_gpu_ms_ / 1000.0;
  r.utilisation = capacity_ms <= 0 ? 0 : used_gpu_ms_ / capacity_ms;
  r.stranded = capacity_ms <= 0 ? 0 : stranded_gpu_ms_ / capacity_ms;
  r.guarantee_samples = static_cast<int>(guarantee_s_.size());
  r.guarantee_p50 = Percentile(guarantee_s_, 0.50);
  r.guarantee_p95 = Percentile(guarantee_s_, 0.95);
  r.guarantee_max = Percentile(guarantee_s_, 1.0);
  r.disruptions = disruptions_;
  r.disruptions_by_mechanism = by_mechanism_;
  r.ping_pong = ping_pong_;
  std::map<std::string, std::vector<double>> waits;
  for (const auto& [name, s] : jobs_) {
    ++r.jobs;
    if (s.completed_ms >= 0) ++r.completed;
    const std::string cls = s.job->priority_class.empty() ? "(none)" : s.job->priority_class;
    Report::Waits& w = r.waits_by_class[cls];
    ++w.jobs;
    if (s.first_bound_ms < 0) {
      ++r.never_ran;
      ++w.never_ran;
    } else {
      waits[cls].push_back((s.first_bound_ms - s.arrived_ms) / 1000.0);
    }
    if (s.disruptions > r.max_disruptions_of_a_job) {
      r.max_disruptions_of_a_job = s.disruptions;
      r.most_disrupted_job = name;
    }
  }
  for (auto& [cls, w] : r.waits_by_class) {
    w.p50 = Percentile(waits[cls], 0.50);
    w.p95 = Percentile(waits[cls], 0.95);
  }
  double sum = 0, squares = 0;
  int n = 0;
  for (const model::Team& team : policy_.teams) {
    Report::TeamShare& share = r.teams[team.name];
    auto it = borrowed_gpu_ms_.find(team.name);
    share.borrowed_gpu_s = it == borrowed_gpu_ms_.end() ? 0 : it->second / 1000.0;
    share.weight = team.fair_share_weight;
    if (share.borrowed_gpu_s <= 0 || share.weight <= 0) continue;
    const double x = share.borrowed_gpu_s / share.weight;
    sum += x;
    squares += x * x;
    ++n;
  }
  r.jain = n == 0 || squares <= 0 ? 1.0 : sum * sum / (n * squares);
  r.contended_s = contended_ms_ / 1000.0;
  sum = 0;
  squares = 0;
  n = 0;
  for (const auto& [team, share] : contended_) {
    if (share.fair_gpu_ms <= 0) continue;
    const double x = share.borrowed_gpu_ms / share.fair_gpu_ms;
    r.teams[team].borrowed_of_fair = x;
    sum += x;
    squares += x * x;
    ++n;
  }
  r.jain_contended = n == 0 ? -1 : squares <= 0 ? 0 : sum * sum / (n * squares);
  return r;
}

// ---- the table ----

namespace {

// The rows under the reports' labels, each column as wide as its widest cell.
void PrintTable(const std::vector<Report>& reports,
                const std::vector<std::pair<std::string, std::vector<std::string>>>& rows,
                std::ostream& out) {
  size_t name_width = 0;
  std::vector<size_t> widths(reports.size(), 0);
  for (size_t i = 0; i < reports.size(); ++i) widths[i] = reports[i].label.size();
  for (const auto& [name, cells] : rows) {
    name_width = std::max(name_width, name.size());
    for (size_t i = 0; i < cells.size(); ++i) widths[i] = std::max(widths[i], cells[i].size());
  }
  out << std::left << std::setw(static_cast<int>(name_width)) << "";
  for (size_t i = 0; i < reports.size(); ++i) {
    out << "  " << std::setw(static_cast<int>(widths[i])) << reports[i].label;
  }
  out << "\n";
  for (const auto& [name, cells] : rows) {
    out << std::left << std::setw(static_cast<int>(name_width)) << name;
    for (size_t i = 0; i < cells.size(); ++i) {
      out << "  " << std::setw(static_cast<int>(widths[i])) << cells[i];
    }
    out << "\n";
  }
}

}  // namespace

void PrintReports(const std::vector<Report>& reports, std::ostream& out) {
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto row = [&](const std::string& name, auto cell) {
    std::vector<std::string> cells;
    for (const Report& r : reports) cells.push_back(cell(r));
    rows.emplace_back(name, std::move(cells));
  };
  row("jobs (completed / never ran)", [](const Report& r) {
    return std::to_string(r.jobs) + " (" + std::to_string(r.completed) + " / " +
           std::to_string(r.never_ran) + ")";
  });
  row("accelerators", [](const Report& r) { return std::to_string(r.accelerators); });
  row("makespan", [](const Report& r) { return Fixed(r.makespan_s, 0) + " s"; });
  row("utilisation", [](const Report& r) { return Percent(r.utilisation); });
  row("stranded (idle while a waiting job fits)",
      [](const Report& r) { return Percent(r.stranded); });
  row("time to guarantee p50 / p95 / max", [](const Report& r) {
    return Fixed(r.guarantee_p50, 1) + " / " + Fixed(r.guarantee_p95, 1) + " / " +
           Fixed(r.guarantee_max, 1) + " s (" + std::to_string(r.guarantee_samples) + ")";
  });
  row("disruptions per job", [](const Report& r) {
    return Fixed(r.disruptions_per_job(), 2) + " (" + std::to_string(r.disruptions) + ")";
  });
  std::set<std::string> mechanisms;
  for (const Report& r : reports) {
    for (const auto& [m, n] : r.disruptions_by_mechanism) mechanisms.insert(m);
  }
  for (const std::string& m : mechanisms) {
    row("  by " + m, [m](const Report& r) {
      auto it = r.disruptions_by_mechanism.find(m);
      return std::to_string(it == r.disruptions_by_mechanism.end() ? 0 : it->second);
    });
  }
  row("most disruptions of one job", [](const Report& r) {
    return std::to_string(r.max_disruptions_of_a_job) +
           (r.most_disrupted_job.empty() ? "" : " (" + r.most_disrupted_job + ")");
  });
  row("ping-pong (again within 60 s)", [](const Report& r) { return std::to_string(r.ping_pong); });
  row("work lost", [](const Report& r) {
    return Percent(r.work_lost()) + " (" + Fixed(r.lost_gpu_s, 0) + " GPU-s)";
  });
  row("Jain's index, borrowed per weight", [](const Report& r) { return Fixed(r.jain, 3); });
  row("Jain's index, borrowed per fair part", [](const Report& r) {
    return r.jain_contended < 0
               ? std::string("-")
               : Fixed(r.jain_contended, 3) + " (contended " + Fixed(r.contended_s, 0) + " s)";
  });
  std::set<std::string> teams, classes;
  for (const Report& r : reports) {
    for (const auto& [t, s] : r.teams) teams.insert(t);
    for (const auto& [c, w] : r.waits_by_class) classes.insert(c);
  }
  for (const std::string& t : teams) {
    row("  borrowed GPU-s / weight, " + t, [t](const Report& r) {
      auto it = r.teams.find(t);
      if (it == r.teams.end()) return std::string("-");
      return Fixed(it->second.borrowed_gpu_s, 0) + " / " + Fixed(it->second.weight, 0);
    });
  }
  for (const std::string& t : teams) {
    row("  borrowed / fair part while contending, " + t, [t](const Report& r) {
      auto it = r.teams.find(t);
      if (it == r.teams.end() || it->second.borrowed_of_fair < 0) return std::string("-");
      return Fixed(it->second.borrowed_of_fair, 2);
    });
  }
  for (const std::string& c : classes) {
    row("wait p50 / p95, " + c, [c](const Report& r) {
      auto it = r.waits_by_class.find(c);
      if (it == r.waits_by_class.end()) return std::string("-");
      return Fixed(it->second.p50, 1) + " / " + Fixed(it->second.p95, 1) + " s" +
             (it->second.never_ran > 0 ? " (" + std::to_string(it->second.never_ran) + " never)"
                                       : "");
    });
  }
  std::set<std::string> counters;
  for (const Report& r : reports) {
    for (const auto& [c, n] : r.counters) counters.insert(c);
  }
  for (const std::string& c : counters) {
    row(c, [c](const Report& r) {
      auto it = r.counters.find(c);
      return std::to_string(it == r.counters.end() ? 0 : it->second);
    });
  }
  row("simulated / wall time", [](const Report& r) {
    return Fixed(r.simulated_s, 0) + " s / " + Fixed(r.wall_s, 2) + " s";
  });

  PrintTable(reports, rows, out);
}

}  // namespace taskgov::scheduler::sim
