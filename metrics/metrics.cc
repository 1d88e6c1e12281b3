#include "metrics/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "metrics/series.h"
#include "metrics/text_format.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "scheduler/common/log.h"
#include "scheduler/decisions/fair_share.h"
#include "scheduler/decisions/rules.h"
#include "scheduler/kube/watch_reasons.h"
#include "scheduler/ledger/cohort_usage.h"
#include "scheduler/model/quantity.h"
#include "scheduler/model/resources.h"

namespace taskgov::metrics {
namespace {

using internal::Buckets;
using internal::Counter;
using internal::Histogram;
using internal::SeriesMap;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using scheduler::model::NameId;

constexpr double kInf = std::numeric_limits<double>::infinity();

constexpr std::string_view kComponent = "metrics";

// FilterDecision::reason codes, in label order; anything else counts as the last, "other".
constexpr std::array<std::string_view, 16> kRefusalReasons = {
    "quota",     "borrowing_limit", "pool",     "fair_share", "queue_order",
    "no_room",   "no_quota",        "inactive", "no_team",    "foreign_queue",
    "not_ready", "awaiting_gang",   "busy",     "topology",   "disrupted_recently",
    "other"};

size_t RefusalIndex(std::string_view reason) {
  for (size_t i = 0; i + 1 < kRefusalReasons.size(); ++i) {
    if (kRefusalReasons[i] == reason) return i;
  }
  return kRefusalReasons.size() - 1;
}

size_t OutcomeIndex(int status, bool reply_sent, std::string_view handler_outcome) {
  auto index = [](WebhookOutcome o) { return static_cast<size_t>(o); };
  if (!reply_sent) return index(WebhookOutcome::kReplyFailed);
  if (!handler_outcome.empty()) {
    for (size_t i = 0; i < kWebhookOutcomes.size(); ++i) {
      if (kWebhookOutcomes[i].name == handler_outcome) return i;
    }
    return index(WebhookOutcome::kServerError);
  }
  if (status >= 200 && status < 300) return index(WebhookOutcome::kOk);
  if (status == 404) return index(WebhookOutcome::kNotFound);
  if (status == 405) return index(WebhookOutcome::kMethodNotAllowed);
  if (status == 413 || status == 431) return index(WebhookOutcome::kTooLarge);
  if (status >= 400 && status < 500) return index(WebhookOutcome::kBadRequest);
  return index(WebhookOutcome::kServerError);
}

// "a (note), b (note), ..." for a HELP text: each item's `label` member, then its `note`.
template <typename List, typename Item = typename List::value_type>
std::string JoinLabelValues(const List& list, std::string_view Item::*label,
                            std::string_view Item::*note) {
  std::string out;
  for (const Item& item : list) {
    if (!out.empty()) out += ", ";
    out += std::string(item.*label) + " (" + std::string(item.*note) + ")";
  }
  return out;
}

// Latency of a webhook reply: 50µs .. 10s (kube-scheduler's httpTimeout is a few seconds).
const Buckets kWebhookBuckets = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                 0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
                                 0.5,     1,      2.5,     5,      10};
// Waiting for admission: a second to a week.
const Buckets kWaitBuckets = {1,    5,    15,   30,    60,    120,   300,    600,
                              1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800};
// Running: a minute to a month (training jobs run for days).
const Buckets kRunBuckets = {60,    300,   900,    1800,   3600,   7200,    14400,  28800,
                             43200, 86400, 172800, 345600, 604800, 1209600, 2592000};
// Kueue's admission wait buckets: 1, then 2.5 × 2^k for k = 0..12.
const Buckets kKueueWaitBuckets = {1,   2.5, 5,   10,   20,   40,   80,
                                   160, 320, 640, 1280, 2560, 5120, 10240};

struct TeamRefusals {
  std::array<Counter, kRefusalReasons.size()> by_reason;
};

struct VerbSeries {
  explicit VerbSeries(const Buckets& bounds) : duration(bounds) {}
  std::array<Counter, kWebhookOutcomes.size()> outcomes;
  Histogram duration;
};

// The label (and Kueue reason) a preemption reason is counted under; null for reasons that are
// not a team's preemption (plain priority, outside governance), which are not counted.
const PreemptionReason* PreemptionLabel(scheduler::decisions::PreemptionReason reason) {
  static_assert(kPreemptionReasons[0].name == kPreemptWithinTeam &&
                kPreemptionReasons[1].name == kPreemptReclaim &&
                kPreemptionReasons[2].name == kPreemptFairShare &&
                kPreemptionReasons[3].name == kPreemptReclaimWhileBorrowing);
  switch (reason) {
    case scheduler::decisions::PreemptionReason::kInTeamPriority:
      return &kPreemptionReasons[0];
    case scheduler::decisions::PreemptionReason::kReclaim:
      return &kPreemptionReasons[1];
    case scheduler::decisions::PreemptionReason::kFairShare:
      return &kPreemptionReasons[2];
    case scheduler::decisions::PreemptionReason::kReclaimWhileBorrowing:
      return &kPreemptionReasons[3];
    case scheduler::decisions::PreemptionReason::kPriority:
      return nullptr;
  }
  return nullptr;
}

// taskgov_ledger_repairs_total{kind}, in label order, with what each counts.
constexpr std::array<LabelValue, 4> kLedgerRepairKinds = {{
    {"expired", "assumed reservations released when their TTL passed"},
    {"orphan_released", "bound reservations released: their pod was not running"},
    {"uncharged_charged", "running pods charged: they held no reservation"},
    {"drift_cell", "ledger cells whose counters disagreed with the reservations, rebuilt"},
}};

std::array<uint64_t, kLedgerRepairKinds.size()> RepairCounts(
    const scheduler::state::Reconciler::Repairs& r) {
  return {r.expired, r.orphan_released, r.uncharged_charged, r.drift_cells};
}

std::string_view TeamLabel(NameId id) {
  if (id == scheduler::state::kNoTeam || id >= scheduler::model::TeamNames().size())
    return kNoTeamLabel;
  return scheduler::model::TeamNames().Name(id);
}

std::string_view FlavorLabel(NameId id) {
  if (id == scheduler::state::kNoFlavor || id >= scheduler::model::FlavorNames().size())
    return kNoTeamLabel;
  return scheduler::model::FlavorNames().Name(id);
}

// A canonical amount in base units: cpu millicores → cores; everything else as is.
double BaseUnits(std::string_view resource, double amount) {
  return scheduler::model::InBaseUnits(resource, amount);
}
// The same for a limit or usage; kUnlimited is +Inf.
double BaseUnits(std::string_view resource, int64_t amount) {
  if (amount == scheduler::model::kUnlimited) return kInf;
  return BaseUnits(resource, static_cast<double>(amount));
}

double Seconds(int64_t from_ms, int64_t to_ms) {
  return static_cast<double>(std::max<int64_t>(0, to_ms - from_ms)) / 1000.0;
}

// Orders a family's series by label values (for series that come from hash maps).
void SortSeries(MetricFamily& family) {
  std::sort(family.metric.begin(), family.metric.end(),
            [](const ClientMetric& a, const ClientMetric& b) { return a.label < b.label; });
}

// Builds one family of the exposition.
class FamilyBuilder {
 public:
  FamilyBuilder(std::string name, std::string help, MetricType type) {
    family_.name = std::move(name);
    family_.help = std::move(help);
    family_.type = type;
  }
  template <size_t N>
  ClientMetric& Add(const std::array<std::string_view, N>& names,
                    const std::array<std::string_view, N>& values) {
    ClientMetric& m = family_.metric.emplace_back();
    m.label.reserve(N);
    for (size_t i = 0; i < N; ++i) {
      m.label.push_back(ClientMetric::Label{std::string(names[i]), std::string(values[i])});
    }
    return m;
  }
  template <size_t N>
  void Value(const std::array<std::string_view, N>& names,
             const std::array<std::string_view, N>& values, double v) {
    ClientMetric& m = Add(names, values);
    if (family_.type == MetricType::Counter) {
      m.counter.value = v;
    } else {
      m.gauge.value = v;
    }
  }
  template <size_t N>
  void Hist(const std::array<std::string_view, N>& names,
            const std::array<std::string_view, N>& values, const Histogram& h) {
    Add(names, values).histogram = h.Snapshot();
  }
  MetricFamily Take() { return std::move(family_); }
  // For series that come out of a SeriesMap (creation order): ordered by label values.
  MetricFamily TakeSorted() {
    SortSeries(family_);
    return std::move(family_);
  }

 private:
  MetricFamily family_;
};

template <size_t N>
std::array<std::string_view, N> Views(const std::array<std::string, N>& labels) {
  std::array<std::string_view, N> out;
  for (size_t i = 0; i < N; ++i) out[i] = labels[i];
  return out;
}

using L1 = std::array<std::string_view, 1>;
using L2 = std::array<std::string_view, 2>;
using L3 = std::array<std::string_view, 3>;
using L4 = std::array<std::string_view, 4>;

}  // namespace

class Metrics::Impl {
 public:
  explicit Impl(Options options)
      : options_(std::move(options)),
        clock_(options_.clock != nullptr ? options_.clock : &system_clock_),
        reloads_(prometheus::BuildCounter()
                     .Name("taskgov_config_reloads_total")
                     .Help("Policy config reloads (the initial load included), by result: "
                           "success, failure.")
                     .Register(registry_)),
        reload_success_(reloads_.Add({{"result", "success"}})),
        reload_failure_(reloads_.Add({{"result", "failure"}})),
        last_reload_ok_(prometheus::BuildGauge()
                            .Name("taskgov_config_last_reload_successful")
                            .Help("1 if the last config reload succeeded (its policy is in "
                                  "use), 0 if it failed (the last good policy stays in use).")
                            .Register(registry_)
                            .Add({})),
        last_reload_success_time_(prometheus::BuildGauge()
                                      .Name("taskgov_config_last_reload_success_timestamp_seconds")
                                      .Help("Unix time of the last successful config reload.")
                                      .Register(registry_)
                                      .Add({})) {
    prometheus::BuildGauge()
        .Name("taskgov_build_info")
        .Help("1, labelled with the build: version, revision.")
        .Register(registry_)
        .Add({{"version", options_.build.version}, {"revision", options_.build.revision}})
        .Set(1);
  }

  void SetSources(Sources sources) {
    std::lock_guard<std::mutex> lock(scrape_mu_);
    sources_ = std::move(sources);
  }

  void ObserveFilter(const scheduler::decisions::FilterDecision& d) {
    if (d.admitted) {
      if (d.team == scheduler::state::kNoTeam) {
        admissions_.Get(L3{kNoTeamLabel, kNoTeamLabel, "passthrough"}).Add();
      } else {
        admissions_
            .Get(
                L3{TeamLabel(d.team), FlavorLabel(d.flavor), d.borrowing ? "borrowing" : "nominal"})
            .Add();
      }
      return;
    }
    refusals_.Get(L1{TeamLabel(d.team)}).by_reason[RefusalIndex(d.reason)].Add();
  }

  void ObserveRequest(std::string_view path, bool known_path, int status, bool reply_sent,
                      std::string_view handler_outcome, std::chrono::nanoseconds duration) {
    std::string_view verb = "unknown";
    if (known_path) {
      const size_t slash = path.rfind('/');
      verb = slash == std::string_view::npos ? path : path.substr(slash + 1);
      if (verb.empty()) verb = "root";
    }
    VerbSeries& s = verbs_.Get(L1{verb}, kWebhookBuckets);
    s.outcomes[OutcomeIndex(status, reply_sent, handler_outcome)].Add();
    s.duration.Observe(std::chrono::duration<double>(duration).count());
  }

  void ObservePodBound(NameId team, std::string_view priority_class, int64_t created_ms,
                       int64_t bound_ms) {
    const double wait = Seconds(created_ms, bound_ms);
    const std::string_view t = TeamLabel(team);
    waits_.Get(L2{t, PriorityClassLabel(priority_class)}, kWaitBuckets).Observe(wait);
    if (options_.kueue_compatible) kueue_waits_.Get(L1{t}, kKueueWaitBuckets).Observe(wait);
  }

  void ObservePodEnded(NameId team, std::string_view priority_class, int64_t bound_ms,
                       int64_t ended_ms) {
    runs_.Get(L2{TeamLabel(team), PriorityClassLabel(priority_class)}, kRunBuckets)
        .Observe(Seconds(bound_ms, ended_ms));
  }

  void ObserveConfigReload(bool ok, int64_t unix_ms) {
    std::lock_guard<std::mutex> lock(reload_mu_);  // the three values change together
    (ok ? reload_success_ : reload_failure_).Increment();
    last_reload_ok_.Set(ok ? 1 : 0);
    if (ok) last_reload_success_time_.Set(static_cast<double>(unix_ms) / 1000.0);
  }

  std::string Render() const;

  prometheus::Registry& registry() { return registry_; }

 private:
  struct TeamMeta {
    std::string cohort;
    std::string cluster_queue;
  };
  struct Scrape;

  // Priority classes come from the policy or the pod spec: bounded to kMaxPriorityClasses
  // distinct values, then "other".
  std::string_view PriorityClassLabel(std::string_view name) {
    if (name.empty()) return "none";
    if (priority_classes_.Find(L1{name}) != nullptr) return name;
    if (priority_classes_.size() >= kMaxPriorityClasses) return "other";
    priority_classes_.Get(L1{name});
    return name;
  }

  // The families read from the ledger and the cluster view; fills `scrape` (policy, live teams).
  void CollectLedger(Scrape& scrape, std::vector<MetricFamily>* out) const;
  // Teams of the policy become live and known (with their cohort and cluster queue).
  void NotePolicyTeams(Scrape& scrape) const;
  // Removed teams that still have usage stay live with what was known of them; teams with no
  // series any more are forgotten.
  void NoteRemovedTeams(const std::vector<scheduler::ledger::CohortCellUsage>& usage,
                        Scrape& scrape) const;
  void CollectTeamInfo(const Scrape& scrape, std::vector<MetricFamily>* out) const;
  // Per cohort pool (flavor, resource): what the cohort holds itself, the pool's capacity (its
  // subtree quota) and its usage.
  void CollectCohorts(const Scrape& scrape,
                      const std::vector<scheduler::ledger::Ledger::PoolUsage>& pools,
                      std::vector<MetricFamily>* out) const;
  // Per cohort with a parent and flavor: its weighted share (Kueue's DRS of a cohort).
  void CollectCohortShares(const Scrape& scrape,
                           const std::vector<scheduler::ledger::Ledger::PoolUsage>& pools,
                           std::vector<MetricFamily>* out) const;
  void CollectWeightedShare(const Scrape& scrape, const scheduler::ledger::Ledger& ledger,
                            std::vector<MetricFamily>* out) const;
  void CollectPods(const Scrape& scrape, const scheduler::ledger::QuotaBook& book,
                   std::vector<MetricFamily>* out) const;
  // The counters and histograms fed per team, without the series of removed teams.
  void CollectTeamSeries(const Scrape& scrape, std::vector<MetricFamily>* out) const;
  void CollectFilterCounters(const Scrape& scrape, std::vector<MetricFamily>* out) const;
  void CollectPodTimes(const Scrape& scrape, std::vector<MetricFamily>* out) const;
  void CollectPreemptions(const Scrape& scrape, std::vector<MetricFamily>* out) const;
  // The process families: webhooks, informers, ledger repairs.
  void CollectProcess(const Scrape& scrape, std::vector<MetricFamily>* out) const;
  void CollectWebhooks(std::vector<MetricFamily>* out) const;
  void CollectInformers(const Scrape& scrape, int64_t now_ms, std::vector<MetricFamily>* out) const;
  void CollectLedgerRepairs(std::vector<MetricFamily>* out) const;
  void CollectHttpListeners(const Scrape& scrape, std::vector<MetricFamily>* out) const;
  void CollectConsoleAccess(std::vector<MetricFamily>* out) const;
  void CollectRequeues(std::vector<MetricFamily>* out) const;

  const Options options_;
  common::SystemClock system_clock_;
  const common::Clock* const clock_;

  prometheus::Registry registry_;
  prometheus::Family<prometheus::Counter>& reloads_;
  prometheus::Counter& reload_success_;
  prometheus::Counter& reload_failure_;
  prometheus::Gauge& last_reload_ok_;
  prometheus::Gauge& last_reload_success_time_;
  std::mutex reload_mu_;

  // Lock-free series (see series.h). Keyed by label values.
  SeriesMap<Counter, 3> admissions_;     // team, flavor, mode
  SeriesMap<TeamRefusals, 1> refusals_;  // team
  SeriesMap<VerbSeries, 1> verbs_;       // verb
  SeriesMap<Histogram, 2> waits_;        // team, priority_class
  SeriesMap<Histogram, 2> runs_;         // team, priority_class
  SeriesMap<Histogram, 1> kueue_waits_;  // team (exported as its cluster_queue)
  SeriesMap<char, 1> priority_classes_;  // the admitted priority_class values

  mutable std::mutex scrape_mu_;  // serialises scrapes; guards the members below
  mutable size_t last_size_ = 0;  // of the last exposition, to size the next one
  Sources sources_;
  // Teams seen in a policy, kept while their series live: a removed team's usage still
  // belongs to its old cohort and cluster queue.
  mutable std::map<std::string, TeamMeta, std::less<>> known_teams_;
};

// What one scrape learned from the sources.
struct Metrics::Impl::Scrape {
  // The components' totals, read once (Sources::informers, Sources::preemptions).
  std::vector<InformerTotals> informers;
  std::optional<PreemptionTotals> preemptions;
  std::optional<std::map<std::string, int64_t, std::less<>>> paused_workloads;
  std::vector<HttpListenerTotals> http_listeners;

  bool have_teams = false;  // false: no ledger, every team counts as live
  scheduler::model::PolicyPtr policy;
  // Live teams (in the policy, or with usage) → cohort and cluster queue.
  std::map<std::string, TeamMeta, std::less<>> live;

  bool Live(std::string_view team) const {
    return !have_teams || team == kNoTeamLabel || live.find(team) != live.end();
  }
  std::string_view ClusterQueue(std::string_view team) const {
    auto it = live.find(team);
    return it == live.end() ? team : std::string_view(it->second.cluster_queue);
  }
};

namespace {

// The quota families of one scrape: taskgov's per (team, flavor, resource) and, when exported,
// Kueue's per (cohort, cluster_queue, flavor, resource). Series follow the order of Add calls.
class QuotaFamilies {
 public:
  explicit QuotaFamilies(bool kueue);
  // The series of one ledger cell; `cohort` and `cluster_queue` are its team's.
  void Add(const scheduler::ledger::CohortCellUsage& cell, std::string_view cohort,
           std::string_view cluster_queue);
  void TakeInto(std::vector<MetricFamily>* out);

 private:
  static constexpr std::string_view kLabels =
      " Labels: team; flavor (instance type); resource (cpu in cores, memory and "
      "ephemeral-storage in bytes, any other resource in its own count).";
  static std::string Help(std::string_view text) {
    return std::string(text) + std::string(kLabels);
  }

  const bool kueue_;
  FamilyBuilder nominal_, borrowing_limit_, lending_limit_, usage_, borrowed_, lent_;
  FamilyBuilder k_nominal_, k_borrowing_, k_lending_, k_usage_;
};

QuotaFamilies::QuotaFamilies(bool kueue)
    : kueue_(kueue),
      nominal_("taskgov_quota_nominal", Help("Nominal (guaranteed) quota of a team."),
               MetricType::Gauge),
      borrowing_limit_("taskgov_quota_borrowing_limit",
                       Help("How far above its nominal quota a team may borrow; +Inf: unlimited."),
                       MetricType::Gauge),
      lending_limit_(
          "taskgov_quota_lending_limit",
          Help("How much of its unused nominal quota a team lends to its cohort; +Inf: all of it."),
          MetricType::Gauge),
      usage_("taskgov_quota_usage", Help("What a team's admitted pods use (bound and assumed)."),
             MetricType::Gauge),
      borrowed_("taskgov_quota_borrowed",
                Help("Usage above nominal quota: max(0, usage - nominal)."), MetricType::Gauge),
      lent_("taskgov_quota_lent",
            Help("Nominal quota of this team that other teams of its cohort use: the cohort's "
                 "borrowed total shared among the teams whose lendable quota is idle, in "
                 "proportion to it."),
            MetricType::Gauge),
      k_nominal_("kueue_cluster_queue_nominal_quota",
                 "Kueue-compatible taskgov_quota_nominal: a ClusterQueue's nominal quota per "
                 "flavor and resource. Labels: cohort, cluster_queue, flavor, resource.",
                 MetricType::Gauge),
      k_borrowing_("kueue_cluster_queue_borrowing_limit",
                   "Kueue-compatible taskgov_quota_borrowing_limit (+Inf: unlimited). Labels: "
                   "cohort, cluster_queue, flavor, resource.",
                   MetricType::Gauge),
      k_lending_("kueue_cluster_queue_lending_limit",
                 "Kueue-compatible taskgov_quota_lending_limit (+Inf: unlimited). Labels: "
                 "cohort, cluster_queue, flavor, resource.",
                 MetricType::Gauge),
      k_usage_("kueue_cluster_queue_resource_usage",
               "Kueue-compatible taskgov_quota_usage: what a ClusterQueue's admitted pods use. "
               "Labels: cohort, cluster_queue, flavor, resource.",
               MetricType::Gauge) {}

void QuotaFamilies::Add(const scheduler::ledger::CohortCellUsage& cell, std::string_view cohort,
                        std::string_view cluster_queue) {
  static constexpr L3 kNames = {"team", "flavor", "resource"};
  static constexpr L4 kKueueNames = {"cohort", "cluster_queue", "flavor", "resource"};
  const std::string_view flavor = scheduler::model::FlavorNames().Name(cell.key.flavor);
  const std::string_view resource = scheduler::model::ResourceNames().Name(cell.key.resource);
  const L3 labels{scheduler::model::TeamNames().Name(cell.key.team), flavor, resource};
  const scheduler::ledger::CellView& v = cell.view;
  nominal_.Value(kNames, labels, BaseUnits(resource, v.nominal));
  borrowing_limit_.Value(kNames, labels, BaseUnits(resource, v.borrowing_limit));
  lending_limit_.Value(kNames, labels, BaseUnits(resource, v.lending_limit));
  usage_.Value(kNames, labels, BaseUnits(resource, v.usage));
  borrowed_.Value(kNames, labels, BaseUnits(resource, cell.borrowed));
  lent_.Value(kNames, labels, BaseUnits(resource, cell.lent));
  if (!kueue_) return;
  const L4 k{cohort, cluster_queue, flavor, resource};
  k_nominal_.Value(kKueueNames, k, BaseUnits(resource, v.nominal));
  k_borrowing_.Value(kKueueNames, k, BaseUnits(resource, v.borrowing_limit));
  k_lending_.Value(kKueueNames, k, BaseUnits(resource, v.lending_limit));
  k_usage_.Value(kKueueNames, k, BaseUnits(resource, v.usage));
}

void QuotaFamilies::TakeInto(std::vector<MetricFamily>* out) {
  for (FamilyBuilder* f :
       {&nominal_, &borrowing_limit_, &lending_limit_, &usage_, &borrowed_, &lent_}) {
    out->push_back(f->Take());
  }
  if (!kueue_) return;
  for (FamilyBuilder* f : {&k_nominal_, &k_borrowing_, &k_lending_, &k_usage_}) {
    out->push_back(f->Take());
  }
}

}  // namespace

void Metrics::Impl::CollectLedger(Scrape& scrape, std::vector<MetricFamily>* out) const {
  const scheduler::ledger::QuotaBook* book = sources_.book;
  if (book == nullptr) return;
  const scheduler::ledger::Ledger::Usage read = book->ledger().ReadUsage(&scrape.policy);
  const std::vector<scheduler::ledger::Ledger::CellUsage>& cells = read.cells;
  scrape.have_teams = true;
  NotePolicyTeams(scrape);
  const std::vector<scheduler::ledger::CohortCellUsage> usage =
      scheduler::ledger::ComputeCohortUsage(
          cells, *scrape.policy, [this](std::string_view team) -> std::string_view {
            auto known = known_teams_.find(team);
            return known == known_teams_.end() ? std::string_view() : known->second.cohort;
          });
  NoteRemovedTeams(usage, scrape);

  QuotaFamilies quota(options_.kueue_compatible);
  for (const scheduler::ledger::CohortCellUsage& cell : usage) {
    const TeamMeta& meta =
        scrape.live.find(scheduler::model::TeamNames().Name(cell.key.team))->second;
    quota.Add(cell, meta.cohort, meta.cluster_queue);
  }
  quota.TakeInto(out);
  CollectTeamInfo(scrape, out);
  CollectCohorts(scrape, read.pools, out);
  CollectCohortShares(scrape, read.pools, out);
  CollectWeightedShare(scrape, book->ledger(), out);
  CollectPods(scrape, *book, out);
}

void Metrics::Impl::NotePolicyTeams(Scrape& scrape) const {
  for (const scheduler::model::Team& team : scrape.policy->teams) {
    TeamMeta meta{team.cohort, team.cluster_queue.empty() ? team.name : team.cluster_queue};
    known_teams_[team.name] = meta;
    scrape.live[team.name] = std::move(meta);
  }
}

void Metrics::Impl::NoteRemovedTeams(const std::vector<scheduler::ledger::CohortCellUsage>& usage,
                                     Scrape& scrape) const {
  for (const scheduler::ledger::CohortCellUsage& cell : usage) {
    const std::string& team = scheduler::model::TeamNames().Name(cell.key.team);
    if (scrape.live.count(team) > 0) continue;
    auto known = known_teams_.find(team);
    scrape.live.emplace(team, known != known_teams_.end() ? known->second : TeamMeta{"", team});
  }
  // Forget teams that have no series any more.
  for (auto it = known_teams_.begin(); it != known_teams_.end();) {
    it = scrape.live.count(it->first) ? std::next(it) : known_teams_.erase(it);
  }
}

void Metrics::Impl::CollectTeamInfo(const Scrape& scrape, std::vector<MetricFamily>* out) const {
  FamilyBuilder info("taskgov_team_info",
                     "1 for every team with series, labelled with its cohort (empty: none) and "
                     "the Kueue ClusterQueue it is known by. Labels: team, cohort, "
                     "cluster_queue.",
                     MetricType::Gauge);
  for (const auto& [team, meta] : scrape.live) {
    info.Value(L3{"team", "cohort", "cluster_queue"}, L3{team, meta.cohort, meta.cluster_queue}, 1);
  }
  out->push_back(info.Take());
}

void Metrics::Impl::CollectCohorts(const Scrape& scrape,
                                   const std::vector<scheduler::ledger::Ledger::PoolUsage>& pools,
                                   std::vector<MetricFamily>* out) const {
  static constexpr L3 kNames = {"cohort", "flavor", "resource"};
  static constexpr std::string_view kLabels =
      " Labels: cohort; flavor; resource (cpu in cores, memory and ephemeral-storage in bytes, "
      "any other resource in its own count).";
  FamilyBuilder own("taskgov_cohort_quota",
                    std::string("Quota a cohort holds itself (Kueue Cohort resourceGroups), lent "
                                "to its teams through its pool.") +
                        std::string(kLabels),
                    MetricType::Gauge);
  FamilyBuilder capacity("taskgov_cohort_pool_capacity",
                         std::string("What a cohort's teams may borrow and lend among themselves: "
                                     "the sum of their lendable quota, the cohort's own, and what "
                                     "its child cohorts lend it (Kueue's subtree quota).") +
                             std::string(kLabels),
                         MetricType::Gauge);
  FamilyBuilder used("taskgov_cohort_pool_usage",
                     std::string("The part of a cohort's pool in use: its teams' usage above what "
                                 "they never lend, and what its child cohorts store in it.") +
                         std::string(kLabels),
                     MetricType::Gauge);
  FamilyBuilder k_subtree("kueue_cohort_subtree_quota",
                          "Kueue-compatible taskgov_cohort_pool_capacity: a cohort's nominal "
                          "quota aggregated within its subtree. Labels: cohort, flavor, resource.",
                          MetricType::Gauge);
  for (const scheduler::model::Cohort& cohort : scrape.policy->cohorts) {
    for (const scheduler::model::FlavorQuota& fq : cohort.flavors) {
      for (const scheduler::model::ResourceQuota& q : fq.resources) {
        own.Value(kNames, L3{cohort.name, fq.flavor, q.resource}, BaseUnits(q.resource, q.nominal));
      }
    }
  }
  for (const scheduler::ledger::Ledger::PoolUsage& pool : pools) {
    if (pool.cohort.empty()) continue;  // a team of no cohort pools alone
    const std::string_view resource = scheduler::model::ResourceNames().Name(pool.resource);
    const L3 labels{pool.cohort, scheduler::model::FlavorNames().Name(pool.flavor), resource};
    capacity.Value(kNames, labels, BaseUnits(resource, pool.capacity));
    used.Value(kNames, labels, BaseUnits(resource, pool.used));
    if (options_.kueue_compatible) {
      k_subtree.Value(kNames, labels, BaseUnits(resource, pool.capacity));
    }
  }
  out->push_back(own.Take());
  out->push_back(capacity.Take());
  out->push_back(used.Take());
  if (options_.kueue_compatible) out->push_back(k_subtree.Take());
}

void Metrics::Impl::CollectCohortShares(
    const Scrape& scrape, const std::vector<scheduler::ledger::Ledger::PoolUsage>& pools,
    std::vector<MetricFamily>* out) const {
  FamilyBuilder share("taskgov_cohort_weighted_share",
                      "A cohort's fair-share weighted share on a flavor, as teams of other "
                      "branches of its tree are compared with it: the largest ratio, over "
                      "resources, of its usage above its subtree quota to what its parent could "
                      "lend, divided by its weight (0: within its subtree quota; +Inf: weight 0 "
                      "and borrowing). Cohorts with a parent. Labels: cohort, flavor.",
                      MetricType::Gauge);
  FamilyBuilder k_share("kueue_cohort_weighted_share",
                        "Kueue-compatible weighted share of a cohort, in thousandths: the largest "
                        "over its flavors of taskgov_cohort_weighted_share x 1000 (+Inf: weight 0 "
                        "and borrowing). Labels: cohort.",
                        MetricType::Gauge);
  // Per (cohort, flavor) over its resources' pools, then per cohort over its flavors.
  std::map<std::pair<std::string, NameId>, scheduler::decisions::ShareAccumulator> by_flavor;
  for (const scheduler::ledger::Ledger::PoolUsage& pool : pools) {
    if (pool.cohort.empty() || pool.parent < 0) continue;  // a root borrows from no one
    by_flavor[{pool.cohort, pool.flavor}].Add(pool.used, pool.capacity,
                                              pools[pool.parent].potential);
  }
  std::map<std::string, int64_t> by_cohort;
  for (const auto& [key, acc] : by_flavor) {
    const scheduler::model::Cohort* cohort = scrape.policy->FindCohort(key.first);
    const int64_t per_mille = acc.PerMille(cohort != nullptr ? cohort->fair_share_weight : 1.0);
    const bool unbounded =
        per_mille >= scheduler::decisions::ShareAccumulator::kZeroWeightBorrowing;
    share.Value(L2{"cohort", "flavor"},
                L2{key.first, scheduler::model::FlavorNames().Name(key.second)},
                unbounded ? kInf : static_cast<double>(per_mille) / 1000.0);
    int64_t& most = by_cohort[key.first];
    most = std::max(most, per_mille);
  }
  out->push_back(share.Take());
  if (!options_.kueue_compatible) return;
  for (const auto& [cohort, per_mille] : by_cohort) {
    k_share.Value(L1{"cohort"}, L1{cohort},
                  per_mille >= scheduler::decisions::ShareAccumulator::kZeroWeightBorrowing
                      ? kInf
                      : static_cast<double>(per_mille));
  }
  out->push_back(k_share.Take());
}

void Metrics::Impl::CollectWeightedShare(const Scrape& scrape,
                                         const scheduler::ledger::Ledger& ledger,
                                         std::vector<MetricFamily>* out) const {
  FamilyBuilder share("taskgov_weighted_share",
                      "A team's fair-share weighted share on a flavor: the largest ratio, over "
                      "resources, of its usage above nominal to the cohort's lendable quota, "
                      "divided by its fair-share weight (0: within nominal; +Inf: weight 0 and "
                      "borrowing). Labels: team, flavor.",
                      MetricType::Gauge);
  FamilyBuilder k_share("kueue_cluster_queue_weighted_share",
                        "Kueue-compatible weighted share of a ClusterQueue, in thousandths: "
                        "the largest over its flavors of taskgov_weighted_share x 1000, "
                        "truncated (0: within nominal; 9223372036854775807: weight 0 and "
                        "borrowing). Labels: cluster_queue.",
                        MetricType::Gauge);
  scheduler::ledger::Ledger::Session session(ledger);
  for (const scheduler::model::Team& team : scrape.policy->teams) {
    int64_t max_share = 0;  // per mille, as Kueue reports it
    for (const scheduler::model::FlavorQuota& fq : team.flavors) {
      const int64_t per_mille = scheduler::decisions::ReportedWeightedShare(
          session, team, scheduler::model::FlavorNames().Intern(fq.flavor));
      max_share = std::max(max_share, per_mille);
      share.Value(L2{"team", "flavor"}, L2{team.name, fq.flavor},
                  per_mille == scheduler::model::kUnlimited
                      ? kInf
                      : static_cast<double>(per_mille) / 1000.0);
    }
    if (options_.kueue_compatible) {
      k_share.Value(L1{"cluster_queue"}, L1{scrape.ClusterQueue(team.name)},
                    static_cast<double>(max_share));
    }
  }
  out->push_back(share.Take());
  if (options_.kueue_compatible) out->push_back(k_share.Take());
}

namespace {

MetricFamily FilterOnlyDropped(const scheduler::state::ClusterState& cluster) {
  FamilyBuilder dropped("taskgov_pending_filter_only_dropped_total",
                        "Refusals of pods known only from filter calls (the informer never "
                        "reported them) that were not queued because " +
                            std::to_string(scheduler::state::PendingQueues::kMaxFilterOnly) +
                            " such pods were already waiting: a client filtering pods the API "
                            "server does not have.",
                        MetricType::Counter);
  dropped.Value(std::array<std::string_view, 0>{}, std::array<std::string_view, 0>{},
                static_cast<double>(cluster.pending().filter_only_dropped()));
  return dropped.Take();
}

}  // namespace

namespace {

// The families CollectPods writes.
struct PodFamilies {
  FamilyBuilder pods{"taskgov_pods",
                     "Pods of a team by state, each pod in one: pending (waiting for "
                     "admission), admitted (holding quota, not bound yet), running (bound, not "
                     "being deleted), preempted (evicted by preemption, not gone yet), "
                     "terminating (being deleted otherwise). All but pending are charged to the "
                     "quota. Labels: team, state.",
                     MetricType::Gauge};
  FamilyBuilder workloads{"taskgov_workloads",
                          "Workloads of a team by state (a gang counts once, a lone pod is a "
                          "workload): pending (waiting for admission), admitted (holding quota: "
                          "admitted, running or terminating, as Kueue counts admitted "
                          "workloads). Labels: team, state.",
                          MetricType::Gauge};
  FamilyBuilder k_pending{"kueue_pending_workloads",
                          "Kueue-compatible pending workloads of a ClusterQueue (a gang counts "
                          "once). Labels: cluster_queue; status: inadmissible (refused by a "
                          "filter call, waiting for quota), active (not tried yet).",
                          MetricType::Gauge};
  FamilyBuilder k_active{"kueue_admitted_active_workloads",
                         "Kueue-compatible admitted workloads of a ClusterQueue that hold quota "
                         "(a gang counts once): bound, or admitted and about to be bound. "
                         "Labels: cluster_queue.",
                         MetricType::Gauge};
  FamilyBuilder paused{"taskgov_paused_workloads",
                       "Jobs taskgov paused (suspended instead of evicting their pods, for a "
                       "preemption or reclaim) and has not resumed yet: they wait in their team's "
                       "queue and resume when their whole demand fits. Labels: team.",
                       MetricType::Gauge};
  FamilyBuilder topology{"taskgov_topology_waiting_workloads",
                         "Pending workloads of a team (a gang counts once) that the last filter "
                         "call refused for their topology: no domain at the level they require "
                         "has room for every pod (or their topology request is invalid). Labels: "
                         "team.",
                         MetricType::Gauge};
  FamilyBuilder ungoverned{
      "taskgov_ungoverned_pods",
      "Running pods of a team's namespaces that another scheduler bound (spec.schedulerName is "
      "not the governed one): counted against the team, but never admitted by taskgov. Labels: "
      "team.",
      MetricType::Gauge};
};

}  // namespace

void Metrics::Impl::CollectPods(const Scrape& scrape, const scheduler::ledger::QuotaBook& book,
                                std::vector<MetricFamily>* out) const {
  std::unordered_map<NameId, scheduler::ledger::QuotaBook::TeamCounts> counts = book.CountByTeam();
  PodFamilies f;
  auto& [pods, workloads, k_pending, k_active, paused, topology, ungoverned] = f;
  static constexpr L2 kPodNames = {"team", "state"};
  static constexpr L2 kPendingNames = {"cluster_queue", "status"};
  const scheduler::state::ClusterState* cluster = sources_.cluster;
  const std::unordered_map<NameId, size_t> ungoverned_by_team =
      cluster != nullptr ? cluster->UngovernedByTeam() : std::unordered_map<NameId, size_t>{};
  const std::unordered_map<NameId, size_t> terminating_by_team =
      cluster != nullptr ? cluster->TerminatingByTeam() : std::unordered_map<NameId, size_t>{};
  auto of = [](const auto& by_team, std::optional<NameId> id) -> int64_t {
    auto it = id ? by_team.find(*id) : by_team.end();
    return it == by_team.end() ? 0 : static_cast<int64_t>(it->second);
  };
  for (const auto& [team, meta] : scrape.live) {
    const std::optional<NameId> id = scheduler::model::TeamNames().Find(team);
    const scheduler::ledger::QuotaBook::TeamCounts c =
        id ? counts[*id] : scheduler::ledger::QuotaBook::TeamCounts{};
    const scheduler::state::PendingQueues::Counts pending =
        (id && cluster != nullptr) ? cluster->pending().CountsOf(*id)
                                   : scheduler::state::PendingQueues::Counts{};
    int64_t preempted = 0;
    if (scrape.preemptions) {
      auto it = scrape.preemptions->preempted_pods.find(team);
      if (it != scrape.preemptions->preempted_pods.end()) preempted = it->second;
    }
    const TeamPods p = PartitionTeamPods(c, static_cast<int64_t>(pending.total),
                                         of(terminating_by_team, id), preempted);
    if (scrape.paused_workloads) {
      auto it = scrape.paused_workloads->find(team);
      paused.Value(L1{"team"}, L1{team},
                   it == scrape.paused_workloads->end() ? 0 : static_cast<double>(it->second));
    }
    if (cluster != nullptr) {
      ungoverned.Value(L1{"team"}, L1{team}, static_cast<double>(of(ungoverned_by_team, id)));
      pods.Value(kPodNames, L2{team, "pending"}, static_cast<double>(p.pending));
      workloads.Value(kPodNames, L2{team, "pending"}, static_cast<double>(pending.workloads));
      topology.Value(L1{"team"}, L1{team}, static_cast<double>(pending.topology_workloads));
    }
    workloads.Value(kPodNames, L2{team, "admitted"}, static_cast<double>(c.workloads));
    pods.Value(kPodNames, L2{team, "admitted"}, static_cast<double>(p.admitted));
    pods.Value(kPodNames, L2{team, "running"}, static_cast<double>(p.running));
    if (scrape.preemptions) {
      pods.Value(kPodNames, L2{team, "preempted"}, static_cast<double>(p.preempted));
    }
    if (cluster != nullptr) {
      pods.Value(kPodNames, L2{team, "terminating"}, static_cast<double>(p.terminating));
    }
    if (!options_.kueue_compatible) continue;
    if (cluster != nullptr) {
      k_pending.Value(kPendingNames, L2{meta.cluster_queue, "active"},
                      static_cast<double>(pending.workloads - pending.refused_workloads));
      k_pending.Value(kPendingNames, L2{meta.cluster_queue, "inadmissible"},
                      static_cast<double>(pending.refused_workloads));
    }
    k_active.Value(L1{"cluster_queue"}, L1{meta.cluster_queue}, static_cast<double>(c.workloads));
  }
  out->push_back(pods.Take());
  out->push_back(workloads.Take());
  if (scrape.paused_workloads) out->push_back(paused.Take());
  if (cluster != nullptr) {
    out->push_back(topology.Take());
    out->push_back(ungoverned.Take());
    out->push_back(FilterOnlyDropped(*cluster));
  }
  if (options_.kueue_compatible) {
    out->push_back(k_pending.Take());
    out->push_back(k_active.Take());
  }
}

void Metrics::Impl::CollectTeamSeries(const Scrape& scrape, std::vector<MetricFamily>* out) const {
  CollectFilterCounters(scrape, out);
  CollectPodTimes(scrape, out);
  CollectPreemptions(scrape, out);
}

void Metrics::Impl::CollectFilterCounters(const Scrape& scrape,
                                          std::vector<MetricFamily>* out) const {
  FamilyBuilder admissions(
      "taskgov_admissions_total",
      "Filter decisions that admitted a pod. Labels: team (\"_none\": pods of no team, passed "
      "through); flavor; mode: nominal (within nominal quota), borrowing, passthrough.",
      MetricType::Counter);
  admissions_.ForEach([&](const auto& labels, const Counter& c) {
    if (scrape.Live(labels[0])) {
      admissions.Value(L3{"team", "flavor", "mode"}, Views(labels), static_cast<double>(c.Value()));
    }
  });
  out->push_back(admissions.TakeSorted());

  std::string reasons;
  for (std::string_view r : kRefusalReasons)
    reasons += (reasons.empty() ? "" : ", ") + std::string(r);
  FamilyBuilder refusals("taskgov_refusals_total",
                         "Filter decisions that refused a pod (a pod retried is counted each "
                         "time). Labels: team (\"_none\": no team or not ready); reason: " +
                             reasons + ".",
                         MetricType::Counter);
  refusals_.ForEach([&](const auto& labels, const TeamRefusals& r) {
    if (!scrape.Live(labels[0])) return;
    for (size_t i = 0; i < kRefusalReasons.size(); ++i) {
      const uint64_t n = r.by_reason[i].Value();
      if (n > 0) {
        refusals.Value(L2{"team", "reason"}, L2{labels[0], kRefusalReasons[i]},
                       static_cast<double>(n));
      }
    }
  });
  out->push_back(refusals.TakeSorted());
}

void Metrics::Impl::CollectPodTimes(const Scrape& scrape, std::vector<MetricFamily>* out) const {
  FamilyBuilder waits("taskgov_pod_wait_seconds",
                      "Time from a pod's creation until it was bound. Labels: team; "
                      "priority_class (\"none\": no class, \"other\": beyond the first " +
                          std::to_string(kMaxPriorityClasses) + " classes).",
                      MetricType::Histogram);
  waits_.ForEach([&](const auto& labels, const Histogram& h) {
    if (scrape.Live(labels[0])) waits.Hist(L2{"team", "priority_class"}, Views(labels), h);
  });
  out->push_back(waits.TakeSorted());

  FamilyBuilder runs("taskgov_pod_run_seconds",
                     "Time from a pod's binding until it ended (succeeded, failed, deleted or "
                     "evicted). Labels: team; priority_class (as taskgov_pod_wait_seconds).",
                     MetricType::Histogram);
  runs_.ForEach([&](const auto& labels, const Histogram& h) {
    if (scrape.Live(labels[0])) runs.Hist(L2{"team", "priority_class"}, Views(labels), h);
  });
  out->push_back(runs.TakeSorted());

  if (!options_.kueue_compatible) return;
  FamilyBuilder k_wait("kueue_admission_wait_time_seconds",
                       "Kueue-compatible taskgov_pod_wait_seconds (pod creation until "
                       "binding), with Kueue's buckets. Labels: cluster_queue.",
                       MetricType::Histogram);
  kueue_waits_.ForEach([&](const auto& labels, const Histogram& h) {
    if (scrape.Live(labels[0])) {
      k_wait.Hist(L1{"cluster_queue"}, L1{scrape.ClusterQueue(labels[0])}, h);
    }
  });
  out->push_back(k_wait.TakeSorted());
}

void Metrics::Impl::CollectPreemptions(const Scrape& scrape, std::vector<MetricFamily>* out) const {
  const std::string reasons =
      JoinLabelValues(kPreemptionReasons, &PreemptionReason::name, &PreemptionReason::meaning);
  FamilyBuilder preemptions(
      "taskgov_preemptions_total",
      "Pods preempted. Labels: team (the preemptor's); victim_team; reason: " + reasons +
          "; mechanism: evict (the pod was evicted), suspend (its job was suspended: its "
          "controller deleted the pod, taskgov resumes the job).",
      MetricType::Counter);
  FamilyBuilder jobs_paused(
      "taskgov_jobs_paused_total",
      "Jobs taskgov suspended instead of evicting their pods (once per job, however many of its "
      "pods were victims). Labels: team (the preemptor's); victim_team; reason: " +
          reasons + ".",
      MetricType::Counter);
  std::map<std::pair<std::string, std::string>, double> kueue_preemptions;
  std::map<std::string, double> kueue_evicted;  // by the victims' cluster queue
  const PreemptionTotals none;
  const PreemptionTotals& totals = scrape.preemptions ? *scrape.preemptions : none;
  static constexpr L4 kNames = {"team", "victim_team", "reason", "mechanism"};
  for (const CountedPreemption& c :
       CountedPreemptions(totals, [&](std::string_view team) { return scrape.Live(team); })) {
    // A mechanism's series once it counted (every key has one).
    const double evicted = std::max(0.0, c.evictions - c.paused_pods);
    if (evicted > 0 || c.paused_pods == 0) {
      preemptions.Value(kNames, L4{c.team, c.victim_team, c.reason, "evict"}, evicted);
    }
    if (c.paused_pods > 0) {
      preemptions.Value(kNames, L4{c.team, c.victim_team, c.reason, "suspend"}, c.paused_pods);
    }
    jobs_paused.Value(L3{"team", "victim_team", "reason"}, L3{c.team, c.victim_team, c.reason},
                      c.jobs_paused);
    kueue_evicted[std::string(scrape.ClusterQueue(c.victim_team))] += c.jobs_paused;
  }
  for (const PreemptionTotals::Count& c : totals.preemptions) {
    const PreemptionReason* reason = PreemptionLabel(c.reason);
    if (reason == nullptr || c.victim_team.empty() || !scrape.Live(c.team)) continue;
    // Kueue counts per preempting queue, whoever the victim was.
    kueue_preemptions[{std::string(scrape.ClusterQueue(c.team)),
                       std::string(reason->kueue_reason)}] += static_cast<double>(c.evictions);
  }
  out->push_back(preemptions.TakeSorted());
  out->push_back(jobs_paused.TakeSorted());
  if (!options_.kueue_compatible) return;
  FamilyBuilder k_preempted(
      "kueue_preempted_workloads_total",
      "Kueue-compatible taskgov_preemptions_total summed over victims. Labels: "
      "preempting_cluster_queue; reason: " +
          JoinLabelValues(kPreemptionReasons, &PreemptionReason::kueue_reason,
                          &PreemptionReason::name) +
          ".",
      MetricType::Counter);
  for (const auto& [key, n] : kueue_preemptions) {
    k_preempted.Value(L2{"preempting_cluster_queue", "reason"}, L2{key.first, key.second}, n);
  }
  out->push_back(k_preempted.TakeSorted());
  FamilyBuilder k_evicted(
      "kueue_evicted_workloads_total",
      "Kueue-compatible taskgov_jobs_paused_total summed per victim team: the workloads evicted "
      "as Kueue evicts them, by suspending their job (pods evicted one by one are counted in "
      "kueue_preempted_workloads_total only). Labels: cluster_queue (the victims'); reason: "
      "Preempted; underlying_cause: \"\" (the reason is the cause).",
      MetricType::Counter);
  for (const auto& [queue, n] : kueue_evicted) {
    k_evicted.Value(L3{"cluster_queue", "reason", "underlying_cause"}, L3{queue, "Preempted", ""},
                    n);
  }
  out->push_back(k_evicted.TakeSorted());
}

void Metrics::Impl::CollectProcess(const Scrape& scrape, std::vector<MetricFamily>* out) const {
  CollectWebhooks(out);
  CollectInformers(scrape, clock_->NowMs(), out);
  CollectLedgerRepairs(out);
  CollectHttpListeners(scrape, out);
  CollectConsoleAccess(out);
  CollectRequeues(out);
}

void Metrics::Impl::CollectRequeues(std::vector<MetricFamily>* out) const {
  if (!sources_.requeues) return;
  const RequeueTotals t = sources_.requeues();
  FamilyBuilder requeues(
      "taskgov_requeue_requests_total",
      "Pending pods taskgov asked kube-scheduler to try again because the filter would now admit "
      "them (the annotation taskgov.io/requeued-at, --requeue-lapsed-refusals). Labels: outcome: "
      "requested (the pod was annotated), failed (the API refused or did not answer; asked again "
      "later).",
      MetricType::Counter);
  requeues.Value(L1{"outcome"}, L1{"requested"}, static_cast<double>(t.requested));
  requeues.Value(L1{"outcome"}, L1{"failed"}, static_cast<double>(t.failed));
  out->push_back(requeues.Take());
}

void Metrics::Impl::CollectConsoleAccess(std::vector<MetricFamily>* out) const {
  if (!sources_.console_access) return;
  const ConsoleAccessTotals t = sources_.console_access();
  FamilyBuilder access("taskgov_console_access_total",
                       "Requests to the admin API and console by access decision. Labels: "
                       "result: full (every team visible), team (some teams' namespaces only), "
                       "unauthenticated (401: no or a rejected bearer token), forbidden (403: "
                       "no grant), error (503: a review could not be made).",
                       MetricType::Counter);
  for (const auto& [result, n] :
       {std::pair{"full", t.full}, std::pair{"team", t.team_scoped},
        std::pair{"unauthenticated", t.unauthenticated}, std::pair{"forbidden", t.forbidden},
        std::pair{"error", t.errors}}) {
    access.Value(L1{"result"}, L1{result}, static_cast<double>(n));
  }
  out->push_back(access.Take());
}

void Metrics::Impl::CollectHttpListeners(const Scrape& scrape,
                                         std::vector<MetricFamily>* out) const {
  if (!sources_.http_listeners) return;
  FamilyBuilder refused(
      "taskgov_http_connections_refused_total",
      "Connections and requests an HTTP listener refused or cut off so that idle, slow or "
      "greedy clients cannot starve it. Labels: listener (webhook, metrics, console); reason: " +
          JoinLabelValues(kHttpRefusals, &LabelValue::name, &LabelValue::meaning) + ".",
      MetricType::Counter);
  FamilyBuilder open("taskgov_http_open_connections",
                     "Connections an HTTP listener holds open now. Labels: listener.",
                     MetricType::Gauge);
  FamilyBuilder bodies("taskgov_http_inflight_body_bytes",
                       "Bytes of request bodies an HTTP listener holds against the in-flight "
                       "body budget (--max-inflight-body-bytes). Labels: listener.",
                       MetricType::Gauge);
  for (const HttpListenerTotals& listener : scrape.http_listeners) {
    for (size_t i = 0; i < kHttpRefusals.size(); ++i) {
      refused.Value(L2{"listener", "reason"}, L2{listener.listener, kHttpRefusals[i].name},
                    static_cast<double>(listener.refused[i]));
    }
    open.Value(L1{"listener"}, L1{listener.listener},
               static_cast<double>(listener.open_connections));
    bodies.Value(L1{"listener"}, L1{listener.listener},
                 static_cast<double>(listener.inflight_body_bytes));
  }
  out->push_back(refused.TakeSorted());
  out->push_back(open.TakeSorted());
  out->push_back(bodies.TakeSorted());
}

void Metrics::Impl::CollectWebhooks(std::vector<MetricFamily>* out) const {
  FamilyBuilder requests(
      "taskgov_webhook_requests_total",
      "Webhook replies. Labels: verb (the route: filter, prioritize, preempt, "
      "bind; unknown: no route matched); outcome: " +
          JoinLabelValues(kWebhookOutcomes, &LabelValue::name, &LabelValue::meaning) + ".",
      MetricType::Counter);
  FamilyBuilder durations("taskgov_webhook_request_duration_seconds",
                          "Time from a request's first byte until its reply was written. "
                          "Labels: verb (as taskgov_webhook_requests_total).",
                          MetricType::Histogram);
  verbs_.ForEach([&](const auto& labels, const VerbSeries& s) {
    for (size_t i = 0; i < kWebhookOutcomes.size(); ++i) {
      requests.Value(L2{"verb", "outcome"}, L2{labels[0], kWebhookOutcomes[i].name},
                     static_cast<double>(s.outcomes[i].Value()));
    }
    durations.Hist(L1{"verb"}, Views(labels), s.duration);
  });
  out->push_back(requests.TakeSorted());
  out->push_back(durations.TakeSorted());
}

void Metrics::Impl::CollectInformers(const Scrape& scrape, int64_t now_ms,
                                     std::vector<MetricFamily>* out) const {
  FamilyBuilder restarts("taskgov_watch_restarts_total",
                         "Watches of the Kubernetes API restarted. Labels: resource "
                         "(pods, nodes, namespaces, localqueues, podgroups); reason: " +
                             JoinLabelValues(scheduler::kube::kWatchRestartReasons,
                                             &scheduler::kube::WatchRestartReason::name,
                                             &scheduler::kube::WatchRestartReason::meaning) +
                             ".",
                         MetricType::Counter);
  FamilyBuilder age("taskgov_informer_last_event_age_seconds",
                    "Seconds since the informer of a resource last received an event (a watch "
                    "that stalls keeps growing). Labels: resource.",
                    MetricType::Gauge);
  FamilyBuilder stamp("taskgov_informer_last_event_timestamp_seconds",
                      "Unix time of the last event the informer of a resource received. "
                      "Labels: resource.",
                      MetricType::Gauge);
  bool any_restart = false;
  for (const InformerTotals& informer : scrape.informers) {
    const L1 resource{informer.resource};
    for (const auto& [reason, count] : informer.watch_restarts) {
      if (count == 0) continue;  // a series exists from its first restart
      // Label order as before (alphabetical): reason, then resource.
      restarts.Value(L2{"reason", "resource"}, L2{reason, informer.resource},
                     static_cast<double>(count));
      any_restart = true;
    }
    if (informer.last_event_unix_ms <= 0) continue;  // no event yet
    age.Value(L1{"resource"}, resource, Seconds(informer.last_event_unix_ms, now_ms));
    stamp.Value(L1{"resource"}, resource,
                static_cast<double>(informer.last_event_unix_ms) / 1000.0);
  }
  // Without a restart the family is left out (its HELP and TYPE lines too).
  if (any_restart) out->push_back(restarts.TakeSorted());
  out->push_back(age.TakeSorted());
  out->push_back(stamp.TakeSorted());
}

void Metrics::Impl::CollectLedgerRepairs(std::vector<MetricFamily>* out) const {
  if (sources_.reconciler != nullptr) {
    FamilyBuilder repairs(
        "taskgov_ledger_repairs_total",
        "Repairs of the quota ledger by its housekeeping (all but expired are drift, normally "
        "0). Labels: kind: " +
            JoinLabelValues(kLedgerRepairKinds, &LabelValue::name, &LabelValue::meaning) + ".",
        MetricType::Counter);
    const auto counts = RepairCounts(sources_.reconciler->repairs());
    for (size_t i = 0; i < kLedgerRepairKinds.size(); ++i) {
      repairs.Value(L1{"kind"}, L1{kLedgerRepairKinds[i].name}, static_cast<double>(counts[i]));
    }
    out->push_back(repairs.Take());
  }
  if (sources_.book == nullptr) return;
  FamilyBuilder over("taskgov_ledger_over_release_total",
                     "Releases that found a ledger cell holding less than the charge they "
                     "named (drift: nothing was subtracted for that resource).",
                     MetricType::Counter);
  over.Value(std::array<std::string_view, 0>{}, std::array<std::string_view, 0>{},
             static_cast<double>(sources_.book->ledger().over_releases()));
  out->push_back(over.Take());
  FamilyBuilder gangs("taskgov_gang_timeouts_total",
                      "Gangs whose quota hold expired before every member was admitted (the held "
                      "quota was released; members running then are evicted).",
                      MetricType::Counter);
  gangs.Value(std::array<std::string_view, 0>{}, std::array<std::string_view, 0>{},
              static_cast<double>(sources_.book->gangs_expired()));
  out->push_back(gangs.Take());
}

std::string Metrics::Impl::Render() const {
  std::lock_guard<std::mutex> lock(scrape_mu_);
  std::vector<MetricFamily> families = registry_.Collect();
  for (MetricFamily& family : families) SortSeries(family);  // the registry's order is a hash's
  Scrape scrape;
  if (sources_.informers) scrape.informers = sources_.informers();
  if (sources_.preemptions) scrape.preemptions = sources_.preemptions();
  if (sources_.paused_workloads) scrape.paused_workloads = sources_.paused_workloads();
  if (sources_.http_listeners) scrape.http_listeners = sources_.http_listeners();
  CollectLedger(scrape, &families);
  CollectTeamSeries(scrape, &families);
  CollectProcess(scrape, &families);
  std::sort(families.begin(), families.end(),
            [](const MetricFamily& a, const MetricFamily& b) { return a.name < b.name; });

  // Serialise into one buffer sized by the previous scrape: no regrowth, no copies.
  std::string text;
  text.reserve(last_size_ + last_size_ / 8 + 4096);
  AppendText(families, &text);
  last_size_ = text.size();
  return text;
}

Metrics::Metrics(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Metrics::~Metrics() = default;

void Metrics::SetSources(Sources sources) { impl_->SetSources(std::move(sources)); }
void Metrics::ObserveFilter(const scheduler::decisions::FilterDecision& decision) {
  impl_->ObserveFilter(decision);
}
void Metrics::ObserveRequest(std::string_view path, bool known_path, int status, bool reply_sent,
                             std::string_view handler_outcome, std::chrono::nanoseconds duration) {
  impl_->ObserveRequest(path, known_path, status, reply_sent, handler_outcome, duration);
}
void Metrics::ObservePodBound(NameId team, std::string_view priority_class, int64_t created_ms,
                              int64_t bound_ms) {
  impl_->ObservePodBound(team, priority_class, created_ms, bound_ms);
}
void Metrics::ObservePodEnded(NameId team, std::string_view priority_class, int64_t bound_ms,
                              int64_t ended_ms) {
  impl_->ObservePodEnded(team, priority_class, bound_ms, ended_ms);
}
void Metrics::ObservePodLifecycle(const scheduler::state::ClusterState::PodLifecycle& event) {
  if (event.team == scheduler::state::kNoTeam) return;
  if (event.transition == scheduler::state::PodTransition::kBound) {
    impl_->ObservePodBound(event.team, event.priority_class, event.pod->creation_unix_ms,
                           event.now_ms);
  } else {
    impl_->ObservePodEnded(event.team, event.priority_class, event.bound_ms, event.now_ms);
  }
}
void Metrics::ObserveConfigReload(bool ok, int64_t unix_ms) {
  impl_->ObserveConfigReload(ok, unix_ms);
}
std::string Metrics::Render() const { return impl_->Render(); }
prometheus::Registry& Metrics::registry() { return impl_->registry(); }

std::vector<CountedPreemption> CountedPreemptions(
    const PreemptionTotals& totals, const std::function<bool(std::string_view team)>& live) {
  std::vector<CountedPreemption> out;
  for (const PreemptionTotals::Count& c : totals.preemptions) {
    const PreemptionReason* reason = PreemptionLabel(c.reason);
    // Pods of no team preempted by plain priority are not a team's preemption.
    if (reason == nullptr || c.victim_team.empty() || !live(c.team) || !live(c.victim_team)) {
      continue;
    }
    out.push_back({c.team, c.victim_team, reason->name, static_cast<double>(c.evictions),
                   static_cast<double>(c.paused_pods), static_cast<double>(c.jobs_paused)});
  }
  return out;
}

TeamPods PartitionTeamPods(const scheduler::ledger::QuotaBook::TeamCounts& charged, int64_t pending,
                           int64_t terminating, int64_t preempted) {
  TeamPods pods;
  pods.pending = std::max<int64_t>(0, pending);
  pods.admitted = std::max<int64_t>(0, charged.assumed);
  // Bound and leaving: at least the pods seen being deleted, and the evicted ones among them.
  const int64_t leaving = std::min(charged.running, std::max(terminating, preempted));
  pods.preempted = std::clamp<int64_t>(preempted, 0, std::max<int64_t>(0, leaving));
  pods.terminating = std::max<int64_t>(0, leaving - pods.preempted);
  pods.running = std::max<int64_t>(0, charged.running - std::max<int64_t>(0, leaving));
  return pods;
}

}  // namespace taskgov::metrics
