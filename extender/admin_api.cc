#include "extender/admin_api.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>

#include "config/names.h"
#include "extender/workload_rows.h"
#include "scheduler/actions/job_resumer.h"
#include "scheduler/common/result.h"
#include "scheduler/common/time_format.h"
#include "scheduler/decisions/rules.h"
#include "scheduler/ledger/cohort_usage.h"
#include "scheduler/model/gang.h"
#include "scheduler/model/interner.h"
#include "scheduler/model/pod_identity.h"
#include "scheduler/model/quantity.h"

namespace taskgov::extender {
namespace {

using scheduler::model::NameId;
using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

constexpr size_t kDefaultLimit = 500;
constexpr size_t kMaxLimit = 1000;
constexpr std::string_view kApiVersion = "taskgov.io/v1";

// ---- replies ----

HttpResponse Json(int status, const rapidjson::StringBuffer& buffer) {
  return HttpResponse{status, "application/json",
                      std::string(buffer.GetString(), buffer.GetSize())};
}

HttpResponse ErrorReply(int status, const std::string& message) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  w.Key("error");
  w.String(message.data(), static_cast<rapidjson::SizeType>(message.size()));
  w.EndObject();
  return Json(status, buffer);
}

void Str(Writer& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

void KeyStr(Writer& w, const char* key, std::string_view value) {
  w.Key(key);
  Str(w, value);
}

// A Kubernetes quantity string, or null for a limit that does not apply.
void Quantity(Writer& w, std::string_view resource, int64_t amount) {
  if (amount == scheduler::model::kUnlimited) {
    w.Null();
    return;
  }
  Str(w, scheduler::model::FormatQuantity(resource, amount));
}

void Resources(Writer& w, const scheduler::model::ResourceList& list) {
  w.StartObject();
  for (const scheduler::model::ResourceAmount& r : list) {
    w.Key(r.name.c_str());
    Quantity(w, r.name, r.amount);
  }
  w.EndObject();
}

void Time(Writer& w, const char* key, int64_t unix_ms) {
  w.Key(key);
  if (unix_ms <= 0) {
    w.Null();
    return;
  }
  Str(w, common::FormatTime(unix_ms * 1000));
}

void ListHeader(Writer& w, std::string_view kind) {
  KeyStr(w, "apiVersion", kApiVersion);
  KeyStr(w, "kind", kind);
}

// ---- query strings ----

std::optional<std::string> PercentDecode(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '+') {
      out += ' ';
    } else if (raw[i] != '%') {
      out += raw[i];
    } else {
      unsigned value = 0;
      if (i + 2 >= raw.size()) return std::nullopt;
      auto [end, ec] = std::from_chars(raw.data() + i + 1, raw.data() + i + 3, value, 16);
      if (ec != std::errc() || end != raw.data() + i + 3) return std::nullopt;
      out += static_cast<char>(value);
      i += 2;
    }
  }
  return out;
}

using Query = std::map<std::string, std::string, std::less<>>;

// The parameters of `raw`, each at most once and each one of `known`.
common::Result<Query> ParseQuery(std::string_view raw,
                                 std::initializer_list<std::string_view> known) {
  Query out;
  while (!raw.empty()) {
    const size_t amp = raw.find('&');
    const std::string_view part = raw.substr(0, amp);
    raw = amp == std::string_view::npos ? std::string_view() : raw.substr(amp + 1);
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    const std::optional<std::string> name = PercentDecode(part.substr(0, eq));
    const std::optional<std::string> value =
        PercentDecode(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1));
    if (!name || !value) {
      return common::Error{"malformed percent-encoding in query parameter '" +
                           std::string(part.substr(0, eq)) + "'"};
    }
    if (std::find(known.begin(), known.end(), *name) == known.end()) {
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return common::Error{"unknown query parameter '" + *name + "'" +
                           (list.empty() ? "; this endpoint takes none" : "; known: " + list)};
    }
    if (!out.emplace(*name, *value).second) {
      return common::Error{"query parameter '" + *name + "' given more than once"};
    }
  }
  return out;
}

common::Result<size_t> ParseLimit(const Query& query) {
  auto it = query.find("limit");
  if (it == query.end()) return kDefaultLimit;
  size_t limit = 0;
  const std::string& text = it->second;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), limit);
  if (ec != std::errc() || end != text.data() + text.size() || limit < 1 || limit > kMaxLimit) {
    return common::Error{"query parameter 'limit' must be an integer from 1 to " +
                         std::to_string(kMaxLimit) + ", not '" + text + "'"};
  }
  return limit;
}

// ---- policy vocabulary ----

// ---- teams ----

// A team /metrics reports on: in the policy, or still holding usage (metrics' Scrape::Live).
bool Live(const scheduler::model::Policy& policy,
          const std::vector<scheduler::ledger::CohortCellUsage>& cells, std::string_view team) {
  if (policy.FindTeam(team) != nullptr) return true;
  const std::optional<NameId> id = scheduler::model::TeamNames().Find(team);
  return id && std::any_of(cells.begin(), cells.end(),
                           [&](const auto& c) { return c.key.team == *id && c.view.usage > 0; });
}

// A team's pods preempted, as its victim: now (evicted, not yet gone) and in all, by reason.
struct Preempted {
  int64_t now = 0;
  std::map<std::string, double, std::less<>> by_reason;
};

// One read of what the team replies show.
struct TeamsRead {
  scheduler::model::PolicyPtr policy;
  std::vector<scheduler::ledger::CohortCellUsage> cells;
  std::unordered_map<NameId, scheduler::ledger::QuotaBook::TeamCounts> admitted;
  std::unordered_map<NameId, size_t> ungoverned;
  std::unordered_map<NameId, size_t> terminating;           // bound pods being deleted
  std::map<std::string, Preempted, std::less<>> preempted;  // by victim team
  // Waits and run times over the last `window_s` seconds, by team (TaskHistory).
  int64_t window_s = 0;
  std::map<std::string, TaskHistory::Window, std::less<>> windows;
  bool have_windows = false;
};

constexpr int64_t kDefaultWindowS = 3600;
constexpr int64_t kMaxWindowS = 86'400;  // what TaskHistory keeps

common::Result<int64_t> ParseWindow(const Query& query) {
  auto it = query.find("window");
  if (it == query.end()) return kDefaultWindowS;
  int64_t seconds = 0;
  const std::string& text = it->second;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || seconds < 60 ||
      seconds > kMaxWindowS) {
    return common::Error{"query parameter 'window' must be a number of seconds from 60 to " +
                         std::to_string(kMaxWindowS) + ", not '" + text + "'"};
  }
  return seconds;
}

// A team's pods over the window: how many were bound and how long they had waited, how many
// ended, how long they had run and how they ended.
void TeamWindow(Writer& w, std::string_view team, const TeamsRead& read) {
  if (!read.have_windows) return;
  const TaskHistory::Window none;
  auto it = read.windows.find(team);
  const TaskHistory::Window& win = it == read.windows.end() ? none : it->second;
  auto average = [&](const char* key, double sum, size_t n) {
    w.Key(key);
    if (n == 0) {
      w.Null();
    } else {
      w.Double(std::round(sum / static_cast<double>(n) * 10.0) / 10.0);
    }
  };
  w.Key("window");
  w.StartObject();
  w.Key("seconds");
  w.Int64(read.window_s);
  w.Key("boundPods");
  w.Uint64(win.bound);
  w.Key("waitSecondsSum");
  w.Double(win.wait_seconds);
  average("averageWaitSeconds", win.wait_seconds, win.bound);
  w.Key("endedPods");
  w.Uint64(win.ended);
  w.Key("runSecondsSum");
  w.Double(win.run_seconds);
  average("averageRunSeconds", win.run_seconds, win.ended);
  w.Key("ended");
  w.StartObject();
  for (const char* outcome : {"Succeeded", "Failed", "Preempted", "Deleted"}) {
    auto n = win.outcomes.find(outcome);
    w.Key(outcome);
    w.Uint64(n == win.outcomes.end() ? 0 : n->second);
  }
  w.EndObject();
  w.EndObject();
}

TeamsRead ReadTeams(const scheduler::ledger::QuotaBook& book,
                    const scheduler::state::ClusterState& cluster,
                    const std::function<metrics::PreemptionTotals()>& preemptions) {
  TeamsRead read;
  const std::vector<scheduler::ledger::Ledger::CellUsage> cells = book.ledger().Cells(&read.policy);
  read.cells = scheduler::ledger::ComputeCohortUsage(cells, *read.policy, {});
  read.admitted = book.CountByTeam();
  read.ungoverned = cluster.UngovernedByTeam();
  read.terminating = cluster.TerminatingByTeam();
  if (preemptions) {
    const metrics::PreemptionTotals totals = preemptions();
    for (const auto& [team, n] : totals.preempted_pods) read.preempted[team].now = n;
    const scheduler::model::Policy& policy = *read.policy;
    for (const metrics::CountedPreemption& c : metrics::CountedPreemptions(
             totals, [&](std::string_view team) { return Live(policy, read.cells, team); })) {
      read.preempted[std::string(c.victim_team)].by_reason[std::string(c.reason)] += c.evictions;
    }
  }
  return read;
}

// The teams' numbers (ReadTeams) with their windows of `window_s` seconds.
TeamsRead ReadTeamsAt(const AdminApi::Sources& sources, int64_t window_s) {
  TeamsRead read = ReadTeams(*sources.book, *sources.cluster, sources.preemptions);
  if (sources.tasks != nullptr) {
    read.window_s = window_s;
    read.windows = sources.tasks->Windows(sources.clock->NowMs(), window_s * 1000);
    read.have_windows = true;
  }
  return read;
}

// Each (flavor, resource) of `flavors` as {flavor, resource, <amount>: its nominal}.
void WriteAmounts(Writer& w, const std::vector<scheduler::model::FlavorQuota>& flavors,
                  const char* amount) {
  w.StartArray();
  for (const scheduler::model::FlavorQuota& fq : flavors) {
    for (const scheduler::model::ResourceQuota& q : fq.resources) {
      w.StartObject();
      KeyStr(w, "flavor", fq.flavor);
      KeyStr(w, "resource", q.resource);
      w.Key(amount);
      Quantity(w, q.resource, q.nominal);
      w.EndObject();
    }
  }
  w.EndArray();
}

// Cohorts the policy names (Kueue Cohort objects, or a team's cohort), with the quota each holds
// itself: it joins the pool its teams borrow from.
void WriteCohorts(Writer& w, const scheduler::model::Policy& policy) {
  w.Key("cohorts");
  w.StartArray();
  for (const scheduler::model::Cohort& cohort : policy.cohorts) {
    w.StartObject();
    KeyStr(w, "name", cohort.name);
    KeyStr(w, "parent", cohort.parent);
    w.Key("quota");
    WriteAmounts(w, cohort.flavors, "nominal");
    w.EndObject();
  }
  w.EndArray();
}

// HyperPod IdleResourceSharing: whether it is on, the cohort it lends within and, per flavor and
// resource, the unallocated capacity the policy in force adds to that cohort's quota.
void WriteIdleResourceSharing(Writer& w, const scheduler::model::IdleResourceSharing& sharing) {
  w.Key("idleResourceSharing");
  w.StartObject();
  w.Key("enabled");
  w.Bool(sharing.enabled);
  KeyStr(w, "cohort", sharing.cohort);
  w.Key("unallocated");
  WriteAmounts(w, sharing.unallocated, "amount");
  w.EndObject();
}

void TeamPolicy(Writer& w, const scheduler::model::Team& team) {
  KeyStr(w, "name", team.name);
  KeyStr(w, "cohort", team.cohort);
  KeyStr(w, "clusterQueue", team.cluster_queue);
  w.Key("namespaces");
  w.StartArray();
  for (const std::string& ns : team.namespaces) Str(w, ns);
  w.EndArray();
  w.Key("fairShareWeight");
  w.Double(team.fair_share_weight);
  w.Key("active");
  w.Bool(team.active);
  w.Key("reclaimable");
  w.Bool(team.reclaimable);
  KeyStr(w, "queueing", config::Name(team.queueing));
  w.Key("preemption");
  w.StartObject();
  KeyStr(w, "withinTeam", config::Name(team.within_team));
  KeyStr(w, "reclaimWithinCohort", config::Name(team.reclaim));
  w.Key("borrowWithinCohort");
  w.StartObject();
  KeyStr(w, "policy", team.borrow_within_cohort.lower_priority ? "LowerPriority" : "Never");
  w.Key("maxPriorityThreshold");
  if (team.borrow_within_cohort.max_priority_threshold) {
    w.Int(*team.borrow_within_cohort.max_priority_threshold);
  } else {
    w.Null();
  }
  w.EndObject();
  w.EndObject();
}

void TeamQuotas(Writer& w, NameId team_id, const TeamsRead& read) {
  w.Key("quotas");
  w.StartArray();
  for (const scheduler::ledger::CohortCellUsage& cell : read.cells) {
    if (cell.key.team != team_id) continue;
    const std::string_view resource = scheduler::model::ResourceNames().Name(cell.key.resource);
    const scheduler::ledger::CellView& v = cell.view;
    w.StartObject();
    KeyStr(w, "flavor", scheduler::model::FlavorNames().Name(cell.key.flavor));
    KeyStr(w, "resource", resource);
    w.Key("nominal");
    Quantity(w, resource, v.nominal);
    w.Key("borrowingLimit");
    Quantity(w, resource, v.borrowing_limit);
    w.Key("lendingLimit");
    Quantity(w, resource, v.lending_limit);
    w.Key("usage");
    Quantity(w, resource, v.usage);
    w.Key("borrowed");
    Quantity(w, resource, cell.borrowed);
    w.Key("lent");
    Quantity(w, resource, std::llround(cell.lent));
    w.EndObject();
  }
  w.EndArray();
}

void TeamShares(Writer& w, const scheduler::model::Team& team,
                const scheduler::ledger::QuotaBook& book) {
  w.Key("weightedShare");
  w.StartObject();
  scheduler::ledger::Ledger::Session session(book.ledger());
  for (const scheduler::model::FlavorQuota& fq : team.flavors) {
    const int64_t per_mille = scheduler::decisions::ReportedWeightedShare(
        session, team, scheduler::model::FlavorNames().Intern(fq.flavor));
    w.Key(fq.flavor.c_str());
    if (per_mille == scheduler::model::kUnlimited) {
      Str(w, "+Inf");
    } else {
      w.Double(static_cast<double>(per_mille) / 1000.0);
    }
  }
  w.EndObject();
}

void TeamCounts(Writer& w, NameId team_id, const TeamsRead& read,
                scheduler::state::ClusterState& cluster) {
  const scheduler::ledger::QuotaBook::TeamCounts admitted =
      read.admitted.count(team_id) ? read.admitted.at(team_id)
                                   : scheduler::ledger::QuotaBook::TeamCounts{};
  const scheduler::state::PendingQueues::Counts pending = cluster.pending().CountsOf(team_id);
  auto ungoverned = read.ungoverned.find(team_id);
  auto terminating = read.terminating.find(team_id);
  auto preempted = read.preempted.find(scheduler::model::TeamNames().Name(team_id));
  // As taskgov_pods counts them: one state each.
  const metrics::TeamPods pods = metrics::PartitionTeamPods(
      admitted, static_cast<int64_t>(pending.total),
      terminating == read.terminating.end() ? 0 : static_cast<int64_t>(terminating->second),
      preempted == read.preempted.end() ? 0 : preempted->second.now);
  w.Key("pods");
  w.StartObject();
  for (auto [key, n] : {std::pair{"running", pods.running}, std::pair{"admitted", pods.admitted},
                        std::pair{"pending", pods.pending}, std::pair{"preempted", pods.preempted},
                        std::pair{"terminating", pods.terminating}}) {
    w.Key(key);
    w.Int64(n);
  }
  w.Key("refused");
  w.Uint64(pending.refused);
  w.Key("ungoverned");
  w.Uint64(ungoverned == read.ungoverned.end() ? 0 : ungoverned->second);
  w.EndObject();
  // As taskgov_preemptions_total{victim_team}: the team's pods preempted since the start.
  w.Key("preemptions");
  w.StartObject();
  double total = 0;
  w.Key("byReason");
  w.StartObject();
  if (preempted != read.preempted.end()) {
    for (const auto& [reason, n] : preempted->second.by_reason) {
      w.Key(reason.c_str());
      w.Int64(std::llround(n));
      total += n;
    }
  }
  w.EndObject();
  w.Key("total");
  w.Int64(std::llround(total));
  w.EndObject();
  w.Key("workloads");
  w.StartObject();
  w.Key("admitted");
  w.Int64(admitted.workloads);
  w.Key("pending");
  w.Uint64(pending.workloads);
  w.EndObject();
}

// ---- flavors ----

// A flavor of the cluster (a node has it) or of the policy (a team has quota on it): its nodes,
// their capacity and use, the teams' nominal sum. Nodes of no flavor (no instance-type label
// the policy knows) are one more, named "".
struct FlavorUse {
  std::string flavor;
  size_t nodes = 0, schedulable = 0;
  scheduler::model::ResourceList allocatable, used, nominal;
};

std::vector<FlavorUse> ReadFlavors(const scheduler::ledger::QuotaBook& book,
                                   const scheduler::state::ClusterState& cluster) {
  const scheduler::model::PolicyPtr policy = book.ledger().policy();
  std::map<std::string, FlavorUse> flavors;
  for (const scheduler::model::Team& team : policy->teams) {
    for (const scheduler::model::FlavorQuota& fq : team.flavors) {
      FlavorUse& f = flavors[fq.flavor];
      for (const scheduler::model::ResourceQuota& rq : fq.resources) {
        f.nominal.Add(scheduler::model::ResourceList{{rq.resource, rq.nominal}});
      }
    }
  }
  for (NameId id : cluster.nodes().FlavorsWithNodes()) {
    (void)flavors[id == scheduler::state::kNoFlavor
                      ? std::string()
                      : std::string(scheduler::model::FlavorNames().Name(id))];
  }
  std::vector<FlavorUse> out;
  for (auto& [name, f] : flavors) {
    f.flavor = name;
    const NameId id =
        name.empty() ? scheduler::state::kNoFlavor : scheduler::model::FlavorNames().Intern(name);
    for (const auto& [node, view] : cluster.nodes().NodesOfFlavor(id)) {
      ++f.nodes;
      f.schedulable += view.schedulable;
      f.allocatable.Add(view.allocatable);
      f.used.Add(view.used);
    }
    out.push_back(std::move(f));
  }
  return out;
}

// ---- workloads ----

// 16 hex digits standing for a workload's key where its name is hidden: the first 8 bytes of
// HMAC-SHA256(`secret`, key). Unkeyed (std::hash of the name), anyone could hash a guessed name
// and find it among another team's rows.
std::string HiddenKey(const std::string& secret, std::string_view key) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(key.data()), key.size(), mac, &len);
  char text[17];
  for (int i = 0; i < 8; ++i) snprintf(text + 2 * i, 3, "%02x", mac[i]);
  return text;
}

// 32 random bytes: OpenSSL's generator (seeded by the kernel), else the kernel's directly.
std::string RandomKey() {
  std::string key(32, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1) {
    std::random_device kernel;  // /dev/urandom
    for (char& c : key) c = static_cast<char>(kernel());
  }
  return key;
}

// What a workload's pods add up to: their request, the earliest creation and start, whether one
// was refused (and the first refusal with its time), the first preemption note.
struct PodTotals {
  scheduler::model::ResourceList request;
  int64_t created = 0, started = 0;
  bool refused = false;
  std::string preemption, refusal;
  int64_t refused_since = 0;
};

PodTotals TotalsOf(const std::vector<PodRow>& pods) {
  PodTotals t;
  for (const PodRow& p : pods) {
    if (t.refusal.empty() && !p.refusal.empty()) {
      t.refusal = p.refusal;
      t.refused_since = p.refused_ms;
    }
    t.request.Add(p.request);
    if (t.created == 0 || (p.created_ms > 0 && p.created_ms < t.created)) t.created = p.created_ms;
    if (p.started_ms > 0 && (t.started == 0 || p.started_ms < t.started)) t.started = p.started_ms;
    t.refused = t.refused || p.refused;
    if (t.preemption.empty()) t.preemption = p.preemption;
  }
  return t;
}

void WritePodList(Writer& w, const std::vector<PodRow>& pods) {
  w.Key("podList");
  w.StartArray();
  for (const PodRow& p : pods) {
    w.StartObject();
    KeyStr(w, "namespace", p.ns);
    KeyStr(w, "name", p.name);
    KeyStr(w, "uid", p.uid);
    KeyStr(w, "state", p.state);
    w.Key("request");
    Resources(w, p.request);
    Time(w, "createdAt", p.created_ms);
    Time(w, "startedAt", p.started_ms);
    w.Key("refused");
    w.Bool(p.refused);
    KeyStr(w, "refusal", p.refusal);
    Time(w, "refusedSince", p.refusal.empty() ? 0 : p.refused_ms);
    KeyStr(w, "preemption", p.preemption);
    w.EndObject();
  }
  w.EndArray();
}

// taskgov's reason for pausing `job` ("" when taskgov did not pause it).
std::string PauseReason(const scheduler::model::JobControl& job) {
  if (!job.paused_by_taskgov()) return "";
  auto it = job.annotations.find(scheduler::model::kSuspendReasonAnnotation);
  return it == job.annotations.end() ? "" : it->second;
}

// "suspended": who suspended its job, why, since when and how often taskgov did; null when its
// job is not suspended.
void WriteSuspension(Writer& w, const WorkloadRow& row) {
  w.Key("suspended");
  if (row.job == nullptr) {
    w.Null();
    return;
  }
  const scheduler::model::JobControl& job = *row.job;
  const bool ours = job.paused_by_taskgov();
  w.StartObject();
  KeyStr(w, "by", ours ? "taskgov" : "user");
  KeyStr(w, "reason", PauseReason(job));
  Time(w, "since", ours ? job.suspended_at_ms().value_or(0) : 0);
  w.Key("suspensions");
  w.Int64(job.suspensions());
  w.EndObject();
}

// One line on a suspended workload's job, for `why`.
std::string SuspensionLine(const WorkloadRow& row) {
  const scheduler::model::JobControl& job = *row.job;
  if (!job.paused_by_taskgov()) {
    return job.display() + " is suspended by its user: taskgov never resumes it (resume it: " +
           "spec.suspend false, or taskgov job resume " + job.name + ")";
  }
  const std::optional<int64_t> since = job.suspended_at_ms();
  const std::string reason = PauseReason(job);
  return job.display() + " is paused by taskgov" + (reason.empty() ? "" : " (" + reason + ")") +
         (since ? " since " + common::FormatTime(*since * 1000) : "") +
         ": taskgov resumes it when its whole demand fits its team's quota";
}

// A workload; `hidden`: of a team the caller does not see — no namespace, name, nodes or pods.
void WriteWorkload(Writer& w, const WorkloadRow& row, int64_t now_ms, bool with_pods, bool hidden,
                   const std::string& why,
                   const std::optional<scheduler::decisions::TopologyPlacement>& topology) {
  w.StartObject();
  KeyStr(w, "namespace", hidden ? "" : row.ns);
  KeyStr(w, "name", hidden ? "" : row.name);
  w.Key("hidden");
  w.Bool(hidden);
  KeyStr(w, "kind", row.kind);
  KeyStr(w, "team", scheduler::model::TeamNames().Name(row.team));
  KeyStr(w, "state", row.state);
  KeyStr(w, "priorityClass", row.priority_class);
  w.Key("priority");
  w.Int(row.priority);
  w.Key("pods");
  w.Uint64(row.pods.size());
  w.Key("declaredPods");
  w.Int(row.declared);
  KeyStr(w, "instanceType", row.instance_type);
  KeyStr(w, "flavor", row.flavor);
  // A topology gang's domain (issue 37), while its gang holds quota.
  w.Key("topology");
  if (topology && !hidden) {
    w.StartObject();
    KeyStr(w, "level", topology->level);
    KeyStr(w, "domain", topology->domain);
    w.Key("required");
    w.Bool(topology->required);
    w.EndObject();
  } else {
    w.Null();
  }
  // Its pods by state, for views that count pods per flavor (the Dashboard's filter).
  w.Key("podStates");
  w.StartObject();
  for (const char* s : {"Pending", "Admitted", "Running", "Terminating"}) {
    w.Key(s);
    w.Uint64(std::count_if(row.pods.begin(), row.pods.end(),
                           [&](const PodRow& p) { return p.state == s; }));
  }
  w.EndObject();
  PodTotals t = TotalsOf(row.pods);
  // A paused job without pods: its whole demand, created with its job, waiting since paused.
  int64_t waits_since = t.created;
  if (row.pods.empty() && row.job != nullptr) {
    t.request = JobDemand(*row.job);
    t.created = row.job->creation_unix_ms;
    waits_since = row.job->suspended_at_ms().value_or(t.created);
  }
  w.Key("request");
  Resources(w, t.request);
  w.Key("nodes");
  w.StartArray();
  if (!hidden) {
    for (const std::string& node : row.nodes) Str(w, node);
  }
  w.EndArray();
  Time(w, "createdAt", t.created);
  Time(w, "startedAt", t.started);
  const bool running = row.state == "Running" || row.state == "Terminating";
  w.Key("waitSeconds");
  w.Int64(std::max<int64_t>(0, ((running && t.started > 0) ? t.started : now_ms) - waits_since) /
          1000);
  w.Key("runSeconds");
  w.Int64(running && t.started > 0 ? std::max<int64_t>(0, now_ms - t.started) / 1000 : 0);
  w.Key("queuePosition");
  if (row.position > 0) {
    w.Uint64(row.position);
  } else {
    w.Null();
  }
  w.Key("refused");
  w.Bool(t.refused);
  KeyStr(w, "refusal", hidden ? "" : t.refusal);
  Time(w, "refusedSince", t.refusal.empty() ? 0 : t.refused_since);
  KeyStr(w, "preemption", hidden ? "" : t.preemption);
  KeyStr(w, "why", why);
  WriteSuspension(w, row);
  if (with_pods) WritePodList(w, row.pods);
  w.EndObject();
}

void WriteChecks(Writer& w, const std::vector<scheduler::decisions::Check>& checks) {
  w.Key("checks");
  w.StartArray();
  for (const scheduler::decisions::Check& c : checks) {
    w.StartObject();
    KeyStr(w, "rule", c.rule);
    w.Key("passed");
    w.Bool(c.passed);
    KeyStr(w, "detail", c.detail);
    w.Key("change");
    if (c.passed) {
      w.Null();
    } else {
      Str(w, c.change);
    }
    w.EndObject();
  }
  w.EndArray();
}

void WriteFlavorExplanation(Writer& w, const scheduler::decisions::FlavorExplanation& f) {
  w.StartObject();
  KeyStr(w, "flavor", f.flavor);
  KeyStr(w, "mode", scheduler::decisions::ModeName(f.mode));
  w.Key("admissible");
  w.Bool(f.admissible);
  WriteChecks(w, f.checks);
  w.Key("quota");
  w.StartArray();
  for (const scheduler::decisions::QuotaLine& l : f.quota) {
    w.StartObject();
    KeyStr(w, "resource", l.resource);
    for (const auto& [key, amount] : {std::pair{"need", l.need},
                                      {"inUse", l.in_use},
                                      {"nominal", l.nominal},
                                      {"limit", l.limit},
                                      {"borrowingLimit", l.borrowing_limit},
                                      {"poolUsed", l.pool_used},
                                      {"poolCapacity", l.pool_capacity},
                                      {"othersBorrowed", l.others_borrowed}}) {
      w.Key(key);
      Quantity(w, l.resource, amount);
    }
    w.Key("fits");
    w.Bool(l.fits());
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

// The visible workloads named ns/name (a gang, an owner and a lone pod may share a name), by
// kind, with their preemption status.
std::vector<WorkloadRow> Named(const WorkloadRows& rows,
                               const scheduler::state::ClusterState& cluster, const std::string& ns,
                               const std::string& name, const ConsoleViewer& viewer,
                               const std::function<std::string(std::string_view)>& preemption) {
  std::vector<WorkloadRow> found = rows.Read([&](const WorkloadRows::Reader& r) {
    std::vector<WorkloadRow> out;
    for (const WorkloadRows::Item& item : r.Named(ns, name)) {
      if (viewer.Sees(scheduler::model::TeamNames().Name(r.Team(item)))) out.push_back(r.Row(item));
    }
    return out;
  });
  for (WorkloadRow& row : found) {
    WorkloadRows::AddPreemption(row, preemption);
    WorkloadRows::AddSuspension(row, cluster);
  }
  return found;
}

HttpResponse NoWorkload(const std::string& ns, const std::string& name) {
  return ErrorReply(404, "no workload " + ns + "/" + name +
                             " (no such pod, pod group or job owner with pods taskgov knows)");
}

bool KnownState(std::string_view state) {
  return state == "Pending" || state == "Admitted" || state == "Running" ||
         state == "Terminating" || state == "Suspended";
}

}  // namespace

AdminApi::AdminApi(Sources sources)
    : sources_(std::move(sources)),
      hidden_name_key_(sources_.hidden_name_key.empty() ? RandomKey() : sources_.hidden_name_key) {}

std::vector<Route> AdminApi::Routes() const {
  // Asynchronous: the access check may wait on the API server, on ConsoleAccess's workers; the
  // reply is rendered on the connection's I/O thread once the decision is known.
  auto route = [this](const char* path, bool prefix, Handler handler) {
    Route r{path, "GET", 0, nullptr, prefix};
    r.async_handler = [this, handler](const HttpRequest& request, Responder respond) {
      Checked(handler, request, std::move(respond));
    };
    return r;
  };
  return {route("/api/v1/cluster", false, &AdminApi::Cluster),
          route("/api/v1/teams", false, &AdminApi::Teams),
          route("/api/v1/teams/", true, &AdminApi::Team),
          route("/api/v1/workloads", false, &AdminApi::Workloads),
          route("/api/v1/workloads/", true, &AdminApi::Workload),
          route("/api/v1/policy", false, &AdminApi::Policy),
          route("/api/v1/history", false, &AdminApi::History),
          route("/api/v1/history/tasks", false, &AdminApi::EndedTasks),
          route("/api/v1/reports/usage.csv", false, &AdminApi::UsageReport)};
}

void AdminApi::Checked(Handler handler, const HttpRequest& request, Responder respond) const {
  if (sources_.access == nullptr) {
    respond([this, handler, request] { return (this->*handler)(request, ConsoleViewer{}); });
    return;
  }
  sources_.access->CheckAsync(request.authorization, request.peer_address,
                              *sources_.book->ledger().policy(),
                              [this, handler, request, respond](const AccessDecision& d) {
                                respond([this, handler, request, d] {
                                  if (d.status == 200) return (this->*handler)(request, d.viewer);
                                  HttpResponse refused = ErrorReply(d.status, d.message);
                                  if (d.status == 401)
                                    refused.headers.emplace_back("WWW-Authenticate", "Bearer");
                                  if (d.status == 503 || d.status == 429) {
                                    refused.headers.emplace_back("Retry-After", "1");
                                  }
                                  return refused;
                                });
                              });
}

HttpResponse AdminApi::Cluster(const HttpRequest& request, const ConsoleViewer&) const {
  if (common::Result<Query> q = ParseQuery(request.query, {}); !q.ok()) {
    return ErrorReply(400, q.error().message);
  }
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  ListHeader(w, "Cluster");
  w.Key("flavors");
  w.StartArray();
  for (const FlavorUse& f : ReadFlavors(*sources_.book, *sources_.cluster)) {
    w.StartObject();
    KeyStr(w, "name", f.flavor);
    w.Key("nodes");
    w.Uint64(f.nodes);
    w.Key("schedulableNodes");
    w.Uint64(f.schedulable);
    w.Key("allocatable");
    Resources(w, f.allocatable);
    w.Key("inUse");
    Resources(w, f.used);
    w.Key("nominalQuota");
    Resources(w, f.nominal);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return Json(200, buffer);
}

HttpResponse AdminApi::Teams(const HttpRequest& request, const ConsoleViewer&) const {
  common::Result<Query> q = ParseQuery(request.query, {"cohort", "namespace", "window"});
  if (!q.ok()) return ErrorReply(400, q.error().message);
  common::Result<int64_t> window = ParseWindow(*q);
  if (!window.ok()) return ErrorReply(400, window.error().message);
  const auto cohort = q->find("cohort");
  // ?namespace=: the team a pod created there would belong to (its namespace, or the namespace's
  // team label), as the filter resolves it — none when no team owns the namespace.
  std::optional<NameId> owner;
  if (auto ns = q->find("namespace"); ns != q->end()) {
    scheduler::model::Pod probe;
    probe.namespace_ = ns->second;
    probe.name = "taskgov-team-probe";
    owner = sources_.cluster->teams().TeamOf(probe);
  }
  const TeamsRead read = ReadTeamsAt(sources_, *window);
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  ListHeader(w, "TeamList");
  w.Key("items");
  w.StartArray();
  for (const scheduler::model::Team& team : read.policy->teams) {
    if (cohort != q->end() && team.cohort != cohort->second) continue;
    const NameId id = scheduler::model::TeamNames().Intern(team.name);
    if (owner && *owner != id) continue;
    w.StartObject();
    TeamPolicy(w, team);
    TeamQuotas(w, id, read);
    TeamShares(w, team, *sources_.book);
    TeamCounts(w, id, read, *sources_.cluster);
    TeamWindow(w, team.name, read);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return Json(200, buffer);
}

HttpResponse AdminApi::Team(const HttpRequest& request, const ConsoleViewer&) const {
  common::Result<Query> q = ParseQuery(request.query, {"window"});
  if (!q.ok()) return ErrorReply(400, q.error().message);
  common::Result<int64_t> window = ParseWindow(*q);
  if (!window.ok()) return ErrorReply(400, window.error().message);
  const std::optional<std::string> name = PercentDecode(
      std::string_view(request.path).substr(std::string_view("/api/v1/teams/").size()));
  if (!name || name->empty() || name->find('/') != std::string::npos) {
    return ErrorReply(400, "expected /api/v1/teams/{team}, not " + request.path);
  }
  const TeamsRead read = ReadTeamsAt(sources_, *window);
  const scheduler::model::Team* team = read.policy->FindTeam(*name);
  if (team == nullptr) return ErrorReply(404, "no team '" + *name + "' in the policy in force");
  const NameId id = scheduler::model::TeamNames().Intern(team->name);
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  ListHeader(w, "Team");
  TeamPolicy(w, *team);
  TeamQuotas(w, id, read);
  TeamShares(w, *team, *sources_.book);
  TeamCounts(w, id, read, *sources_.cluster);
  TeamWindow(w, team->name, read);
  w.EndObject();
  return Json(200, buffer);
}

namespace {

// What a workload list asks for: each filter null when not given.
struct WorkloadQuery {
  const std::string* team = nullptr;
  const std::string* ns = nullptr;
  const std::string* state = nullptr;
  const std::string* after = nullptr;  // `continue`
  size_t limit = 0;
};

struct WorkloadPage {
  std::vector<WorkloadRow> rows;
  std::optional<std::string> next;
  size_t total = 0;
};

// One page of the list. Listed by namespace/name/kind; `continue` is the order key of the first
// item of the next page. A workload of a team the caller does not see sorts after the others (a
// namespace never starts with '~') under a digest of its key, so that neither the page nor the
// token names it.
WorkloadPage PageOf(const WorkloadRows::Reader& r, const WorkloadQuery& query,
                    const ConsoleViewer& viewer, const std::string& secret) {
  const std::vector<WorkloadRows::Item> items = r.Items();
  std::vector<std::pair<std::string_view, WorkloadRows::Item>> ordered, hidden;
  std::vector<std::string> hidden_keys;
  hidden_keys.reserve(items.size());  // never reallocated: `hidden` holds views of its strings
  for (const WorkloadRows::Item& item : items) {
    const std::string_view team_name = scheduler::model::TeamNames().Name(r.Team(item));
    const bool sees = viewer.Sees(team_name);
    if (query.team != nullptr && team_name != *query.team) continue;
    if (query.ns != nullptr && (!sees || r.Ns(item) != *query.ns)) continue;
    if (query.state != nullptr && r.State(item) != *query.state) continue;
    if (sees) {
      ordered.emplace_back(item.order, item);
    } else {
      hidden.emplace_back(hidden_keys.emplace_back("~" + std::string(team_name) + "/" +
                                                   HiddenKey(secret, r.Key(item))),
                          item);
    }
  }
  std::sort(hidden.begin(), hidden.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  ordered.insert(ordered.end(), hidden.begin(), hidden.end());
  WorkloadPage page;
  page.total = ordered.size();
  auto it = query.after == nullptr ? ordered.begin()
                                   : std::lower_bound(ordered.begin(), ordered.end(), *query.after,
                                                      [](const auto& item, const std::string& key) {
                                                        return item.first < key;
                                                      });
  for (; it != ordered.end() && page.rows.size() < query.limit; ++it) {
    page.rows.push_back(r.Row(it->second));
  }
  if (it != ordered.end()) page.next = std::string(it->first);
  return page;
}

}  // namespace

HttpResponse AdminApi::Workloads(const HttpRequest& request, const ConsoleViewer& viewer) const {
  common::Result<Query> q =
      ParseQuery(request.query, {"team", "namespace", "state", "limit", "continue"});
  if (!q.ok()) return ErrorReply(400, q.error().message);
  common::Result<size_t> limit = ParseLimit(*q);
  if (!limit.ok()) return ErrorReply(400, limit.error().message);
  auto param = [&](const char* name) -> const std::string* {
    auto it = q->find(name);
    return it == q->end() ? nullptr : &it->second;
  };
  const WorkloadQuery query{param("team"), param("namespace"), param("state"), param("continue"),
                            *limit};
  if (query.state != nullptr && !KnownState(*query.state)) {
    return ErrorReply(400,
                      "query parameter 'state' must be Pending, Admitted, Running, "
                      "Terminating or Suspended, not '" +
                          *query.state + "'");
  }
  const int64_t now = sources_.clock->NowMs();
  const WorkloadRows rows(*sources_.book, *sources_.cluster);
  WorkloadPage page = rows.Read(
      [&](const WorkloadRows::Reader& r) { return PageOf(r, query, viewer, hidden_name_key_); });
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  ListHeader(w, "WorkloadList");
  w.Key("items");
  w.StartArray();
  size_t explained = 0;
  for (WorkloadRow& row : page.rows) {
    const bool hidden = !viewer.Sees(scheduler::model::TeamNames().Name(row.team));
    if (!hidden) WorkloadRows::AddPreemption(row, sources_.preemption_status);
    WorkloadRows::AddSuspension(row, *sources_.cluster);
    SetFlavor(row);
    WriteWorkload(w, row, now, /*with_pods=*/false, hidden,
                  hidden ? std::string() : WhyItWaits(row, &explained), TopologyOf(row));
  }
  w.EndArray();
  w.Key("continue");
  if (page.next) {
    Str(w, *page.next);
  } else {
    w.Null();
  }
  w.Key("total");
  w.Uint64(page.total);
  w.EndObject();
  return Json(200, buffer);
}

HttpResponse AdminApi::Workload(const HttpRequest& request, const ConsoleViewer& viewer) const {
  if (common::Result<Query> q = ParseQuery(request.query, {}); !q.ok()) {
    return ErrorReply(400, q.error().message);
  }
  const std::string_view rest =
      std::string_view(request.path).substr(std::string_view("/api/v1/workloads/").size());
  const size_t slash = rest.find('/');
  const std::optional<std::string> ns = PercentDecode(rest.substr(0, slash));
  std::string_view name_part =
      slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  constexpr std::string_view kExplanation = "/explanation";
  const bool explain = name_part.ends_with(kExplanation);
  if (explain) name_part.remove_suffix(kExplanation.size());
  const std::optional<std::string> name =
      slash == std::string_view::npos ? std::nullopt : PercentDecode(name_part);
  if (!ns || !name || ns->empty() || name->empty() || name->find('/') != std::string::npos) {
    return ErrorReply(
        400, "expected /api/v1/workloads/{namespace}/{name}[/explanation], not " + request.path);
  }
  if (explain) return Explanation(*ns, *name, viewer);
  const int64_t now = sources_.clock->NowMs();
  const std::vector<WorkloadRow> found =
      Named(WorkloadRows(*sources_.book, *sources_.cluster), *sources_.cluster, *ns, *name, viewer,
            sources_.preemption_status);
  if (found.empty()) return NoWorkload(*ns, *name);
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  ListHeader(w, "WorkloadList");
  w.Key("items");
  w.StartArray();
  size_t explained = 0;
  for (WorkloadRow row : found) {
    SetFlavor(row);
    WriteWorkload(w, row, now, /*with_pods=*/true, /*hidden=*/false, WhyItWaits(row, &explained),
                  TopologyOf(row));
  }
  w.EndArray();
  w.EndObject();
  return Json(200, buffer);
}

void AdminApi::SetFlavor(WorkloadRow& row) const {
  row.flavor = row.instance_type;
  for (const std::string& node : row.nodes) {
    const NameId flavor = sources_.cluster->nodes().FlavorOf(node);
    if (flavor == scheduler::state::kNoFlavor) continue;
    row.flavor = scheduler::model::FlavorNames().Name(flavor);
    return;
  }
}

AdminApi::Explained AdminApi::ExplainRow(const WorkloadRow& row) const {
  Explained x;
  for (const PodRow& p : row.pods) {
    if (p.state != "Pending") continue;
    if (x.waiting == nullptr) x.waiting = &p;
    if ((x.pod = sources_.cluster->FindPod(p.uid))) {
      x.waiting = &p;
      break;
    }
  }
  scheduler::decisions::Explanation& e = x.explanation;
  if (x.pod) {
    e = sources_.explain(*x.pod);
    return x;
  }
  if (x.waiting == nullptr && row.job != nullptr && row.job->paused_by_taskgov()) {
    // A paused job: judged as the resumer judges it, on a pod of its template with its gang's
    // declared size; it resumes once that is admissible (and its backoff has passed).
    x.pod = scheduler::actions::JobResumer::Representative(*row.job);
    e = sources_.explain(*x.pod);
    e.summary = SuspensionLine(row) + ". " +
                (e.outlook == scheduler::decisions::Outlook::kAdmissible
                     ? "Its whole demand fits now: taskgov resumes it at its next pass once the "
                       "backoff after its last suspension (5 s doubling with each, at most 10 "
                       "minutes) has passed"
                     : "Now: " + e.summary);
    return x;
  }
  const std::string who = row.ns + "/" + row.name;
  e.outlook = scheduler::decisions::Outlook::kNotPending;
  e.team = std::string(scheduler::model::TeamNames().Name(row.team));
  e.summary = x.waiting == nullptr
                  ? who + " does not wait: it is " + row.state
                  : who + " is known only from kube-scheduler's calls so far: it " +
                        "is explained once the informers report its pods";
  return x;
}

std::optional<scheduler::decisions::TopologyPlacement> AdminApi::TopologyOf(
    const WorkloadRow& row) const {
  if (!sources_.topology) return std::nullopt;
  return sources_.topology(row.key);
}

std::string AdminApi::WhyItWaits(const WorkloadRow& row, size_t* explained) const {
  if (row.job != nullptr && row.state != "Running") return SuspensionLine(row);
  if (row.state != "Pending") return "";
  const PodTotals t = TotalsOf(row.pods);
  if (!t.preemption.empty()) return t.preemption;
  if (!t.refusal.empty()) return t.refusal;
  if (!sources_.explain) return "";
  if (*explained >= kMaxExplainedPerList) {
    return "not evaluated in this list (more than " + std::to_string(kMaxExplainedPerList) +
           " waiting workloads without a refusal): its own page says why";
  }
  ++*explained;
  return ExplainRow(row).explanation.summary;
}

HttpResponse AdminApi::Explanation(const std::string& ns, const std::string& name,
                                   const ConsoleViewer& viewer) const {
  if (!sources_.explain) return ErrorReply(404, "explanations are not served by this process");
  const std::vector<WorkloadRow> found =
      Named(WorkloadRows(*sources_.book, *sources_.cluster), *sources_.cluster, ns, name, viewer,
            sources_.preemption_status);
  if (found.empty()) return NoWorkload(ns, name);
  // The first of that name that waits, else the first.
  auto waits = std::find_if(found.begin(), found.end(),
                            [](const WorkloadRow& r) { return r.state == "Pending"; });
  const WorkloadRow* row = waits == found.end() ? &found.front() : &*waits;
  const Explained x = ExplainRow(*row);
  const PodRow* waiting = x.waiting;
  const std::optional<scheduler::model::Pod>& pod = x.pod;
  const scheduler::decisions::Explanation& e = x.explanation;
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  KeyStr(w, "apiVersion", kApiVersion);
  KeyStr(w, "kind", "WorkloadExplanation");
  KeyStr(w, "namespace", row->ns);
  KeyStr(w, "name", row->name);
  KeyStr(w, "workloadKind", row->kind);
  KeyStr(w, "team", e.team);
  KeyStr(w, "state", row->state);
  w.Key("evaluatedPod");
  if (pod) {
    Str(w, pod->key());
  } else {
    w.Null();
  }
  KeyStr(w, "outlook", scheduler::decisions::OutlookName(e.outlook));
  KeyStr(w, "summary", e.summary);
  w.Key("request");
  Resources(w, e.request);
  w.Key("need");
  Resources(w, e.need);
  w.Key("podsNotCreated");
  w.Int64(e.estimated_members);
  WriteChecks(w, e.checks);
  w.Key("flavors");
  w.StartArray();
  for (const scheduler::decisions::FlavorExplanation& f : e.flavors) WriteFlavorExplanation(w, f);
  w.EndArray();
  KeyStr(w, "preemption", waiting == nullptr ? "" : waiting->preemption);
  WriteSuspension(w, *row);
  w.EndObject();
  return Json(200, buffer);
}

HttpResponse AdminApi::Policy(const HttpRequest& request, const ConsoleViewer&) const {
  if (common::Result<Query> q = ParseQuery(request.query, {}); !q.ok()) {
    return ErrorReply(400, q.error().message);
  }
  const scheduler::model::PolicyPtr policy = sources_.book->ledger().policy();
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  ListHeader(w, "Policy");
  KeyStr(w, "taskPrioritization",
         policy->task_prioritization == scheduler::model::TaskPrioritization::kTaskRanking
             ? "TaskRanking"
             : "FirstComeFirstServe");
  KeyStr(w, "idleComputeAllocation",
         policy->idle_compute == scheduler::model::IdleComputeAllocation::kFairShare
             ? "FairShare"
             : "FirstComeFirstServe");
  w.Key("priorityClasses");
  w.StartArray();
  for (const scheduler::model::PriorityClass& pc : policy->priority_classes) {
    w.StartObject();
    KeyStr(w, "name", pc.name);
    w.Key("value");
    w.Int(pc.value);
    w.EndObject();
  }
  w.EndArray();
  w.Key("preemption");
  w.StartObject();
  w.Key("gracePeriodSeconds");
  w.Int64(policy->preemption.grace_period_seconds);
  w.Key("minimumRuntimeSeconds");
  w.Int64(policy->preemption.minimum_runtime_seconds);
  w.EndObject();
  w.Key("gangTimeoutSeconds");
  w.Int64(policy->gang_timeout_seconds);
  w.Key("starvationBoundSeconds");
  w.Int64(policy->starvation_bound_seconds);
  WriteIdleResourceSharing(w, policy->idle_resource_sharing);
  w.Key("teams");
  w.Uint64(policy->teams.size());
  WriteCohorts(w, *policy);
  KeyStr(w, "sourceHash", policy->source_hash);
  if (sources_.reload_status) {
    const config::ReloadStatus s = sources_.reload_status();
    w.Key("reload");
    w.StartObject();
    w.Key("lastSucceeded");
    w.Bool(s.last_success);
    Time(w, "lastAttemptAt", s.last_attempt_unix_ms);
    Time(w, "lastSuccessAt", s.last_success_unix_ms);
    KeyStr(w, "lastError", s.last_error);
    w.Key("errors");
    w.Uint64(s.last_error_count);
    w.Key("warnings");
    w.Uint64(s.last_warning_count);
    w.Key("failures");
    w.Uint64(s.failures);
    w.EndObject();
  }
  w.EndObject();
  return Json(200, buffer);
}

UsageHistory::Snapshot AdminApi::HistorySnapshot() const {
  UsageHistory::Snapshot snap;
  const TeamsRead read = ReadTeams(*sources_.book, *sources_.cluster, sources_.preemptions);
  for (const scheduler::ledger::CohortCellUsage& cell : read.cells) {
    const std::string_view resource = scheduler::model::ResourceNames().Name(cell.key.resource);
    auto base = [&](double v) { return scheduler::model::InBaseUnits(resource, v); };
    snap.teams.push_back({std::string(scheduler::model::TeamNames().Name(cell.key.team)),
                          std::string(scheduler::model::FlavorNames().Name(cell.key.flavor)),
                          std::string(resource), base(static_cast<double>(cell.view.nominal)),
                          base(static_cast<double>(cell.view.usage)),
                          base(static_cast<double>(cell.borrowed)), base(cell.lent)});
  }
  for (const FlavorUse& f : ReadFlavors(*sources_.book, *sources_.cluster)) {
    for (const scheduler::model::ResourceAmount& a : f.allocatable) {
      snap.cluster.push_back(
          {f.flavor, a.name,
           scheduler::model::InBaseUnits(a.name, static_cast<double>(f.used.Get(a.name))),
           scheduler::model::InBaseUnits(a.name, static_cast<double>(a.amount))});
    }
  }
  const int64_t now = sources_.clock->NowMs();
  std::map<std::string, std::pair<double, double>> waits;  // team → pending pods, Σ wait s
  std::map<std::string, size_t> pending_workloads;
  WorkloadRows(*sources_.book, *sources_.cluster).Read([&](const WorkloadRows::Reader& r) {
    for (const WorkloadRows::Item& item : r.Items()) {
      if (r.State(item) != "Pending") continue;
      const WorkloadRow row = r.Row(item);
      const std::string team(scheduler::model::TeamNames().Name(row.team));
      waits[team].first += static_cast<double>(row.pods.size());
      waits[team].second +=
          static_cast<double>(std::max<int64_t>(0, now - row.created_ms())) / 1000.0;
      ++pending_workloads[team];
    }
  });
  for (const scheduler::model::Team& team : read.policy->teams) {
    auto w = waits.find(team.name);
    const size_t n = pending_workloads[team.name];
    snap.queues.push_back({team.name, w == waits.end() ? 0.0 : w->second.first,
                           n == 0 ? 0.0 : w->second.second / static_cast<double>(n)});
  }
  return snap;
}

HttpResponse AdminApi::History(const HttpRequest& request, const ConsoleViewer&) const {
  common::Result<Query> q = ParseQuery(request.query, {"team", "flavor", "resource", "since"});
  if (!q.ok()) return ErrorReply(400, q.error().message);
  if (sources_.history == nullptr) return ErrorReply(404, "this extender keeps no history");
  UsageHistory::Query query;
  for (auto [name, field] : {std::pair{"team", &query.team}, std::pair{"flavor", &query.flavor},
                             std::pair{"resource", &query.resource}}) {
    if (auto it = q->find(name); it != q->end()) *field = it->second;
  }
  if (auto since = q->find("since"); since != q->end()) {
    common::Result<int64_t> micros = common::ParseRfc3339Micros(since->second);
    if (!micros.ok()) {
      return ErrorReply(
          400, "query parameter 'since' must be an RFC 3339 time: " + micros.error().message);
    }
    query.since_ms = *micros / 1000;
  }
  const UsageHistory::Result r = sources_.history->Read(query);
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  ListHeader(w, "History");
  auto family = [&](const char* name, const std::vector<UsageHistory::Series>& series,
                    std::initializer_list<const char*> labels,
                    std::initializer_list<const char*> values) {
    w.Key(name);
    w.StartArray();
    for (const UsageHistory::Series& s : series) {
      w.StartObject();
      size_t i = 0;
      for (const char* label : labels) KeyStr(w, label, s.labels[i++]);
      w.Key("fields");
      w.StartArray();
      w.String("time");
      for (const char* v : values) w.String(v);
      w.EndArray();
      w.Key("points");
      w.StartArray();
      for (const auto& [t, v] : s.points) {
        w.StartArray();
        Str(w, common::FormatTime(t * 1000));
        for (float x : v) {
          if (std::isnan(x)) {
            w.Null();
          } else {
            w.Double(static_cast<double>(x));
          }
        }
        w.EndArray();
      }
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
  };
  family("teams", r.teams, {"team", "flavor", "resource"}, {"usage", "borrowed", "lent"});
  family("cluster", r.cluster, {"flavor", "resource"}, {"inUse", "allocatable"});
  family("queues", r.queues, {"team"}, {"pendingPods", "averageWaitSeconds"});
  w.EndObject();
  return Json(200, buffer);
}

HttpResponse AdminApi::EndedTasks(const HttpRequest& request, const ConsoleViewer& viewer) const {
  common::Result<Query> q = ParseQuery(request.query, {"team", "since", "limit"});
  if (!q.ok()) return ErrorReply(400, q.error().message);
  if (sources_.tasks == nullptr) return ErrorReply(404, "this extender keeps no task history");
  common::Result<size_t> limit = ParseLimit(*q);
  if (!limit.ok()) return ErrorReply(400, limit.error().message);
  int64_t since_ms = 0;
  if (auto since = q->find("since"); since != q->end()) {
    common::Result<int64_t> micros = common::ParseRfc3339Micros(since->second);
    if (!micros.ok()) {
      return ErrorReply(
          400, "query parameter 'since' must be an RFC 3339 time: " + micros.error().message);
    }
    since_ms = *micros / 1000;
  }
  auto team = q->find("team");
  const std::vector<TaskHistory::EndedTask> ended = sources_.tasks->Ended(
      since_ms, team == q->end() ? std::string_view() : std::string_view(team->second), *limit);
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  ListHeader(w, "EndedTaskList");
  w.Key("items");
  w.StartArray();
  for (const TaskHistory::EndedTask& task : ended) {
    const bool hidden = !viewer.Sees(task.team);
    w.StartObject();
    KeyStr(w, "namespace", hidden ? "" : task.ns);
    KeyStr(w, "name", hidden ? "" : task.name);
    w.Key("hidden");
    w.Bool(hidden);
    KeyStr(w, "kind", task.kind);
    KeyStr(w, "team", task.team);
    KeyStr(w, "outcome", task.outcome);
    KeyStr(w, "reason", task.reason);
    w.Key("pods");
    w.Uint64(task.pods);
    Time(w, "startedAt", task.started_ms);
    Time(w, "endedAt", task.ended_ms);
    w.Key("runSeconds");
    w.Int64(task.started_ms > 0 ? std::max<int64_t>(0, task.ended_ms - task.started_ms) / 1000 : 0);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return Json(200, buffer);
}

HttpResponse AdminApi::UsageReport(const HttpRequest& request, const ConsoleViewer&) const {
  if (common::Result<Query> q = ParseQuery(request.query, {}); !q.ok()) {
    return ErrorReply(400, q.error().message);
  }
  if (sources_.history == nullptr) return ErrorReply(404, "this extender keeps no history");
  return HttpResponse{200,
                      "text/csv; charset=utf-8",
                      sources_.history->ReportCsv(),
                      {{"Content-Disposition", "attachment; filename=\"taskgov-usage.csv\""}}};
}

}  // namespace taskgov::extender
