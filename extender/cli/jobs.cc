#include "extender/cli/jobs.h"

#include <cctype>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <charconv>

#include "config/catalogue.h"
#include "extender/cli/quota_flags.h"
#include "scheduler/common/k8s_names.h"
#include "scheduler/model/job_control.h"
#include "scheduler/model/quantity.h"

namespace taskgov::cli {

namespace {

using rapidjson::Value;

// ---- flags ----

std::optional<int64_t> WholeNumber(const std::string& text, int64_t min, int64_t max) {
  if (text.empty() || text.size() > 9 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  const int64_t n = std::stoll(text);
  if (n < min || n > max) return std::nullopt;
  return n;
}

// A count flag's value, or its usage error.
common::Result<std::optional<int64_t>> CountFlag(const ParsedArgs& args, const char* flag,
                                                 int64_t min, int64_t max) {
  std::optional<std::string> text = args.Get(flag);
  if (!text) return std::optional<int64_t>();
  std::optional<int64_t> n = WholeNumber(*text, min, max);
  if (!n) {
    return common::Error{"invalid --" + std::string(flag) + " " + Quoted(*text) +
                         ": use a whole number from " + std::to_string(min) + " to " +
                         std::to_string(max)};
  }
  return n;
}

// --vcpu and --vcpu-limit: a number of CPUs ("4", "0.5") as a cpu quantity.
common::Result<std::optional<std::string>> CpuFlag(const ParsedArgs& args, const char* flag) {
  std::optional<std::string> text = args.Get(flag);
  if (!text) return std::optional<std::string>();
  common::Result<int64_t> milli = scheduler::model::ParseResourceQuantity("cpu", *text);
  if (text->empty() || !milli.ok() || *milli <= 0 ||
      !std::all_of(text->begin(), text->end(),
                   [](char c) { return (c >= '0' && c <= '9') || c == '.'; })) {
    return common::Error{"invalid --" + std::string(flag) + " " + Quoted(*text) +
                         ": use a number of vCPUs greater than 0, such as 4 or 0.5"};
  }
  return std::optional<std::string>(*text);
}

// --memory and --memory-limit: GiB ("32", "1.5") as HyperPod gives it, or a quantity ("512Mi").
common::Result<std::optional<std::string>> MemoryFlag(const ParsedArgs& args, const char* flag) {
  std::optional<std::string> text = args.Get(flag);
  if (!text) return std::optional<std::string>();
  if (!MemoryFlagBytes(*text)) {
    return common::Error{"invalid --" + std::string(flag) + " " + Quoted(*text) + ": " +
                         kMemoryFlagHelp};
  }
  // Kubernetes accepts "1.5Gi"; keep what the user wrote, in GiB when plain.
  const bool plain = std::all_of(text->begin(), text->end(),
                                 [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
  return std::optional<std::string>(plain ? *text + "Gi" : *text);
}

bool EnvName(const std::string& name) {
  if (name.empty()) return false;
  auto ok = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  };
  return std::all_of(name.begin(), name.end(), ok) && !(name[0] >= '0' && name[0] <= '9');
}

common::Status ParseResources(const ParsedArgs& args, JobSubmission* job) {
  common::Result<std::optional<int64_t>> acc = CountFlag(args, "accelerators", 0, 1024);
  if (!acc.ok()) return acc.error();
  common::Result<std::optional<int64_t>> acc_limit = CountFlag(args, "accelerators-limit", 0, 1024);
  if (!acc_limit.ok()) return acc_limit.error();
  if (*acc && *acc_limit && **acc != **acc_limit) {
    return common::Error{"--accelerators-limit " + std::to_string(**acc_limit) +
                         " differs from --accelerators " + std::to_string(**acc) +
                         ": Kubernetes requires an accelerator's request to equal its limit"};
  }
  const std::optional<int64_t> accelerators = *acc ? *acc : *acc_limit;
  if (accelerators && *accelerators > 0) {
    std::string resource = args.Get("accelerator-resource").value_or("");
    if (resource.empty()) {
      const config::InstanceType* type =
          job->instance_type.empty() ? nullptr
                                     : config::Catalogue::Builtin().Find(job->instance_type);
      if (type == nullptr || type->accelerator_resource.empty()) {
        return common::Error{
            "--accelerators needs to know the accelerator's resource: " +
            (job->instance_type.empty()
                 ? std::string("give --instance-type")
                 : "instance type " + job->instance_type + " has no accelerator in the catalogue") +
            ", or --accelerator-resource such as nvidia.com/gpu"};
      }
      resource = type->accelerator_resource;
    }
    job->requests[resource] = std::to_string(*accelerators);
    job->limits[resource] = std::to_string(*accelerators);
  }
  common::Result<std::optional<std::string>> vcpu = CpuFlag(args, "vcpu");
  if (!vcpu.ok()) return vcpu.error();
  common::Result<std::optional<std::string>> vcpu_limit = CpuFlag(args, "vcpu-limit");
  if (!vcpu_limit.ok()) return vcpu_limit.error();
  common::Result<std::optional<std::string>> memory = MemoryFlag(args, "memory");
  if (!memory.ok()) return memory.error();
  common::Result<std::optional<std::string>> memory_limit = MemoryFlag(args, "memory-limit");
  if (!memory_limit.ok()) return memory_limit.error();
  struct Pair {
    const char* resource;
    const char* flag;
    const std::optional<std::string>& request;
    const std::optional<std::string>& limit;
  };
  for (const Pair& p : {Pair{"cpu", "vcpu", *vcpu, *vcpu_limit},
                        Pair{"memory", "memory", *memory, *memory_limit}}) {
    if (p.request) job->requests[p.resource] = *p.request;
    if (p.limit) job->limits[p.resource] = *p.limit;
    if (p.request && p.limit &&
        *scheduler::model::ParseResourceQuantity(p.resource, *p.limit) <
            *scheduler::model::ParseResourceQuantity(p.resource, *p.request)) {
      return common::Error{"--" + std::string(p.flag) + "-limit " +
                           *args.Get(std::string(p.flag) + "-limit") + " is less than --" + p.flag +
                           " " + *args.Get(p.flag) + ": a limit must be at least the request"};
    }
  }
  return common::Status::Ok();
}

common::Status ParseRest(const ParsedArgs& args, JobSubmission* job) {
  common::Result<std::optional<int64_t>> nodes = CountFlag(args, "node-count", 1, 1000);
  if (!nodes.ok()) return nodes.error();
  job->nodes = nodes->value_or(1);
  common::Result<std::optional<int64_t>> tasks = CountFlag(args, "tasks-per-node", 1, 1000);
  if (!tasks.ok()) return tasks.error();
  job->tasks_per_node = tasks->value_or(1);
  common::Result<std::optional<int64_t>> retry = CountFlag(args, "max-retry", 0, 100);
  if (!retry.ok()) return retry.error();
  job->max_retry = *retry;
  job->command = args.All("command");
  job->args = args.All("args");
  for (const std::string& e : args.All("env")) {
    const size_t eq = e.find('=');
    if (eq == std::string::npos || !EnvName(e.substr(0, eq))) {
      return common::Error{"invalid --env " + Quoted(e) +
                           ": use NAME=VALUE with a name of letters, digits, '_', '-' and '.', "
                           "not starting with a digit"};
    }
    const std::string name = e.substr(0, eq);
    if (std::any_of(job->env.begin(), job->env.end(),
                    [&](const auto& kv) { return kv.first == name; })) {
      return common::Error{"--env " + name + " is given twice"};
    }
    job->env.emplace_back(name, e.substr(eq + 1));
  }
  if (auto p = args.Get("pull-policy")) {
    if (*p != "Always" && *p != "IfNotPresent" && *p != "Never") {
      return common::Error{"invalid --pull-policy " + Quoted(*p) +
                           ": use Always, IfNotPresent or Never"};
    }
    job->pull_policy = *p;
  }
  const std::optional<std::string> required = args.Get("required-topology");
  const std::optional<std::string> preferred = args.Get("preferred-topology");
  if (required && preferred) {
    return common::Error{"give --required-topology or --preferred-topology, not both"};
  }
  if (required || preferred) {
    std::string level = required ? *required : *preferred;
    // HyperPod's levels by their short names: network-node-layer-2, ultraserver-id.
    if (level.find('/') == std::string::npos &&
        (level.starts_with("network-node-layer-") || level == "ultraserver-id")) {
      level = "topology.k8s.aws/" + level;
    }
    if (!common::IsQualifiedName(level)) {
      return common::Error{"invalid --" + std::string(required ? "required" : "preferred") +
                           "-topology " + Quoted(level) +
                           ": give a node label key such as topology.k8s.aws/network-node-layer-2 "
                           "(or network-node-layer-2)"};
    }
    job->topology_annotation = required ? "kueue.x-k8s.io/podset-required-topology"
                                        : "kueue.x-k8s.io/podset-preferred-topology";
    job->topology_level = std::move(level);
  }
  if (auto s = args.Get("scheduler-name")) {
    if (!common::IsDnsSubdomain(*s)) {
      return common::Error{"invalid --scheduler-name " + Quoted(*s) +
                           ": use a DNS-1123 subdomain such as taskgov"};
    }
    job->scheduler_name = *s;
  }
  return common::Status::Ok();
}

// ---- manifest ----

class Builder {
 public:
  explicit Builder(rapidjson::Document* doc) : a_(doc->GetAllocator()) {}
  Value Str(std::string_view s) {
    return Value(s.data(), static_cast<rapidjson::SizeType>(s.size()), a_);
  }
  void Add(Value* obj, std::string_view key, Value v) { obj->AddMember(Str(key), v, a_); }
  Value Map(const std::map<std::string, std::string>& m) {
    Value v(rapidjson::kObjectType);
    for (const auto& [k, x] : m) Add(&v, k, Str(x));
    return v;
  }
  Value List(const std::vector<std::string>& items) {
    Value v(rapidjson::kArrayType);
    for (const std::string& s : items) v.PushBack(Str(s), a_);
    return v;
  }
  rapidjson::Document::AllocatorType& a() { return a_; }

 private:
  rapidjson::Document::AllocatorType& a_;
};

std::map<std::string, std::string> Labels(const JobSubmission& job) {
  std::map<std::string, std::string> labels;
  if (!job.queue.empty()) labels[kQueueLabel] = job.queue;
  if (!job.priority_class.empty()) labels[kPriorityLabel] = job.priority_class;
  return labels;
}

Value PodTemplate(const JobSubmission& job, JobKind kind, Builder& b) {
  Value container(rapidjson::kObjectType);
  b.Add(&container, "name", b.Str(kind == JobKind::kPyTorchJob ? "pytorch" : "main"));
  b.Add(&container, "image", b.Str(job.image));
  if (!job.pull_policy.empty()) b.Add(&container, "imagePullPolicy", b.Str(job.pull_policy));
  if (!job.command.empty()) b.Add(&container, "command", b.List(job.command));
  if (!job.args.empty()) b.Add(&container, "args", b.List(job.args));
  Value env(rapidjson::kArrayType);
  std::vector<std::pair<std::string, std::string>> vars = job.env;
  if (kind == JobKind::kJob) {  // torchrun's settings (PyTorchJob's operator sets its own)
    vars.insert(vars.begin(), {{"PET_NNODES", std::to_string(job.nodes)},
                               {"PET_NPROC_PER_NODE", std::to_string(job.tasks_per_node)}});
  }
  for (const auto& [k, v] : vars) {
    Value e(rapidjson::kObjectType);
    b.Add(&e, "name", b.Str(k));
    b.Add(&e, "value", b.Str(v));
    env.PushBack(e, b.a());
  }
  if (!env.Empty()) b.Add(&container, "env", std::move(env));
  Value resources(rapidjson::kObjectType);
  if (!job.requests.empty()) b.Add(&resources, "requests", b.Map(job.requests));
  if (!job.limits.empty()) b.Add(&resources, "limits", b.Map(job.limits));
  b.Add(&container, "resources", std::move(resources));
  Value spec(rapidjson::kObjectType);
  b.Add(&spec, "schedulerName", b.Str(job.scheduler_name));
  b.Add(&spec, "restartPolicy", b.Str(kind == JobKind::kJob ? "Never" : "OnFailure"));
  if (!job.instance_type.empty()) {
    b.Add(&spec, "nodeSelector", b.Map({{kInstanceTypeLabel, job.instance_type}}));
  }
  Value containers(rapidjson::kArrayType);
  containers.PushBack(container, b.a());
  b.Add(&spec, "containers", std::move(containers));
  Value meta(rapidjson::kObjectType);
  b.Add(&meta, "labels", b.Map(Labels(job)));
  if (!job.topology_annotation.empty()) {  // read from the pods, as Kueue reads the template's
    b.Add(&meta, "annotations", b.Map({{job.topology_annotation, job.topology_level}}));
  }
  Value tmpl(rapidjson::kObjectType);
  b.Add(&tmpl, "metadata", std::move(meta));
  b.Add(&tmpl, "spec", std::move(spec));
  return tmpl;
}

std::string Serialize(const Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// ---- reading ----

std::string Text(const Value& v, std::initializer_list<const char*> path) {
  const Value* at = JsonAt(v, path);
  return at != nullptr && at->IsString() ? std::string(at->GetString(), at->GetStringLength()) : "";
}

int64_t Int(const Value& v, std::initializer_list<const char*> path, int64_t fallback) {
  const Value* at = JsonAt(v, path);
  return at != nullptr && at->IsInt64() ? at->GetInt64() : fallback;
}

std::map<std::string, std::string> StringMap(const Value* v) {
  std::map<std::string, std::string> out;
  if (v == nullptr || !v->IsObject()) return out;
  for (const auto& m : v->GetObject()) {
    if (m.value.IsString()) out[m.name.GetString()] = m.value.GetString();
  }
  return out;
}

bool ConditionTrue(const Value& object, const std::string& type) {
  const Value* conditions = JsonAt(object, {"status", "conditions"});
  if (conditions == nullptr || !conditions->IsArray()) return false;
  for (const Value& c : conditions->GetArray()) {
    if (Text(c, {"type"}) == type && Text(c, {"status"}) == "True") return true;
  }
  return false;
}

// The pod template a view reads image, selector and resources from.
const Value* TemplateOf(const Value& object, JobKind kind) {
  if (kind == JobKind::kJob) return JsonAt(object, {"spec", "template"});
  for (const char* replica : {"Master", "Worker"}) {
    if (const Value* t = JsonAt(object, {"spec", "pytorchReplicaSpecs", replica, "template"}))
      return t;
  }
  return nullptr;
}

}  // namespace

const Value* JsonAt(const Value& v, std::initializer_list<const char*> path) {
  const Value* at = &v;
  for (const char* name : path) {
    if (!at->IsObject()) return nullptr;
    auto m = at->FindMember(name);
    if (m == at->MemberEnd()) return nullptr;
    at = &m->value;
  }
  return at;
}

std::string JobCollection(JobKind kind, const std::string& ns) {
  const std::string base = kind == JobKind::kJob ? "/apis/batch/v1" : "/apis/kubeflow.org/v1";
  const std::string plural = kind == JobKind::kJob ? "jobs" : "pytorchjobs";
  return ns.empty() ? base + "/" + plural : base + "/namespaces/" + ns + "/" + plural;
}

std::string JobKindName(JobKind kind) {
  switch (kind) {
    case JobKind::kJob:
      return "Job";
    case JobKind::kPyTorchJob:
      return "PyTorchJob";
    case JobKind::kWorkload:
      return "Workload";
  }
  return "Job";
}

JobSuspension SuspensionOf(const std::map<std::string, std::string>& annotations) {
  JobSuspension s;
  auto get = [&](const char* key) {
    auto it = annotations.find(key);
    return it == annotations.end() ? std::string() : it->second;
  };
  s.by_taskgov =
      get(scheduler::model::kSuspendedByAnnotation) == scheduler::model::kSuspendedByValue;
  const std::string count = get(scheduler::model::kSuspensionsAnnotation);
  int64_t n = 0;
  if (std::from_chars(count.data(), count.data() + count.size(), n).ec == std::errc()) {
    s.suspensions = std::max<int64_t>(0, n);
  }
  if (!s.by_taskgov) return s;
  s.reason = get(scheduler::model::kSuspendReasonAnnotation);
  s.since = get(scheduler::model::kSuspendedAtAnnotation);
  return s;
}

std::string SuspendedBy(const JobSuspension& s) {
  if (!s.by_taskgov) return "by its user";
  if (s.reason == "Reclaim") return "Reclaimed by taskgov";
  if (s.reason == "InTeamPriority" || s.reason == "Priority") return "Preempted by taskgov";
  if (s.reason == "FairShare") return "FairShare by taskgov";
  return "Paused by taskgov";
}

std::string JobView::StateText() const {
  if (state != "Suspended" || !suspension) return state;
  return state + " (" + SuspendedBy(*suspension) + ")";
}

std::string JobView::Kind() const {
  return kind == JobKind::kWorkload ? workload_kind : JobKindName(kind);
}

std::string JobView::Ref() const {
  std::string kind_name = Kind();
  for (char& c : kind_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return kind_name + "/" + name;
}

JobView ViewOfWorkload(const LiveWorkload& w) {
  JobView v;
  v.kind = JobKind::kWorkload;
  v.workload_kind = w.kind;
  v.ns = w.ns;
  v.name = w.name;
  v.created = w.created;
  v.priority_class = w.priority_class;
  v.instance_type = w.instance_type;
  v.nodes = std::max(w.pods, w.declared_pods);
  v.state = w.state;  // the admin API's: Pending, Admitted, Running, Terminating, Suspended
  v.suspended = w.suspended.has_value();
  v.suspension = w.suspended;
  v.requests = w.request;
  v.live = w;
  return v;
}

void SetNamespace(const std::string& ns, JobSubmission* job) {
  job->ns = ns;
  if (job->queue.empty() && ns.starts_with("hyperpod-ns-")) job->queue = ns + "-localqueue";
}

common::Result<JobSubmission> ParseJobSubmission(const ParsedArgs& args) {
  JobSubmission job;
  const std::optional<std::string> flag_name = args.Get("job-name");
  const std::optional<std::string> positional =
      args.positional.empty() ? std::nullopt : std::optional<std::string>(args.positional[0]);
  if (flag_name && positional && *flag_name != *positional) {
    return common::Error{"the job is named twice (" + *positional + " and --job-name " +
                         *flag_name + "): give NAME or --job-name NAME"};
  }
  job.name = flag_name.value_or(positional.value_or(""));
  if (job.name.empty()) return common::Error{"a job needs a name: give NAME or --job-name NAME"};
  if (auto problem = CheckDnsLabel("job name", job.name)) return common::Error{*problem};
  job.image = args.Get("image").value_or("");
  if (job.image.empty()) return common::Error{"a job needs --image IMAGE"};
  job.instance_type = args.Get("instance-type").value_or("");
  if (args.Has("instance-type") && job.instance_type.empty()) {
    return common::Error{"--instance-type must not be empty"};
  }
  for (const char* flag : {"queue-name", "priority"}) {
    std::optional<std::string> v = args.Get(flag);
    if (v && !common::IsDnsSubdomain(*v)) {
      return common::Error{"invalid --" + std::string(flag) + " " + Quoted(*v) +
                           ": use a DNS-1123 subdomain (lowercase letters, digits, '-' and '.')"};
    }
  }
  job.queue = args.Get("queue-name").value_or("");
  job.priority_class = args.Get("priority").value_or("");
  if (common::Status s = ParseResources(args, &job); !s.ok()) return s.error();
  if (common::Status s = ParseRest(args, &job); !s.ok()) return s.error();
  return job;
}

std::string JobManifest(const JobSubmission& job, JobKind kind) {
  rapidjson::Document doc(rapidjson::kObjectType);
  Builder b(&doc);
  b.Add(&doc, "apiVersion", b.Str(kind == JobKind::kJob ? "batch/v1" : "kubeflow.org/v1"));
  b.Add(&doc, "kind", b.Str(JobKindName(kind)));
  Value meta(rapidjson::kObjectType);
  b.Add(&meta, "name", b.Str(job.name));
  b.Add(&meta, "namespace", b.Str(job.ns));
  b.Add(&meta, "labels", b.Map(Labels(job)));
  b.Add(&doc, "metadata", std::move(meta));
  Value spec(rapidjson::kObjectType);
  if (kind == JobKind::kJob) {
    // One gang: every index runs at once, each pod on a node of its own.
    b.Add(&spec, "parallelism", Value(job.nodes));
    b.Add(&spec, "completions", Value(job.nodes));
    b.Add(&spec, "completionMode", b.Str("Indexed"));
    b.Add(&spec, "backoffLimit", Value(job.max_retry.value_or(0)));
    // A pod stopped by a disruption (an eviction, a drain, a preemption; the API server marks
    // it DisruptionTarget) is not a failure: it burns no retry. Needs restartPolicy: Never.
    Value condition(rapidjson::kObjectType);
    b.Add(&condition, "type", b.Str("DisruptionTarget"));
    Value conditions(rapidjson::kArrayType);
    conditions.PushBack(condition, doc.GetAllocator());
    Value rule(rapidjson::kObjectType);
    b.Add(&rule, "action", b.Str("Ignore"));
    b.Add(&rule, "onPodConditions", std::move(conditions));
    Value rules(rapidjson::kArrayType);
    rules.PushBack(rule, doc.GetAllocator());
    Value policy(rapidjson::kObjectType);
    b.Add(&policy, "rules", std::move(rules));
    b.Add(&spec, "podFailurePolicy", std::move(policy));
    b.Add(&spec, "suspend", Value(false));
    b.Add(&spec, "template", PodTemplate(job, kind, b));
  } else {
    b.Add(&spec, "nprocPerNode", b.Str(std::to_string(job.tasks_per_node)));
    Value run(rapidjson::kObjectType);
    b.Add(&run, "suspend", Value(false));
    b.Add(&run, "backoffLimit", Value(job.max_retry.value_or(0)));
    b.Add(&spec, "runPolicy", std::move(run));
    Value replicas(rapidjson::kObjectType);
    for (const auto& [role, count] :
         std::vector<std::pair<const char*, int64_t>>{{"Master", 1}, {"Worker", job.nodes - 1}}) {
      if (count == 0) continue;
      Value r(rapidjson::kObjectType);
      b.Add(&r, "replicas", Value(count));
      b.Add(&r, "restartPolicy", b.Str("OnFailure"));
      b.Add(&r, "template", PodTemplate(job, kind, b));
      b.Add(&replicas, role, std::move(r));
    }
    b.Add(&spec, "pytorchReplicaSpecs", std::move(replicas));
  }
  b.Add(&doc, "spec", std::move(spec));
  return Serialize(doc);
}

JobView ViewOf(const Value& object, JobKind kind) {
  JobView v;
  v.kind = kind;
  v.ns = Text(object, {"metadata", "namespace"});
  v.name = Text(object, {"metadata", "name"});
  v.uid = Text(object, {"metadata", "uid"});
  v.created = Text(object, {"metadata", "creationTimestamp"});
  std::map<std::string, std::string> labels = StringMap(JsonAt(object, {"metadata", "labels"}));
  v.priority_class = labels[kPriorityLabel];
  v.queue = labels[kQueueLabel];
  if (const Value* tmpl = TemplateOf(object, kind)) {
    std::map<std::string, std::string> pod_labels =
        StringMap(JsonAt(*tmpl, {"metadata", "labels"}));
    if (v.priority_class.empty()) v.priority_class = pod_labels[kPriorityLabel];
    if (v.queue.empty()) v.queue = pod_labels[kQueueLabel];
    v.instance_type = StringMap(JsonAt(*tmpl, {"spec", "nodeSelector"}))[kInstanceTypeLabel];
    const Value* containers = JsonAt(*tmpl, {"spec", "containers"});
    if (containers != nullptr && containers->IsArray() && !containers->Empty()) {
      const Value& c = (*containers)[0];
      v.image = Text(c, {"image"});
      v.requests = StringMap(JsonAt(c, {"resources", "requests"}));
      v.limits = StringMap(JsonAt(c, {"resources", "limits"}));
    }
  }
  if (kind == JobKind::kJob) {
    v.nodes = Int(object, {"spec", "parallelism"}, 1);
    const Value* s = JsonAt(object, {"spec", "suspend"});
    v.suspended = s != nullptr && s->IsBool() && s->GetBool();
  } else {
    v.nodes = 0;
    if (const Value* replicas = JsonAt(object, {"spec", "pytorchReplicaSpecs"});
        replicas != nullptr && replicas->IsObject()) {
      for (const auto& r : replicas->GetObject()) v.nodes += Int(r.value, {"replicas"}, 1);
    }
    const Value* s = JsonAt(object, {"spec", "runPolicy", "suspend"});
    v.suspended = s != nullptr && s->IsBool() && s->GetBool();
  }
  if (ConditionTrue(object, "Complete") || ConditionTrue(object, "Succeeded")) {
    v.state = "Succeeded";
  } else if (ConditionTrue(object, "Failed")) {
    v.state = "Failed";
  } else if (v.suspended) {
    v.state = "Suspended";
    v.suspension = SuspensionOf(StringMap(JsonAt(object, {"metadata", "annotations"})));
  }
  return v;
}

void AttachPods(const Value& pods_items, JobView* job) {
  if (pods_items.IsArray()) {
    for (const Value& pod : pods_items.GetArray()) {
      const Value* owners = JsonAt(pod, {"metadata", "ownerReferences"});
      if (owners == nullptr || !owners->IsArray()) continue;
      const bool owned = std::any_of(owners->Begin(), owners->End(),
                                     [&](const Value& o) { return Text(o, {"uid"}) == job->uid; });
      if (!owned) continue;
      JobPod p;
      p.name = Text(pod, {"metadata", "name"});
      std::map<std::string, std::string> labels = StringMap(JsonAt(pod, {"metadata", "labels"}));
      p.index = labels.count("batch.kubernetes.io/job-completion-index") > 0
                    ? labels["batch.kubernetes.io/job-completion-index"]
                    : labels["training.kubeflow.org/replica-type"] + "-" +
                          labels["training.kubeflow.org/replica-index"];
      p.phase = Text(pod, {"status", "phase"});
      p.node = Text(pod, {"spec", "nodeName"});
      p.terminating = !Text(pod, {"metadata", "deletionTimestamp"}).empty();
      job->pods.push_back(std::move(p));
    }
  }
  std::sort(job->pods.begin(), job->pods.end(), [](const JobPod& a, const JobPod& b) {
    return a.index.size() != b.index.size() ? a.index.size() < b.index.size() : a.index < b.index;
  });
  if (!job->state.empty()) return;
  const auto running = std::count_if(job->pods.begin(), job->pods.end(), [](const JobPod& p) {
    return p.phase == "Running" && !p.terminating;
  });
  job->state = job->nodes > 0 && running >= job->nodes ? "Running" : "Pending";
}

}  // namespace taskgov::cli
