#include "scheduler/sim/trace.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <random>

#include "scheduler/model/quantity.h"

namespace taskgov::scheduler::sim {
namespace {

using model::ResourceAmount;
using model::ResourceList;
using Value = rapidjson::Value;

// ---- parsing ----

class Reader {
 public:
  explicit Reader(std::string* error) : error_(error) {}

  bool Fail(const std::string& path, const std::string& why) {
    if (error_->empty()) *error_ = path + ": " + why;
    return false;
  }
  const Value* Member(const Value& obj, const char* key) {
    auto it = obj.FindMember(key);
    return it == obj.MemberEnd() ? nullptr : &it->value;
  }
  bool String(const Value& obj, const char* key, const std::string& path, std::string* out,
              bool required) {
    const Value* v = Member(obj, key);
    if (v == nullptr) return !required || Fail(path + "." + key, "missing");
    if (!v->IsString()) return Fail(path + "." + key, "not a string");
    *out = v->GetString();
    return true;
  }
  // Seconds (a non-negative number) into milliseconds.
  bool Seconds(const Value& obj, const char* key, const std::string& path, int64_t* out_ms,
               bool required) {
    const Value* v = Member(obj, key);
    if (v == nullptr) return !required || Fail(path + "." + key, "missing");
    if (!v->IsNumber() || v->GetDouble() < 0 || v->GetDouble() > 1e9) {
      return Fail(path + "." + key, "not a number of seconds between 0 and 1e9");
    }
    *out_ms = std::llround(v->GetDouble() * 1000.0);
    return true;
  }
  bool Bool(const Value& obj, const char* key, const std::string& path, bool* out) {
    const Value* v = Member(obj, key);
    if (v == nullptr) return true;
    if (!v->IsBool()) return Fail(path + "." + key, "not true or false");
    *out = v->GetBool();
    return true;
  }
  bool Int(const Value& obj, const char* key, const std::string& path, int* out, int lo, int hi) {
    const Value* v = Member(obj, key);
    if (v == nullptr) return true;
    if (!v->IsInt() || v->GetInt() < lo || v->GetInt() > hi) {
      return Fail(path + "." + key,
                  "not an integer between " + std::to_string(lo) + " and " + std::to_string(hi));
    }
    *out = v->GetInt();
    return true;
  }
  bool Labels(const Value& obj, const char* key, const std::string& path,
              std::map<std::string, std::string>* out) {
    const Value* v = Member(obj, key);
    if (v == nullptr) return true;
    if (!v->IsObject()) return Fail(path + "." + key, "not an object");
    for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
      if (!it->value.IsString()) {
        return Fail(path + "." + key + "." + it->name.GetString(), "not a string");
      }
      (*out)[it->name.GetString()] = it->value.GetString();
    }
    return true;
  }
  bool Resources(const Value& obj, const char* key, const std::string& path, ResourceList* out) {
    const Value* v = Member(obj, key);
    if (v == nullptr || !v->IsObject()) return Fail(path + "." + key, "missing or not an object");
    for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
      const std::string name = it->name.GetString();
      const std::string where = path + "." + key + "." + name;
      std::string text;
      if (it->value.IsString()) {
        text = it->value.GetString();
      } else if (it->value.IsInt64()) {
        text = std::to_string(it->value.GetInt64());
      } else {
        return Fail(where, "not a quantity");
      }
      common::Result<int64_t> amount = model::ParseResourceQuantity(name, text);
      if (!amount.ok()) return Fail(where, amount.error().message);
      out->Set(name, *amount);
    }
    return true;
  }

 private:
  std::string* error_;
};

bool ParseNodes(Reader& r, const Value& doc, Trace* trace) {
  const Value* nodes = r.Member(doc, "nodes");
  if (nodes == nullptr || !nodes->IsArray()) return r.Fail("nodes", "missing or not a list");
  for (rapidjson::SizeType i = 0; i < nodes->Size(); ++i) {
    const std::string path = "nodes[" + std::to_string(i) + "]";
    const Value& n = (*nodes)[i];
    if (!n.IsObject()) return r.Fail(path, "not an object");
    NodeGroup g;
    if (!r.String(n, "instanceType", path, &g.instance_type, true) ||
        !r.Int(n, "count", path, &g.count, 0, 100'000) ||
        !r.String(n, "namePrefix", path, &g.name_prefix, false) ||
        !r.Resources(n, "allocatable", path, &g.allocatable) ||
        !r.Labels(n, "labels", path, &g.labels)) {
      return false;
    }
    if (g.name_prefix.empty()) g.name_prefix = g.instance_type;
    trace->nodes.push_back(std::move(g));
  }
  return true;
}

bool ParseKind(Reader& r, const std::string& text, const std::string& path, JobKind* kind) {
  for (JobKind k : {JobKind::kPod, JobKind::kPodGroup, JobKind::kJob}) {
    if (text == JobKindName(k)) {
      *kind = k;
      return true;
    }
  }
  return r.Fail(path, "unknown kind '" + text + "' (Pod, PodGroup or Job)");
}

bool ParsePodSets(Reader& r, const Value& j, const std::string& path, TraceJob* job) {
  const Value* sets = r.Member(j, "podSets");
  if (sets == nullptr || !sets->IsArray() || sets->Empty()) {
    return r.Fail(path + ".podSets", "missing, empty or not a list");
  }
  for (rapidjson::SizeType i = 0; i < sets->Size(); ++i) {
    const std::string where = path + ".podSets[" + std::to_string(i) + "]";
    const Value& s = (*sets)[i];
    if (!s.IsObject()) return r.Fail(where, "not an object");
    PodSet set;
    if (!r.String(s, "name", where, &set.name, false) ||
        !r.Int(s, "count", where, &set.count, 1, 10'000) ||
        !r.String(s, "instanceType", where, &set.instance_type, false) ||
        !r.Resources(s, "requests", where, &set.requests)) {
      return false;
    }
    job->pod_sets.push_back(std::move(set));
  }
  if (job->kind == JobKind::kPod && job->pods() != 1) {
    return r.Fail(path + ".podSets", "a Pod has one pod set of count 1");
  }
  if (job->kind == JobKind::kJob && job->pod_sets.size() != 1) {
    return r.Fail(path + ".podSets", "a Job has one pod set");
  }
  return true;
}

bool ParseJob(Reader& r, const Value& j, const std::string& path, TraceJob* job) {
  if (!j.IsObject()) return r.Fail(path, "not an object");
  std::string kind = "Pod";
  int64_t save_ms = -1;
  if (!r.String(j, "name", path, &job->name, true) ||
      !r.String(j, "namespace", path, &job->ns, true) ||
      !r.Seconds(j, "arrivalSeconds", path, &job->arrival_ms, true) ||
      !r.String(j, "priorityClass", path, &job->priority_class, false) ||
      !r.String(j, "kind", path, &kind, false) || !ParseKind(r, kind, path + ".kind", &job->kind) ||
      !r.Seconds(j, "workSeconds", path, &job->work_ms, true) ||
      !r.Seconds(j, "checkpointEverySeconds", path, &job->checkpoint_every_ms, false) ||
      !r.Seconds(j, "saveOnTermSeconds", path, &save_ms, false) ||
      !r.Bool(j, "announcesCheckpoints", path, &job->announces_checkpoints) ||
      !r.Seconds(j, "terminationGracePeriodSeconds", path, &job->termination_grace_ms, false) ||
      !r.Labels(j, "annotations", path, &job->annotations) || !ParsePodSets(r, j, path, job)) {
    return false;
  }
  if (save_ms >= 0) job->save_on_term_ms = save_ms;
  if (job->work_ms <= 0) return r.Fail(path + ".workSeconds", "must be positive");
  return true;
}

// ---- writing ----

using Writer = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void Seconds(Writer& w, const char* key, int64_t ms) {
  w.Key(key);
  if (ms % 1000 == 0) {
    w.Int64(ms / 1000);
  } else {
    w.Double(static_cast<double>(ms) / 1000.0);
  }
}

void Resources(Writer& w, const char* key, const ResourceList& list) {
  w.Key(key);
  w.StartObject();
  for (const ResourceAmount& r : list) {
    w.Key(r.name.c_str());
    w.String(model::FormatQuantity(r.name, r.amount).c_str());
  }
  w.EndObject();
}

void StringMap(Writer& w, const char* key, const std::map<std::string, std::string>& m) {
  if (m.empty()) return;
  w.Key(key);
  w.StartObject();
  for (const auto& [k, v] : m) {
    w.Key(k.c_str());
    w.String(v.c_str());
  }
  w.EndObject();
}

void WriteJob(Writer& w, const TraceJob& job) {
  w.StartObject();
  w.Key("name");
  w.String(job.name.c_str());
  w.Key("namespace");
  w.String(job.ns.c_str());
  Seconds(w, "arrivalSeconds", job.arrival_ms);
  if (!job.priority_class.empty()) {
    w.Key("priorityClass");
    w.String(job.priority_class.c_str());
  }
  w.Key("kind");
  w.String(std::string(JobKindName(job.kind)).c_str());
  w.Key("podSets");
  w.StartArray();
  for (const PodSet& s : job.pod_sets) {
    w.StartObject();
    w.Key("name");
    w.String(s.name.c_str());
    w.Key("count");
    w.Int(s.count);
    if (!s.instance_type.empty()) {
      w.Key("instanceType");
      w.String(s.instance_type.c_str());
    }
    Resources(w, "requests", s.requests);
    w.EndObject();
  }
  w.EndArray();
  Seconds(w, "workSeconds", job.work_ms);
  if (job.checkpoint_every_ms > 0) Seconds(w, "checkpointEverySeconds", job.checkpoint_every_ms);
  if (job.save_on_term_ms) Seconds(w, "saveOnTermSeconds", *job.save_on_term_ms);
  if (job.announces_checkpoints) {
    w.Key("announcesCheckpoints");
    w.Bool(true);
  }
  if (job.termination_grace_ms != 30'000) {
    Seconds(w, "terminationGracePeriodSeconds", job.termination_grace_ms);
  }
  StringMap(w, "annotations", job.annotations);
  w.EndObject();
}

// ---- generation ----

// Deterministic for a seed on every platform: only the engine's output (which the standard
// fixes) is used, never std::*_distribution (whose algorithms it does not).
class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  int64_t Below(int64_t n) { return static_cast<int64_t>(Uniform() * static_cast<double>(n)); }
  double Exponential(double mean) { return -mean * std::log(1.0 - Uniform()); }
  size_t Pick(const std::vector<double>& weights) {
    double total = 0;
    for (double w : weights) total += w;
    double u = Uniform() * total;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (u < weights[i]) return i;
      u -= weights[i];
    }
    return weights.size() - 1;
  }

 private:
  std::mt19937_64 engine_;
};

// The day's curve over [0, 1): busiest in the afternoon, a quarter of that at night.
double DayRate(double x) {
  const double s = std::sin(std::numbers::pi * x);
  return 0.25 + 0.75 * s * s;
}

// Arrival times over `span_ms`, sorted (Poisson, thinned by DayRate).
std::vector<int64_t> Arrivals(Random& rng, int n, int64_t span_ms) {
  std::vector<int64_t> out;
  // Mean rate of DayRate is 0.625; draw at the peak rate and keep by the curve.
  const double peak_gap_ms = 0.625 * static_cast<double>(span_ms) / std::max(1, n);
  double t = 0;
  while (static_cast<int>(out.size()) < n) {
    t += rng.Exponential(peak_gap_ms);
    const double x = std::fmod(t / static_cast<double>(span_ms), 1.0);
    if (rng.Uniform() <= DayRate(x)) out.push_back(std::llround(t));
  }
  return out;
}

// The group's accelerator resource and how many of it a node has ("", 0 when none).
std::pair<std::string, int64_t> AcceleratorOf(const NodeGroup& group) {
  for (const ResourceAmount& r : group.allocatable) {
    if (model::IsAccelerator(r.name) && r.amount > 0) return {r.name, r.amount};
  }
  return {"", 0};
}

// A pod's request: `gpus` of a node group's `per_node` accelerators, with cpu and memory in
// proportion.
ResourceList PodRequest(const NodeGroup& group, int64_t gpus, int64_t per_node) {
  ResourceList r;
  const std::string accelerator = AcceleratorOf(group).first;
  if (!accelerator.empty()) r.Set(accelerator, gpus);
  for (const char* name : {"cpu", "memory"}) {
    const int64_t node = group.allocatable.Get(name);
    // A little under the proportional share, so that the daemons' reserve never blocks a pod.
    if (node > 0) r.Set(name, node / per_node * gpus * 9 / 10);
  }
  return r;
}

// The node groups a team may use, weighted by their accelerators, and how many it may hold there
// (at most the group's own capacity).
struct Choice {
  const NodeGroup* group = nullptr;
  int64_t max = 0;
};
std::vector<Choice> ChoicesOf(const GeneratorOptions& o, const GeneratorOptions::Team& team) {
  std::vector<Choice> out;
  for (const NodeGroup& g : o.nodes) {
    const int64_t capacity = g.count * AcceleratorOf(g).second;
    if (capacity <= 0) continue;
    int64_t max = capacity;
    if (!team.max_accelerators.empty()) {
      auto it = team.max_accelerators.find(g.instance_type);
      if (it == team.max_accelerators.end() || it->second <= 0) continue;
      max = std::min(max, it->second);
    }
    out.push_back(Choice{&g, max});
  }
  return out;
}

// Pod set of a job on `c`: a gang of 2..8 pods of 1, 2, 4 or 8 accelerators, or a lone pod of
// 1 .. a node's worth, never more than the team may hold there.
PodSet DrawPodSet(Random& rng, const Choice& c, bool gang) {
  const NodeGroup& group = *c.group;
  const int64_t per_node = std::max<int64_t>(1, AcceleratorOf(group).second);
  PodSet set;
  set.instance_type = group.instance_type;
  if (gang) {
    set.name = "worker";
    const int64_t sizes[] = {1, 2, 4, 8};
    const int64_t per_pod =
        std::min({sizes[rng.Below(4)], per_node, std::max<int64_t>(1, c.max / 2)});
    const int64_t count = 2 + rng.Below(7);  // 2..8 pods
    set.count =
        static_cast<int>(std::clamp<int64_t>(count, 2, std::max<int64_t>(2, c.max / per_pod)));
    set.requests = PodRequest(group, per_pod, per_node);
  } else {
    set.requests = PodRequest(group, 1 + rng.Below(std::min(per_node, c.max)), per_node);
  }
  return set;
}

TraceJob MakeJob(Random& rng, const GeneratorOptions& o, int index, int64_t arrival_ms) {
  TraceJob job;
  std::vector<double> team_weights;
  for (const GeneratorOptions::Team& t : o.teams) team_weights.push_back(t.weight);
  const GeneratorOptions::Team& team = o.teams[rng.Pick(team_weights)];
  job.ns = team.ns;
  std::vector<double> class_weights = o.priority_weights;
  if (class_weights.size() != o.priority_classes.size()) {
    class_weights.clear();
    for (size_t i = 0; i < o.priority_classes.size(); ++i) class_weights.push_back(1.0 + 2.5 * i);
  }
  if (!o.priority_classes.empty()) job.priority_class = o.priority_classes[rng.Pick(class_weights)];
  const std::vector<Choice> choices = ChoicesOf(o, team);
  std::vector<double> weights;
  for (const Choice& c : choices) weights.push_back(static_cast<double>(c.max));
  const Choice& choice = choices[rng.Pick(weights)];
  const double u = rng.Uniform();
  const bool gang = u < o.gang_fraction + o.job_fraction && choice.max >= 2;
  job.kind = !gang ? JobKind::kPod : u < o.gang_fraction ? JobKind::kPodGroup : JobKind::kJob;
  job.pod_sets.push_back(DrawPodSet(rng, choice, gang));
  char name[64];
  const std::string short_name = job.ns.substr(job.ns.rfind('-') + 1);
  snprintf(name, sizeof(name), "%s-%04d", short_name.c_str(), index);
  job.name = name;
  job.arrival_ms = arrival_ms;
  // Log-normal-ish relative work (mean about 1): most jobs short, a few long. Scaled to the load
  // once every job is drawn (ScaleWork).
  job.work_ms = std::llround(1000.0 * std::exp(rng.Uniform() * 2.0 - 1.0) * rng.Exponential(1.0));
  job.checkpoint_every_ms = o.checkpoint_every_ms;
  job.save_on_term_ms = o.save_on_term_ms;
  job.announces_checkpoints = o.announce_checkpoints && o.checkpoint_every_ms > 0;
  return job;
}

int64_t Accelerators(const ResourceList& r) {
  int64_t n = 0;
  for (const ResourceAmount& a : r) {
    if (model::IsAccelerator(a.name)) n += a.amount;
  }
  return n;
}

// Scales the jobs' relative work so that they offer `load` × the cluster's accelerator-time
// over the span, in whole seconds between 30 s and 2 h.
void ScaleWork(const GeneratorOptions& o, std::vector<TraceJob>* jobs) {
  double capacity = 0;
  for (const NodeGroup& g : o.nodes) capacity += g.count * AcceleratorOf(g).second;
  double offered = 0;
  for (const TraceJob& job : *jobs) {
    offered += static_cast<double>(Accelerators(job.Demand())) * static_cast<double>(job.work_ms);
  }
  if (offered <= 0) return;
  const double scale = o.load * capacity * static_cast<double>(o.span_ms) / offered;
  for (TraceJob& job : *jobs) {
    const double ms = scale * static_cast<double>(job.work_ms);
    job.work_ms = std::clamp<int64_t>(std::llround(ms / 1000.0) * 1000, 30'000, 2 * 3600'000);
  }
}

}  // namespace

int TraceJob::pods() const {
  int n = 0;
  for (const PodSet& s : pod_sets) n += s.count;
  return n;
}

ResourceList TraceJob::Demand() const {
  ResourceList total;
  for (const PodSet& s : pod_sets) total.Add(s.requests.Times(s.count));
  return total;
}

std::string_view JobKindName(JobKind kind) {
  switch (kind) {
    case JobKind::kPod:
      return "Pod";
    case JobKind::kPodGroup:
      return "PodGroup";
    case JobKind::kJob:
      return "Job";
  }
  return "Pod";
}

common::Result<Trace> ParseTrace(std::string_view json) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError()) {
    return common::Error{"trace: invalid JSON at offset " + std::to_string(doc.GetErrorOffset()) +
                         ": " + rapidjson::GetParseError_En(doc.GetParseError())};
  }
  if (!doc.IsObject()) return common::Error{"trace: not a JSON object"};
  std::string error;
  Reader r(&error);
  Trace trace;
  if (!r.String(doc, "name", "", &trace.name, false) || !ParseNodes(r, doc, &trace)) {
    return common::Error{"trace: " + error};
  }
  const Value* jobs = r.Member(doc, "jobs");
  if (jobs == nullptr || !jobs->IsArray())
    return common::Error{"trace: jobs: missing or not a list"};
  std::map<std::string, size_t> seen;
  for (rapidjson::SizeType i = 0; i < jobs->Size(); ++i) {
    const std::string path = "jobs[" + std::to_string(i) + "]";
    TraceJob job;
    if (!ParseJob(r, (*jobs)[i], path, &job)) return common::Error{"trace: " + error};
    const std::string key = job.ns + "/" + job.name;
    if (auto [it, fresh] = seen.emplace(key, i); !fresh) {
      return common::Error{"trace: " + path + ".name: job " + key +
                           " is named twice (first at jobs[" + std::to_string(it->second) + "])"};
    }
    trace.jobs.push_back(std::move(job));
  }
  std::stable_sort(trace.jobs.begin(), trace.jobs.end(), [](const TraceJob& a, const TraceJob& b) {
    return a.arrival_ms < b.arrival_ms;
  });
  return trace;
}

std::string TraceToJson(const Trace& trace) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.SetIndent(' ', 1);
  w.StartObject();
  w.Key("name");
  w.String(trace.name.c_str());
  w.Key("nodes");
  w.StartArray();
  for (const NodeGroup& g : trace.nodes) {
    w.StartObject();
    w.Key("instanceType");
    w.String(g.instance_type.c_str());
    w.Key("count");
    w.Int(g.count);
    w.Key("namePrefix");
    w.String(g.name_prefix.c_str());
    Resources(w, "allocatable", g.allocatable);
    StringMap(w, "labels", g.labels);
    w.EndObject();
  }
  w.EndArray();
  w.Key("jobs");
  w.StartArray();
  for (const TraceJob& job : trace.jobs) WriteJob(w, job);
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

Trace GenerateTrace(const GeneratorOptions& o) {
  Trace trace;
  trace.nodes = o.nodes;
  for (NodeGroup& g : trace.nodes) {
    if (g.name_prefix.empty()) g.name_prefix = g.instance_type;
  }
  char name[128];
  snprintf(name, sizeof(name), "synthetic: %d jobs over %lld s, load %.2f, seed %llu", o.jobs,
           static_cast<long long>(o.span_ms / 1000), o.load,
           static_cast<unsigned long long>(o.seed));
  trace.name = name;
  if (o.nodes.empty() || o.teams.empty()) return trace;
  for (const GeneratorOptions::Team& team : o.teams) {
    if (ChoicesOf(o, team).empty()) return trace;  // a team that can run nothing anywhere
  }
  Random rng(o.seed);
  const std::vector<int64_t> arrivals = Arrivals(rng, o.jobs, o.span_ms);
  for (int i = 0; i < o.jobs; ++i) trace.jobs.push_back(MakeJob(rng, o, i, arrivals[i]));
  ScaleWork(o, &trace.jobs);
  return trace;
}

}  // namespace taskgov::scheduler::sim
