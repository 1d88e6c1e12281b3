#include "extender/cli/admin_client.h"

#include <algorithm>

#include "scheduler/kube/client.h"

namespace taskgov::cli {

namespace {

using rapidjson::Value;

const Value* Field(const Value& object, const char* name) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(name);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

std::string StringField(const Value& object, const char* name) {
  const Value* v = Field(object, name);
  return v != nullptr && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : "";
}

int64_t IntField(const Value& object, const char* name) {
  const Value* v = Field(object, name);
  return v != nullptr && v->IsInt64() ? v->GetInt64() : 0;
}

std::string Fixes(const ConsoleRef& ref) {
  return ref.url.empty()
             ? "install the console Service (deploy/base/console-service.yaml; the extender "
               "serves it with --console-listen), name another one with --console-service "
               "NS/NAME:PORT, or connect directly with --console-url URL (after kubectl "
               "port-forward)"
             : "check that the extender's console listens there (--console-listen), or leave "
               "out --console-url to go through the API server's service proxy";
}

// The header the extender's console reads a token from when Authorization is absent
// (extender/http_server.h, kForwardedAuthorization): the API server's service proxy passes it on.
constexpr char kForwardedAuthorization[] = "X-Taskgov-Authorization";

class KubeAdminApi final : public AdminApi {
 public:
  KubeAdminApi(std::unique_ptr<scheduler::kube::KubeClient> client, ConsoleRef ref)
      : client_(std::move(client)), ref_(std::move(ref)) {}

  common::Result<rapidjson::Document> Get(const std::string& target) override {
    // The API server's proxy path names the scheme it speaks to the Service ("https:NAME:PORT").
    const std::string service =
        (ref_.scheme == "https" ? "https:" : "") + ref_.name + ":" + std::to_string(ref_.port);
    const std::string path = ref_.url.empty() ? "/api/v1/namespaces/" + ref_.ns + "/services/" +
                                                    service + "/proxy" + target
                                              : target;
    // Through the proxy the token goes in the header the console reads it from there (the API
    // server keeps Authorization); directly, Authorization reaches the console. A console token
    // (--console-token) goes instead of the kubeconfig's.
    scheduler::kube::CallOptions call;
    call.forward_token_header = ref_.url.empty() ? kForwardedAuthorization : "";
    if (!ref_.token.empty()) {
      call.forwarded_token = ref_.token;
      if (!ref_.url.empty()) call.forward_token_header = "Authorization";
    }
    scheduler::kube::ApiResult<rapidjson::Document> reply =
        client_->CallJson("GET", path, "", call);
    if (reply.ok()) return std::move(reply).value();
    const scheduler::kube::ApiError& e = reply.error();
    std::string why = "the extender's admin API (" + where() + ") ";
    if (e.status == 401 && ref_.url.empty()) {
      why += "answered 401 Unauthorized (" + e.message +
             "): the console checks a bearer token issued for its audience, which the CLI "
             "passes through the API server's proxy in " +
             kForwardedAuthorization +
             ": give one with --console-token or $TASKGOV_CONSOLE_TOKEN (kubectl create token "
             "SA --audience taskgov), or connect with --console-url after kubectl port-forward";
    } else if (e.status == 403 && ref_.url.empty()) {
      why += "is not readable with your credentials (" + e.message +
             "): reading it needs get on services/proxy in namespace " + ref_.ns +
             "; or connect with --console-url after kubectl port-forward";
    } else if (e.status == 401 || e.status == 403) {
      why += "refused the request (" + std::to_string(e.status) + " " + e.message +
             "): the console needs a bearer token that TokenReview accepts and get on "
             "workloads.taskgov.io";
    } else if (e.status == 400 || e.status == 405) {
      why += "rejected the request: " + e.ToString() + " (a CLI newer or older than the extender?)";
    } else if (e.status == 404 && !ref_.url.empty()) {
      why += "has no " + target + " (" + e.message + "): is that URL the extender's console?";
    } else {
      why += "did not answer: " + e.ToString() + "; " + Fixes(ref_);
    }
    return common::Error{why};
  }

  std::string where() const override {
    return ref_.url.empty() ? ref_.ToString() + " through the API server's proxy" : ref_.url;
  }

 private:
  std::unique_ptr<scheduler::kube::KubeClient> client_;
  const ConsoleRef ref_;
};

}  // namespace

common::Result<std::unique_ptr<AdminApi>> ConnectAdminApi(const Invocation& inv) {
  common::Result<std::unique_ptr<scheduler::kube::KubeClient>> client =
      inv.env.kube(inv.global, inv.global.console.url);
  if (!client.ok()) return client.error();
  return std::unique_ptr<AdminApi>(
      std::make_unique<KubeAdminApi>(std::move(*client), inv.global.console));
}

void NoteMissingLive(const Invocation& inv, const std::string& what, const common::Error& why) {
  inv.err() << "note: " << what << " not shown: " << why.message << "\n";
}

common::Result<std::vector<LiveTeam>> DecodeTeams(const Value& reply) {
  const Value* items = Field(reply, "items");
  if (items == nullptr || !items->IsArray()) {
    return common::Error{"the admin API's /api/v1/teams reply has no items list"};
  }
  std::vector<LiveTeam> teams;
  for (const Value& t : items->GetArray()) {
    LiveTeam team;
    team.name = StringField(t, "name");
    if (const Value* quotas = Field(t, "quotas"); quotas != nullptr && quotas->IsArray()) {
      for (const Value& q : quotas->GetArray()) {
        LiveQuota line;
        line.flavor = StringField(q, "flavor");
        line.resource = StringField(q, "resource");
        line.nominal = StringField(q, "nominal");
        if (const Value* b = Field(q, "borrowingLimit"); b != nullptr && b->IsString()) {
          line.borrowing_limit = std::string(b->GetString(), b->GetStringLength());
        }
        line.usage = StringField(q, "usage");
        line.borrowed = StringField(q, "borrowed");
        line.lent = StringField(q, "lent");
        team.quotas.push_back(std::move(line));
      }
    }
    if (const Value* pods = Field(t, "pods")) {
      team.running_pods = IntField(*pods, "running");
      team.pending_pods = IntField(*pods, "pending");
    }
    if (const Value* w = Field(t, "workloads")) {
      team.admitted_workloads = IntField(*w, "admitted");
      team.pending_workloads = IntField(*w, "pending");
    }
    teams.push_back(std::move(team));
  }
  return teams;
}

common::Result<LiveWorkload> DecodeWorkload(const Value& item) {
  if (!item.IsObject()) return common::Error{"a workload of the admin API is not an object"};
  LiveWorkload w;
  w.ns = StringField(item, "namespace");
  w.name = StringField(item, "name");
  w.kind = StringField(item, "kind");
  w.team = StringField(item, "team");
  w.state = StringField(item, "state");
  w.priority_class = StringField(item, "priorityClass");
  w.priority = IntField(item, "priority");
  w.pods = IntField(item, "pods");
  w.declared_pods = IntField(item, "declaredPods");
  w.instance_type = StringField(item, "instanceType");
  if (const Value* states = Field(item, "podStates"); states != nullptr && states->IsObject()) {
    for (const auto& m : states->GetObject()) {
      if (m.value.IsInt64()) w.pod_states[m.name.GetString()] = m.value.GetInt64();
    }
  }
  if (const Value* r = Field(item, "request"); r != nullptr && r->IsObject()) {
    for (const auto& m : r->GetObject()) {
      if (m.value.IsString()) w.request[m.name.GetString()] = m.value.GetString();
    }
  }
  if (const Value* q = Field(item, "queuePosition"); q != nullptr && q->IsInt64()) {
    w.queue_position = q->GetInt64();
  }
  if (const Value* t = Field(item, "topology"); t != nullptr && t->IsObject()) {
    std::string level = StringField(*t, "level");
    level = level.substr(level.rfind('/') + 1);  // its name part: network-node-layer-2
    const Value* required = Field(*t, "required");
    w.topology =
        level + " domain " + StringField(*t, "domain") +
        (required != nullptr && required->IsBool() && !required->GetBool() ? " (preferred)"
                                                                           : " (required)");
  }
  w.wait_seconds = IntField(item, "waitSeconds");
  if (const Value* r = Field(item, "refused"); r != nullptr && r->IsBool())
    w.refused = r->GetBool();
  w.refusal = StringField(item, "refusal");
  w.preemption = StringField(item, "preemption");
  w.why = StringField(item, "why");
  w.created = StringField(item, "createdAt");
  if (const Value* s = Field(item, "suspended"); s != nullptr && s->IsObject()) {
    JobSuspension suspension;
    suspension.by_taskgov = StringField(*s, "by") == "taskgov";
    suspension.reason = StringField(*s, "reason");
    suspension.since = StringField(*s, "since");
    suspension.suspensions = IntField(*s, "suspensions");
    w.suspended = std::move(suspension);
  }
  return w;
}

namespace {

std::optional<std::string> OptionalString(const Value& object, const char* name) {
  const Value* v = Field(object, name);
  if (v == nullptr || !v->IsString()) return std::nullopt;
  return std::string(v->GetString(), v->GetStringLength());
}

bool BoolField(const Value& object, const char* name) {
  const Value* v = Field(object, name);
  return v != nullptr && v->IsBool() && v->GetBool();
}

std::map<std::string, std::string> Amounts(const Value& object, const char* name) {
  std::map<std::string, std::string> out;
  const Value* v = Field(object, name);
  if (v == nullptr || !v->IsObject()) return out;
  for (const auto& m : v->GetObject()) {
    if (m.value.IsString()) out[m.name.GetString()] = m.value.GetString();
  }
  return out;
}

std::vector<ExplanationCheck> Checks(const Value& object) {
  std::vector<ExplanationCheck> out;
  const Value* checks = Field(object, "checks");
  if (checks == nullptr || !checks->IsArray()) return out;
  for (const Value& c : checks->GetArray()) {
    ExplanationCheck check;
    check.rule = StringField(c, "rule");
    check.passed = BoolField(c, "passed");
    check.detail = StringField(c, "detail");
    check.change = OptionalString(c, "change");
    out.push_back(std::move(check));
  }
  return out;
}

}  // namespace

std::vector<std::string> Explanation::Changes() const {
  std::vector<std::string> out;
  auto add = [&](const std::vector<ExplanationCheck>& checks) {
    for (const ExplanationCheck& c : checks) {
      if (c.passed || !c.change || c.change->empty()) continue;
      if (std::find(out.begin(), out.end(), *c.change) == out.end()) out.push_back(*c.change);
    }
  };
  add(checks);
  for (const ExplanationFlavor& f : flavors) add(f.checks);
  return out;
}

common::Result<Explanation> DecodeExplanation(const Value& reply) {
  if (!reply.IsObject() || StringField(reply, "kind") != "WorkloadExplanation") {
    return common::Error{"the admin API's reply is not a WorkloadExplanation"};
  }
  Explanation e;
  e.ns = StringField(reply, "namespace");
  e.name = StringField(reply, "name");
  // The workload's kind: "workloadKind", or a second "kind" member after the document's own.
  e.kind = StringField(reply, "workloadKind");
  for (const auto& m : reply.GetObject()) {
    if (e.kind.empty() && std::string_view(m.name.GetString()) == "kind" && m.value.IsString() &&
        std::string_view(m.value.GetString()) != "WorkloadExplanation") {
      e.kind = m.value.GetString();
    }
  }
  e.team = StringField(reply, "team");
  e.state = StringField(reply, "state");
  e.evaluated_pod = OptionalString(reply, "evaluatedPod");
  // "verdict" (the documented name) or "outlook" (the extender's own word for it).
  e.verdict = StringField(reply, "verdict");
  if (e.verdict.empty()) e.verdict = StringField(reply, "outlook");
  e.pods_not_created = IntField(reply, "podsNotCreated");
  e.summary = StringField(reply, "summary");
  e.request = Amounts(reply, "request");
  e.need = Amounts(reply, "need");
  e.checks = Checks(reply);
  if (const Value* flavors = Field(reply, "flavors"); flavors != nullptr && flavors->IsArray()) {
    for (const Value& f : flavors->GetArray()) {
      ExplanationFlavor flavor;
      flavor.flavor = StringField(f, "flavor");
      flavor.mode = StringField(f, "mode");
      flavor.admissible = BoolField(f, "admissible");
      flavor.checks = Checks(f);
      if (const Value* quota = Field(f, "quota"); quota != nullptr && quota->IsArray()) {
        for (const Value& q : quota->GetArray()) {
          ExplanationQuota line;
          line.resource = StringField(q, "resource");
          line.need = StringField(q, "need");
          line.in_use = StringField(q, "inUse");
          line.nominal = StringField(q, "nominal");
          line.limit = OptionalString(q, "limit").value_or("unlimited");  // null: no cap
          line.borrowing_limit = OptionalString(q, "borrowingLimit");
          line.pool_used = StringField(q, "poolUsed");
          line.pool_capacity = StringField(q, "poolCapacity");
          line.others_borrowed = OptionalString(q, "othersBorrowed").value_or("-");
          line.fits = BoolField(q, "fits");
          flavor.quota.push_back(std::move(line));
        }
      }
      e.flavors.push_back(std::move(flavor));
    }
  }
  e.preemption = StringField(reply, "preemption");
  return e;
}

common::Result<std::vector<LiveTeam>> ReadTeams(AdminApi& api) {
  common::Result<rapidjson::Document> reply = api.Get("/api/v1/teams");
  if (!reply.ok()) return reply.error();
  return DecodeTeams(*reply);
}

common::Result<std::vector<LiveWorkload>> ReadWorkloads(AdminApi& api, const std::string& query) {
  std::vector<LiveWorkload> out;
  std::string continue_token;
  for (int page = 0; page < 1000; ++page) {
    std::string target = "/api/v1/workloads?limit=500";
    if (!query.empty()) target += "&" + query;
    if (!continue_token.empty())
      target += "&continue=" + scheduler::kube::QueryEscape(continue_token);
    common::Result<rapidjson::Document> reply = api.Get(target);
    if (!reply.ok()) return reply.error();
    const Value* items = Field(*reply, "items");
    if (items == nullptr || !items->IsArray()) {
      return common::Error{"the admin API's /api/v1/workloads reply has no items list"};
    }
    for (const Value& item : items->GetArray()) {
      common::Result<LiveWorkload> w = DecodeWorkload(item);
      if (!w.ok()) return w.error();
      out.push_back(std::move(*w));
    }
    continue_token = StringField(*reply, "continue");
    if (continue_token.empty()) return out;
  }
  return common::Error{"the admin API's workload list did not end after 1000 pages"};
}

}  // namespace taskgov::cli
