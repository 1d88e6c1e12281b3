// Output of the job and live commands: job list / describe, top teams (render.h).

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "extender/cli/json_builder.h"
#include "extender/cli/render.h"
#include "scheduler/model/quantity.h"

namespace taskgov::cli {

namespace {

using rapidjson::Value;

class Doc : public JsonBuilder {
 public:
  using JsonBuilder::JsonBuilder;

  Value Job(const JobView& j) {
    Value v(rapidjson::kObjectType);
    Add(&v, "apiVersion", Str("taskgov.io/v1"));
    Add(&v, "kind", Str("JobStatus"));
    Add(&v, "jobKind", Str(j.Kind()));
    Add(&v, "namespace", Str(j.ns));
    Add(&v, "name", Str(j.name));
    Add(&v, "creationTime", Str(j.created));
    Add(&v, "state", Str(j.state));
    Add(&v, "priorityClass", Str(j.priority_class));
    Add(&v, "queue", Str(j.queue));
    Add(&v, "instanceType", Str(j.instance_type));
    Add(&v, "image", Str(j.image));
    Add(&v, "nodes", Value(j.nodes));
    Add(&v, "suspended", Value(j.suspended));
    if (j.suspension) {
      const JobSuspension& s = *j.suspension;
      Value by(rapidjson::kObjectType);
      Add(&by, "by", Str(s.by_taskgov ? "taskgov" : "user"));
      Add(&by, "reason", Str(s.reason));
      Add(&by, "since", s.since.empty() ? Value(rapidjson::kNullType) : Str(s.since));
      Add(&by, "suspensions", Value(s.suspensions));
      Add(&v, "suspension", std::move(by));
    } else {
      Add(&v, "suspension", Value(rapidjson::kNullType));
    }
    Add(&v, "requests", Map(j.requests));
    Add(&v, "limits", Map(j.limits));
    Value pods(rapidjson::kArrayType);
    for (const JobPod& p : j.pods) {
      Value pod(rapidjson::kObjectType);
      Add(&pod, "name", Str(p.name));
      Add(&pod, "index", Str(p.index));
      Add(&pod, "phase", Str(p.phase));
      Add(&pod, "node", Str(p.node));
      Add(&pod, "terminating", Value(p.terminating));
      Push(&pods, std::move(pod));
    }
    Add(&v, "pods", std::move(pods));
    if (j.live) {
      const LiveWorkload& w = *j.live;
      Value live(rapidjson::kObjectType);
      Add(&live, "team", Str(w.team));
      Add(&live, "state", Str(w.state));
      Add(&live, "priority", Value(w.priority));
      Value states(rapidjson::kObjectType);
      for (const auto& [state, n] : w.pod_states) states.AddMember(Str(state), Value(n), a_);
      Add(&live, "podStates", std::move(states));
      Add(&live, "queuePosition",
          w.queue_position ? Value(*w.queue_position) : Value(rapidjson::kNullType));
      Add(&live, "waitSeconds", Value(w.wait_seconds));
      Add(&live, "request", Map(w.request));
      Add(&live, "refused", Value(w.refused));
      Add(&live, "refusal", Str(w.refusal));
      Add(&live, "preemption", Str(w.preemption));
      Add(&v, "live", std::move(live));
    } else {
      Add(&v, "live", Value(rapidjson::kNullType));
    }
    return v;
  }
};

std::string Or(const std::string& s, const char* fallback = "-") {
  return s.empty() ? fallback : s;
}

std::string Amounts(const std::map<std::string, std::string>& m) {
  std::string out;
  for (const auto& [k, v] : m) out += (out.empty() ? "" : ", ") + k + " " + v;
  return out.empty() ? "-" : out;
}

void Line(std::ostream& out, std::string_view label, const std::string& value) {
  std::string l = std::string(label) + ":";
  l.resize(std::max<size_t>(l.size() + 1, 17), ' ');
  out << l << value << "\n";
}

// Sums quantity strings of one resource ("4" + "500m" for cpu): canonical units, printed back.
// describe's "Suspended by:" line.
std::string SuspensionText(const JobView& j) {
  const JobSuspension& s = *j.suspension;
  if (!s.by_taskgov) {
    return "its user: taskgov never resumes it (taskgov job resume " + j.name + " -n " + j.ns + ")";
  }
  std::string why = Or(s.reason, "no reason recorded");
  if (!s.since.empty()) why += ", since " + s.since;
  if (s.suspensions > 0) {
    why +=
        "; suspended " + std::to_string(s.suspensions) + (s.suspensions == 1 ? " time" : " times");
  }
  return "taskgov (" + why + "): taskgov resumes it when its whole demand fits its team's quota";
}

std::string SumQuantities(const std::string& resource, const std::vector<std::string>& values) {
  int64_t total = 0;
  for (const std::string& v : values) {
    common::Result<int64_t> n = scheduler::model::ParseResourceQuantity(resource, v);
    if (n.ok()) total += *n;
  }
  return FormatAmount(resource, total);
}

}  // namespace

std::string FormatSeconds(int64_t s) {
  if (s < 0) s = 0;
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m" + (s % 60 ? std::to_string(s % 60) + "s" : "");
  if (s < 86400) {
    return std::to_string(s / 3600) + "h" +
           (s % 3600 / 60 ? std::to_string(s % 3600 / 60) + "m" : "");
  }
  return std::to_string(s / 86400) + "d" +
         (s % 86400 / 3600 ? std::to_string(s % 86400 / 3600) + "h" : "");
}

void RenderJobList(const std::vector<JobView>& jobs, bool live, OutputFormat format,
                   std::ostream& out) {
  if (format == OutputFormat::kName) {
    for (const JobView& j : jobs) out << j.Ref() << "\n";
    return;
  }
  if (format == OutputFormat::kJson || format == OutputFormat::kYaml) {
    rapidjson::Document doc(rapidjson::kObjectType);
    Doc b(&doc);
    b.Add(&doc, "apiVersion", b.Str("taskgov.io/v1"));
    b.Add(&doc, "kind", b.Str("JobStatusList"));
    Value items(rapidjson::kArrayType);
    for (const JobView& j : jobs) b.Push(&items, b.Job(j));
    b.Add(&doc, "items", std::move(items));
    RenderDocument(doc, format, out);
    return;
  }
  const bool wide = format == OutputFormat::kWide;
  std::vector<std::vector<std::string>> rows = {
      {"NAME", "NAMESPACE", "CREATION-TIME", "STATE", "PRIORITY"}};
  if (live) rows[0].insert(rows[0].end(), {"TEAM", "QUEUE-POSITION", "WAIT"});
  if (wide) {
    rows[0].insert(rows[0].end(), {"KIND", "QUEUE", "INSTANCE-TYPE", "NODES", "RUNNING"});
    if (live) rows[0].push_back("WHY");
  }
  for (const JobView& j : jobs) {
    std::vector<std::string> row = {j.name, j.ns, j.created, j.StateText(), Or(j.priority_class)};
    if (live) {
      if (j.live) {
        row.insert(row.end(),
                   {Or(j.live->team),
                    j.live->queue_position ? std::to_string(*j.live->queue_position) : "-",
                    j.live->state == "Pending" || j.live->state == "Admitted" ||
                            j.live->state == "Suspended"
                        ? FormatSeconds(j.live->wait_seconds)
                        : "-"});
      } else {
        row.insert(row.end(), {"-", "-", "-"});
      }
    }
    if (wide) {
      // Running as every view counts it: bound (its phase Running) and not being deleted.
      const int64_t running =
          j.kind == JobKind::kWorkload
              ? (j.live && j.live->pod_states.contains("Running") ? j.live->pod_states.at("Running")
                                                                  : 0)
              : std::count_if(j.pods.begin(), j.pods.end(), [](const JobPod& p) {
                  return p.phase == "Running" && !p.terminating;
                });
      row.insert(row.end(), {j.Kind(), Or(j.queue), Or(j.instance_type), std::to_string(j.nodes),
                             std::to_string(running) + "/" + std::to_string(j.nodes)});
      if (live) row.push_back(j.live ? Or(j.live->why) : "-");
    }
    rows.push_back(std::move(row));
  }
  RenderTable(rows, out);
}

// The admin API's word on the workload, for describe.
static void RenderGovernance(const JobView& j, std::ostream& out);

void RenderJobDescribe(const JobView& j, OutputFormat format, std::ostream& out) {
  if (format == OutputFormat::kName) {
    out << j.Ref() << "\n";
    return;
  }
  if (format == OutputFormat::kJson || format == OutputFormat::kYaml) {
    rapidjson::Document doc;
    Doc b(&doc);
    RenderDocument(b.Job(j), format, out);
    return;
  }
  Line(out, "Name", j.name);
  Line(out, "Namespace", j.ns);
  if (j.kind == JobKind::kWorkload) {
    Line(out, "Kind", j.Kind() + " (a workload taskgov governs; not submitted with the CLI)");
    Line(out, "Created", Or(j.created));
    Line(out, "State", j.state);
    if (j.suspension) Line(out, "Suspended by", SuspensionText(j));
    Line(out, "Priority class", Or(j.priority_class, "none"));
    Line(out, "Instance type", Or(j.instance_type, "any"));
    Line(out, "Pods", std::to_string(j.nodes));
    Line(out, "Requests", Amounts(j.requests) + " in all");
    RenderGovernance(j, out);
    return;
  }
  Line(out, "Kind", JobKindName(j.kind) + (j.kind == JobKind::kJob ? " (indexed, one gang)" : ""));
  Line(out, "Created", j.created);
  Line(out, "State", j.state + (j.suspended ? " (spec.suspend)" : ""));
  if (j.suspension) Line(out, "Suspended by", SuspensionText(j));
  Line(out, "Priority class", Or(j.priority_class, "none"));
  Line(out, "Queue", Or(j.queue, "none"));
  Line(out, "Instance type", Or(j.instance_type, "any"));
  Line(out, "Nodes", std::to_string(j.nodes));
  Line(out, "Image", Or(j.image));
  Line(out, "Requests", Amounts(j.requests) + " per node");
  Line(out, "Limits", Amounts(j.limits) + " per node");
  out << "Pods:" << (j.pods.empty() ? " none" : "") << "\n";
  if (!j.pods.empty()) {
    std::vector<std::vector<std::string>> rows = {{"NAME", "INDEX", "PHASE", "NODE"}};
    for (const JobPod& p : j.pods) {
      rows.push_back(
          {p.name, Or(p.index), p.phase + (p.terminating ? " (terminating)" : ""), Or(p.node)});
    }
    RenderTable(rows, out, "  ");
  }
  RenderGovernance(j, out);
}

static void RenderGovernance(const JobView& j, std::ostream& out) {
  if (!j.live) return;
  const LiveWorkload& w = *j.live;
  out << "Governance (the extender's admin API):\n";
  out << "  Team:           " << Or(w.team) << "\n";
  out << "  Workload:       " << w.kind << ", " << w.state << ", " << w.pods << " of "
      << w.declared_pods << " pods, request " << Amounts(w.request) << "\n";
  out << "  Priority:       " << w.priority << "\n";
  if (w.queue_position) out << "  Queue position: " << *w.queue_position << "\n";
  if (!w.topology.empty()) out << "  Topology:       " << w.topology << "\n";
  if (w.state == "Pending" || w.state == "Admitted" || w.state == "Suspended") {
    out << "  Waiting for:    " << FormatSeconds(w.wait_seconds) << "\n";
  }
  if (!w.refusal.empty()) out << "  Refused:        " << w.refusal << "\n";
  if (!w.preemption.empty()) out << "  Preemption:     " << w.preemption << "\n";
  if (w.state == "Suspended" && !w.why.empty()) out << "  Paused:         " << w.why << "\n";
  if (w.state == "Pending" || (w.state == "Suspended" && w.suspended && w.suspended->by_taskgov)) {
    out << "  Why it waits, rule by rule: taskgov job why " << j.name << " -n " << j.ns << "\n";
  }
}

void RenderWhy(const Explanation& why, const rapidjson::Value& raw, OutputFormat format,
               std::ostream& out) {
  if (format == OutputFormat::kJson || format == OutputFormat::kYaml) {
    RenderDocument(raw, format, out);
    return;
  }
  auto mark = [](bool ok) { return std::string(ok ? "✓" : "✗"); };
  auto checks = [&](const std::vector<ExplanationCheck>& list, const std::string& indent) {
    std::vector<std::vector<std::string>> rows;
    for (const ExplanationCheck& c : list) rows.push_back({mark(c.passed), c.rule, c.detail});
    RenderTable(rows, out, indent);
  };
  out << why.kind << " " << why.ns << "/" << why.name << " (team " << Or(why.team) << ", "
      << Or(why.state) << "): " << why.verdict << "\n";
  if (!why.summary.empty()) out << "  " << why.summary << "\n";
  if (why.evaluated_pod) out << "Evaluated pod:  " << *why.evaluated_pod << "\n";
  if (!why.request.empty()) out << "Request:        " << Amounts(why.request) << "\n";
  if (!why.need.empty()) {
    out << "Needs now:      " << Amounts(why.need)
        << (why.pods_not_created > 0
                ? " (with " + std::to_string(why.pods_not_created) + " pods not created yet)"
                : "")
        << "\n";
  }
  if (!why.checks.empty()) {
    out << "Rules:\n";
    checks(why.checks, "  ");
  }
  for (const ExplanationFlavor& f : why.flavors) {
    out << "Flavor " << f.flavor << ", " << f.mode << ": "
        << (f.admissible ? "admissible" : "not admissible") << "\n";
    checks(f.checks, "  ");
    if (f.quota.empty()) continue;
    std::vector<std::vector<std::string>> rows = {{"", "RESOURCE", "NEED", "IN-USE", "NOMINAL",
                                                   "LIMIT", "BORROWING-LIMIT", "POOL-USED",
                                                   "POOL-CAPACITY", "OTHERS-BORROW"}};
    for (const ExplanationQuota& q : f.quota) {
      rows.push_back({mark(q.fits), q.resource, q.need, q.in_use, q.nominal, q.limit,
                      q.borrowing_limit.value_or("unlimited"), q.pool_used, q.pool_capacity,
                      q.others_borrowed});
    }
    RenderTable(rows, out, "  ");
  }
  if (!why.preemption.empty()) out << "Preemption:     " << why.preemption << "\n";
  const std::vector<std::string> changes = why.Changes();
  if (!changes.empty()) {
    out << "To run:\n";
    for (const std::string& c : changes) out << "  - " << c << "\n";
  }
}

namespace {

// What waits, per team: workloads, pods, the sum of their requests, and per instance type and
// resource what the pending workloads that ask for that instance type request.
class TeamWaiting {
 public:
  struct Waiting {
    int64_t workloads = 0;
    int64_t pods = 0;
    std::map<std::string, std::vector<std::string>> request;
    int64_t longest = 0;
  };

  explicit TeamWaiting(const std::vector<LiveWorkload>& pending) {
    for (const LiveWorkload& w : pending) {
      Waiting& t = by_team_[w.team];
      ++t.workloads;
      t.pods += std::max(w.pods, w.declared_pods);
      for (const auto& [r, q] : w.request) {
        t.request[r].push_back(q);
        if (!w.instance_type.empty()) on_type_[{w.team, w.instance_type, r}].push_back(q);
      }
      t.longest = std::max(t.longest, w.wait_seconds);
    }
  }

  [[nodiscard]] const Waiting& Of(const std::string& team) const {
    static const Waiting kNone;
    auto it = by_team_.find(team);
    return it == by_team_.end() ? kNone : it->second;
  }
  // The team's waiting request, summed per resource.
  [[nodiscard]] std::map<std::string, std::string> Summed(const std::string& team) const {
    std::map<std::string, std::string> out;
    for (const auto& [r, qs] : Of(team).request) out[r] = SumQuantities(r, qs);
    return out;
  }
  // What the team's pending workloads ask of quota line `q`'s instance type and resource.
  [[nodiscard]] std::string On(const std::string& team, const LiveQuota& q) const {
    auto it = on_type_.find({team, q.flavor, q.resource});
    return it == on_type_.end() ? "0" : SumQuantities(q.resource, it->second);
  }

 private:
  std::map<std::string, Waiting> by_team_;
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<std::string>> on_type_;
};

void RenderTopTeamsDocument(const std::vector<LiveTeam>& teams, const TeamWaiting& waiting,
                            OutputFormat format, std::ostream& out) {
  rapidjson::Document doc(rapidjson::kObjectType);
  Doc b(&doc);
  b.Add(&doc, "apiVersion", b.Str("taskgov.io/v1"));
  b.Add(&doc, "kind", b.Str("TeamUsage"));
  Value items(rapidjson::kArrayType);
  for (const LiveTeam& t : teams) {
    Value team(rapidjson::kObjectType);
    b.Add(&team, "name", b.Str(t.name));
    Value quotas(rapidjson::kArrayType);
    for (const LiveQuota& q : t.quotas) {
      Value l(rapidjson::kObjectType);
      b.Add(&l, "instanceType", b.Str(q.flavor));
      b.Add(&l, "resource", b.Str(q.resource));
      b.Add(&l, "nominal", b.Str(q.nominal));
      b.Add(&l, "borrowingLimit",
            q.borrowing_limit ? b.Str(*q.borrowing_limit) : Value(rapidjson::kNullType));
      b.Add(&l, "usage", b.Str(q.usage));
      b.Add(&l, "borrowed", b.Str(q.borrowed));
      b.Add(&l, "lent", b.Str(q.lent));
      b.Add(&l, "waiting", b.Str(waiting.On(t.name, q)));
      b.Push(&quotas, std::move(l));
    }
    b.Add(&team, "quotas", std::move(quotas));
    const TeamWaiting::Waiting& w = waiting.Of(t.name);
    Value wait(rapidjson::kObjectType);
    b.Add(&wait, "workloads", Value(w.workloads));
    b.Add(&wait, "pods", Value(w.pods));
    b.Add(&wait, "request", b.Map(waiting.Summed(t.name)));
    b.Add(&wait, "longestWaitSeconds", Value(w.longest));
    b.Add(&team, "waiting", std::move(wait));
    b.Add(&team, "runningPods", Value(t.running_pods));
    b.Push(&items, std::move(team));
  }
  b.Add(&doc, "teams", std::move(items));
  RenderDocument(doc, format, out);
}

void RenderTopTeamsTables(const std::vector<LiveTeam>& teams, const TeamWaiting& waiting,
                          OutputFormat format, std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {
      {"TEAM", "INSTANCE-TYPE", "RESOURCE", "NOMINAL", "USE", "BORROWED", "LENT", "WAITING"}};
  if (format == OutputFormat::kWide) rows[0].push_back("BORROWING-LIMIT");
  for (const LiveTeam& t : teams) {
    for (const LiveQuota& q : t.quotas) {
      rows.push_back({t.name, q.flavor, q.resource, q.nominal, q.usage, q.borrowed, q.lent,
                      waiting.On(t.name, q)});
      if (format == OutputFormat::kWide) {
        rows.back().push_back(q.borrowing_limit.value_or("unlimited"));
      }
    }
  }
  RenderTable(rows, out);
  out << "\n";
  std::vector<std::vector<std::string>> wait_rows = {{"TEAM", "RUNNING-PODS", "WAITING-WORKLOADS",
                                                      "WAITING-PODS", "WAITING-REQUEST",
                                                      "LONGEST-WAIT"}};
  for (const LiveTeam& t : teams) {
    const TeamWaiting::Waiting& w = waiting.Of(t.name);
    wait_rows.push_back({t.name, std::to_string(t.running_pods), std::to_string(w.workloads),
                         std::to_string(w.pods), Amounts(waiting.Summed(t.name)),
                         w.workloads > 0 ? FormatSeconds(w.longest) : "-"});
  }
  RenderTable(wait_rows, out);
}

}  // namespace

void RenderTopTeams(const std::vector<LiveTeam>& teams, const std::vector<LiveWorkload>& pending,
                    OutputFormat format, std::ostream& out) {
  const TeamWaiting waiting(pending);
  if (format == OutputFormat::kJson || format == OutputFormat::kYaml) {
    RenderTopTeamsDocument(teams, waiting, format, out);
  } else if (format == OutputFormat::kName) {
    for (const LiveTeam& t : teams) out << "team/" << t.name << "\n";
  } else {
    RenderTopTeamsTables(teams, waiting, format, out);
  }
}

}  // namespace taskgov::cli
