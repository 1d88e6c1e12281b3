#include "extender/cli/job_commands.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>

#include "extender/cli/admin_client.h"
#include "extender/cli/jobs.h"
#include "extender/cli/quota_flags.h"
#include "extender/cli/render.h"
#include "scheduler/common/k8s_names.h"
#include "scheduler/kube/client.h"

namespace taskgov::cli {

namespace {

using scheduler::kube::ApiResult;
using scheduler::kube::KubeClient;
using Client = std::unique_ptr<KubeClient>;

constexpr int kWriteAttempts = 5;
// A job's states, and the admin API's states of the other workloads (Admitted: holds quota,
// not every pod runs yet; Terminating).
const std::vector<std::string> kStates = {"Pending",   "Admitted",  "Running", "Terminating",
                                          "Suspended", "Succeeded", "Failed"};

std::string Serialize(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// The -n of a one-namespace command ("": the context's), or the usage error's exit code. Checked
// before anything connects.
std::variant<std::string, int> NamespaceFlag(const Invocation& inv) {
  if (inv.global.all_namespaces) return inv.Usage("this command acts in one namespace: give -n NS");
  if (inv.global.namespaces.size() > 1) {
    return inv.Usage("this command acts in one namespace: give -n once");
  }
  if (inv.global.namespaces.empty()) return std::string();
  if (auto problem = CheckDnsLabel("namespace", inv.global.namespaces[0])) {
    return inv.Usage(*problem);
  }
  return inv.global.namespaces[0];
}

std::string OrContextNamespace(const std::string& ns, KubeClient& client) {
  return ns.empty() ? client.config().default_namespace : ns;
}

common::Result<Client> Connect(const Invocation& inv) { return inv.env.kube(inv.global, ""); }

// Whether the API server serves kubeflow.org/v1 pytorchjobs (discovery).
bool ServesPyTorchJobs(KubeClient& client) {
  ApiResult<rapidjson::Document> reply = client.CallJson("GET", "/apis/kubeflow.org/v1");
  if (!reply.ok()) return false;
  const rapidjson::Value& doc = reply.value();
  auto resources = doc.FindMember("resources");
  if (resources == doc.MemberEnd() || !resources->value.IsArray()) return false;
  for (const rapidjson::Value& r : resources->value.GetArray()) {
    auto name = r.FindMember("name");
    if (name != r.MemberEnd() && name->value.IsString() &&
        std::string(name->value.GetString()) == "pytorchjobs") {
      return true;
    }
  }
  return false;
}

std::string ObjectPath(JobKind kind, const std::string& ns, const std::string& name) {
  return JobCollection(kind, ns) + "/" + name;
}

std::string NotFound(KubeClient& client, const std::string& ns, const std::string& name) {
  std::string message = "job " + Quoted(name) + " not found in namespace " + ns;
  // Where else it is: the hint kubectl users want.
  scheduler::kube::ListOptions list;
  list.field_selector = "metadata.name=" + name;
  std::vector<std::string> elsewhere;
  for (JobKind kind : {JobKind::kJob, JobKind::kPyTorchJob}) {
    ApiResult<scheduler::kube::ListPage> page = client.List(JobCollection(kind, ""), list);
    if (!page.ok()) continue;
    for (const rapidjson::Value& item : page.value().items().GetArray()) {
      JobView v = ViewOf(item, kind);
      if (v.ns != ns) elsewhere.push_back(v.ns);
    }
  }
  if (!elsewhere.empty()) {
    message += "; it exists in namespace " + elsewhere[0] + ": add -n " + elsewhere[0];
  } else {
    message += "; 'taskgov job list -A' lists the jobs of every namespace";
  }
  return message;
}

struct Found {
  JobKind kind = JobKind::kJob;
  rapidjson::Document object;
};

// The Job, else the PyTorchJob, named `name` in `ns`; nullopt when there is neither.
common::Result<std::optional<Found>> FindJob(KubeClient& client, const std::string& ns,
                                             const std::string& name) {
  for (JobKind kind : {JobKind::kJob, JobKind::kPyTorchJob}) {
    ApiResult<rapidjson::Document> got = client.CallJson("GET", ObjectPath(kind, ns, name));
    if (got.ok()) {
      Found f;
      f.kind = kind;
      f.object = std::move(got).value();
      return std::optional<Found>(std::move(f));
    }
    if (got.error().status != 404) {
      return common::Error{"reading job " + name + ": " + got.error().ToString()};
    }
  }
  return std::optional<Found>();
}

// The admin API's workloads of `ns` ("": every namespace) that are no Job or PyTorchJob object
// (those are read from the API server): lone pods, pod groups, PodGroups, other owners. Other
// teams' workloads the caller sees without names are left out.
std::vector<LiveWorkload> OtherWorkloads(const std::vector<LiveWorkload>& live,
                                         const std::string& ns) {
  std::vector<LiveWorkload> out;
  for (const LiveWorkload& w : live) {
    if (w.name.empty() || w.kind == "Job" || w.kind == "PyTorchJob") continue;
    if (!ns.empty() && w.ns != ns) continue;
    out.push_back(w);
  }
  return out;
}

// Pods that may belong to jobs in `ns` ("" for all): both kinds' job-name labels.
common::Result<rapidjson::Document> JobPods(KubeClient& client, const std::string& ns) {
  rapidjson::Document all(rapidjson::kObjectType);
  rapidjson::Value items(rapidjson::kArrayType);
  const std::string path = ns.empty() ? "/api/v1/pods" : "/api/v1/namespaces/" + ns + "/pods";
  for (const char* label : {"batch.kubernetes.io/job-name", "training.kubeflow.org/job-name"}) {
    scheduler::kube::ListOptions list;
    list.label_selector = label;
    do {
      ApiResult<scheduler::kube::ListPage> page = client.List(path, list);
      if (!page.ok()) return common::Error{"listing pods: " + page.error().ToString()};
      for (const rapidjson::Value& pod : page.value().items().GetArray()) {
        items.PushBack(rapidjson::Value(pod, all.GetAllocator()), all.GetAllocator());
      }
      list.continue_token = page.value().continue_token;
    } while (!list.continue_token.empty());
  }
  all.AddMember("items", items, all.GetAllocator());
  return all;
}

common::Result<std::vector<JobView>> ListJobViews(KubeClient& client, const std::string& ns) {
  std::vector<JobView> jobs;
  for (JobKind kind : {JobKind::kJob, JobKind::kPyTorchJob}) {
    scheduler::kube::ListOptions list;
    do {
      ApiResult<scheduler::kube::ListPage> page = client.List(JobCollection(kind, ns), list);
      if (!page.ok()) {
        if (kind == JobKind::kPyTorchJob && page.error().status == 404) break;  // not served
        return common::Error{"listing " + JobKindName(kind) + "s" +
                             (ns.empty() ? "" : " in namespace " + ns) + ": " +
                             page.error().ToString()};
      }
      for (const rapidjson::Value& item : page.value().items().GetArray()) {
        jobs.push_back(ViewOf(item, kind));
      }
      list.continue_token = page.value().continue_token;
    } while (!list.continue_token.empty());
  }
  if (jobs.empty()) return jobs;
  common::Result<rapidjson::Document> pods = JobPods(client, ns);
  if (!pods.ok()) return pods.error();
  for (JobView& j : jobs) AttachPods((*pods)["items"], &j);
  return jobs;
}

// The workloads of the admin API for these jobs (by namespace, name and kind).
void AttachLive(const std::vector<LiveWorkload>& workloads, std::vector<JobView>* jobs) {
  for (JobView& j : *jobs) {
    for (const LiveWorkload& w : workloads) {
      if (w.ns == j.ns && w.name == j.name && w.kind == JobKindName(j.kind)) j.live = w;
    }
  }
}

// Reads `path`, applies `change` to it and PUTs it with the resourceVersion read; a 409 re-reads.
// `change` returns false when nothing needs writing.
common::Result<bool> Update(KubeClient& client, const std::string& path,
                            const std::function<bool(rapidjson::Document&)>& change) {
  for (int attempt = 1;; ++attempt) {
    ApiResult<rapidjson::Document> got = client.CallJson("GET", path);
    if (!got.ok()) return common::Error{got.error().ToString()};
    rapidjson::Document doc = std::move(got).value();
    if (!change(doc)) return false;
    ApiResult<scheduler::kube::HttpResponse> put = client.Call("PUT", path, Serialize(doc));
    if (put.ok()) return true;
    if (put.error().status != 409 || attempt == kWriteAttempts) {
      return common::Error{put.error().ToString() +
                           (put.error().status == 409
                                ? " (changed by someone else " + std::to_string(attempt) +
                                      " times in a row; nothing was written)"
                                : "")};
    }
  }
}

// Sets (or, for "", removes) `key` in the object `parent`.`field` (created when missing).
void SetLabel(rapidjson::Document& doc, rapidjson::Value& meta, const std::string& key,
              const std::string& value) {
  auto& a = doc.GetAllocator();
  if (!meta.IsObject()) meta.SetObject();
  auto labels = meta.FindMember("labels");
  if (labels == meta.MemberEnd() || !labels->value.IsObject()) {
    if (labels != meta.MemberEnd()) meta.RemoveMember(labels);
    meta.AddMember("labels", rapidjson::Value(rapidjson::kObjectType), a);
    labels = meta.FindMember("labels");
  }
  labels->value.RemoveMember(key.c_str());
  if (!value.empty()) {
    labels->value.AddMember(rapidjson::Value(key.c_str(), a), rapidjson::Value(value.c_str(), a),
                            a);
  }
}

// The pod templates' metadata of a job object.
std::vector<rapidjson::Value*> TemplateMetas(rapidjson::Document& doc, JobKind kind) {
  std::vector<rapidjson::Value*> out;
  auto& a = doc.GetAllocator();
  auto meta_of = [&](rapidjson::Value* tmpl) {
    if (tmpl == nullptr || !tmpl->IsObject()) return;
    if (!tmpl->HasMember("metadata")) {
      tmpl->AddMember("metadata", rapidjson::Value(rapidjson::kObjectType), a);
    }
    out.push_back(&(*tmpl)["metadata"]);
  };
  if (kind == JobKind::kJob) {
    meta_of(JsonAt(doc, {"spec", "template"}));
  } else if (rapidjson::Value* r = JsonAt(doc, {"spec", "pytorchReplicaSpecs"});
             r != nullptr && r->IsObject()) {
    for (auto& m : r->GetObject()) meta_of(JsonAt(m.value, {"template"}));
  }
  return out;
}

std::optional<std::string> UnknownPriorityClass(const Invocation& inv, const std::string& cls);

// "a: hyperpod-ns-a; b: hyperpod-ns-b": the teams of `teams` with their namespaces.
std::string TeamNamespaces(const rapidjson::Value& teams) {
  std::string out;
  for (const rapidjson::Value& team : teams["items"].GetArray()) {
    std::string namespaces;
    if (const rapidjson::Value* ns = JsonAt(team, {"namespaces"}); ns && ns->IsArray()) {
      for (const rapidjson::Value& n : ns->GetArray()) {
        namespaces += (namespaces.empty() ? "" : ", ") + std::string(n.GetString());
      }
    }
    out += (out.empty() ? "" : "; ") + std::string(team["name"].GetString()) + ": " +
           (namespaces.empty() ? "no namespace" : namespaces);
  }
  return out;
}

// The admin API's team of namespace `ns` (/api/v1/teams?namespace=): its object, or nullopt
// when no team owns it (*all then holds every team, for the message).
common::Result<std::optional<rapidjson::Document>> TeamOfNamespace(AdminApi& admin,
                                                                   const std::string& ns,
                                                                   rapidjson::Document* all) {
  common::Result<rapidjson::Document> mine =
      admin.Get("/api/v1/teams?namespace=" + scheduler::kube::QueryEscape(ns));
  if (!mine.ok()) return mine.error();
  const rapidjson::Value* items = JsonAt(*mine, {"items"});
  if (items != nullptr && items->IsArray() && !items->Empty()) {
    rapidjson::Document team;
    team.CopyFrom((*items)[0], team.GetAllocator());
    return std::optional<rapidjson::Document>(std::move(team));
  }
  common::Result<rapidjson::Document> teams = admin.Get("/api/v1/teams");
  if (!teams.ok()) return teams.error();
  *all = std::move(*teams);
  return std::optional<rapidjson::Document>();
}

// The policy's word on a submission before anything is created: the namespace's team, its quota
// on the instance type, the priority class. The exit code of a refusal (the job would go
// ungoverned, could never run, or would rank as priority 0), else nullopt — with one note when
// the admin API that knows the policy cannot be reached.
std::optional<int> CheckSubmission(const Invocation& inv, const JobSubmission& job) {
  common::Result<std::unique_ptr<AdminApi>> admin = ConnectAdminApi(inv);
  rapidjson::Document all;
  common::Result<std::optional<rapidjson::Document>> team =
      admin.ok() ? TeamOfNamespace(**admin, job.ns, &all)
                 : common::Result<std::optional<rapidjson::Document>>(admin.error());
  if (!team.ok()) {
    NoteMissingLive(inv, "checks of the namespace's team, its quota and the priority class",
                    team.error());
    return std::nullopt;
  }
  if (!team->has_value()) {
    return inv.Failed("namespace " + job.ns +
                      " belongs to no team, so taskgov would not govern the job (and no team's "
                      "quota would hold it): submit it in a team's namespace with -n (" +
                      TeamNamespaces(all) + ")");
  }
  const rapidjson::Value& t = **team;
  const std::string name = t["name"].GetString();
  if (!job.instance_type.empty()) {
    std::vector<std::string> flavors;
    for (const rapidjson::Value& q : t["quotas"].GetArray()) {
      const std::string f = q["flavor"].GetString();
      if (std::find(flavors.begin(), flavors.end(), f) == flavors.end()) flavors.push_back(f);
    }
    if (std::find(flavors.begin(), flavors.end(), job.instance_type) == flavors.end()) {
      std::string quota;
      for (const std::string& f : flavors) quota += (quota.empty() ? "" : ", ") + f;
      return inv.Failed(
          "team " + name + " has no quota on " + job.instance_type +
          ", so the job could never run: " +
          (quota.empty()
               ? "it has no quota at all"
               : "its quota is on " + quota + " (give --instance-type " + flavors.front() + ")") +
          ", or an admin gives a quota there ('taskgov quota update " + name + " ...')");
    }
  }
  if (!job.priority_class.empty()) {
    if (std::optional<std::string> unknown = UnknownPriorityClass(inv, job.priority_class)) {
      return inv.Failed(*unknown);
    }
  }
  return std::nullopt;
}

// ---- the commands ----

int JobSubmit(const Invocation& inv) {
  auto ns_flag = NamespaceFlag(inv);
  if (auto* code = std::get_if<int>(&ns_flag)) return *code;
  common::Result<JobSubmission> job = ParseJobSubmission(inv.args);
  if (!job.ok()) return inv.Usage(job.error().message);
  const std::string kind_flag = inv.args.Get("kind").value_or("auto");
  if (kind_flag != "auto" && kind_flag != "Job" && kind_flag != "PyTorchJob") {
    return inv.Usage("invalid --kind " + Quoted(kind_flag) + ": use auto, Job or PyTorchJob");
  }
  const std::string dry_run = inv.args.Get("dry-run").value_or("none");
  if (dry_run != "none" && dry_run != "client" && dry_run != "server") {
    return inv.Usage("invalid --dry-run " + Quoted(dry_run) + ": use none, client or server");
  }
  common::Result<Client> client = Connect(inv);
  if (dry_run == "client" && !client.ok()) {
    // Offline, as kubectl's client dry run: -n, or the namespace the manifest would default to.
    const std::string ns = std::get<std::string>(ns_flag);
    SetNamespace(ns.empty() ? "default" : ns, &*job);
    rapidjson::Document doc;
    doc.Parse(JobManifest(*job, kind_flag == "PyTorchJob" ? JobKind::kPyTorchJob : JobKind::kJob)
                  .c_str());
    RenderDocument(
        doc, inv.global.output == OutputFormat::kTable ? OutputFormat::kYaml : inv.global.output,
        inv.out());
    return kExitOk;
  }
  if (!client.ok()) return inv.Failed(client.error().message);
  SetNamespace(OrContextNamespace(std::get<std::string>(ns_flag), **client), &*job);
  JobKind kind = kind_flag == "PyTorchJob" ? JobKind::kPyTorchJob : JobKind::kJob;
  if (kind_flag == "auto" && dry_run != "client" && ServesPyTorchJobs(**client)) {
    kind = JobKind::kPyTorchJob;
  }
  const std::string manifest = JobManifest(*job, kind);
  const OutputFormat format =
      inv.global.output == OutputFormat::kTable ? OutputFormat::kYaml : inv.global.output;
  if (dry_run != "client") {  // a client dry run needs no cluster: nothing is checked
    if (std::optional<int> refused = CheckSubmission(inv, *job)) return *refused;
  }
  if (dry_run == "client") {
    rapidjson::Document doc;
    doc.Parse(manifest.c_str());
    RenderDocument(doc, format, inv.out());
    return kExitOk;
  }
  const std::string path =
      JobCollection(kind, job->ns) + (dry_run == "server" ? "?dryRun=All" : "");
  ApiResult<scheduler::kube::HttpResponse> created = (*client)->Call("POST", path, manifest);
  const std::string ref = (kind == JobKind::kJob ? "job/" : "pytorchjob/") + job->name;
  if (!created.ok()) {
    const scheduler::kube::ApiError& e = created.error();
    if (e.status == 409) {
      return inv.Failed(ref + " already exists in namespace " + job->ns + ": 'taskgov job delete " +
                        job->name + " -n " + job->ns + "' first, or choose another name");
    }
    if (e.status == 403) {
      return inv.Failed("you may not create " + JobKindName(kind) + "s in namespace " + job->ns +
                        " (" + e.message + "): ask for create on " +
                        (kind == JobKind::kJob ? "jobs.batch" : "pytorchjobs.kubeflow.org") +
                        " there, or submit in your team's namespace with -n");
    }
    return inv.Failed("creating " + ref + ": " + e.ToString());
  }
  if (dry_run == "server" || inv.global.output == OutputFormat::kJson ||
      inv.global.output == OutputFormat::kYaml) {
    rapidjson::Document doc;
    doc.Parse(created.value().body.c_str());
    if (inv.global.output == OutputFormat::kName) {
      inv.out() << ref << "\n";
    } else {
      RenderDocument(doc, format, inv.out());
    }
    return kExitOk;
  }
  if (inv.global.output == OutputFormat::kName) {
    inv.out() << ref << "\n";
    return kExitOk;
  }
  inv.out() << ref << " created in namespace " << job->ns << " (" << JobKindName(kind) << ", "
            << job->nodes << (job->nodes == 1 ? " node" : " nodes") << " as one gang"
            << (job->queue.empty() ? "" : ", queue " + job->queue)
            << (job->priority_class.empty() ? "" : ", priority " + job->priority_class) << ")\n"
            << "Follow it: taskgov job list -n " << job->ns << "; why it waits: taskgov job why "
            << job->name << " -n " << job->ns << "\n";
  return kExitOk;
}

int JobList(const Invocation& inv) {
  const std::string state = inv.args.Get("state").value_or("");
  if (!state.empty() && std::find(kStates.begin(), kStates.end(), state) == kStates.end()) {
    return inv.Usage("invalid --state " + Quoted(state) +
                     ": use Pending, Admitted, Running, Terminating, Suspended, Succeeded or "
                     "Failed");
  }
  const std::string team = inv.args.Get("team").value_or("");
  if (inv.args.Has("team") && !common::IsDnsLabel(team)) {
    return inv.Usage("invalid --team " + Quoted(team) + ": use a team name (a DNS-1123 label)");
  }
  common::Result<Client> client = Connect(inv);
  if (!client.ok()) return inv.Failed(client.error().message);
  // -A, or --team without -n: every namespace; else -n (each) or the context's namespace.
  std::vector<std::string> namespaces = inv.global.namespaces;
  if (inv.global.all_namespaces || (namespaces.empty() && !team.empty())) {
    namespaces = {""};
  } else if (namespaces.empty()) {
    namespaces = {(*client)->config().default_namespace};
  }
  std::vector<JobView> jobs;
  for (const std::string& ns : namespaces) {
    common::Result<std::vector<JobView>> some = ListJobViews(**client, ns);
    if (!some.ok()) return inv.Failed(some.error().message);
    jobs.insert(jobs.end(), some->begin(), some->end());
  }
  bool live = false;
  common::Result<std::unique_ptr<AdminApi>> admin = ConnectAdminApi(inv);
  common::Result<std::vector<LiveWorkload>> workloads =
      admin.ok() ? ReadWorkloads(**admin, "")
                 : common::Result<std::vector<LiveWorkload>>(admin.error());
  if (workloads.ok()) {
    live = true;
    AttachLive(*workloads, &jobs);
    // Every other workload the extender governs, as the console lists them.
    for (const std::string& ns : namespaces) {
      for (const LiveWorkload& w : OtherWorkloads(*workloads, ns)) {
        jobs.push_back(ViewOfWorkload(w));
      }
    }
  } else if (!team.empty()) {
    return inv.Failed("--team needs the extender's admin API (which knows each job's team): " +
                      workloads.error().message);
  } else {
    NoteMissingLive(inv, "team, queue position and wait", workloads.error());
  }
  std::erase_if(jobs, [&](const JobView& j) {
    return (!state.empty() && j.state != state) ||
           (!team.empty() && (!j.live || j.live->team != team));
  });
  std::sort(jobs.begin(), jobs.end(), [](const JobView& a, const JobView& b) {
    return std::tie(a.ns, a.name, a.kind, a.workload_kind) <
           std::tie(b.ns, b.name, b.kind, b.workload_kind);
  });
  if (jobs.empty() &&
      (inv.global.output == OutputFormat::kTable || inv.global.output == OutputFormat::kWide)) {
    inv.err() << "No jobs found" << (namespaces[0].empty() ? "" : " in namespace " + namespaces[0])
              << (state.empty() && team.empty() ? "" : " that match the filters") << ".\n";
    return kExitOk;
  }
  RenderJobList(jobs, live, inv.global.output, inv.out());
  return kExitOk;
}

// The job NAME of the command, with its pods and (when reachable) its workload.
struct Target {
  Client client;
  std::string ns;
  Found found;
  JobView view;
};

// NAME is no Job or PyTorchJob: the workload of that name the admin API lists (a lone pod, a pod
// group, ...) as a target, or the exit code of the error saying what there is not.
std::variant<Target, int> WorkloadTarget(const Invocation& inv, Target t, const std::string& name) {
  common::Result<std::unique_ptr<AdminApi>> admin = ConnectAdminApi(inv);
  common::Result<std::vector<LiveWorkload>> workloads =
      admin.ok() ? ReadWorkloads(**admin, "namespace=" + t.ns)
                 : common::Result<std::vector<LiveWorkload>>(admin.error());
  if (!workloads.ok()) {
    return inv.Failed(NotFound(*t.client, t.ns, name) +
                      " (pods and pod groups it did not submit are looked up in the extender's "
                      "admin API, which is not reachable: " +
                      workloads.error().message + ")");
  }
  for (const LiveWorkload& w : OtherWorkloads(*workloads, t.ns)) {
    if (w.name != name) continue;
    t.found.kind = JobKind::kWorkload;
    t.view = ViewOfWorkload(w);
    return t;
  }
  std::string message = NotFound(*t.client, t.ns, name);
  message.replace(0, message.find(" in namespace"),
                  "no job, pod group or pod named " + Quoted(name));
  return inv.Failed(message);
}

std::variant<Target, int> ReadTarget(const Invocation& inv, bool want_live) {
  auto ns = NamespaceFlag(inv);
  if (auto* code = std::get_if<int>(&ns)) return *code;
  common::Result<Client> client = Connect(inv);
  if (!client.ok()) return inv.Failed(client.error().message);
  Target t;
  t.client = std::move(*client);
  t.ns = OrContextNamespace(std::get<std::string>(ns), *t.client);
  const std::string& name = inv.args.positional[0];
  common::Result<std::optional<Found>> found = FindJob(*t.client, t.ns, name);
  if (!found.ok()) return inv.Failed(found.error().message);
  if (!found->has_value()) return WorkloadTarget(inv, std::move(t), name);
  t.found = std::move(**found);
  t.view = ViewOf(t.found.object, t.found.kind);
  common::Result<rapidjson::Document> pods = JobPods(*t.client, t.ns);
  if (!pods.ok()) return inv.Failed(pods.error().message);
  AttachPods((*pods)["items"], &t.view);
  if (!want_live) return t;
  common::Result<std::unique_ptr<AdminApi>> admin = ConnectAdminApi(inv);
  common::Result<std::vector<LiveWorkload>> workloads =
      admin.ok() ? ReadWorkloads(**admin, "namespace=" + t.ns)
                 : common::Result<std::vector<LiveWorkload>>(admin.error());
  if (workloads.ok()) {
    std::vector<JobView> one = {t.view};
    AttachLive(*workloads, &one);
    t.view = one[0];
  } else {
    NoteMissingLive(inv, "governance (team, queue position, refusal)", workloads.error());
  }
  return t;
}

// The commands that change a job refuse a workload the CLI did not submit, saying what it is.
int RefuseWorkload(const Invocation& inv, const Target& t, const std::string& what) {
  return inv.Failed(t.ns + "/" + t.view.name + " is a " + t.view.Kind() +
                    " workload, not a Job or PyTorchJob: taskgov " + what +
                    " only the jobs it submits; change its pods or their owner with kubectl");
}

int JobDescribe(const Invocation& inv) {
  auto target = ReadTarget(inv, true);
  if (auto* code = std::get_if<int>(&target)) return *code;
  RenderJobDescribe(std::get<Target>(target).view, inv.global.output, inv.out());
  return kExitOk;
}

// Why the policy in force does not know `cls` (the admin API's /api/v1/policy), or nullopt: it
// does, or the admin API cannot say (then one note says the class was not checked).
std::optional<std::string> UnknownPriorityClass(const Invocation& inv, const std::string& cls) {
  common::Result<std::unique_ptr<AdminApi>> admin = ConnectAdminApi(inv);
  common::Result<rapidjson::Document> policy =
      admin.ok() ? (*admin)->Get("/api/v1/policy")
                 : common::Result<rapidjson::Document>(admin.error());
  if (!policy.ok()) {
    NoteMissingLive(inv, "a check of the class against the policy", policy.error());
    return std::nullopt;
  }
  auto classes = policy->FindMember("priorityClasses");
  if (classes == policy->MemberEnd() || !classes->value.IsArray()) return std::nullopt;
  std::string known;
  for (const rapidjson::Value& c : classes->value.GetArray()) {
    auto name = c.FindMember("name");
    if (name == c.MemberEnd() || !name->value.IsString()) continue;
    const std::string n = name->value.GetString();
    // DESIGN §3.5: the class is named with or without a "-priority" suffix.
    if (n == cls || n + "-priority" == cls) return std::nullopt;
    known += (known.empty() ? "" : ", ") + n;
  }
  return "priority class " + Quoted(cls) + " is not in the policy in force (" +
         (known.empty() ? std::string("it has none") : "its classes: " + known) +
         "): its pods would rank as priority 0; 'taskgov policy show' lists the classes";
}

int JobPriority(const Invocation& inv) {
  const std::string& cls = inv.args.positional[1];
  if (!common::IsDnsSubdomain(cls)) {
    return inv.Usage("invalid priority class " + Quoted(cls) +
                     ": use a DNS-1123 subdomain (lowercase letters, digits, '-' and '.')");
  }
  auto target = ReadTarget(inv, false);
  if (auto* code = std::get_if<int>(&target)) return *code;
  Target& t = std::get<Target>(target);
  if (t.found.kind == JobKind::kWorkload) return RefuseWorkload(inv, t, "changes the priority of");
  const JobView& v = t.view;
  const auto bound =
      std::count_if(v.pods.begin(), v.pods.end(), [](const JobPod& p) { return !p.node.empty(); });
  if (v.state == "Running" || bound > 0) {
    return inv.Failed(
        v.Ref() + " is running (" + std::to_string(bound) + " of " + std::to_string(v.nodes) +
        " pods placed): its priority class can change only while it waits — "
        "taskgov ranks waiting work by it and admitted pods keep the class they "
        "were admitted with; to run it again as " +
        cls + ": taskgov job delete " + v.name + ", then submit it with --priority " + cls);
  }
  if (v.state == "Succeeded" || v.state == "Failed") {
    return inv.Failed(v.Ref() + " has finished (" + v.state + "): there is nothing to rank");
  }
  if (v.priority_class == cls) {
    inv.out() << v.Ref() << " already has priority class " << cls << " (unchanged)\n";
    return kExitOk;
  }
  if (std::optional<std::string> unknown = UnknownPriorityClass(inv, cls)) {
    return inv.Failed(*unknown);
  }
  const std::string path = ObjectPath(t.found.kind, t.ns, v.name);
  common::Result<bool> changed = Update(*t.client, path, [&](rapidjson::Document& doc) {
    SetLabel(doc, doc["metadata"], kPriorityLabel, cls);
    for (rapidjson::Value* meta : TemplateMetas(doc, t.found.kind)) {
      SetLabel(doc, *meta, kPriorityLabel, cls);
    }
    return true;
  });
  if (!changed.ok()) return inv.Failed("changing " + v.Ref() + ": " + changed.error().message);
  // The pods already waiting carry the class the extender reads: relabel them too.
  size_t relabelled = 0;
  for (const JobPod& p : v.pods) {
    if (!p.node.empty() || p.terminating) continue;
    common::Result<bool> pod = Update(
        *t.client, "/api/v1/namespaces/" + t.ns + "/pods/" + p.name, [&](rapidjson::Document& doc) {
          rapidjson::Value* node = JsonAt(doc, {"spec", "nodeName"});
          if (node != nullptr && node->IsString() && node->GetStringLength() > 0) return false;
          SetLabel(doc, doc["metadata"], kPriorityLabel, cls);
          return true;
        });
    if (!pod.ok()) {
      return inv.Failed(v.Ref() + " now has priority class " + cls + ", but its pod " + p.name +
                        " could not be relabelled: " + pod.error().message +
                        "; run the command again");
    }
    relabelled += *pod ? 1 : 0;
  }
  inv.out() << v.Ref()
            << " priority class changed: " << (v.priority_class.empty() ? "none" : v.priority_class)
            << " -> " << cls << " (" << relabelled << " waiting "
            << (relabelled == 1 ? "pod" : "pods") << " relabelled)\n";
  return kExitOk;
}

int JobSuspendResume(const Invocation& inv, bool suspend) {
  auto target = ReadTarget(inv, false);
  if (auto* code = std::get_if<int>(&target)) return *code;
  Target& t = std::get<Target>(target);
  if (t.found.kind == JobKind::kWorkload) return RefuseWorkload(inv, t, "suspends and resumes");
  const JobView& v = t.view;
  if (v.state == "Succeeded" || v.state == "Failed") {
    return inv.Failed(v.Ref() + " has finished (" + v.state + "): nothing to " +
                      (suspend ? "suspend" : "resume"));
  }
  common::Result<bool> changed =
      Update(*t.client, ObjectPath(t.found.kind, t.ns, v.name), [&](rapidjson::Document& doc) {
        rapidjson::Value* spec = JsonAt(doc, {"spec"});
        if (spec == nullptr || !spec->IsObject()) return false;
        rapidjson::Value* owner = spec;
        if (t.found.kind == JobKind::kPyTorchJob) {
          if (!spec->HasMember("runPolicy")) {
            spec->AddMember("runPolicy", rapidjson::Value(rapidjson::kObjectType),
                            doc.GetAllocator());
          }
          owner = &(*spec)["runPolicy"];
        }
        rapidjson::Value* current = JsonAt(*owner, {"suspend"});
        if (current != nullptr && current->IsBool() && current->GetBool() == suspend) return false;
        owner->RemoveMember("suspend");
        owner->AddMember("suspend", rapidjson::Value(suspend), doc.GetAllocator());
        return true;
      });
  if (!changed.ok()) {
    return inv.Failed((suspend ? "suspending " : "resuming ") + v.Ref() + ": " +
                      changed.error().message);
  }
  if (!*changed) {
    inv.out() << v.Ref() << " is already " << (suspend ? "suspended" : "not suspended")
              << " (unchanged)\n";
    return kExitOk;
  }
  inv.out() << v.Ref()
            << (suspend ? " suspended: its pods are deleted and the quota they held is free; "
                          "'taskgov job resume "
                        : " resumed: its pods are created again and wait for admission as one "
                          "gang; 'taskgov job list -n ")
            << (suspend ? v.name + "' starts it again" : t.ns + "' follows it") << "\n";
  return kExitOk;
}

int JobDelete(const Invocation& inv) {
  auto target = ReadTarget(inv, false);
  if (auto* code = std::get_if<int>(&target)) return *code;
  Target& t = std::get<Target>(target);
  if (t.found.kind == JobKind::kWorkload) return RefuseWorkload(inv, t, "deletes");
  ApiResult<scheduler::kube::HttpResponse> deleted = t.client->Call(
      "DELETE", ObjectPath(t.found.kind, t.ns, t.view.name) + "?propagationPolicy=Background");
  if (!deleted.ok()) {
    return inv.Failed("deleting " + t.view.Ref() + ": " + deleted.error().ToString());
  }
  inv.out() << t.view.Ref() << " deleted (with its " << t.view.pods.size()
            << (t.view.pods.size() == 1 ? " pod" : " pods") << ")\n";
  return kExitOk;
}

std::string Or(const std::string& s, const char* fallback) { return s.empty() ? fallback : s; }

// `job why` of a job taskgov paused when the extender cannot explain it (an extender from before
// issue 35): what its annotations say and its team's quota now (/api/v1/teams?namespace=).
int PausedWithoutExplanation(const Invocation& inv, const Target& t, AdminApi& admin) {
  const JobView& v = t.view;
  const JobSuspension& s = *v.suspension;
  std::ostream& out = inv.out();
  out << v.Ref() << " is " << v.StateText() << (s.since.empty() ? "" : " since " + s.since)
      << " (reason " << Or(s.reason, "not recorded") << "; suspended " << s.suspensions
      << (s.suspensions == 1 ? " time" : " times") << ").\n";
  std::string each;
  for (const auto& [resource, amount] : v.requests) {
    each += (each.empty() ? "" : ", ") + resource + " " + amount;
  }
  out << "taskgov resumes it when its whole demand fits its team's quota: " << v.nodes
      << (v.nodes == 1 ? " pod" : " pods") << " of " << Or(each, "no requests") << ".\n";
  out << "note: the extender gave no rule-by-rule explanation of it (one from before paused jobs "
         "were listed)\n";
  common::Result<rapidjson::Document> reply =
      admin.Get("/api/v1/teams?namespace=" + scheduler::kube::QueryEscape(t.ns));
  common::Result<std::vector<LiveTeam>> teams =
      reply.ok() ? DecodeTeams(*reply) : common::Result<std::vector<LiveTeam>>(reply.error());
  if (!teams.ok() || teams->empty()) {
    out << "Its team's quota: not known ("
        << (teams.ok() ? "no team owns namespace " + t.ns : teams.error().message) << ")\n";
    return kExitOk;
  }
  const LiveTeam& team = teams->front();
  out << "Team " << team.name << "'s quota now:\n";
  std::vector<std::vector<std::string>> rows = {
      {"INSTANCE-TYPE", "RESOURCE", "NOMINAL", "IN-USE", "BORROWED", "LENT", "BORROWING-LIMIT"}};
  for (const LiveQuota& q : team.quotas) {
    rows.push_back({q.flavor, q.resource, q.nominal, q.usage, q.borrowed, q.lent,
                    q.borrowing_limit.value_or("unlimited")});
  }
  RenderTable(rows, out, "  ");
  return kExitOk;
}

int JobWhy(const Invocation& inv) {
  auto target = ReadTarget(inv, false);
  if (auto* code = std::get_if<int>(&target)) return *code;
  Target& t = std::get<Target>(target);
  const bool table =
      inv.global.output != OutputFormat::kJson && inv.global.output != OutputFormat::kYaml;
  if (table && t.view.suspension && !t.view.suspension->by_taskgov) {
    // Nothing of it waits for taskgov: its pods are gone until someone resumes it.
    inv.out() << t.view.Ref()
              << " is suspended by its user (spec.suspend): taskgov never resumes it; its pods "
                 "come back, and wait for admission as one gang, once it is resumed: taskgov job "
                 "resume "
              << t.view.name << " -n " << t.ns << "\n";
    return kExitOk;
  }
  common::Result<std::unique_ptr<AdminApi>> admin = ConnectAdminApi(inv);
  if (!admin.ok()) return inv.Failed(admin.error().message);
  common::Result<rapidjson::Document> reply =
      (*admin)->Get("/api/v1/workloads/" + t.ns + "/" + t.view.name + "/explanation");
  if (!reply.ok() && table && t.view.suspension && t.view.state == "Suspended") {
    return PausedWithoutExplanation(inv, t, **admin);
  }
  if (!reply.ok()) {
    // A job in a namespace of no team is not the extender's: that is the answer.
    rapidjson::Document all;
    common::Result<std::optional<rapidjson::Document>> team = TeamOfNamespace(**admin, t.ns, &all);
    if (team.ok() && !team->has_value()) {
      return inv.Failed(t.view.Ref() + " is in namespace " + t.ns +
                        ", which belongs to no team: taskgov does not govern it (kube-scheduler "
                        "alone decides where it runs); teams' namespaces: " +
                        TeamNamespaces(all));
    }
    return inv.Failed("why " + t.view.Ref() +
                      " waits needs the extender's explanation: " + reply.error().message);
  }
  common::Result<Explanation> why = DecodeExplanation(*reply);
  if (!why.ok()) return inv.Failed(why.error().message);
  RenderWhy(*why, *reply, inv.global.output, inv.out());
  return kExitOk;
}

int TopTeams(const Invocation& inv) {
  const std::string team = inv.args.Get("team").value_or("");
  common::Result<std::unique_ptr<AdminApi>> admin = ConnectAdminApi(inv);
  if (!admin.ok()) return inv.Failed(admin.error().message);
  common::Result<std::vector<LiveTeam>> teams = ReadTeams(**admin);
  if (!teams.ok()) return inv.Failed(teams.error().message);
  common::Result<std::vector<LiveWorkload>> pending = ReadWorkloads(**admin, "state=Pending");
  if (!pending.ok()) return inv.Failed(pending.error().message);
  if (!team.empty()) {
    std::erase_if(*teams, [&](const LiveTeam& t) { return t.name != team; });
    if (teams->empty()) {
      return inv.Failed("team " + Quoted(team) +
                        " is not in the extender's policy: 'taskgov quota list' shows the teams");
    }
  }
  RenderTopTeams(*teams, *pending, inv.global.output, inv.out());
  return kExitOk;
}

FlagSpec TeamFlag(const std::string& help) { return ValueFlag("team", "TEAM", help); }

const std::vector<OutputFormat> kReadFormats = {OutputFormat::kTable, OutputFormat::kWide,
                                                OutputFormat::kJson, OutputFormat::kYaml,
                                                OutputFormat::kName};

Command Leaf(std::string name, std::string summary, std::string args, std::string description,
             std::string example, std::vector<FlagSpec> flags, size_t min_args, size_t max_args,
             std::vector<OutputFormat> formats, std::function<int(const Invocation&)> run) {
  Command c;
  c.name = std::move(name);
  c.summary = std::move(summary);
  c.args = std::move(args);
  c.description = std::move(description);
  c.example = std::move(example);
  c.flags = std::move(flags);
  c.min_args = min_args;
  c.max_args = max_args;
  c.formats = std::move(formats);
  c.run = std::move(run);
  return c;
}

std::vector<FlagSpec> SubmitFlags() {
  return {
      ValueFlag("job-name", "NAME", "the job's name (or give NAME)"),
      ValueFlag("image", "IMAGE", "the container image (required)"),
      ValueFlag("queue-name", "QUEUE",
                "the Kueue LocalQueue (label kueue.x-k8s.io/queue-name; default for hyperpod-ns-T: "
                "hyperpod-ns-T-localqueue)"),
      ValueFlag("priority", "CLASS", "the priority class (label kueue.x-k8s.io/priority-class)"),
      ValueFlag("instance-type", "TYPE", "the nodes' instance type (node selector)"),
      ValueFlag("accelerators", "N", "accelerators per node (request = limit)"),
      ValueFlag("vcpu", "N", "vCPUs per node (request)"),
      ValueFlag("memory", "GIB", "memory per node in GiB, or a quantity such as 512Mi (request)"),
      ValueFlag("accelerators-limit", "N", "accelerator limit (must equal the request)"),
      ValueFlag("vcpu-limit", "N", "vCPU limit"),
      ValueFlag("memory-limit", "GIB", "memory limit"),
      ValueFlag("accelerator-resource", "RES",
                "the accelerator's resource (default: the instance type's, e.g. nvidia.com/gpu)"),
      ValueFlag("node-count", "N", "nodes (pods), admitted together as one gang (default 1)"),
      ValueFlag("tasks-per-node", "N", "processes per node (torchrun's nproc-per-node; default 1)"),
      ValueFlag("command", "WORD", "the container's command, one word per flag").Repeatable(),
      ValueFlag("args", "WORD", "its arguments, one word per flag").Repeatable(),
      ValueFlag("env", "NAME=VALUE", "an environment variable").Repeatable(),
      ValueFlag("pull-policy", "POLICY", "Always, IfNotPresent or Never")
          .Values({"Always", "IfNotPresent", "Never"}),
      ValueFlag("max-retry", "N", "retries before the job fails (backoffLimit; default 0)"),
      ValueFlag("scheduler-name", "NAME", "the pods' scheduler (default taskgov)"),
      ValueFlag("required-topology", "LEVEL",
                "all pods in one domain of this topology level (a node label such as "
                "topology.k8s.aws/network-node-layer-2), or wait"),
      ValueFlag("preferred-topology", "LEVEL",
                "pods in one domain of this level when one has room, else the fewest"),
      ValueFlag("kind", "KIND",
                "auto (a PyTorchJob where the API server serves kubeflow.org/v1, else a Job), Job "
                "or PyTorchJob")
          .Values({"auto", "Job", "PyTorchJob"}),
      ValueFlag("dry-run", "MODE",
                "client: print the manifest, create nothing; server: the API server checks it "
                "too (dryRun=All)")
          .Values({"none", "client", "server"})
          .Optional("client"),
  };
}

}  // namespace

Command JobCommands() {
  Command submit = Leaf(
      "submit", "submit a training job as one gang (HyperPod hyp create hyp-pytorch-job)", "[NAME]",
      "Creates an indexed batch/v1 Job whose pods are admitted together as one gang\n"
      "(parallelism = completions = --node-count), or a kubeflow.org/v1 PyTorchJob (Master and\n"
      "Workers) where the API server serves that CRD. The queue and priority-class labels go on\n"
      "the job and its pods, the instance type becomes the node selector, --accelerators --vcpu\n"
      "--memory the requests of each node's pod, the -limit flags its limits. --dry-run prints\n"
      "the manifest (-o yaml by default, -o json).\n",
      "taskgov job submit llama-ft -n hyperpod-ns-research --image pytorch:2.3 \\\n"
      "    --instance-type ml.p5.48xlarge --accelerators 8 --node-count 2 --priority training\n"
      "taskgov job submit smoke --image busybox --command sh --args -c --args 'echo ok' "
      "--dry-run -o json",
      SubmitFlags(), 0, 1,
      {OutputFormat::kTable, OutputFormat::kJson, OutputFormat::kYaml, OutputFormat::kName},
      JobSubmit);
  Command list = Leaf(
      "list", "list jobs with their state and priority (HyperPod list-jobs)", "",
      "Lists the Jobs and PyTorchJobs of the namespace (-n, else the context's; -A: every\n"
      "namespace) with their state (Pending, Running, Suspended, Succeeded, Failed) and\n"
      "priority class; with the extender's admin API also each job's team, its position in\n"
      "its team's queue and how long it has waited. --team needs the admin API.\n",
      "taskgov job list\ntaskgov job list -A --state Pending\ntaskgov job list --team research -o "
      "wide",
      {TeamFlag("only the jobs of this team (every namespace unless -n)"),
       ValueFlag("state", "STATE", "only jobs in this state")
           .Values({"Pending", "Admitted", "Running", "Terminating", "Suspended", "Succeeded",
                    "Failed"})},
      0, 0, kReadFormats, JobList);
  Command describe =
      Leaf("describe", "show a job, its pods and how taskgov governs it", "NAME", "",
           "taskgov job describe llama-ft -n hyperpod-ns-research\ntaskgov job describe llama-ft "
           "-o yaml",
           {}, 1, 1, kReadFormats, JobDescribe);
  Command why =
      Leaf("why", "why a job waits: the extender's rules, one by one, with the numbers", "NAME",
           "Reads the extender's explanation of the job's workload (its admin API): every rule it\n"
           "applies — for the workload and per flavor and mode (within nominal, borrowing) — with\n"
           "✓ or ✗, the quota numbers (need, in use, nominal, limit, the cohort's pool), any\n"
           "preemption under way, and what would let it run. -o json|yaml: the reply as it is.\n",
           "taskgov job why llama-ft -n hyperpod-ns-research\ntaskgov job why llama-ft -o json", {},
           1, 1, {OutputFormat::kTable, OutputFormat::kJson, OutputFormat::kYaml}, JobWhy);
  Command priority =
      Leaf("priority", "change a waiting job's priority class", "NAME CLASS",
           "Sets the label kueue.x-k8s.io/priority-class on the job, its pod templates and its\n"
           "waiting pods. Refused for a job that runs: its pods were admitted with their class.\n",
           "taskgov job priority llama-ft inference", {}, 2, 2, {}, JobPriority);
  Command suspend = Leaf("suspend", "suspend a job (spec.suspend): its pods go, its quota is free",
                         "NAME", "", "taskgov job suspend llama-ft", {}, 1, 1, {},
                         [](const Invocation& inv) { return JobSuspendResume(inv, true); });
  Command resume = Leaf("resume", "resume a suspended job: its pods wait for admission again",
                        "NAME", "", "taskgov job resume llama-ft", {}, 1, 1, {},
                        [](const Invocation& inv) { return JobSuspendResume(inv, false); });
  Command del =
      Leaf("delete", "delete a job and its pods", "NAME", "",
           "taskgov job delete llama-ft -n hyperpod-ns-research", {}, 1, 1, {}, JobDelete);
  Command group;
  group.name = "job";
  group.summary = "training jobs: submit, list, describe, why, priority, suspend, resume, delete";
  group.example = "taskgov job list\ntaskgov job submit NAME --image IMAGE --node-count 2";
  group.children = {submit, list, describe, why, priority, suspend, resume, del};
  return group;
}

Command TopCommands() {
  Command teams = Leaf(
      "teams", "per team and instance type: use, borrowed, lent; and what waits", "",
      "Reads the extender's admin API (/api/v1/teams and the pending /api/v1/workloads): per\n"
      "team, instance type and resource the nominal quota, use, borrowed and lent amounts and\n"
      "what the team's waiting workloads that ask for that instance type request; per team the\n"
      "running pods and the workloads, pods and requests that wait (whatever instance type).\n",
      "taskgov top teams\ntaskgov top teams --team research -o json", {TeamFlag("only this team")},
      0, 0,
      {OutputFormat::kTable, OutputFormat::kWide, OutputFormat::kJson, OutputFormat::kYaml,
       OutputFormat::kName},
      TopTeams);
  Command group;
  group.name = "top";
  group.summary = "live use of the cluster (the extender's admin API)";
  group.example = "taskgov top teams";
  group.children = {teams};
  return group;
}

}  // namespace taskgov::cli
