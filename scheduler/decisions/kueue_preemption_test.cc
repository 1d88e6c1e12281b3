// Kueue's preemption unit tables — TestPreemption (classical) and TestFairPreemptions (fair
// sharing), at the commit named in the data file — run against taskgov's victim chooser
// (VictimSelector::Select). Data: testdata/kueue_preemption_cases.json, written by
// tools/kueue/kueue_cases.py; every case carries the file:line of its Kueue table entry.
//
// Each case becomes:
//  * a Policy: one Team per ClusterQueue (its cohort; nominal / borrowingLimit / lendingLimit per
//    flavor and resource; withinClusterQueue → within_team, reclaimWithinCohort → reclaim, an
//    unset field or a nil Preemption → Never; fair-sharing weight → fair_share_weight), one Flavor
//    per ResourceFlavor; idle compute FairShare for the fair table, FirstComeFirstServe for the
//    classical one (Kueue runs it with fair sharing off);
//  * a ledger charged with the admitted workloads' admission usage, read as the flavor's QuotaSim;
//  * one Candidate per admitted workload (priority; the QuotaReserved time as admitted_ms and
//    started_ms, so Kueue's "newer reservation first" is what taskgov sees; the creation time as
//    created_ms; the harness's UID);
//  * one node of each decision's flavor, so large that its room never matters (quota alone
//    decides, as in Kueue), running the candidates charged on that flavor;
//  * a Preemptor for the incoming workload on the flavor its assignment preempts on (resources
//    assigned to other flavors, mode Fit, are its companions there: those flavors match every
//    node): request = the per-pod requests, need = Kueue's Assignment.TotalRequestsFor (when it
//    is empty — an assignment Count of 0 — Preemptor::quota_request() falls back to the request).
//    A workload of pod sets on different flavors is a gang of their pods, each pinned to its pod
//    set's flavor: one Preemptor per flavor, the first member there with its need as the
//    preemption controller takes it (SplitGangNeed), each choosing on its own.
// The victims' names and reasons must be Kueue's: InClusterQueue ↔ InTeamPriority,
// InCohortReclamation ↔ Reclaim, InCohortFairSharing ↔ FairShare, InCohortReclaimWhileBorrowing
// ↔ ReclaimWhileBorrowing (borrowWithinCohort → Team::borrow_within_cohort). A case the model
// cannot express (a pod set over several flavors that all need preemption, an admitted workload
// charged on several flavors) fails, naming what is missing.
// Every case records Kueue's and taskgov's victims as test properties (kueue, taskgov).

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/common/clock.h"
#include "scheduler/decisions/preemption.h"
#include "scheduler/decisions/snapshot.h"
#include "scheduler/ledger/ledger.h"
#include "scheduler/model/interner.h"
#include "scheduler/model/policy.h"
#include "scheduler/state/pending_queues.h"

namespace taskgov::scheduler::decisions {

using ledger::CellKey;
using ledger::Charge;
using ledger::Ledger;
using model::Cohort;
using model::FairShareStrategy;
using model::Flavor;
using model::FlavorNames;
using model::FlavorQuota;
using model::IdAmounts;
using model::IdleComputeAllocation;
using model::kUnlimited;
using model::NameId;
using model::Policy;
using model::PolicyPtr;
using model::ReclaimPolicy;
using model::ResourceList;
using model::ResourceNames;
using model::ResourceQuota;
using model::Team;
using model::TeamNames;
using model::WithinTeamPreemption;

namespace {

constexpr char kDataFile[] = "scheduler/decisions/testdata/kueue_preemption_cases.json";
constexpr int64_t kNow = 1'700'000'000'000;  // the harness's `now`, in ms
constexpr int64_t kZeroTime = 0;             // Go's zero time: before every other
constexpr int64_t kNodeRoom = int64_t{1} << 50;

// ---------------------------------------------------------------------------------------------
// The cases, as the data file holds them.

using Amounts = std::map<std::string, int64_t>;  // resource → canonical amount

struct ClusterQueue {
  std::string name;
  std::string cohort;
  std::vector<FlavorQuota> quota;
  bool has_preemption = false;  // false: Preemption nil
  std::string within;           // Kueue's spelling; "" unset
  std::string reclaim;
  std::string borrow_within_cohort;  // its policy; "" absent
  std::optional<int64_t> max_priority_threshold;
  std::optional<double> weight;
};

struct CohortObject {
  std::string name;
  std::string parent;
  std::vector<FlavorQuota> quota;
  std::optional<double> weight;
};

struct Admitted {
  std::string name;
  std::string uid;
  std::string cq;
  int32_t priority = 0;
  std::optional<int64_t> creation_ms;
  int64_t reserved_ms = 0;
  std::map<std::string, Amounts> usage;  // flavor → resource → amount
};

struct PodSet {
  std::string name;
  int64_t count = 0;
  Amounts requests;  // per pod
};

struct Incoming {
  std::string name;
  std::string uid;
  int32_t priority = 0;
  std::optional<int64_t> creation_ms;
  std::vector<PodSet> pod_sets;
};

struct PodSetAssignment {
  std::string pod_set;
  int64_t count = 0;
  std::map<std::string, std::pair<std::string, std::string>> flavors;  // resource → flavor, mode
};

struct KueueCase {
  std::string table;
  std::string name;  // Kueue's, verbatim
  std::string source;
  std::string test_name;
  bool fair_sharing = false;
  std::vector<std::string> resource_flavors;
  std::vector<ClusterQueue> cluster_queues;
  std::vector<CohortObject> cohorts;
  std::vector<Admitted> admitted;
  Incoming incoming;
  std::string target_cq;
  std::vector<PodSetAssignment> assignment;
  std::optional<std::vector<std::string>> strategies;
  std::map<std::string, std::string> want;  // victim → Kueue reason
  std::string error;                        // the data could not be read
};

void PrintTo(const KueueCase& c, std::ostream* os) { *os << c.table << " \"" << c.name << "\""; }

// ---------------------------------------------------------------------------------------------
// Reading the data file. Every access is type-checked; the first mismatch is kept in *error
// (with its path) and the readers return defaults from then on.

class Json {
 public:
  Json(const rapidjson::Value& v, std::string path, std::string* error)
      : v_(&v), path_(std::move(path)), error_(error) {}

  [[nodiscard]] const rapidjson::Value& value() const { return *v_; }
  // The same value, its errors kept in `error`.
  [[nodiscard]] Json ReportingTo(std::string* error) const { return Json(*v_, path_, error); }
  [[nodiscard]] bool Has(const char* key) const {
    return v_->IsObject() && v_->HasMember(key) && !(*v_)[key].IsNull();
  }
  [[nodiscard]] Json At(const char* key) const {
    if (!v_->IsObject() || !v_->HasMember(key)) {
      Fail(std::string("missing ") + key);
      return Json(Null(), path_ + "." + key, error_);
    }
    return Json((*v_)[key], path_ + "." + key, error_);
  }
  [[nodiscard]] std::string Str(const char* key) const {
    Json j = At(key);
    if (j.v_->IsString()) return j.v_->GetString();
    j.Fail("not a string");
    return {};
  }
  [[nodiscard]] int64_t Int(const char* key) const {
    Json j = At(key);
    if (j.v_->IsInt64()) return j.v_->GetInt64();
    j.Fail("not an integer");
    return 0;
  }
  // Absent or null: nullopt.
  [[nodiscard]] std::optional<int64_t> OptInt(const char* key) const {
    if (!Has(key)) return std::nullopt;
    return Int(key);
  }
  [[nodiscard]] std::optional<double> OptDouble(const char* key) const {
    if (!Has(key)) return std::nullopt;
    Json j = At(key);
    if (j.v_->IsNumber()) return j.v_->GetDouble();
    j.Fail("not a number");
    return std::nullopt;
  }
  [[nodiscard]] bool Bool(const char* key) const {
    Json j = At(key);
    if (j.v_->IsBool()) return j.v_->GetBool();
    j.Fail("not a boolean");
    return false;
  }
  // Calls f(Json) for each element of the array `key`.
  template <typename F>
  void Each(const char* key, F f) const {
    Json j = At(key);
    if (!j.v_->IsArray()) {
      j.Fail("not an array");
      return;
    }
    for (rapidjson::SizeType i = 0; i < j.v_->Size(); ++i) {
      f(Json((*j.v_)[i], j.path_ + "[" + std::to_string(i) + "]", error_));
    }
  }
  // Calls f(name, Json) for each member of the object `key`.
  template <typename F>
  void Members(const char* key, F f) const {
    Json j = At(key);
    if (!j.v_->IsObject()) {
      j.Fail("not an object");
      return;
    }
    for (auto it = j.v_->MemberBegin(); it != j.v_->MemberEnd(); ++it) {
      const std::string name = it->name.GetString();
      f(name, Json(it->value, j.path_ + "." + name, error_));
    }
  }
  [[nodiscard]] Amounts IntMap(const char* key) const {
    Amounts out;
    Members(key, [&](const std::string& name, const Json& j) {
      if (j.v_->IsInt64()) {
        out[name] = j.v_->GetInt64();
      } else {
        j.Fail("not an integer");
      }
    });
    return out;
  }
  [[nodiscard]] std::vector<std::string> Strings(const char* key) const {
    std::vector<std::string> out;
    Each(key, [&](const Json& j) {
      if (j.v_->IsString()) {
        out.push_back(j.v_->GetString());
      } else {
        j.Fail("not a string");
      }
    });
    return out;
  }
  void Fail(const std::string& what) const {
    if (error_->empty()) *error_ = path_ + ": " + what;
  }

 private:
  static const rapidjson::Value& Null() {
    static const rapidjson::Value null;
    return null;
  }
  const rapidjson::Value* v_;
  std::string path_;
  std::string* error_;
};

std::vector<FlavorQuota> ReadQuota(const Json& j) {
  std::vector<FlavorQuota> out;
  j.Each("quota", [&](const Json& fq) {
    FlavorQuota q;
    q.flavor = fq.Str("flavor");
    fq.Each("resources", [&](const Json& r) {
      q.resources.push_back(ResourceQuota{r.Str("resource"), r.Int("nominal"),
                                          r.OptInt("borrowing_limit").value_or(kUnlimited),
                                          r.OptInt("lending_limit").value_or(kUnlimited)});
    });
    out.push_back(std::move(q));
  });
  return out;
}

ClusterQueue ReadClusterQueue(const Json& j) {
  ClusterQueue cq;
  cq.name = j.Str("name");
  cq.cohort = j.Str("cohort");
  cq.quota = ReadQuota(j);
  cq.weight = j.OptDouble("weight");
  if (j.Has("preemption")) {
    const Json p = j.At("preemption");
    cq.has_preemption = true;
    cq.within = p.Str("withinClusterQueue");
    cq.reclaim = p.Str("reclaimWithinCohort");
    if (p.Has("borrowWithinCohort")) {
      const Json b = p.At("borrowWithinCohort");
      cq.borrow_within_cohort = b.Str("policy");
      cq.max_priority_threshold = b.OptInt("maxPriorityThreshold");
    }
  }
  return cq;
}

Admitted ReadAdmitted(const Json& j) {
  Admitted w;
  w.name = j.Str("name");
  w.uid = j.Str("uid");
  w.cq = j.Str("cq");
  w.priority = static_cast<int32_t>(j.OptInt("priority").value_or(0));
  w.creation_ms = j.OptInt("creation_ms");
  w.reserved_ms = j.Int("reserved_ms");
  j.Members("usage", [&](const std::string& flavor, const Json&) {
    w.usage[flavor] = j.At("usage").IntMap(flavor.c_str());
  });
  return w;
}

Incoming ReadIncoming(const Json& j) {
  Incoming in;
  in.name = j.Str("name");
  in.uid = j.Str("uid");
  in.priority = static_cast<int32_t>(j.OptInt("priority").value_or(0));
  in.creation_ms = j.OptInt("creation_ms");
  j.Each("pod_sets", [&](const Json& p) {
    in.pod_sets.push_back(PodSet{p.Str("name"), p.Int("count"), p.IntMap("requests")});
  });
  return in;
}

PodSetAssignment ReadAssignment(const Json& j) {
  PodSetAssignment a;
  a.pod_set = j.Str("pod_set");
  a.count = j.Int("count");
  j.Members("flavors", [&](const std::string& resource, const Json& f) {
    if (!f.value().IsArray() || f.value().Size() != 2 || !f.value()[0].IsString() ||
        !f.value()[1].IsString()) {
      f.Fail("not [flavor, mode]");
      return;
    }
    a.flavors[resource] = {f.value()[0].GetString(), f.value()[1].GetString()};
  });
  return a;
}

// One case of `table_json`; its first data error goes to c.error.
KueueCase ReadCase(const Json& table_json, const Json& case_json) {
  KueueCase c;
  std::string error;
  const Json table = table_json.ReportingTo(&error);
  const Json j = case_json.ReportingTo(&error);
  c.table = table.Str("name");
  c.fair_sharing = table.Bool("fair_sharing");
  c.name = j.Str("name");
  c.source = j.Str("source");
  c.resource_flavors =
      j.Has("resource_flavors") ? j.Strings("resource_flavors") : table.Strings("resource_flavors");
  if (j.Has("cluster_queue_set")) {
    const std::string set = j.Str("cluster_queue_set");
    table.At("cluster_queue_sets").Each(set.c_str(), [&](const Json& q) {
      c.cluster_queues.push_back(ReadClusterQueue(q));
    });
  } else {
    j.Each("cluster_queues",
           [&](const Json& q) { c.cluster_queues.push_back(ReadClusterQueue(q)); });
  }
  j.Each("cohorts", [&](const Json& co) {
    c.cohorts.push_back(
        CohortObject{co.Str("name"), co.Str("parent"), ReadQuota(co), co.OptDouble("weight")});
  });
  j.Each("admitted", [&](const Json& w) { c.admitted.push_back(ReadAdmitted(w)); });
  c.incoming = ReadIncoming(j.At("incoming"));
  c.target_cq = j.Str("target_cq");
  j.Each("assignment", [&](const Json& a) { c.assignment.push_back(ReadAssignment(a)); });
  if (j.Has("strategies")) c.strategies = j.Strings("strategies");
  j.Members("want", [&](const std::string& victim, const Json& reason) {
    if (reason.value().IsString()) {
      c.want[victim] = reason.value().GetString();
    } else {
      reason.Fail("not a string");
    }
  });
  c.error = error;
  return c;
}

// A gtest parameter name: Kueue's name with every run of other characters than letters and
// digits turned into one '_'.
std::string TestName(const std::string& name) {
  std::string out;
  for (char ch : name) {
    const bool keep =
        (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
    if (keep) {
      out += ch;
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "unnamed" : out;
}

std::string DataPath() {
  if (const char* srcdir = std::getenv("TEST_SRCDIR")) {
    const char* workspace = std::getenv("TEST_WORKSPACE");
    return std::string(srcdir) + "/" + (workspace != nullptr ? workspace : "taskgov") + "/" +
           kDataFile;
  }
  return kDataFile;
}

// One case standing for a table that could not be read: it fails with `error`.
KueueCase Unreadable(const std::string& table, const std::string& error) {
  KueueCase c;
  c.table = table;
  c.name = "data file";
  c.test_name = "DataFile";
  c.error = error;
  return c;
}

// The cases of every table in the data file, read once; table name → cases in file order.
const std::map<std::string, std::vector<KueueCase>>& Tables() {
  static const std::map<std::string, std::vector<KueueCase>> tables = [] {
    std::map<std::string, std::vector<KueueCase>> out;
    const std::string path = DataPath();
    std::ifstream in(path, std::ios::binary);
    if (!in.is_open()) {
      out["*"].push_back(Unreadable("*", "cannot open " + path));
      return out;
    }
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    rapidjson::Document doc;
    doc.Parse(text.c_str(), text.size());
    if (doc.HasParseError()) {
      out["*"].push_back(Unreadable("*", path + ": offset " + std::to_string(doc.GetErrorOffset()) +
                                             ": " +
                                             rapidjson::GetParseError_En(doc.GetParseError())));
      return out;
    }
    std::string error;
    Json root(doc, "$", &error);
    root.Each("tables", [&](const Json& table) {
      const std::string name = table.Str("name");
      std::set<std::string> names;
      table.Each("cases", [&](const Json& j) {
        KueueCase c = ReadCase(table, j);
        c.test_name = TestName(c.name);
        for (int n = 2; !names.insert(c.test_name).second; ++n) {
          c.test_name = TestName(c.name) + "_" + std::to_string(n);
        }
        out[name].push_back(std::move(c));
      });
    });
    if (!error.empty()) out["*"].push_back(Unreadable("*", error));
    return out;
  }();
  return tables;
}

std::vector<KueueCase> Table(const std::string& name) {
  const auto& tables = Tables();
  std::vector<KueueCase> out;
  if (auto it = tables.find("*"); it != tables.end()) out = it->second;
  if (auto it = tables.find(name); it != tables.end()) {
    out.insert(out.end(), it->second.begin(), it->second.end());
  } else {
    out.push_back(Unreadable(name, "table " + name + " is not in " + DataPath()));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Mapping a case onto taskgov.

const ClusterQueue* FindQueue(const KueueCase& c, const std::string& name) {
  for (const ClusterQueue& cq : c.cluster_queues) {
    if (cq.name == name) return &cq;
  }
  return nullptr;
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// Kueue's Assignment.TotalRequestsFor: for pod set i, its per-pod requests times the count the
// assignment gives it (nothing when the spec's count is 0), zero quantities dropped, each
// resource on the flavor assigned to it. flavor → resource → amount; "" in *error when every
// requested resource has a flavor.
std::map<std::string, Amounts> IncomingUsage(const KueueCase& c, std::string* error) {
  std::map<std::string, Amounts> usage;
  if (c.assignment.size() != c.incoming.pod_sets.size()) {
    *error = "the assignment has " + std::to_string(c.assignment.size()) + " pod sets, the " +
             "workload " + std::to_string(c.incoming.pod_sets.size());
    return usage;
  }
  for (size_t i = 0; i < c.assignment.size(); ++i) {
    const PodSet& ps = c.incoming.pod_sets[i];
    const PodSetAssignment& a = c.assignment[i];
    for (const auto& [resource, per_pod] : ps.requests) {
      const int64_t total = ps.count == 0 ? 0 : per_pod * a.count;
      if (total == 0) continue;
      auto f = a.flavors.find(resource);
      if (f == a.flavors.end()) {
        *error = "pod set " + ps.name + " requests " + resource + " without a flavor for it";
        return usage;
      }
      usage[f->second.first][resource] += total;
    }
  }
  return usage;
}

// The flavors the assignment puts the incoming workload's requested resources on.
std::set<std::string> AssignedFlavors(const KueueCase& c) {
  std::set<std::string> out;
  for (size_t i = 0; i < c.assignment.size() && i < c.incoming.pod_sets.size(); ++i) {
    for (const auto& [resource, flavor_mode] : c.assignment[i].flavors) {
      auto r = c.incoming.pod_sets[i].requests.find(resource);
      if (r != c.incoming.pod_sets[i].requests.end() && r->second != 0) {
        out.insert(flavor_mode.first);
      }
    }
  }
  return out;
}

// The flavor of the incoming workload's node: the one flavor its assignment needs preemption on
// (mode Preempt), or its only flavor; "" when there is no such one. Its other flavors (mode Fit,
// in other resource groups) hold the rest of its request as companions of that one (ledger.h).
std::string NodeFlavor(const KueueCase& c) {
  std::set<std::string> preempt;
  for (size_t i = 0; i < c.assignment.size() && i < c.incoming.pod_sets.size(); ++i) {
    for (const auto& [resource, flavor_mode] : c.assignment[i].flavors) {
      auto r = c.incoming.pod_sets[i].requests.find(resource);
      if (r == c.incoming.pod_sets[i].requests.end() || r->second == 0) continue;
      if (flavor_mode.second == "Preempt") preempt.insert(flavor_mode.first);
    }
  }
  const std::set<std::string> all = AssignedFlavors(c);
  if (preempt.size() == 1) return *preempt.begin();
  return preempt.empty() && all.size() == 1 ? *all.begin() : "";
}

// For a workload of several pod sets: each pod set's flavor, where its assignment needs
// preemption (or its only flavor); "" for a pod set with no such one.
std::vector<std::string> PodSetFlavors(const KueueCase& c) {
  std::vector<std::string> out;
  for (size_t i = 0; i < c.assignment.size() && i < c.incoming.pod_sets.size(); ++i) {
    std::set<std::string> preempt, all;
    for (const auto& [resource, flavor_mode] : c.assignment[i].flavors) {
      auto r = c.incoming.pod_sets[i].requests.find(resource);
      if (r == c.incoming.pod_sets[i].requests.end() || r->second == 0) continue;
      all.insert(flavor_mode.first);
      if (flavor_mode.second == "Preempt") preempt.insert(flavor_mode.first);
    }
    out.push_back(preempt.size() == 1                  ? *preempt.begin()
                  : preempt.empty() && all.size() == 1 ? *all.begin()
                                                       : "");
  }
  return out;
}

bool EveryPodSetHasAFlavor(const KueueCase& c) {
  const std::vector<std::string> flavors = PodSetFlavors(c);
  return !flavors.empty() && std::none_of(flavors.begin(), flavors.end(),
                                          [](const std::string& f) { return f.empty(); });
}

// Workloads that are not one pod request (or gang of equal pods) on one node's flavor, nor a gang
// whose pod sets each run on one flavor.
void WorkloadGaps(const KueueCase& c, std::vector<std::string>* out) {
  const bool gang = c.incoming.pod_sets.size() > 1 && EveryPodSetHasAFlavor(c);
  if (c.incoming.pod_sets.size() > 1 && !gang) {
    std::vector<std::string> names;
    for (const PodSet& ps : c.incoming.pod_sets) {
      names.push_back(ps.name + " " + std::to_string(ps.count) + " pods");
    }
    out->push_back("a workload of several pod sets (" + Join(names, ", ") +
                   "): taskgov's preemptor is one pod's request, or a gang of equal pods");
  }
  if (!gang && AssignedFlavors(c).size() > 1 && NodeFlavor(c).empty()) {
    std::vector<std::string> where;
    for (const PodSetAssignment& a : c.assignment) {
      for (const auto& [resource, fm] : a.flavors) {
        where.push_back(a.pod_set + "/" + resource + " → " + fm.first + " (" + fm.second + ")");
      }
    }
    out->push_back("a workload whose resources need preemption on different flavors (" +
                   Join(where, ", ") + "): taskgov places a pod on one node's flavor");
  }
  for (const Admitted& w : c.admitted) {
    if (w.usage.size() > 1) {
      out->push_back("an admitted workload charged on several flavors (" + w.name + ")");
    }
  }
}

// What the case needs that taskgov's policy model has no way to say; empty when it is
// expressible.
std::vector<std::string> MissingFeatures(const KueueCase& c) {
  std::vector<std::string> out;
  WorkloadGaps(c, &out);
  return out;
}

WithinTeamPreemption WithinTeam(const ClusterQueue& cq, std::string* error) {
  if (cq.within.empty() || cq.within == "Never") return WithinTeamPreemption::kNever;
  if (cq.within == "LowerPriority") return WithinTeamPreemption::kLowerPriority;
  if (cq.within == "LowerOrNewerEqualPriority") {
    return WithinTeamPreemption::kLowerOrNewerEqualPriority;
  }
  *error = cq.name + ": unknown withinClusterQueue " + cq.within;
  return WithinTeamPreemption::kNever;
}

ReclaimPolicy Reclaim(const ClusterQueue& cq, std::string* error) {
  if (cq.reclaim.empty() || cq.reclaim == "Never") return ReclaimPolicy::kNever;
  if (cq.reclaim == "LowerPriority") return ReclaimPolicy::kLowerPriority;
  if (cq.reclaim == "Any") return ReclaimPolicy::kAny;
  *error = cq.name + ": unknown reclaimWithinCohort " + cq.reclaim;
  return ReclaimPolicy::kNever;
}

// Kueue's ResourceFlavors here carry no node labels. taskgov's are node classes: each is
// labelled by its name, except the incoming workload's companion flavors (assigned to it, and
// none of its nodes' flavors), which (as Kueue's unlabelled flavors do) match every node.
PolicyPtr BuildPolicy(const KueueCase& c, const std::vector<std::string>& node_flavors,
                      std::string* error) {
  auto policy = std::make_shared<Policy>();
  policy->idle_compute = c.fair_sharing ? IdleComputeAllocation::kFairShare
                                        : IdleComputeAllocation::kFirstComeFirstServe;
  if (c.strategies && !c.strategies->empty()) {  // empty: Kueue's default pair
    policy->preemption.fair_sharing_strategies.clear();
    for (const std::string& name : *c.strategies) {
      if (name == "LessThanOrEqualToFinalShare") {
        policy->preemption.fair_sharing_strategies.push_back(
            FairShareStrategy::kLessThanOrEqualToFinalShare);
      } else if (name == "LessThanInitialShare") {
        policy->preemption.fair_sharing_strategies.push_back(
            FairShareStrategy::kLessThanInitialShare);
      } else {
        *error = "unknown fair-sharing strategy " + name;
      }
    }
  }
  std::set<std::string> flavors;
  const std::set<std::string> assigned = AssignedFlavors(c);
  auto add_flavor = [&](const std::string& name) {
    if (!flavors.insert(name).second) return;
    if (assigned.count(name) &&
        std::find(node_flavors.begin(), node_flavors.end(), name) == node_flavors.end()) {
      policy->flavors.push_back(Flavor{name, {}, /*matches_all_nodes=*/true});
      return;
    }
    policy->flavors.push_back(Flavor{name, {{policy->instance_type_label, name}}, false});
  };
  for (const std::string& f : c.resource_flavors) add_flavor(f);
  for (const ClusterQueue& cq : c.cluster_queues) {
    Team team;
    team.name = cq.name;
    team.cluster_queue = cq.name;
    team.cohort = cq.cohort;
    team.fair_share_weight = cq.weight.value_or(1.0);
    team.flavors = cq.quota;
    // A nil Preemption is Never / Never, as an unset field is.
    team.within_team = cq.has_preemption ? WithinTeam(cq, error) : WithinTeamPreemption::kNever;
    team.reclaim = cq.has_preemption ? Reclaim(cq, error) : ReclaimPolicy::kNever;
    if (cq.borrow_within_cohort == "LowerPriority") {
      team.borrow_within_cohort.lower_priority = true;
      if (cq.max_priority_threshold) {
        team.borrow_within_cohort.max_priority_threshold =
            static_cast<int32_t>(*cq.max_priority_threshold);
      }
    } else if (!cq.borrow_within_cohort.empty() && cq.borrow_within_cohort != "Never") {
      *error = cq.name + ": unknown borrowWithinCohort policy " + cq.borrow_within_cohort;
    }
    for (const FlavorQuota& fq : cq.quota) add_flavor(fq.flavor);
    policy->teams.push_back(std::move(team));
  }
  for (const CohortObject& co : c.cohorts) {  // a Cohort's own quota joins its pool
    for (const FlavorQuota& fq : co.quota) add_flavor(fq.flavor);
    policy->cohorts.push_back(Cohort{co.name, co.parent, co.quota, co.weight.value_or(1.0)});
  }
  policy->Finalize();
  return policy;
}

ResourceList ToList(const Amounts& amounts) {
  ResourceList out;
  for (const auto& [resource, amount] : amounts) {
    if (amount != 0) out.Set(resource, amount);
  }
  return out;
}

IdAmounts ToIds(const Amounts& amounts) {
  IdAmounts out;
  for (const auto& [resource, amount] : amounts) {
    out.emplace_back(ResourceNames().Intern(resource), amount);
  }
  return out;
}

std::string NodeOf(const std::string& flavor) { return "node-" + flavor; }

// What Select reads on one flavor: the incoming workload's preemptor there (for a gang of pod sets
// on different flavors, the first member of its pod sets on that flavor).
struct FlavorWorld {
  std::string flavor;
  QuotaSim quota;
  FlavorNodes nodes;
  Preemptor preemptor;
};

// Everything Select reads, for one case.
struct World {
  PolicyPtr policy;
  std::unique_ptr<Ledger> ledger;
  CandidateSet candidates;
  std::vector<FlavorWorld> parts;
  std::string error;
};

// Charges every admitted workload to its ClusterQueue's team, creating cells (with zero limits)
// for usage the policy does not name.
void ChargeAdmitted(const KueueCase& c, World* w) {
  for (const Admitted& a : c.admitted) {
    if (FindQueue(c, a.cq) == nullptr) {
      w->error = a.name + ": unknown ClusterQueue " + a.cq;
      return;
    }
    for (const auto& [flavor, amounts] : a.usage) {
      const NameId team = TeamNames().Intern(a.cq);
      const NameId flavor_id = FlavorNames().Intern(flavor);
      Charge charge;
      std::vector<CellKey> missing;
      bool charged = false;
      {
        Ledger::Session s(*w->ledger);
        charged = s.ForceCharge(team, flavor_id, ToList(amounts), &charge, &missing);
      }
      if (!charged) {
        w->ledger->EnsureCells(missing);
        Ledger::Session s(*w->ledger);
        missing.clear();
        charged = s.ForceCharge(team, flavor_id, ToList(amounts), &charge, &missing);
      }
      if (!charged) {
        w->error = a.name + ": the ledger refused its usage on " + flavor;
        return;
      }
    }
  }
}

// One candidate per admitted workload, on its flavor's node; the node of each decision's flavor.
void AddNodesAndCandidates(const KueueCase& c, World* w) {
  std::set<std::string> resources;
  for (const Admitted& a : c.admitted) {
    for (const auto& [flavor, amounts] : a.usage) {
      for (const auto& [r, amount] : amounts) resources.insert(r);
    }
  }
  for (const PodSet& ps : c.incoming.pod_sets) {
    for (const auto& [r, amount] : ps.requests) resources.insert(r);
  }
  for (FlavorWorld& part : w->parts) {
    part.nodes.flavor = FlavorNames().Intern(part.flavor);
    NodeState node;
    node.name = NodeOf(part.flavor);
    for (const std::string& r : resources) {
      node.allocatable.emplace_back(ResourceNames().Intern(r), kNodeRoom);
    }
    part.nodes.Add(node);
  }
  std::vector<Candidate> candidates;
  for (const Admitted& a : c.admitted) {
    for (const auto& [flavor, amounts] : a.usage) {
      Candidate cand;
      cand.uid = a.uid;
      cand.name = a.name;
      cand.team = TeamNames().Intern(a.cq);
      cand.flavor = FlavorNames().Intern(flavor);
      cand.priority = a.priority;
      cand.created_ms = a.creation_ms ? kNow + *a.creation_ms : kZeroTime;
      cand.admitted_ms = kNow + a.reserved_ms;
      cand.started_ms = cand.admitted_ms;
      cand.node = NodeOf(flavor);
      cand.occupies = ToIds(amounts);
      cand.charged = cand.occupies;
      for (FlavorWorld& part : w->parts) {
        if (flavor == part.flavor) part.nodes.Take(cand.node, cand.occupies);
      }
      candidates.push_back(std::move(cand));
    }
  }
  w->candidates = CandidateSet(std::move(candidates));
}

Preemptor IncomingPreemptor(const KueueCase& c, const PodSet& pod_set) {
  Preemptor p;
  p.uid = c.incoming.uid;
  p.key = "/" + c.incoming.name;
  p.team = TeamNames().Intern(c.target_cq);
  p.priority = c.incoming.priority;
  p.created_ms = c.incoming.creation_ms ? kNow + *c.incoming.creation_ms : kZeroTime;
  p.request = ToList(pod_set.requests);
  return p;
}

// One pod set: its need on the node's flavor and its companions, one charge.
void BuildPreemptor(const KueueCase& c, const std::map<std::string, Amounts>& usage,
                    FlavorWorld* part) {
  Preemptor& p = part->preemptor;
  p = IncomingPreemptor(c, c.incoming.pod_sets.front());
  Amounts all;
  for (const auto& [flavor, amounts] : usage) {
    for (const auto& [resource, amount] : amounts) all[resource] += amount;
  }
  const ResourceList need = ToList(all);
  if (!(need == p.request)) p.need = need;
}

// Several pod sets, each on its flavor: the workload is a gang of their pods, each pinned to its
// pod set's flavor, pending in a PendingQueues; on each flavor the preemptor is the first member
// there, with its need as the controller's PreemptorOf takes it (SplitGangNeed: the members
// pinned to that flavor — the others' parts are reserved with it, and preempt for themselves).
void BuildGangPreemptors(const KueueCase& c, World* w) {
  static common::FakeClock clock;
  state::PendingQueues queues(&clock, state::PendingQueues::Options{});
  const std::vector<std::string> flavors = PodSetFlavors(c);
  int32_t size = 0;
  for (const PodSet& ps : c.incoming.pod_sets) size += static_cast<int32_t>(ps.count);
  std::vector<state::PendingPod> firsts;
  for (size_t i = 0; i < c.incoming.pod_sets.size(); ++i) {
    const PodSet& ps = c.incoming.pod_sets[i];
    for (int64_t k = 0; k < ps.count; ++k) {
      state::PendingPod pod;
      pod.uid = c.incoming.name + "-" + ps.name + "-" + std::to_string(k);
      pod.key = "/" + pod.uid;
      pod.team = TeamNames().Intern(c.target_cq);
      pod.priority = c.incoming.priority;
      pod.created_ms = kZeroTime;
      pod.request = ToList(ps.requests);
      pod.workload = "gang/" + c.incoming.name;
      pod.workload_size = size;
      pod.node_selector = {{w->policy->instance_type_label, flavors[i]}};
      queues.Upsert(pod);
      if (k == 0) firsts.push_back(pod);
    }
  }
  for (size_t i = 0; i < firsts.size(); ++i) {
    const state::PendingPod& first = firsts[i];
    auto part = std::find_if(w->parts.begin(), w->parts.end(),
                             [&](const FlavorWorld& p) { return p.flavor == flavors[i]; });
    if (part == w->parts.end()) continue;  // an earlier pod set on this flavor stands for it
    GangNeedSplit split =
        SplitGangNeed(queues, *w->policy, *w->policy->FindTeam(c.target_cq), first.team,
                      first.workload, first.uid, first.request, first.node_selector, size);
    Preemptor& p = part->preemptor;
    if (!p.key.empty()) continue;
    p = IncomingPreemptor(c, c.incoming.pod_sets[i]);
    p.workload = first.workload;
    p.workload_size = size;
    p.need = std::move(split.here);
    p.elsewhere = std::move(split.elsewhere);
  }
}

World BuildWorld(const KueueCase& c) {
  World w;
  if (FindQueue(c, c.target_cq) == nullptr) {
    w.error = "unknown target ClusterQueue " + c.target_cq;
    return w;
  }
  const std::map<std::string, Amounts> usage = IncomingUsage(c, &w.error);
  if (!w.error.empty()) return w;
  const bool gang = c.incoming.pod_sets.size() > 1;
  std::vector<std::string> flavors =
      gang ? PodSetFlavors(c) : std::vector<std::string>{NodeFlavor(c)};
  if (flavors.empty() ||
      std::any_of(flavors.begin(), flavors.end(), [](const std::string& f) { return f.empty(); })) {
    w.error =
        "the incoming workload is not one pod set on one node's flavor, nor pod sets each on "
        "one flavor";
    return w;
  }
  for (const std::string& f : flavors) {
    if (std::none_of(w.parts.begin(), w.parts.end(),
                     [&](const FlavorWorld& p) { return p.flavor == f; })) {
      w.parts.emplace_back().flavor = f;
    }
  }
  w.policy = BuildPolicy(c, flavors, &w.error);
  if (!w.error.empty()) return w;
  w.ledger = std::make_unique<Ledger>(w.policy);
  ChargeAdmitted(c, &w);
  if (!w.error.empty()) return w;
  const Ledger::Usage ledger_usage = w.ledger->ReadUsage();
  for (FlavorWorld& part : w.parts) {
    part.quota = QuotaSim::FromUsage(*w.policy, FlavorNames().Intern(part.flavor), ledger_usage);
  }
  AddNodesAndCandidates(c, &w);
  if (gang) {
    BuildGangPreemptors(c, &w);
  } else {
    BuildPreemptor(c, usage, &w.parts.front());
  }
  return w;
}

// Kueue's reason as taskgov names it.
std::string TaskgovReason(const std::string& kueue) {
  if (kueue == "InClusterQueue") return std::string(ReasonName(PreemptionReason::kInTeamPriority));
  if (kueue == "InCohortReclamation") return std::string(ReasonName(PreemptionReason::kReclaim));
  if (kueue == "InCohortFairSharing") return std::string(ReasonName(PreemptionReason::kFairShare));
  if (kueue == "InCohortReclaimWhileBorrowing") {
    return std::string(ReasonName(PreemptionReason::kReclaimWhileBorrowing));
  }
  return kueue + "(no taskgov counterpart)";
}

std::string Show(const std::vector<std::string>& victims) {
  return "{" + Join(victims, ", ") + "}";
}

std::string OutcomeName(Selection::Outcome outcome) {
  switch (outcome) {
    case Selection::Outcome::kFits:
      return "fits now";
    case Selection::Outcome::kVictims:
      return "victims";
    case Selection::Outcome::kNoVictims:
      return "no victims";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------

class KueuePreemptionTest : public ::testing::TestWithParam<KueueCase> {};

TEST_P(KueuePreemptionTest, VictimsAndReasonsAreKueues) {
  const KueueCase& c = GetParam();
  ASSERT_TRUE(c.error.empty()) << c.error;
  RecordProperty("kueue_source", c.source);

  std::vector<std::string> kueue;
  std::vector<std::string> expected;
  for (const auto& [victim, reason] : c.want) {
    kueue.push_back(victim + ":" + reason);
    expected.push_back(victim + ":" + TaskgovReason(reason));
  }
  std::sort(expected.begin(), expected.end());
  RecordProperty("kueue", Show(kueue));

  const std::vector<std::string> missing = MissingFeatures(c);
  if (!missing.empty()) {
    RecordProperty("taskgov", "not expressible");
    FAIL() << c.source << " \"" << c.name << "\": not expressible: " << Join(missing, "; ")
           << "\n  Kueue expects " << Show(kueue);
  }

  World w = BuildWorld(c);
  ASSERT_TRUE(w.error.empty()) << c.source << ": " << w.error;
  // Each flavor's preemptor decides on its own (for a gang of pod sets on different flavors, the
  // controller's rounds for its members there); the victims are all of theirs.
  std::vector<std::string> actual;
  std::string outcomes, explanations;
  for (const FlavorWorld& part : w.parts) {
    SelectionInput in;
    in.policy = w.policy.get();
    in.preemptor = &part.preemptor;
    in.quota = &part.quota;
    in.nodes = &part.nodes;
    in.candidates = &w.candidates;
    in.now_ms = kNow;
    VictimSelector selector;
    const Selection s = selector.Select(in);
    for (const Selection::Victim& v : s.victims) {
      actual.push_back(w.candidates.at(v.candidate).name + ":" + std::string(ReasonName(v.reason)));
    }
    outcomes += (outcomes.empty() ? "" : ", ") + part.flavor + ": " + OutcomeName(s.outcome);
    if (!s.explanation.empty()) explanations += "\n  explanation: " + s.explanation;
  }
  std::sort(actual.begin(), actual.end());
  RecordProperty("taskgov", outcomes + " " + Show(actual));
  EXPECT_EQ(actual, expected) << c.source << " \"" << c.name << "\"\n  Kueue:   " << Show(kueue)
                              << "\n  expects " << Show(expected) << "\n  taskgov: " << outcomes
                              << " " << Show(actual) << explanations;
}

std::string CaseName(const ::testing::TestParamInfo<KueueCase>& info) {
  return info.param.test_name;
}

INSTANTIATE_TEST_SUITE_P(TestPreemption, KueuePreemptionTest,
                         ::testing::ValuesIn(Table("TestPreemption")), CaseName);
INSTANTIATE_TEST_SUITE_P(TestFairPreemptions, KueuePreemptionTest,
                         ::testing::ValuesIn(Table("TestFairPreemptions")), CaseName);

}  // namespace
}  // namespace taskgov::scheduler::decisions
