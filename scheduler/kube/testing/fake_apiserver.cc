#include "scheduler/kube/testing/fake_apiserver.h"

#include "scheduler/common/base64.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <array>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "scheduler/common/log.h"
#include "scheduler/common/testing/http_client.h"

namespace taskgov::scheduler::kube::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;
using Value = rapidjson::Value;
using Document = rapidjson::Document;

constexpr std::string_view kComponent = "fake-apiserver";
constexpr size_t kBodyLimit = 16 * 1024 * 1024;

// ------------------------------------------------------------------------------------------------
// Resource types

struct ResourceType {
  std::string group_version;  // "v1" or "<group>/<version>"
  std::string plural;
  std::string kind;
  bool namespaced;
  bool optional;  // a CRD that can be "uninstalled"
  [[nodiscard]] std::string api_version() const { return group_version; }
};

const std::vector<ResourceType>& Types() {
  static const std::vector<ResourceType> types = {
      {"v1", "pods", "Pod", true, false},
      {"v1", "nodes", "Node", false, false},
      {"v1", "namespaces", "Namespace", false, false},
      {"v1", "configmaps", "ConfigMap", true, false},
      {"coordination.k8s.io/v1", "leases", "Lease", true, false},
      {"events.k8s.io/v1", "events", "Event", true, false},
      {"kueue.x-k8s.io/v1beta1", "localqueues", "LocalQueue", true, true},
      {"scheduling.volcano.sh/v1beta1", "podgroups", "PodGroup", true, true},
      {"batch/v1", "jobs", "Job", true, false},
      {"jobset.x-k8s.io/v1alpha2", "jobsets", "JobSet", true, true},
      {"kubeflow.org/v1", "pytorchjobs", "PyTorchJob", true, true},
      {"kubeflow.org/v1", "tfjobs", "TFJob", true, true},
      {"kubeflow.org/v2beta1", "mpijobs", "MPIJob", true, true},
      {"kubeflow.org/v1", "xgboostjobs", "XGBoostJob", true, true},
      {"kubeflow.org/v1", "paddlejobs", "PaddleJob", true, true},
      {"kubeflow.org/v1", "jaxjobs", "JAXJob", true, true},
      {"ray.io/v1", "rayclusters", "RayCluster", true, true},
      {"ray.io/v1", "rayjobs", "RayJob", true, true},
  };
  return types;
}

const ResourceType* TypeByPlural(std::string_view plural) {
  for (const ResourceType& t : Types()) {
    if (t.plural == plural) return &t;
  }
  return nullptr;
}

const ResourceType* TypeByPath(std::string_view group_version, std::string_view plural) {
  for (const ResourceType& t : Types()) {
    if (t.group_version == group_version && t.plural == plural) return &t;
  }
  return nullptr;
}

// ------------------------------------------------------------------------------------------------
// JSON and text helpers

std::string Serialize(const Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  common::log::AppendJsonEscaped(text, &out);
  out += "\"";
  return out;
}

const Value* Member(const Value& object, std::string_view name) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(Value(rapidjson::StringRef(name.data(), name.size())));
  return it == object.MemberEnd() ? nullptr : &it->value;
}

// A dotted path ("status.phase") as text: strings as they are, booleans and numbers printed,
// anything else (or absent) "".
std::string PathText(const Value& object, std::string_view path) {
  const Value* v = &object;
  while (!path.empty()) {
    size_t dot = path.find('.');
    v = Member(*v, path.substr(0, dot));
    if (v == nullptr) return "";
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  if (v->IsString()) return std::string(v->GetString(), v->GetStringLength());
  if (v->IsBool()) return v->GetBool() ? "true" : "false";
  if (v->IsInt64()) return std::to_string(v->GetInt64());
  return "";
}

Value& EnsureObject(Document& doc, Value& parent, const char* name) {
  auto it = parent.FindMember(name);
  if (it != parent.MemberEnd() && it->value.IsObject()) return it->value;
  if (it != parent.MemberEnd()) parent.RemoveMember(it);
  parent.AddMember(Value(name, doc.GetAllocator()), Value(rapidjson::kObjectType),
                   doc.GetAllocator());
  return parent[name];
}

void SetString(Document& doc, Value& object, const char* name, std::string_view value) {
  Value v(value.data(), static_cast<rapidjson::SizeType>(value.size()), doc.GetAllocator());
  auto it = object.FindMember(name);
  if (it != object.MemberEnd()) {
    it->value = v;
  } else {
    object.AddMember(Value(name, doc.GetAllocator()), v, doc.GetAllocator());
  }
}

// RFC 7386 JSON merge patch: an object patch merges member by member (recursively; a null member
// removes that member), anything else replaces `target`.
void MergePatch(Value& target, const Value& patch, Document::AllocatorType& a) {
  if (!patch.IsObject()) {
    target.CopyFrom(patch, a);
    return;
  }
  if (!target.IsObject()) target.SetObject();
  for (const auto& m : patch.GetObject()) {
    auto it = target.FindMember(m.name);
    if (m.value.IsNull()) {
      if (it != target.MemberEnd()) target.EraseMember(it);
    } else if (it != target.MemberEnd()) {
      MergePatch(it->value, m.value, a);
    } else {
      Value added;  // merged into null: an object loses its null members
      MergePatch(added, m.value, a);
      target.AddMember(Value(m.name, a), added, a);
    }
  }
}

// Whether object.status.conditions holds `type` with status "True".
bool ConditionIsTrue(const Value& object, std::string_view type) {
  const Value* status = Member(object, "status");
  const Value* conditions = status == nullptr ? nullptr : Member(*status, "conditions");
  if (conditions == nullptr || !conditions->IsArray()) return false;
  for (const Value& c : conditions->GetArray()) {
    if (PathText(c, "type") == type && PathText(c, "status") == "True") return true;
  }
  return false;
}

struct Condition {
  std::string type;
  std::string status;  // "True" or "False"
  std::string reason;
  std::string message;
};

// Sets `condition` in object.status.conditions; true when anything changed. A condition of that
// type with another status, reason or message is rewritten, a missing one appended unless its
// status is "False" (the Job controller's ensureJobConditionStatus, the training operator's
// UpdateJobConditions, podutil.UpdatePodCondition); lastTransitionTime and `time_field`
// (lastProbeTime for Jobs, lastUpdateTime for Kubeflow jobs; nullptr: none) become `now`.
bool SetCondition(Document& doc, Value& object, const Condition& condition, const std::string& now,
                  const char* time_field) {
  auto& a = doc.GetAllocator();
  Value& status = EnsureObject(doc, object, "status");
  auto list = status.FindMember("conditions");
  if (list == status.MemberEnd() || !list->value.IsArray()) {
    if (list != status.MemberEnd()) status.RemoveMember(list);
    status.AddMember("conditions", Value(rapidjson::kArrayType), a);
    list = status.FindMember("conditions");
  }
  Value* target = nullptr;
  for (Value& c : list->value.GetArray()) {
    if (PathText(c, "type") == condition.type) target = &c;
  }
  if (target == nullptr) {
    if (condition.status == "False") return false;
    list->value.PushBack(Value(rapidjson::kObjectType), a);
    target = &list->value[list->value.Size() - 1];
    SetString(doc, *target, "type", condition.type);
  } else if (PathText(*target, "status") == condition.status &&
             PathText(*target, "reason") == condition.reason &&
             PathText(*target, "message") == condition.message) {
    return false;
  }
  SetString(doc, *target, "status", condition.status);
  SetString(doc, *target, "reason", condition.reason);
  SetString(doc, *target, "message", condition.message);
  if (time_field != nullptr) SetString(doc, *target, time_field, now);
  SetString(doc, *target, "lastTransitionTime", now);
  return true;
}

std::string Rfc3339(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string PercentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%' && i + 2 < text.size()) {
      auto hex = [](char h) -> int {
        if (h >= '0' && h <= '9') return h - '0';
        if (h >= 'a' && h <= 'f') return h - 'a' + 10;
        if (h >= 'A' && h <= 'F') return h - 'A' + 10;
        return -1;
      };
      int hi = hex(text[i + 1]), lo = hex(text[i + 2]);
      if (hi < 0 || lo < 0) {
        out.push_back(c);
        continue;
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::map<std::string, std::string> ParseQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    size_t eq = pair.find('=');
    out[PercentDecode(pair.substr(0, eq))] =
        eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1));
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
  }
  return out;
}

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> parts;
  while (!path.empty()) {
    size_t slash = path.find('/');
    if (slash != 0) parts.push_back(PercentDecode(path.substr(0, slash)));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

std::string DefaultReason(int code) {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 409:
      return "Conflict";
    case 410:
      return "Expired";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 503:
      return "ServiceUnavailable";
    default:
      return "InternalError";
  }
}

std::string StatusJson(int code, std::string reason, const std::string& message,
                       const std::vector<std::string>& causes = {}) {
  if (reason.empty()) reason = DefaultReason(code);
  std::string out = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":";
  out += code < 300 ? "\"Success\"" : "\"Failure\"";
  out += ",\"message\":" + JsonString(message) + ",\"reason\":" + JsonString(reason);
  if (!causes.empty()) {
    out += ",\"details\":{\"causes\":[";
    for (size_t i = 0; i < causes.size(); ++i) {
      if (i > 0) out += ",";
      out += "{\"reason\":" + JsonString(causes[i]) + ",\"message\":" + JsonString(message) + "}";
    }
    out += "]}";
  }
  out += ",\"code\":" + std::to_string(code) + "}";
  return out;
}

// ------------------------------------------------------------------------------------------------
// Selectors

struct Selector {
  enum class Op { kEq, kNe, kExists, kNotExists };
  struct Term {
    std::string key;
    Op op;
    std::string value;
  };
  std::vector<Term> terms;
  bool labels = false;

  bool Matches(const Value& object) const {
    for (const Term& t : terms) {
      std::string actual;
      bool present;
      if (labels) {
        const Value* ls = Member(object, "metadata");
        ls = ls == nullptr ? nullptr : Member(*ls, "labels");
        const Value* v = ls == nullptr ? nullptr : Member(*ls, t.key);
        present = v != nullptr && v->IsString();
        if (present) actual = v->GetString();
      } else {
        actual = PathText(object, t.key);
        present = true;
      }
      switch (t.op) {
        case Op::kEq:
          if (!present || actual != t.value) return false;
          break;
        case Op::kNe:
          if (present && actual == t.value) return false;
          break;
        case Op::kExists:
          if (!present) return false;
          break;
        case Op::kNotExists:
          if (present) return false;
          break;
      }
    }
    return true;
  }
};

std::optional<Selector> ParseSelector(std::string_view text, bool labels) {
  Selector selector;
  selector.labels = labels;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view term = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (term.empty()) continue;
    Selector::Term t;
    size_t ne = term.find("!=");
    size_t eq = term.find('=');
    if (ne != std::string_view::npos) {
      t.key = std::string(term.substr(0, ne));
      t.op = Selector::Op::kNe;
      t.value = std::string(term.substr(ne + 2));
    } else if (eq != std::string_view::npos) {
      t.key = std::string(term.substr(0, eq));
      t.op = Selector::Op::kEq;
      size_t skip = eq + 1 < term.size() && term[eq + 1] == '=' ? 2 : 1;
      t.value = std::string(term.substr(eq + skip));
    } else if (labels && term[0] == '!') {
      t.key = std::string(term.substr(1));
      t.op = Selector::Op::kNotExists;
    } else if (labels) {
      t.key = std::string(term);
      t.op = Selector::Op::kExists;
    } else {
      return std::nullopt;
    }
    if (t.key.empty()) return std::nullopt;
    selector.terms.push_back(std::move(t));
  }
  return selector;
}

// ------------------------------------------------------------------------------------------------

struct Incoming {
  std::string method;
  std::string target;
  std::string path;
  std::map<std::string, std::string> query;
  std::string body;
  std::string content_type;  // the Content-Type header
  std::string authorization;
  std::string impersonate_user;
  std::vector<std::pair<std::string, std::string>> custom_headers;  // X-*, for the service proxy
  bool client_certificate = false;
  bool keep_alive = true;

  [[nodiscard]] bool watch() const {
    auto it = query.find("watch");
    return it != query.end() && (it->second == "true" || it->second == "1");
  }
};

struct Reply {
  Reply() = default;
  Reply(int s, std::string b) : status(s), body(std::move(b)) {}

  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool drop = false;
  // Watches: the stream starts; `pieces` are sent first; `end` finishes it right after them.
  bool watch = false;
  std::vector<std::string> pieces;
  bool end = false;
  int64_t timeout_seconds = 0;
  uint64_t watcher_id = 0;
};

class SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  virtual ~SessionBase() = default;
  virtual void Start() = 0;
  // Thread-safe (posted to the session's strand).
  virtual void Send(std::vector<std::string> pieces) = 0;
  virtual void EndStream(bool clean) = 0;
  virtual void Close() = 0;
};

struct Watcher {
  uint64_t id = 0;
  const ResourceType* type = nullptr;
  std::string ns;
  Selector fields;
  Selector labels;
  bool bookmarks = false;
  std::weak_ptr<SessionBase> session;
};

}  // namespace

// ================================================================================================

class FakeApiServer::Impl {
 public:
  explicit Impl(FakeApiServerOptions options)
      : options_(std::move(options)), ioc_(std::max(1, options_.io_threads)) {
    served_["localqueues"] = options_.serve_local_queues;
    served_["podgroups"] = options_.serve_pod_groups;
    tokens_ = options_.tokens;
    eviction_mode_ = options_.eviction_mode;
    job_controller_ = options_.simulate_job_controller;
  }
  void SetJobController(bool on) {
    std::lock_guard<std::mutex> lock(mu_);
    job_controller_ = on;
  }
  ~Impl() { Stop(); }

  common::Status Start();
  void Stop();
  uint16_t port() const { return port_; }
  bool tls() const { return tls_ != nullptr; }

  // Called on a session strand for every request: authentication and fault selection first,
  // then (after any fault delay) the reply.
  struct Preflight {
    bool control = false;
    bool authorized = true;
    std::optional<FaultRule> fault;
  };
  Preflight Check(const Incoming& in);
  Reply Handle(Incoming& in, const Preflight& preflight, const std::weak_ptr<SessionBase>& session);
  void WatcherClosed(uint64_t id);
  std::chrono::milliseconds piece_delay() const { return options_.watch_piece_delay; }

  // Public API (FakeApiServer forwards here).
  common::Result<std::string> Upsert(std::string_view resource, std::string_view json);
  bool Delete(std::string_view resource, const std::string& ns, const std::string& name);
  std::optional<std::string> Get(std::string_view resource, const std::string& ns,
                                 const std::string& name) const;
  std::vector<std::string> List(std::string_view resource) const;
  size_t Count(std::string_view resource) const;
  int64_t resource_version() const {
    std::lock_guard<std::mutex> lock(mu_);
    return rv_;
  }
  bool SetPodPhase(const std::string& ns, const std::string& name, const std::string& phase,
                   const std::string& start_time = "");
  void LoadSampleCluster();
  void AddFault(FaultRule rule) {
    std::lock_guard<std::mutex> lock(mu_);
    faults_.push_back(std::move(rule));
  }
  void ClearFaults() {
    std::lock_guard<std::mutex> lock(mu_);
    faults_.clear();
  }
  void SetAcceptedTokens(std::vector<std::string> tokens) {
    std::lock_guard<std::mutex> lock(mu_);
    tokens_ = std::move(tokens);
  }
  void SetAccessReviews(std::vector<ReviewUser> users, std::vector<AccessRule> rules) {
    std::lock_guard<std::mutex> lock(mu_);
    review_users_ = std::move(users);
    access_rules_ = std::move(rules);
  }
  std::pair<size_t, size_t> review_counts() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {token_reviews_, access_reviews_};
  }
  Reply TokenReviewLocked(const std::string& body);
  Reply AccessReviewLocked(const std::string& body);
  void SetRequestHook(RequestHook hook) {
    std::lock_guard<std::mutex> lock(mu_);
    request_hook_ = std::move(hook);
  }
  void SetServed(std::string_view resource, bool served) {
    std::lock_guard<std::mutex> lock(mu_);
    served_[std::string(resource)] = served;
  }
  void BlockEvictions(const std::string& pod, const std::string& message) {
    std::lock_guard<std::mutex> lock(mu_);
    blocked_[pod] = message;
  }
  // Service proxy backends, by "ns/name:port".
  struct ServiceBackend {
    std::string url;
    ServiceHandler handler;
  };
  void SetServiceBackend(const std::string& key, ServiceBackend backend) {
    std::lock_guard<std::mutex> lock(mu_);
    services_[key] = std::move(backend);
  }
  void RemoveServiceBackend(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    services_.erase(key);
  }
  void UnblockEvictions() {
    std::lock_guard<std::mutex> lock(mu_);
    blocked_.clear();
  }
  void SetEvictionMode(EvictionMode mode) {
    std::lock_guard<std::mutex> lock(mu_);
    eviction_mode_ = mode;
  }
  void CompleteEvictions();
  void SetWatchSplitter(std::function<std::vector<size_t>(size_t)> splitter) {
    std::lock_guard<std::mutex> lock(mu_);
    splitter_ = std::move(splitter);
  }
  enum class WatchAction { kEnd, kDrop, kExpire, kBookmark };
  void ActOnWatches(std::string_view resource, WatchAction action);
  void InjectWatchEvent(std::string_view resource, const std::string& type,
                        const std::string& object_json);
  void Compact() {
    std::lock_guard<std::mutex> lock(mu_);
    history_.clear();
    compacted_rv_ = rv_;
    NotifyLocked();
  }
  size_t open_watches(std::string_view resource) const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& w : watchers_) n += w->type->plural == resource ? 1 : 0;
    return n;
  }
  uint64_t watches_started(std::string_view resource) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = watches_started_.find(std::string(resource));
    return it == watches_started_.end() ? 0 : it->second;
  }
  std::vector<RecordedRequest> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  std::vector<std::string> bindings() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bindings_;
  }
  std::vector<std::string> evictions() const {
    std::lock_guard<std::mutex> lock(mu_);
    return evictions_;
  }
  std::vector<std::string> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  std::vector<std::string> lease_writes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lease_writes_;
  }
  bool WaitFor(const std::function<bool()>& predicate, std::chrono::milliseconds timeout) const;

 private:
  template <typename Stream>
  friend class Session;

  struct Stored {
    std::string json;
    std::string ns;
  };
  struct HistoryEntry {
    int64_t rv;
    const ResourceType* type;
    std::string ns;
    std::string event_type;
    std::string json;
    std::string prev;
  };

  void Accept();
  void ScheduleBookmarks();

  // All *Locked functions require mu_.
  void NotifyLocked() {
    ++change_seq_;
    change_cv_.notify_all();
  }
  bool ServedLocked(const ResourceType& type) const {
    if (!type.optional) return true;
    auto it = served_.find(type.plural);
    return it == served_.end() || it->second;
  }
  std::vector<std::string> PiecesLocked(const std::string& line) const;
  std::optional<std::string> EventLineLocked(const Watcher& w, const HistoryEntry& e) const;
  std::string BookmarkLineLocked(const Watcher& w) const;
  void CommitLocked(const ResourceType& type, const std::string& ns, const std::string& event_type,
                    const std::string& json, const std::string& prev);
  // Stores `doc` (an object) as `type`: assigns resourceVersion, and uid / creationTimestamp
  // when missing. `create`: fails when it exists; `expected_rv`: fails when it differs.
  // `dry_run` (dryRun=All): every check, and the reply the write would give, without storing
  // anything (the reply keeps the current resourceVersion).
  Reply WriteLocked(const ResourceType& type, Document& doc, bool create, bool update,
                    std::string* stored_json, bool dry_run = false);
  bool DeleteLocked(const ResourceType& type, const std::string& key);
  void RemoveWatcherLocked(uint64_t id);

  Reply Route(Incoming& in, const std::weak_ptr<SessionBase>& session);
  // GET .../services/{svc}/proxy/...: forwarded without mu_ held.
  Reply ProxyService(const Incoming& in, const std::string& ns, const std::string& service);
  Reply DiscoveryLocked(const std::string& group_version) const;
  // The Job controller (options_.simulate_job_controller); job_controller_busy_ keeps its own
  // writes from re-entering it. One sync of a batch/v1 Job, as syncJob: `gone_pod`, when not
  // null, is the last state of one of its pods that was just deleted.
  void JobWrittenLocked(const std::string& job_json, const Value* gone_pod = nullptr);
  // A pod of a Job as its controller sees it.
  struct JobPod {
    std::string key;
    std::string uid;
    std::string phase;
    int64_t index = -1;        // batch.kubernetes.io/job-completion-index
    bool terminating = false;  // metadata.deletionTimestamp is set
    bool gone = false;         // deleted: `doc` is its last state
    Document doc;
  };
  // What one sync newly learnt from finished pods.
  struct JobTally {
    int64_t failed = 0;
    int64_t succeeded = 0;       // NonIndexed Jobs
    std::set<int64_t> complete;  // Indexed Jobs: every succeeded index (status.completedIndexes)
    std::string fail_job;        // a podFailurePolicy FailJob rule matched: the message
  };
  std::vector<JobPod> JobPodsLocked(const Value& job, const Value* gone_pod);
  JobTally CountFinishedPodsLocked(const Value& job, const std::vector<JobPod>& pods);
  // Creates pods for free indexes (lowest first, `taken` excluded) until `active` reaches
  // `want`; returns the active count then.
  int64_t CreateJobPodsLocked(const Value& job, std::set<int64_t> taken, const JobTally& tally,
                              int64_t active, int64_t want);
  // The pods in `ns` whose owner is `uid`, by key.
  std::vector<std::pair<std::string, Document>> OwnedPodsLocked(const std::string& ns,
                                                                const std::string& uid);
  // As the Kubeflow training operator: a PyTorchJob's replicas as pods.
  void PyTorchJobWrittenLocked(const std::string& job_json);
  // A Job's or PyTorchJob's pods go with it.
  void JobDeletedLocked(const std::string& job_json);
  // A pod written or (`deleted`) deleted: its controller Job or PyTorchJob syncs.
  void OwnedPodChangedLocked(const std::string& pod_json, bool deleted);
  Reply Control(Incoming& in);
  Reply ListLocked(const ResourceType& type, const std::string& ns, const Incoming& in);
  Reply WatchLocked(const ResourceType& type, const std::string& ns, const Incoming& in,
                    const std::weak_ptr<SessionBase>& session);
  Reply BindLocked(const std::string& ns, const std::string& name, const std::string& body);
  Reply EvictLocked(const std::string& ns, const std::string& name, const std::string& body);
  Reply PatchLocked(const ResourceType& type, const std::string& ns, const std::string& name,
                    const Incoming& in, bool dry_run);

  const FakeApiServerOptions options_;
  // Declared before the objects that own sockets and timers, so it is destroyed after them.
  asio::io_context ioc_;
  std::unique_ptr<ssl::context> tls_;
  std::optional<tcp::acceptor> acceptor_;
  std::optional<asio::steady_timer> bookmark_timer_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
  bool started_ = false;
  bool stopped_ = false;

  mutable std::mutex mu_;
  mutable std::condition_variable change_cv_;
  uint64_t change_seq_ = 0;  // guarded by mu_
  // Store, guarded by mu_.
  std::map<std::string, std::map<std::string, Stored>> objects_;
  std::deque<HistoryEntry> history_;
  int64_t rv_ = 1000;
  int64_t compacted_rv_ = 0;
  uint64_t uid_seq_ = 0;
  std::vector<std::shared_ptr<Watcher>> watchers_;
  uint64_t watcher_seq_ = 0;
  std::map<std::string, uint64_t> watches_started_;
  std::map<std::string, bool> served_;
  std::vector<FaultRule> faults_;
  RequestHook request_hook_;
  std::vector<std::string> tokens_;
  std::vector<ReviewUser> review_users_;
  std::vector<AccessRule> access_rules_;
  size_t token_reviews_ = 0, access_reviews_ = 0;
  std::map<std::string, std::string> blocked_;
  EvictionMode eviction_mode_;
  std::set<std::string> pending_evictions_;  // pod keys
  std::function<std::vector<size_t>(size_t)> splitter_;
  std::vector<RecordedRequest> requests_;
  std::vector<std::string> bindings_, evictions_, events_, lease_writes_;
  std::vector<std::weak_ptr<SessionBase>> sessions_;
  std::map<std::string, ServiceBackend> services_;
  bool job_controller_ = false;  // guarded by mu_
  bool job_controller_busy_ = false;
  // Pod uids whose Job tracking finalizer the Job controller has removed (guarded by mu_): the
  // pod was counted (succeeded or failed) or let go uncounted, and is never counted again.
  std::set<std::string> released_pods_;
};

// ================================================================================================
// Sessions

namespace {

std::string Frame(std::string_view piece) {
  char head[24];
  snprintf(head, sizeof(head), "%zx\r\n", piece.size());
  std::string out(head);
  out.append(piece.data(), piece.size());
  out += "\r\n";
  return out;
}

}  // namespace

template <typename Stream>
class Session final : public SessionBase {
 public:
  template <typename... Args>
  Session(FakeApiServer::Impl* server, Args&&... args)
      : server_(server), stream_(std::forward<Args>(args)...), timer_(stream_.get_executor()) {}

  void Start() override {
    asio::dispatch(stream_.get_executor(), [self = Self()] { self->Handshake(); });
  }

  void Send(std::vector<std::string> pieces) override {
    asio::post(stream_.get_executor(), [self = Self(), pieces = std::move(pieces)]() mutable {
      if (self->closed_ || self->ending_) return;
      for (auto& p : pieces) self->outbox_.push_back(Frame(p));
      self->Flush();
    });
  }

  void EndStream(bool clean) override {
    asio::post(stream_.get_executor(), [self = Self(), clean] {
      if (self->closed_ || self->ending_) return;
      if (!clean) return self->Close();
      self->ending_ = true;
      self->outbox_.push_back("0\r\n\r\n");
      self->Flush();
    });
  }

  void Close() override {
    if (closed_) return;
    closed_ = true;
    if (watcher_id_ != 0) server_->WatcherClosed(watcher_id_);
    timer_.cancel();
    beast::error_code ec;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ec);
    beast::get_lowest_layer(stream_).socket().close(ec);
  }

 private:
  std::shared_ptr<Session> Self() { return std::static_pointer_cast<Session>(shared_from_this()); }

  void Handshake() {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      ReadRequest();
    } else {
      beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(30));
      stream_.async_handshake(ssl::stream_base::server, [self = Self()](beast::error_code ec) {
        if (ec) return self->Close();
        X509* cert = SSL_get1_peer_certificate(self->stream_.native_handle());
        if (cert != nullptr) {
          self->client_certificate_ =
              SSL_get_verify_result(self->stream_.native_handle()) == X509_V_OK;
          X509_free(cert);
        }
        self->ReadRequest();
      });
    }
  }

  void ReadRequest() {
    if (closed_) return;
    parser_.emplace();
    parser_->body_limit(kBodyLimit);
    beast::get_lowest_layer(stream_).expires_after(std::chrono::minutes(5));
    http::async_read(stream_, buffer_, *parser_,
                     [self = Self()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec) return Close();
    beast::get_lowest_layer(stream_).expires_never();
    auto req = parser_->release();
    parser_.reset();
    incoming_ = Incoming{};
    incoming_.method = std::string(req.method_string());
    incoming_.target = std::string(req.target());
    size_t q = incoming_.target.find('?');
    incoming_.path = incoming_.target.substr(0, q);
    if (q != std::string::npos) incoming_.query = ParseQuery(incoming_.target.substr(q + 1));
    incoming_.body = std::move(req.body());
    incoming_.content_type = std::string(req[http::field::content_type]);
    incoming_.authorization = std::string(req[http::field::authorization]);
    incoming_.impersonate_user = std::string(req["Impersonate-User"]);
    for (const auto& field : req) {
      const std::string_view name = field.name_string();
      if (name.size() > 2 && (name[0] == 'X' || name[0] == 'x') && name[1] == '-') {
        incoming_.custom_headers.emplace_back(std::string(name), std::string(field.value()));
      }
    }
    incoming_.client_certificate = client_certificate_;
    incoming_.keep_alive = req.keep_alive();
    FakeApiServer::Impl::Preflight preflight = server_->Check(incoming_);
    if (preflight.fault && preflight.fault->delay.count() > 0) {
      // A slow server: answer after the delay (other connections are not held up).
      timer_.expires_after(preflight.fault->delay);
      timer_.async_wait([self = Self(), preflight](beast::error_code ec) {
        if (ec || self->closed_) return;
        self->Respond(self->server_->Handle(self->incoming_, preflight, self->weak_from_this()));
      });
      return;
    }
    Respond(server_->Handle(incoming_, preflight, weak_from_this()));
  }

  void Respond(Reply reply) {
    if (reply.drop) return Close();
    if (reply.watch) return StartWatch(std::move(reply));
    std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " " +
                      ReasonPhrase(reply.status) + "\r\nContent-Type: application/json\r\n";
    for (const auto& [k, v] : reply.headers) out += k + ": " + v + "\r\n";
    out += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
    if (!incoming_.keep_alive) out += "Connection: close\r\n";
    out += "\r\n";
    out += reply.body;
    auto data = std::make_shared<std::string>(std::move(out));
    const bool keep_alive = incoming_.keep_alive;
    asio::async_write(stream_, asio::buffer(*data),
                      [self = Self(), data, keep_alive](beast::error_code ec, size_t) {
                        if (ec || !keep_alive) return self->Close();
                        self->ReadRequest();
                      });
  }

  void StartWatch(Reply reply) {
    watcher_id_ = reply.watcher_id;
    outbox_.push_back(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        "Connection: close\r\n\r\n");
    for (auto& p : reply.pieces) outbox_.push_back(Frame(p));
    if (reply.end) {
      ending_ = true;
      outbox_.push_back("0\r\n\r\n");
    } else if (reply.timeout_seconds > 0) {
      timer_.expires_after(std::chrono::seconds(reply.timeout_seconds));
      timer_.async_wait([self = Self()](beast::error_code ec) {
        if (ec || self->closed_ || self->ending_) return;
        if (self->watcher_id_ != 0) self->server_->WatcherClosed(self->watcher_id_);
        self->watcher_id_ = 0;
        self->ending_ = true;
        self->outbox_.push_back("0\r\n\r\n");
        self->Flush();
      });
    }
    // The client never writes on a watch: a completed read means it went away.
    stream_.async_read_some(asio::buffer(probe_),
                            [self = Self()](beast::error_code, size_t) { self->Close(); });
    Flush();
  }

  void Flush() {
    if (writing_ || closed_) return;
    if (outbox_.empty()) {
      if (ending_) Close();
      return;
    }
    writing_ = true;
    auto data = std::make_shared<std::string>(std::move(outbox_.front()));
    outbox_.pop_front();
    asio::async_write(
        stream_, asio::buffer(*data), [self = Self(), data](beast::error_code ec, size_t) {
          self->writing_ = false;
          if (ec) return self->Close();
          const auto delay = self->server_->piece_delay();
          if (delay.count() > 0 && !self->outbox_.empty() && !self->ending_) {
            self->writing_ = true;
            auto pause = std::make_shared<asio::steady_timer>(self->stream_.get_executor(), delay);
            pause->async_wait([self, pause](beast::error_code) {
              self->writing_ = false;
              self->Flush();
            });
            return;
          }
          self->Flush();
        });
  }

  FakeApiServer::Impl* server_;
  Stream stream_;
  asio::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Incoming incoming_;
  std::deque<std::string> outbox_;
  bool writing_ = false;
  bool ending_ = false;
  bool closed_ = false;
  bool client_certificate_ = false;
  uint64_t watcher_id_ = 0;
  char probe_[64];
};

// ================================================================================================
// Server lifecycle

common::Status FakeApiServer::Impl::Start() {
  if (started_) return common::Error{"fake API server already started"};
  started_ = true;
  if (!options_.tls_cert_pem.empty()) {
    tls_ = std::make_unique<ssl::context>(ssl::context::tls_server);
    beast::error_code ec;
    tls_->use_certificate_chain(asio::buffer(options_.tls_cert_pem), ec);
    if (ec) return common::Error{"fake API server: bad TLS certificate: " + ec.message()};
    tls_->use_private_key(asio::buffer(options_.tls_key_pem), ssl::context::pem, ec);
    if (ec) return common::Error{"fake API server: bad TLS key: " + ec.message()};
    if (!options_.client_ca_pem.empty()) {
      tls_->add_certificate_authority(asio::buffer(options_.client_ca_pem), ec);
      if (ec) return common::Error{"fake API server: bad client CA: " + ec.message()};
      tls_->set_verify_mode(ssl::verify_peer);
      // Accept any presented certificate chain at the TLS layer; verification is recorded and
      // decides authentication per request.
      SSL_CTX_set_verify(tls_->native_handle(), SSL_VERIFY_PEER,
                         [](int, X509_STORE_CTX*) { return 1; });
    }
  }
  beast::error_code ec;
  auto address = asio::ip::make_address(options_.address, ec);
  if (ec) return common::Error{"fake API server: bad address '" + options_.address + "'"};
  acceptor_.emplace(asio::make_strand(ioc_));
  tcp::endpoint endpoint(address, options_.port);
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return common::Error{"fake API server: cannot listen on " + options_.address + ": " +
                         ec.message()};
  port_ = acceptor_->local_endpoint().port();
  Accept();
  if (options_.bookmark_interval.count() > 0) {
    bookmark_timer_.emplace(ioc_);
    ScheduleBookmarks();
  }
  for (int i = 0; i < std::max(1, options_.io_threads); ++i) {
    threads_.emplace_back([this] { ioc_.run(); });
  }
  return common::Status::Ok();
}

void FakeApiServer::Impl::Accept() {
  acceptor_->async_accept(asio::make_strand(ioc_), [this](beast::error_code ec, tcp::socket s) {
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;
      return Accept();
    }
    beast::error_code opt_ec;
    s.set_option(tcp::no_delay(true), opt_ec);
    std::shared_ptr<SessionBase> session;
    if (tls_) {
      session = std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(this, std::move(s),
                                                                                *tls_);
    } else {
      session = std::make_shared<Session<beast::tcp_stream>>(this, std::move(s));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      sessions_.erase(std::remove_if(sessions_.begin(), sessions_.end(),
                                     [](const auto& w) { return w.expired(); }),
                      sessions_.end());
      sessions_.push_back(session);
    }
    session->Start();
    Accept();
  });
}

void FakeApiServer::Impl::ScheduleBookmarks() {
  bookmark_timer_->expires_after(options_.bookmark_interval);
  bookmark_timer_->async_wait([this](beast::error_code ec) {
    if (ec) return;
    for (const ResourceType& t : Types()) ActOnWatches(t.plural, WatchAction::kBookmark);
    ScheduleBookmarks();
  });
}

void FakeApiServer::Impl::Stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  ioc_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  // No I/O thread runs any more: the acceptor and the sessions can be closed from here.
  beast::error_code ec;
  acceptor_->close(ec);
  if (bookmark_timer_) bookmark_timer_->cancel();
  std::vector<std::shared_ptr<SessionBase>> sessions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& w : sessions_) {
      if (auto s = w.lock()) sessions.push_back(std::move(s));
    }
    sessions_.clear();
  }
  for (auto& s : sessions) s->Close();
  std::lock_guard<std::mutex> lock(mu_);
  watchers_.clear();
  NotifyLocked();
}

bool FakeApiServer::Impl::WaitFor(const std::function<bool()>& predicate,
                                  std::chrono::milliseconds timeout) const {
  const auto deadline = SteadyClock::now() + timeout;
  while (true) {
    uint64_t seq;
    {
      std::lock_guard<std::mutex> lock(mu_);
      seq = change_seq_;
    }
    if (predicate()) return true;
    std::unique_lock<std::mutex> lock(mu_);
    if (!change_cv_.wait_until(lock, deadline, [&] { return change_seq_ != seq; })) {
      lock.unlock();
      return predicate();
    }
  }
}

// ================================================================================================
// Store

std::vector<std::string> FakeApiServer::Impl::PiecesLocked(const std::string& line) const {
  if (!splitter_) return {line};
  std::vector<size_t> cuts = splitter_(line.size());
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::string> pieces;
  size_t start = 0;
  for (size_t cut : cuts) {
    if (cut <= start || cut >= line.size()) continue;
    pieces.push_back(line.substr(start, cut - start));
    start = cut;
  }
  pieces.push_back(line.substr(start));
  return pieces;
}

std::optional<std::string> FakeApiServer::Impl::EventLineLocked(const Watcher& w,
                                                                const HistoryEntry& e) const {
  if (w.type != e.type) return std::nullopt;
  if (!w.ns.empty() && w.ns != e.ns) return std::nullopt;
  Document now;
  now.Parse(e.json.c_str());
  auto matches = [&](const Value& object) {
    return w.fields.Matches(object) && w.labels.Matches(object);
  };
  const bool now_match = matches(now);
  bool was_match = false;
  if (!e.prev.empty()) {
    Document prev;
    prev.Parse(e.prev.c_str());
    was_match = matches(prev);
  }
  std::string type;
  if (e.event_type == "DELETED") {
    if (!now_match) return std::nullopt;
    type = "DELETED";
  } else if (e.event_type == "ADDED" || !was_match) {
    if (!now_match) return std::nullopt;
    type = "ADDED";
  } else {
    type = now_match ? "MODIFIED" : "DELETED";
  }
  return "{\"type\":\"" + type + "\",\"object\":" + e.json + "}\n";
}

std::string FakeApiServer::Impl::BookmarkLineLocked(const Watcher& w) const {
  return "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"" + w.type->kind + "\",\"apiVersion\":\"" +
         w.type->api_version() + "\",\"metadata\":{\"resourceVersion\":\"" + std::to_string(rv_) +
         "\"}}}\n";
}

void FakeApiServer::Impl::CommitLocked(const ResourceType& type, const std::string& ns,
                                       const std::string& event_type, const std::string& json,
                                       const std::string& prev) {
  history_.push_back(HistoryEntry{rv_, &type, ns, event_type, json, prev});
  while (history_.size() > options_.history_limit) {
    compacted_rv_ = history_.front().rv;
    history_.pop_front();
  }
  const HistoryEntry& entry = history_.back();
  for (const auto& w : watchers_) {
    std::optional<std::string> line = EventLineLocked(*w, entry);
    if (!line) continue;
    if (auto session = w->session.lock()) session->Send(PiecesLocked(*line));
  }
  NotifyLocked();
}

Reply FakeApiServer::Impl::WriteLocked(const ResourceType& type, Document& doc, bool create,
                                       bool update, std::string* stored_json, bool dry_run) {
  if (!doc.IsObject()) return Reply{400, StatusJson(400, "", "body is not a JSON object")};
  Value& meta = EnsureObject(doc, doc, "metadata");
  std::string name = PathText(doc, "metadata.name");
  if (name.empty()) {
    std::string generate = PathText(doc, "metadata.generateName");
    if (generate.empty()) {
      return Reply{422,
                   StatusJson(422, "Invalid", type.plural + ": metadata.name: Required value")};
    }
    name = generate + std::to_string(++uid_seq_ % 100000);
    SetString(doc, meta, "name", name);
  }
  std::string ns = type.namespaced ? PathText(doc, "metadata.namespace") : "";
  if (type.namespaced && ns.empty()) {
    ns = "default";
    SetString(doc, meta, "namespace", ns);
  }
  const std::string key = ns.empty() ? name : ns + "/" + name;
  auto& bucket = objects_[type.plural];
  auto existing = bucket.find(key);
  const std::string what = type.plural + " \"" + name + "\"";
  if (create && existing != bucket.end()) {
    return Reply{409, StatusJson(409, "AlreadyExists", what + " already exists")};
  }
  if (update && existing == bucket.end()) {
    return Reply{404, StatusJson(404, "NotFound", what + " not found")};
  }
  std::string prev;
  if (existing != bucket.end()) {
    prev = existing->second.json;
    Document old;
    old.Parse(prev.c_str());
    const std::string expected = PathText(doc, "metadata.resourceVersion");
    if (update && !expected.empty() && expected != PathText(old, "metadata.resourceVersion")) {
      return Reply{409,
                   StatusJson(409, "Conflict",
                              "Operation cannot be fulfilled on " + type.plural + " \"" + name +
                                  "\": the object has been modified; please apply your "
                                  "changes to the latest version and try again")};
    }
    for (const char* field : {"uid", "creationTimestamp"}) {
      const std::string old_value = PathText(old, std::string("metadata.") + field);
      if (PathText(doc, std::string("metadata.") + field).empty() && !old_value.empty()) {
        SetString(doc, meta, field, old_value);
      }
    }
  }
  if (PathText(doc, "metadata.uid").empty()) {
    char uid[48];
    snprintf(uid, sizeof(uid), "6b1f0000-0000-4000-8000-%012llx",
             static_cast<unsigned long long>(++uid_seq_));
    SetString(doc, meta, "uid", uid);
  }
  if (PathText(doc, "metadata.creationTimestamp").empty()) {
    SetString(doc, meta, "creationTimestamp", Rfc3339(std::chrono::system_clock::now()));
  }
  SetString(doc, doc, "apiVersion", type.api_version());
  SetString(doc, doc, "kind", type.kind);
  if (type.plural == "pods" && PathText(doc, "status.phase").empty()) {
    SetString(doc, EnsureObject(doc, doc, "status"), "phase", "Pending");
  }
  if (dry_run) {
    Document old;
    old.Parse(prev.c_str());
    SetString(doc, doc["metadata"], "resourceVersion",
              prev.empty() ? std::string() : PathText(old, "metadata.resourceVersion"));
    return Reply{prev.empty() ? 201 : 200, Serialize(doc)};
  }
  ++rv_;
  SetString(doc, doc["metadata"], "resourceVersion", std::to_string(rv_));
  std::string json = Serialize(doc);
  bucket[key] = Stored{json, ns};
  CommitLocked(type, ns, prev.empty() ? "ADDED" : "MODIFIED", json, prev);
  if (stored_json != nullptr) *stored_json = json;
  if (job_controller_ && !job_controller_busy_) {
    if (type.plural == "jobs") JobWrittenLocked(json);
    if (type.plural == "pytorchjobs") PyTorchJobWrittenLocked(json);
    if (type.plural == "pods") OwnedPodChangedLocked(json, false);
  }
  return Reply{prev.empty() ? 201 : 200, json};
}

bool FakeApiServer::Impl::DeleteLocked(const ResourceType& type, const std::string& key) {
  auto& bucket = objects_[type.plural];
  auto it = bucket.find(key);
  if (it == bucket.end()) return false;
  Stored stored = std::move(it->second);
  bucket.erase(it);
  pending_evictions_.erase(key);
  Document doc;
  doc.Parse(stored.json.c_str());
  ++rv_;
  SetString(doc, EnsureObject(doc, doc, "metadata"), "resourceVersion", std::to_string(rv_));
  const std::string json = Serialize(doc);
  CommitLocked(type, stored.ns, "DELETED", json, stored.json);
  if (job_controller_ && !job_controller_busy_) {
    if (type.plural == "jobs" || type.plural == "pytorchjobs") JobDeletedLocked(json);
    if (type.plural == "pods") OwnedPodChangedLocked(json, true);
  }
  return true;
}

void FakeApiServer::Impl::RemoveWatcherLocked(uint64_t id) {
  watchers_.erase(std::remove_if(watchers_.begin(), watchers_.end(),
                                 [id](const auto& w) { return w->id == id; }),
                  watchers_.end());
  NotifyLocked();
}

void FakeApiServer::Impl::WatcherClosed(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  RemoveWatcherLocked(id);
}

common::Result<std::string> FakeApiServer::Impl::Upsert(std::string_view resource,
                                                        std::string_view json) {
  const ResourceType* type = TypeByPlural(resource);
  if (type == nullptr) return common::Error{"unknown resource '" + std::string(resource) + "'"};
  Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError())
    return common::Error{"upsert " + std::string(resource) + ": invalid JSON"};
  std::lock_guard<std::mutex> lock(mu_);
  std::string stored;
  Reply reply = WriteLocked(*type, doc, false, false, &stored);
  if (reply.status >= 300)
    return common::Error{"upsert " + std::string(resource) + ": " + reply.body};
  return stored;
}

bool FakeApiServer::Impl::Delete(std::string_view resource, const std::string& ns,
                                 const std::string& name) {
  const ResourceType* type = TypeByPlural(resource);
  if (type == nullptr) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return DeleteLocked(*type, ns.empty() ? name : ns + "/" + name);
}

std::optional<std::string> FakeApiServer::Impl::Get(std::string_view resource,
                                                    const std::string& ns,
                                                    const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto bucket = objects_.find(std::string(resource));
  if (bucket == objects_.end()) return std::nullopt;
  auto it = bucket->second.find(ns.empty() ? name : ns + "/" + name);
  if (it == bucket->second.end()) return std::nullopt;
  return it->second.json;
}

std::vector<std::string> FakeApiServer::Impl::List(std::string_view resource) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  auto bucket = objects_.find(std::string(resource));
  if (bucket == objects_.end()) return out;
  for (const auto& [key, stored] : bucket->second) out.push_back(stored.json);
  return out;
}

size_t FakeApiServer::Impl::Count(std::string_view resource) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto bucket = objects_.find(std::string(resource));
  return bucket == objects_.end() ? 0 : bucket->second.size();
}

bool FakeApiServer::Impl::SetPodPhase(const std::string& ns, const std::string& name,
                                      const std::string& phase, const std::string& start_time) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& bucket = objects_["pods"];
  auto it = bucket.find(ns + "/" + name);
  if (it == bucket.end()) return false;
  Document doc;
  doc.Parse(it->second.json.c_str());
  Value& status = EnsureObject(doc, doc, "status");
  SetString(doc, status, "phase", phase);
  if (!start_time.empty()) SetString(doc, status, "startTime", start_time);
  Reply reply = WriteLocked(*TypeByPlural("pods"), doc, false, true, nullptr);
  return reply.status < 300;
}

void FakeApiServer::Impl::CompleteEvictions() {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> pending = pending_evictions_;
  for (const std::string& key : pending) DeleteLocked(*TypeByPlural("pods"), key);
  pending_evictions_.clear();
}

void FakeApiServer::Impl::ActOnWatches(std::string_view resource, WatchAction action) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Watcher>> keep;
  for (auto& w : watchers_) {
    if (w->type->plural != resource) {
      keep.push_back(w);
      continue;
    }
    auto session = w->session.lock();
    switch (action) {
      case WatchAction::kBookmark:
        if (session && w->bookmarks) session->Send(PiecesLocked(BookmarkLineLocked(*w)));
        keep.push_back(w);
        break;
      case WatchAction::kEnd:
        if (session) session->EndStream(true);
        break;
      case WatchAction::kDrop:
        if (session) session->EndStream(false);
        break;
      case WatchAction::kExpire:
        if (session) {
          session->Send(
              PiecesLocked("{\"type\":\"ERROR\",\"object\":" +
                           StatusJson(410, "Expired",
                                      "too old resource version: " + std::to_string(compacted_rv_) +
                                          " (" + std::to_string(rv_) + ")") +
                           "}\n"));
          session->EndStream(true);
        }
        break;
    }
  }
  watchers_ = std::move(keep);
  NotifyLocked();
}

void FakeApiServer::Impl::InjectWatchEvent(std::string_view resource, const std::string& type,
                                           const std::string& object_json) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string line = "{\"type\":\"" + type + "\",\"object\":" + object_json + "}\n";
  for (auto& w : watchers_) {
    if (w->type->plural != resource) continue;
    if (auto session = w->session.lock()) session->Send(PiecesLocked(line));
  }
}

// ================================================================================================
// Request handling

FakeApiServer::Impl::Preflight FakeApiServer::Impl::Check(const Incoming& in) {
  Preflight p;
  if (in.path.rfind("/fake/", 0) == 0) {
    p.control = true;
    return p;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!tokens_.empty() && !in.client_certificate) {
    p.authorized = false;
    const std::string prefix = "Bearer ";
    if (in.authorization.rfind(prefix, 0) == 0) {
      const std::string token = in.authorization.substr(prefix.size());
      p.authorized = std::find(tokens_.begin(), tokens_.end(), token) != tokens_.end();
    }
  }
  if (!p.authorized) return p;
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (!it->method.empty() && it->method != in.method) continue;
    if (!it->path_prefix.empty() && in.path.rfind(it->path_prefix, 0) != 0) continue;
    if (it->watch && *it->watch != in.watch()) continue;
    if (it->only_with_continue && in.query.count("continue") == 0) continue;
    p.fault = *it;
    if (it->times > 0 && --it->times == 0) faults_.erase(it);
    break;
  }
  return p;
}

Reply FakeApiServer::Impl::Handle(Incoming& in, const Preflight& preflight,
                                  const std::weak_ptr<SessionBase>& session) {
  if (preflight.control) return Control(in);
  Reply reply;
  const std::optional<FaultRule>& fault = preflight.fault;
  if (!preflight.authorized) {
    reply = Reply{401, StatusJson(401, "Unauthorized", "Unauthorized")};
  } else if (fault && fault->drop_connection) {
    reply.drop = true;
  } else if (fault && fault->status != 0) {
    reply.status = fault->status;
    reply.body =
        StatusJson(fault->status, fault->reason,
                   fault->message.empty() ? "injected fault" : fault->message, fault->causes);
    if (fault->retry_after_seconds >= 0) {
      reply.headers.emplace_back("Retry-After", std::to_string(fault->retry_after_seconds));
    }
  } else {
    RequestHook hook;
    {
      std::lock_guard<std::mutex> lock(mu_);
      hook = request_hook_;
    }
    if (hook) hook(in.method, in.path);
    reply = Route(in, session);
  }
  std::lock_guard<std::mutex> lock(mu_);
  requests_.push_back(RecordedRequest{
      in.method, in.target, in.path, in.authorization, in.body, in.client_certificate, in.watch(),
      reply.drop ? 0 : reply.status, SteadyClock::now(), in.impersonate_user});
  NotifyLocked();
  return reply;
}

// The string at `path` (member names) of `v`, or "".
std::string StringAt(const Value& v, std::initializer_list<const char*> path) {
  const Value* at = &v;
  for (const char* name : path) {
    if (!at->IsObject()) return "";
    auto m = at->FindMember(name);
    if (m == at->MemberEnd()) return "";
    at = &m->value;
  }
  return at->IsString() ? std::string(at->GetString(), at->GetStringLength()) : "";
}

Reply FakeApiServer::Impl::TokenReviewLocked(const std::string& body) {
  ++token_reviews_;
  Document doc;
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return Reply{400, StatusJson(400, "BadRequest", "the TokenReview is not a JSON object")};
  }
  const std::string token = StringAt(doc, {"spec", "token"});
  std::vector<std::string> asked;  // spec.audiences
  if (auto spec = doc.FindMember("spec"); spec != doc.MemberEnd() && spec->value.IsObject()) {
    if (auto a = spec->value.FindMember("audiences");
        a != spec->value.MemberEnd() && a->value.IsArray()) {
      for (const Value& v : a->value.GetArray()) {
        if (v.IsString()) asked.emplace_back(v.GetString());
      }
    }
  }
  if (asked.empty()) asked.push_back(kApiServerAudience);
  std::string out = R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":)";
  auto user = std::find_if(review_users_.begin(), review_users_.end(),
                           [&](const ReviewUser& u) { return !token.empty() && u.token == token; });
  std::vector<std::string> both;  // the token's audiences that were asked for
  if (user != review_users_.end()) {
    for (const std::string& a : user->audiences) {
      if (std::find(asked.begin(), asked.end(), a) != asked.end()) both.push_back(a);
    }
  }
  if (user == review_users_.end()) {
    out += R"({"authenticated":false,"error":"invalid bearer token"}})";
  } else if (!user->audiences.empty() && both.empty()) {
    out +=
        R"({"authenticated":false,"error":"token audiences is invalid for the target audiences"}})";
  } else {
    out += R"({"authenticated":true,"user":{"username":")" + user->username + R"(","groups":[)";
    for (size_t i = 0; i < user->groups.size(); ++i) {
      out += (i ? ",\"" : "\"") + user->groups[i] + "\"";
    }
    out += "]}";
    if (!both.empty()) {
      out += R"(,"audiences":[)";
      for (size_t i = 0; i < both.size(); ++i) out += (i ? ",\"" : "\"") + both[i] + "\"";
      out += "]";
    }
    out += "}}";
  }
  return Reply{201, out};
}

Reply FakeApiServer::Impl::AccessReviewLocked(const std::string& body) {
  ++access_reviews_;
  Document doc;
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return Reply{400,
                 StatusJson(400, "BadRequest", "the SubjectAccessReview is not a JSON object")};
  }
  const std::string user = StringAt(doc, {"spec", "user"});
  std::set<std::string> subjects = {user};
  if (auto spec = doc.FindMember("spec"); spec != doc.MemberEnd() && spec->value.IsObject()) {
    if (auto g = spec->value.FindMember("groups");
        g != spec->value.MemberEnd() && g->value.IsArray()) {
      for (const Value& group : g->value.GetArray()) {
        if (group.IsString()) subjects.insert(std::string("group:") + group.GetString());
      }
    }
  }
  const std::string verb = StringAt(doc, {"spec", "resourceAttributes", "verb"});
  const std::string group = StringAt(doc, {"spec", "resourceAttributes", "group"});
  const std::string resource = StringAt(doc, {"spec", "resourceAttributes", "resource"});
  const std::string ns = StringAt(doc, {"spec", "resourceAttributes", "namespace"});
  const bool allowed =
      std::any_of(access_rules_.begin(), access_rules_.end(), [&](const AccessRule& r) {
        return subjects.count(r.subject) > 0 && r.verb == verb && r.group == group &&
               r.resource == resource && (r.namespace_.empty() || r.namespace_ == ns);
      });
  return Reply{201, std::string(R"({"apiVersion":"authorization.k8s.io/v1",)") +
                        R"("kind":"SubjectAccessReview","status":{"allowed":)" +
                        (allowed ? "true" : "false") + "}}"};
}

Reply FakeApiServer::Impl::Route(Incoming& in, const std::weak_ptr<SessionBase>& session) {
  std::vector<std::string> parts = SplitPath(in.path);
  if (parts.size() >= 7 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "namespaces" &&
      parts[4] == "services" && parts[6] == "proxy") {
    return ProxyService(in, parts[3], parts[5]);
  }
  if (in.method == "GET" && ((parts.size() == 2 && parts[0] == "api" && parts[1] == "v1") ||
                             (parts.size() == 3 && parts[0] == "apis"))) {
    std::lock_guard<std::mutex> lock(mu_);
    return DiscoveryLocked(parts.size() == 2 ? "v1" : parts[1] + "/" + parts[2]);
  }
  std::string group_version;
  size_t i = 0;
  if (parts.size() >= 2 && parts[0] == "api" && parts[1] == "v1") {
    group_version = "v1";
    i = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    group_version = parts[1] + "/" + parts[2];
    i = 3;
  } else {
    return Reply{404,
                 StatusJson(404, "NotFound", "the server could not find the requested resource")};
  }
  std::string ns;
  std::vector<std::string> rest(parts.begin() + static_cast<ptrdiff_t>(i), parts.end());
  if (rest.size() >= 3 && rest[0] == "namespaces") {
    ns = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (rest.empty()) {
    return Reply{404,
                 StatusJson(404, "NotFound", "the server could not find the requested resource")};
  }
  if (rest.size() == 1 && in.method == "POST" && ns.empty()) {
    if (group_version == "authentication.k8s.io/v1" && rest[0] == "tokenreviews") {
      std::lock_guard<std::mutex> lock(mu_);
      return TokenReviewLocked(in.body);
    }
    if (group_version == "authorization.k8s.io/v1" && rest[0] == "subjectaccessreviews") {
      std::lock_guard<std::mutex> lock(mu_);
      return AccessReviewLocked(in.body);
    }
  }
  const ResourceType* type = TypeByPath(group_version, rest[0]);
  std::lock_guard<std::mutex> lock(mu_);
  if (type == nullptr || !ServedLocked(*type)) {
    return Reply{404,
                 StatusJson(404, "NotFound", "the server could not find the requested resource")};
  }
  const std::string name = rest.size() >= 2 ? rest[1] : "";
  const std::string sub = rest.size() >= 3 ? rest[2] : "";
  if (rest.size() > 3 || (!ns.empty() && !type->namespaced)) {
    return Reply{404,
                 StatusJson(404, "NotFound", "the server could not find the requested resource")};
  }
  const std::string key = ns.empty() ? name : ns + "/" + name;
  const std::string what = type->plural + " \"" + name + "\"";
  const auto dry_run_param = in.query.find("dryRun");
  const bool dry_run = dry_run_param != in.query.end();
  if (dry_run && (dry_run_param->second != "All" ||
                  (in.method != "POST" && in.method != "PUT" && in.method != "PATCH"))) {
    return Reply{400, StatusJson(400, "BadRequest",
                                 "dryRun: Unsupported value: \"" + dry_run_param->second +
                                     "\": supported values: \"All\" (on POST, PUT and PATCH)")};
  }
  if (name.empty()) {
    if (in.method == "GET") {
      return in.watch() ? WatchLocked(*type, ns, in, session) : ListLocked(*type, ns, in);
    }
    if (in.method == "POST") {
      Document doc;
      doc.Parse(in.body.c_str());
      if (doc.HasParseError() || !doc.IsObject()) {
        return Reply{400, StatusJson(400, "BadRequest", "request body is not a JSON object")};
      }
      if (type->namespaced) {
        if (ns.empty())
          return Reply{405, StatusJson(405, "MethodNotAllowed", "POST needs a namespace")};
        SetString(doc, EnsureObject(doc, doc, "metadata"), "namespace", ns);
      }
      std::string stored;
      Reply reply = WriteLocked(*type, doc, true, false, &stored, dry_run);
      if (dry_run) return reply;
      if (reply.status < 300 && type->plural == "events") events_.push_back(stored);
      if (reply.status < 300 && type->plural == "leases") lease_writes_.push_back("POST " + stored);
      return reply;
    }
    return Reply{405, StatusJson(405, "MethodNotAllowed", in.method + " not allowed")};
  }
  if (type->namespaced && ns.empty()) {
    return Reply{404,
                 StatusJson(404, "NotFound", "the server could not find the requested resource")};
  }
  if (!sub.empty()) {
    if (type->plural != "pods") {
      return Reply{404, StatusJson(404, "NotFound", "no subresource " + sub)};
    }
    if (sub == "binding" && in.method == "POST") return BindLocked(ns, name, in.body);
    if (sub == "eviction" && in.method == "POST") return EvictLocked(ns, name, in.body);
    if (sub != "status" || (in.method != "PUT" && in.method != "PATCH")) {
      return Reply{405, StatusJson(405, "MethodNotAllowed", in.method + " " + sub)};
    }
  }
  if (in.method == "PATCH") return PatchLocked(*type, ns, name, in, dry_run);
  auto& bucket = objects_[type->plural];
  auto it = bucket.find(key);
  if (in.method == "GET") {
    if (it == bucket.end()) return Reply{404, StatusJson(404, "NotFound", what + " not found")};
    return Reply{200, it->second.json};
  }
  if (in.method == "PUT") {
    Document doc;
    doc.Parse(in.body.c_str());
    if (doc.HasParseError() || !doc.IsObject()) {
      return Reply{400, StatusJson(400, "BadRequest", "request body is not a JSON object")};
    }
    if (PathText(doc, "metadata.name") != name) {
      return Reply{400, StatusJson(400, "BadRequest", "metadata.name does not match the path")};
    }
    if (type->namespaced) SetString(doc, EnsureObject(doc, doc, "metadata"), "namespace", ns);
    std::string stored;
    Reply reply = WriteLocked(*type, doc, false, true, &stored, dry_run);
    if (reply.status < 300) reply.status = 200;
    if (dry_run) return reply;
    if (reply.status < 300 && type->plural == "leases") lease_writes_.push_back("PUT " + stored);
    return reply;
  }
  if (in.method == "DELETE") {
    if (it == bucket.end()) return Reply{404, StatusJson(404, "NotFound", what + " not found")};
    std::string json = it->second.json;
    DeleteLocked(*type, key);
    return Reply{200, json};
  }
  return Reply{405, StatusJson(405, "MethodNotAllowed", in.method + " not allowed")};
}

// As the API server's patch handler (k8s.io/apiserver pkg/endpoints/handlers/patch.go): the
// content type names the patch kind; the patched object is checked and stored as an update.
Reply FakeApiServer::Impl::PatchLocked(const ResourceType& type, const std::string& ns,
                                       const std::string& name, const Incoming& in, bool dry_run) {
  std::string media = in.content_type.substr(0, in.content_type.find(';'));
  media.erase(std::remove_if(media.begin(), media.end(), [](unsigned char c) { return c == ' '; }),
              media.end());
  std::transform(media.begin(), media.end(), media.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // Every optional type is a custom resource: CRDs have no strategic merge patch. A built-in
  // type's strategic merge patch is applied as a merge patch (no stored object here has a list
  // with merge keys). JSON patch and server-side apply are not simulated.
  const bool custom = type.optional;
  if (media != "application/merge-patch+json" &&
      (custom || media != "application/strategic-merge-patch+json")) {
    return Reply{
        415, StatusJson(415, "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted "
                        "media types include: application/merge-patch+json" +
                            std::string(custom ? "" : ", application/strategic-merge-patch+json"))};
  }
  const std::string what = type.plural + " \"" + name + "\"";
  auto& bucket = objects_[type.plural];
  auto it = bucket.find(ns.empty() ? name : ns + "/" + name);
  if (it == bucket.end()) return Reply{404, StatusJson(404, "NotFound", what + " not found")};
  Document patch;
  patch.Parse(in.body.c_str());
  if (patch.HasParseError() || !patch.IsObject()) {
    return Reply{400, StatusJson(400, "BadRequest", "the patch is not a JSON object")};
  }
  Document doc;
  doc.Parse(it->second.json.c_str());
  const std::string version = PathText(doc, "metadata.resourceVersion");
  const std::string uid = PathText(doc, "metadata.uid");
  const std::string expected = PathText(patch, "metadata.resourceVersion");
  if (!expected.empty() && expected != version) {
    return Reply{409, StatusJson(409, "Conflict",
                                 "Operation cannot be fulfilled on " + what +
                                     ": the object has been modified; please apply your changes "
                                     "to the latest version and try again")};
  }
  MergePatch(doc, patch, doc.GetAllocator());
  if (PathText(doc, "metadata.name") != name) {
    return Reply{400, StatusJson(400, "BadRequest",
                                 "the name of the object (" + PathText(doc, "metadata.name") +
                                     ") does not match the name on the URL (" + name + ")")};
  }
  if (type.namespaced && PathText(doc, "metadata.namespace") != ns) {
    return Reply{400, StatusJson(400, "BadRequest",
                                 "the namespace of the provided object does not match the "
                                 "namespace sent on the request")};
  }
  const std::string new_uid = PathText(doc, "metadata.uid");
  if (!new_uid.empty() && new_uid != uid) {
    return Reply{422, StatusJson(422, "Invalid",
                                 type.kind + " \"" + name +
                                     "\" is invalid: metadata.uid: Invalid value: \"" + new_uid +
                                     "\": field is immutable")};
  }
  SetString(doc, EnsureObject(doc, doc, "metadata"), "resourceVersion", version);
  std::string stored;
  Reply reply = WriteLocked(type, doc, false, true, &stored, dry_run);
  if (reply.status < 300) reply.status = 200;
  if (!dry_run && reply.status < 300 && type.plural == "leases") {
    lease_writes_.push_back("PATCH " + stored);
  }
  return reply;
}

Reply FakeApiServer::Impl::ListLocked(const ResourceType& type, const std::string& ns,
                                      const Incoming& in) {
  auto get = [&](const char* key) {
    auto it = in.query.find(key);
    return it == in.query.end() ? std::string() : it->second;
  };
  std::optional<Selector> fields = ParseSelector(get("fieldSelector"), false);
  std::optional<Selector> labels = ParseSelector(get("labelSelector"), true);
  if (!fields || !labels) return Reply{400, StatusJson(400, "BadRequest", "invalid selector")};
  int64_t limit = 0;
  const std::string limit_text = get("limit");
  if (!limit_text.empty()) limit = std::strtoll(limit_text.c_str(), nullptr, 10);
  int64_t list_rv = rv_;
  std::string start_after;
  const std::string token = get("continue");
  if (!token.empty()) {
    common::Result<std::string> decoded = common::Base64Decode(token, "continue token");
    size_t bar = decoded.ok() ? decoded->find('|') : std::string::npos;
    if (!decoded.ok() || bar == std::string::npos) {
      return Reply{400, StatusJson(400, "BadRequest", "invalid continue token")};
    }
    list_rv = std::strtoll(decoded->substr(0, bar).c_str(), nullptr, 10);
    start_after = decoded->substr(bar + 1);
    if (list_rv < compacted_rv_) {
      return Reply{410,
                   StatusJson(410, "Expired",
                              "The provided continue parameter is too old to display a consistent "
                              "list result. You can start a new list without the continue "
                              "parameter, or use the continue token in this response to retrieve "
                              "the remainder of the results. Continuing with the provided token "
                              "results in an inconsistent list - objects that were created, "
                              "modified, or deleted between the time the first chunk was returned "
                              "and now may show up in the list.")};
    }
  }
  std::string items;
  int64_t count = 0;
  std::string last_key;
  bool more = false;
  const auto& bucket = objects_[type.plural];
  for (auto it = start_after.empty() ? bucket.begin() : bucket.upper_bound(start_after);
       it != bucket.end(); ++it) {
    if (!ns.empty() && it->second.ns != ns) continue;
    Document doc;
    doc.Parse(it->second.json.c_str());
    if (!fields->Matches(doc) || !labels->Matches(doc)) continue;
    if (limit > 0 && count == limit) {
      more = true;
      break;
    }
    if (count > 0) items += ",";
    items += it->second.json;
    last_key = it->first;
    ++count;
  }
  std::string body = "{\"kind\":\"" + type.kind + "List\",\"apiVersion\":\"" + type.api_version() +
                     "\",\"metadata\":{\"resourceVersion\":\"" + std::to_string(list_rv) + "\"";
  if (more) {
    body += ",\"continue\":" +
            JsonString(common::Base64Encode(std::to_string(list_rv) + "|" + last_key));
  }
  body += "},\"items\":[" + items + "]}";
  return Reply{200, std::move(body)};
}

Reply FakeApiServer::Impl::WatchLocked(const ResourceType& type, const std::string& ns,
                                       const Incoming& in,
                                       const std::weak_ptr<SessionBase>& session) {
  auto get = [&](const char* key) {
    auto it = in.query.find(key);
    return it == in.query.end() ? std::string() : it->second;
  };
  std::optional<Selector> fields = ParseSelector(get("fieldSelector"), false);
  std::optional<Selector> labels = ParseSelector(get("labelSelector"), true);
  if (!fields || !labels) return Reply{400, StatusJson(400, "BadRequest", "invalid selector")};
  auto watcher = std::make_shared<Watcher>();
  watcher->id = ++watcher_seq_;
  watcher->type = &type;
  watcher->ns = ns;
  watcher->fields = *fields;
  watcher->labels = *labels;
  watcher->bookmarks = get("allowWatchBookmarks") == "true";
  watcher->session = session;
  Reply reply;
  reply.watch = true;
  const std::string timeout = get("timeoutSeconds");
  reply.timeout_seconds = timeout.empty() ? options_.default_watch_timeout_seconds
                                          : std::strtoll(timeout.c_str(), nullptr, 10);
  ++watches_started_[type.plural];
  const std::string version = get("resourceVersion");
  if (version.empty() || version == "0") {
    for (const auto& [key, stored] : objects_[type.plural]) {
      HistoryEntry synthetic{rv_, &type, stored.ns, "ADDED", stored.json, ""};
      if (auto line = EventLineLocked(*watcher, synthetic)) {
        for (auto& p : PiecesLocked(*line)) reply.pieces.push_back(std::move(p));
      }
    }
  } else {
    const int64_t from = std::strtoll(version.c_str(), nullptr, 10);
    if (from < compacted_rv_) {
      reply.pieces = PiecesLocked("{\"type\":\"ERROR\",\"object\":" +
                                  StatusJson(410, "Expired",
                                             "too old resource version: " + version + " (" +
                                                 std::to_string(compacted_rv_) + ")") +
                                  "}\n");
      reply.end = true;
      NotifyLocked();
      return reply;
    }
    for (const HistoryEntry& e : history_) {
      if (e.rv <= from) continue;
      if (auto line = EventLineLocked(*watcher, e)) {
        for (auto& p : PiecesLocked(*line)) reply.pieces.push_back(std::move(p));
      }
    }
  }
  reply.watcher_id = watcher->id;
  watchers_.push_back(std::move(watcher));
  NotifyLocked();
  return reply;
}

Reply FakeApiServer::Impl::BindLocked(const std::string& ns, const std::string& name,
                                      const std::string& body) {
  Document binding;
  binding.Parse(body.c_str());
  if (binding.HasParseError() || !binding.IsObject()) {
    return Reply{400, StatusJson(400, "BadRequest", "binding body is not a JSON object")};
  }
  const std::string node = PathText(binding, "target.name");
  if (node.empty()) return Reply{422, StatusJson(422, "Invalid", "target.name: Required value")};
  auto& bucket = objects_["pods"];
  auto it = bucket.find(ns + "/" + name);
  if (it == bucket.end()) {
    return Reply{404, StatusJson(404, "NotFound", "pods \"" + name + "\" not found")};
  }
  Document pod;
  pod.Parse(it->second.json.c_str());
  const std::string uid = PathText(binding, "metadata.uid");
  if (!uid.empty() && uid != PathText(pod, "metadata.uid")) {
    return Reply{409, StatusJson(409, "Conflict",
                                 "Operation cannot be fulfilled on pods/binding \"" + name +
                                     "\": Precondition failed: UID in precondition: " + uid +
                                     ", UID in object meta: " + PathText(pod, "metadata.uid"))};
  }
  const std::string current = PathText(pod, "spec.nodeName");
  if (!current.empty()) {
    return Reply{409,
                 StatusJson(409, "Conflict",
                            "Operation cannot be fulfilled on pods/binding \"" + name + "\": pod " +
                                name + " is already assigned to node \"" + current + "\"")};
  }
  SetString(pod, EnsureObject(pod, pod, "spec"), "nodeName", node);
  if (options_.auto_run_bound_pods) {
    Value& status = EnsureObject(pod, pod, "status");
    SetString(pod, status, "phase", "Running");
    SetString(pod, status, "startTime", Rfc3339(std::chrono::system_clock::now()));
  }
  bindings_.push_back(body);
  Reply written = WriteLocked(*TypeByPlural("pods"), pod, false, true, nullptr);
  if (written.status >= 300) return written;
  return Reply{201, StatusJson(201, "", "")};
}

Reply FakeApiServer::Impl::EvictLocked(const std::string& ns, const std::string& name,
                                       const std::string& body) {
  Document eviction;
  eviction.Parse(body.c_str());
  if (eviction.HasParseError() || !eviction.IsObject()) {
    return Reply{400, StatusJson(400, "BadRequest", "eviction body is not a JSON object")};
  }
  if (PathText(eviction, "kind") != "Eviction") {
    return Reply{400, StatusJson(400, "BadRequest", "kind must be Eviction")};
  }
  const std::string key = ns + "/" + name;
  auto& bucket = objects_["pods"];
  auto it = bucket.find(key);
  if (it == bucket.end()) {
    return Reply{404, StatusJson(404, "NotFound", "pods \"" + name + "\" not found")};
  }
  Document pod;
  pod.Parse(it->second.json.c_str());
  const std::string uid = PathText(eviction, "deleteOptions.preconditions.uid");
  if (!uid.empty() && uid != PathText(pod, "metadata.uid")) {
    return Reply{409, StatusJson(409, "Conflict",
                                 "Precondition failed: UID in precondition: " + uid +
                                     ", UID in object meta: " + PathText(pod, "metadata.uid"))};
  }
  auto blocked = blocked_.find(key);
  if (blocked == blocked_.end()) blocked = blocked_.find("*");
  if (blocked != blocked_.end()) {
    return Reply{
        429, StatusJson(429, "TooManyRequests",
                        blocked->second.empty() ? "Cannot evict pod as it would violate the pod's "
                                                  "disruption budget."
                                                : blocked->second,
                        {"DisruptionBudget"})};
  }
  evictions_.push_back(body);
  // Accepted: the DisruptionTarget condition is written in one update before the delete, so the
  // pod's last state carries it (pkg/registry/core/pod/storage/eviction.go,
  // addConditionAndDeletePod).
  if (SetCondition(pod, pod,
                   {"DisruptionTarget", "True", "EvictionByEvictionAPI", "Eviction API: evicting"},
                   Rfc3339(std::chrono::system_clock::now()), nullptr)) {
    std::string stored;
    Reply written = WriteLocked(*TypeByPlural("pods"), pod, false, true, &stored);
    if (written.status >= 300) return written;
    // A controller reacting to the condition may have deleted it already.
    if (bucket.count(key) == 0) return Reply{201, StatusJson(201, "", "")};
    pod.Parse(stored.c_str());
  }
  int64_t grace = 30;
  const Value* options = Member(eviction, "deleteOptions");
  const Value* g = options == nullptr ? nullptr : Member(*options, "gracePeriodSeconds");
  if (g != nullptr && g->IsInt64()) grace = std::max<int64_t>(0, g->GetInt64());
  if (eviction_mode_ == EvictionMode::kImmediate ||
      (eviction_mode_ == EvictionMode::kGracePeriod && grace == 0)) {
    DeleteLocked(*TypeByPlural("pods"), key);
  } else if (pending_evictions_.insert(key).second) {
    Value& meta = EnsureObject(pod, pod, "metadata");
    SetString(pod, meta, "deletionTimestamp",
              Rfc3339(std::chrono::system_clock::now() + std::chrono::seconds(grace)));
    meta.RemoveMember("deletionGracePeriodSeconds");
    meta.AddMember("deletionGracePeriodSeconds", Value(grace), pod.GetAllocator());
    WriteLocked(*TypeByPlural("pods"), pod, false, true, nullptr);
    if (eviction_mode_ == EvictionMode::kGracePeriod) {
      auto timer = std::make_shared<asio::steady_timer>(ioc_, std::chrono::seconds(grace));
      const std::string pod_uid = PathText(pod, "metadata.uid");
      timer->async_wait([this, timer, key, pod_uid](beast::error_code ec) {
        if (ec) return;
        std::lock_guard<std::mutex> lock(mu_);
        auto& pods = objects_["pods"];
        auto found = pods.find(key);
        if (found == pods.end() || pending_evictions_.count(key) == 0) return;
        Document current;
        current.Parse(found->second.json.c_str());
        if (PathText(current, "metadata.uid") == pod_uid) DeleteLocked(*TypeByPlural("pods"), key);
      });
    }
  }
  return Reply{201, StatusJson(201, "", "")};
}

// ================================================================================================
// Discovery and the service proxy

Reply FakeApiServer::Impl::DiscoveryLocked(const std::string& group_version) const {
  std::string resources;
  for (const ResourceType& t : Types()) {
    if (t.group_version != group_version || !ServedLocked(t)) continue;
    if (!resources.empty()) resources += ",";
    resources += "{\"name\":" + JsonString(t.plural) +
                 ",\"singularName\":\"\",\"namespaced\":" + (t.namespaced ? "true" : "false") +
                 ",\"kind\":" + JsonString(t.kind) +
                 ",\"verbs\":[\"create\",\"delete\",\"get\",\"list\",\"update\",\"watch\"]}";
  }
  if (resources.empty()) {
    return Reply{404,
                 StatusJson(404, "NotFound", "the server could not find the requested resource")};
  }
  return Reply{200, "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":" +
                        JsonString(group_version) + ",\"resources\":[" + resources + "]}"};
}

Reply FakeApiServer::Impl::ProxyService(const Incoming& in, const std::string& ns,
                                        const std::string& service) {
  // {name}, {name}:{port}, {scheme}:{name} or {scheme}:{name}:{port}.
  std::vector<std::string> fields;
  for (size_t start = 0;;) {
    const size_t colon = service.find(':', start);
    fields.push_back(service.substr(start, colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  const bool tls = fields.size() > 1 && fields[0] == "https";
  if (fields.size() > 1 && (fields[0] == "http" || fields[0] == "https")) {
    fields.erase(fields.begin());
  }
  const std::string name = fields[0];
  const std::string port = fields.size() > 1 ? fields[1] : "";
  const std::string not_found = "services \"" + name + "\" not found";
  if (fields.size() > 2 || name.empty()) {
    return Reply{400, StatusJson(400, "BadRequest", "invalid service name " + service)};
  }
  ServiceBackend backend;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = port.empty() ? services_.end() : services_.find(ns + "/" + name + ":" + port);
    if (port.empty()) {  // the service's only port
      const std::string prefix = ns + "/" + name + ":";
      for (auto s = services_.lower_bound(prefix);
           s != services_.end() && s->first.rfind(prefix, 0) == 0; ++s) {
        it = s;
      }
    }
    if (it == services_.end()) return Reply{404, StatusJson(404, "NotFound", not_found)};
    backend = it->second;
  }
  if (in.method != "GET") {
    return Reply{405, StatusJson(405, "MethodNotAllowed",
                                 in.method + " through the service proxy is not simulated")};
  }
  // The target after ".../proxy", query included.
  const std::string marker = "/services/" + service + "/proxy";
  const size_t at = in.target.find(marker);
  std::string target = at == std::string::npos ? "/" : in.target.substr(at + marker.size());
  if (target.empty() || target[0] != '/') target = "/" + target;
  if (backend.handler) {
    auto [status, body] = backend.handler(in.method, target);
    return Reply{status, std::move(body)};
  }
  // "http://host:port[/base]" (or https://): where the Service's endpoint listens. As the API
  // server's proxy: the caller's credentials (Authorization, Impersonate-*) are not passed on,
  // other headers are (this simulation passes the X- ones); the path's scheme, not the URL's,
  // says how it speaks to the endpoint — TLS for "https:NAME:PORT", without verifying the
  // endpoint's certificate (kube-apiserver's proxy transport: InsecureSkipVerify, "proxying to
  // pods and services is IP-based"), plain HTTP otherwise.
  std::string rest;
  for (const char* scheme : {"http://", "https://"}) {
    if (backend.url.rfind(scheme, 0) == 0) rest = backend.url.substr(std::string(scheme).size());
  }
  const size_t slash = rest.find('/');
  const std::string base = slash == std::string::npos ? "" : rest.substr(slash);
  const std::string host_port = rest.substr(0, slash);
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) {
    return Reply{503, StatusJson(503, "ServiceUnavailable",
                                 "no endpoints available for service \"" + name + "\"")};
  }
  const std::string host = host_port.substr(0, colon);
  const auto endpoint_port = static_cast<uint16_t>(std::stoi(host_port.substr(colon + 1)));
  common::testing::HttpClientTls insecure;  // no CA: the endpoint is not verified
  insecure.alpn = {"http/1.1"};
  std::unique_ptr<common::testing::HttpClient> client =
      tls ? std::make_unique<common::testing::HttpClient>(host, endpoint_port, insecure,
                                                          std::chrono::seconds(10))
          : std::make_unique<common::testing::HttpClient>(host, endpoint_port,
                                                          std::chrono::seconds(10));
  common::Result<common::testing::HttpReply> reply =
      client->Request("GET", base + target, "", "application/json", in.custom_headers);
  if (!reply.ok()) {
    return Reply{503, StatusJson(503, "ServiceUnavailable",
                                 "error trying to reach service: " + reply.error().message)};
  }
  return Reply{reply->status, reply->body};
}

// ================================================================================================
// The Job controller

namespace {

int64_t IntAt(const Value& object, std::string_view path, int64_t fallback) {
  const std::string text = PathText(object, path);
  if (text.empty() || text == "true" || text == "false") return fallback;
  return std::strtoll(text.c_str(), nullptr, 10);
}

bool OwnedBy(const Value& pod, const std::string& uid) {
  const Value* meta = Member(pod, "metadata");
  const Value* owners = meta == nullptr ? nullptr : Member(*meta, "ownerReferences");
  if (owners == nullptr || !owners->IsArray()) return false;
  for (const Value& o : owners->GetArray()) {
    if (PathText(o, "uid") == uid) return true;
  }
  return false;
}

// The controller owner of a pod when it is a Job or a PyTorchJob: its kind's plural and uid.
std::pair<std::string, std::string> OwnerJob(const Value& pod) {
  const Value* meta = Member(pod, "metadata");
  const Value* owners = meta == nullptr ? nullptr : Member(*meta, "ownerReferences");
  if (owners == nullptr || !owners->IsArray()) return {};
  for (const Value& o : owners->GetArray()) {
    if (PathText(o, "controller") != "true") continue;
    const std::string kind = PathText(o, "kind");
    if (kind == "Job") return {"jobs", PathText(o, "uid")};
    if (kind == "PyTorchJob") return {"pytorchjobs", PathText(o, "uid")};
  }
  return {};
}

void SetStringMember(Document& doc, Value& object, const char* name, const std::string& key,
                     const std::string& value) {
  Value& map = EnsureObject(doc, object, name);
  Value k(key.c_str(), doc.GetAllocator());
  auto it = map.FindMember(k);
  if (it != map.MemberEnd()) map.RemoveMember(it);
  map.AddMember(k, Value(value.c_str(), doc.GetAllocator()), doc.GetAllocator());
}

// A pod of `owner` (apiVersion, kind, name, uid) from `tmpl` (a pod template), named `name`,
// with `labels` added and `owner` as its controller.
Document OwnedPod(const Value* tmpl, const std::string& ns, const std::string& name,
                  const std::vector<std::pair<std::string, std::string>>& labels,
                  const std::array<std::string, 4>& owner) {
  Document pod(rapidjson::kObjectType);
  auto& a = pod.GetAllocator();
  if (tmpl != nullptr && tmpl->IsObject()) {
    if (const Value* m = Member(*tmpl, "metadata"); m != nullptr && m->IsObject()) {
      pod.AddMember("metadata", Value(*m, a), a);
    }
    if (const Value* s = Member(*tmpl, "spec"); s != nullptr && s->IsObject()) {
      pod.AddMember("spec", Value(*s, a), a);
    }
  }
  Value& meta = EnsureObject(pod, pod, "metadata");
  SetString(pod, meta, "name", name);
  SetString(pod, meta, "namespace", ns);
  for (const auto& [k, v] : labels) SetStringMember(pod, meta, "labels", k, v);
  meta.RemoveMember("ownerReferences");
  Value owners(rapidjson::kArrayType);
  Value ref(rapidjson::kObjectType);
  ref.AddMember("apiVersion", Value(owner[0].c_str(), a), a);
  ref.AddMember("kind", Value(owner[1].c_str(), a), a);
  ref.AddMember("name", Value(owner[2].c_str(), a), a);
  ref.AddMember("uid", Value(owner[3].c_str(), a), a);
  ref.AddMember("controller", true, a);
  ref.AddMember("blockOwnerDeletion", true, a);
  owners.PushBack(ref, a);
  meta.AddMember("ownerReferences", owners, a);
  return pod;
}

// The pod of index `index` of `job`, from its template.
std::string JobPodJson(const Value& job, int64_t index, const std::string& suffix) {
  const std::string name = PathText(job, "metadata.name");
  const std::string uid = PathText(job, "metadata.uid");
  const Value* spec = Member(job, "spec");
  const std::string idx = std::to_string(index);
  Document pod = OwnedPod(spec == nullptr ? nullptr : Member(*spec, "template"),
                          PathText(job, "metadata.namespace"), name + "-" + idx + "-" + suffix,
                          {{"batch.kubernetes.io/controller-uid", uid},
                           {"batch.kubernetes.io/job-name", name},
                           {"controller-uid", uid},
                           {"job-name", name},
                           {"batch.kubernetes.io/job-completion-index", idx}},
                          {"batch/v1", "Job", name, uid});
  SetStringMember(pod, pod["metadata"], "annotations", "batch.kubernetes.io/job-completion-index",
                  idx);
  Value& pod_spec = EnsureObject(pod, pod, "spec");
  if (PathText(pod, "spec.hostname").empty())
    SetString(pod, pod_spec, "hostname", name + "-" + idx);
  return Serialize(pod);
}

// batch.kubernetes.io/job-completion-index of a pod (the annotation), -1 when absent or invalid.
int64_t CompletionIndex(const Value& pod) {
  const Value* meta = Member(pod, "metadata");
  const Value* annotations = meta == nullptr ? nullptr : Member(*meta, "annotations");
  const Value* text = annotations == nullptr
                          ? nullptr
                          : Member(*annotations, "batch.kubernetes.io/job-completion-index");
  if (text == nullptr || !text->IsString() || text->GetStringLength() == 0) return -1;
  char* end = nullptr;
  const long long index = std::strtoll(text->GetString(), &end, 10);
  return *end == '\0' && index >= 0 ? index : -1;
}

// status.completedIndexes ("1,3-5") as a set, and back.
std::set<int64_t> ParseIndexes(const std::string& text) {
  std::set<int64_t> out;
  for (size_t start = 0; start < text.size();) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string part = text.substr(start, comma - start);
    const size_t dash = part.find('-');
    const int64_t first = std::strtoll(part.c_str(), nullptr, 10);
    const int64_t last =
        dash == std::string::npos ? first : std::strtoll(part.c_str() + dash + 1, nullptr, 10);
    for (int64_t i = std::max<int64_t>(0, first); i <= last && out.size() < 1'000'000; ++i) {
      out.insert(i);
    }
    start = comma + 1;
  }
  return out;
}

std::string FormatIndexes(const std::set<int64_t>& indexes) {
  std::string out;
  for (auto it = indexes.begin(); it != indexes.end();) {
    const int64_t first = *it;
    int64_t last = first;
    for (++it; it != indexes.end() && *it == last + 1; ++it) last = *it;
    if (!out.empty()) out += ",";
    out += std::to_string(first);
    if (last != first) out += "-" + std::to_string(last);
  }
  return out;
}

// What a Job's spec.podFailurePolicy says of a failed pod, as matchPodFailurePolicy
// (pkg/controller/job/pod_failure_policy.go): the first rule, in order, with an onPodConditions
// pattern (type, and status, "True" when absent) that one of the pod's conditions matches
// decides. Ignore: not counted; FailJob: counted, and the Job fails; Count (and FailIndex, as
// backoffLimitPerIndex is not simulated): counted. No policy or no match: counted. onExitCodes
// rules are not simulated: they never match.
struct PolicyVerdict {
  bool count = true;
  std::string fail_job;  // FailJob matched: the message of the Job's Failed condition
};

PolicyVerdict MatchPodFailurePolicy(const Value& job, const Value& pod) {
  const Value* spec = Member(job, "spec");
  const Value* policy = spec == nullptr ? nullptr : Member(*spec, "podFailurePolicy");
  const Value* rules = policy == nullptr ? nullptr : Member(*policy, "rules");
  const Value* status = Member(pod, "status");
  const Value* conditions = status == nullptr ? nullptr : Member(*status, "conditions");
  if (rules == nullptr || !rules->IsArray() || conditions == nullptr || !conditions->IsArray()) {
    return {};
  }
  for (rapidjson::SizeType i = 0; i < rules->Size(); ++i) {
    const Value& rule = (*rules)[i];
    const Value* patterns = Member(rule, "onPodConditions");
    if (patterns == nullptr || !patterns->IsArray()) continue;
    std::string matched;
    for (const Value& c : conditions->GetArray()) {
      for (const Value& p : patterns->GetArray()) {
        const std::string want = PathText(p, "status").empty() ? "True" : PathText(p, "status");
        if (PathText(c, "type") == PathText(p, "type") && PathText(c, "status") == want) {
          matched = PathText(c, "type");
        }
      }
      if (!matched.empty()) break;
    }
    if (matched.empty()) continue;
    const std::string action = PathText(rule, "action");
    if (action == "Ignore") return {false, ""};
    if (action != "FailJob") return {};
    return {true, "Pod " + PathText(pod, "metadata.namespace") + "/" +
                      PathText(pod, "metadata.name") + " has condition " + matched +
                      " matching FailJob rule at index " + std::to_string(i)};
  }
  return {};
}

}  // namespace

std::vector<std::pair<std::string, Document>> FakeApiServer::Impl::OwnedPodsLocked(
    const std::string& ns, const std::string& uid) {
  std::vector<std::pair<std::string, Document>> owned;
  for (const auto& [key, stored] : objects_["pods"]) {
    if (stored.ns != ns) continue;
    Document pod;
    pod.Parse(stored.json.c_str());
    if (OwnedBy(pod, uid)) owned.emplace_back(key, std::move(pod));
  }
  return owned;
}

std::vector<FakeApiServer::Impl::JobPod> FakeApiServer::Impl::JobPodsLocked(const Value& job,
                                                                            const Value* gone_pod) {
  std::vector<JobPod> pods;
  auto add = [&](std::string key, Document doc, bool gone) {
    JobPod p;
    p.key = std::move(key);
    p.uid = PathText(doc, "metadata.uid");
    p.phase = PathText(doc, "status.phase");
    p.index = CompletionIndex(doc);
    p.terminating = !PathText(doc, "metadata.deletionTimestamp").empty();
    p.gone = gone;
    p.doc = std::move(doc);
    pods.push_back(std::move(p));
  };
  const std::string ns = PathText(job, "metadata.namespace");
  for (auto& [key, pod] : OwnedPodsLocked(ns, PathText(job, "metadata.uid"))) {
    add(key, std::move(pod), false);
  }
  if (gone_pod != nullptr) {
    Document last;
    last.CopyFrom(*gone_pod, last.GetAllocator());
    add(ns + "/" + PathText(last, "metadata.name"), std::move(last), true);
  }
  return pods;
}

// As trackJobStatusAndRemoveFinalizers (pkg/controller/job/job_controller.go): every pod still
// tracked is counted once, when it finishes. Succeeded: its index completes (Indexed) or
// succeeded grows. Failed (isPodFailed): phase Failed, deleted (the fake's pods have no
// finalizer, so a delete is their end), or terminating unless only Failed pods are replaced (a
// podFailurePolicy, or podReplacementPolicy Failed) — counted unless the podFailurePolicy ignores
// it, or it went while the Job is suspended (the controller deletes those pods after removing
// their finalizer), or (Indexed) its index is out of range.
FakeApiServer::Impl::JobTally FakeApiServer::Impl::CountFinishedPodsLocked(
    const Value& job, const std::vector<JobPod>& pods) {
  const bool indexed = PathText(job, "spec.completionMode") == "Indexed";
  const bool suspended = PathText(job, "spec.suspend") == "true";
  const int64_t parallelism = std::max<int64_t>(0, IntAt(job, "spec.parallelism", 1));
  const int64_t completions = std::max<int64_t>(0, IntAt(job, "spec.completions", parallelism));
  const Value* spec = Member(job, "spec");
  const bool only_failed = (spec != nullptr && Member(*spec, "podFailurePolicy") != nullptr) ||
                           PathText(job, "spec.podReplacementPolicy") == "Failed";
  JobTally tally;
  tally.complete = ParseIndexes(PathText(job, "status.completedIndexes"));
  for (const JobPod& p : pods) {
    if (p.uid.empty()) continue;
    if (released_pods_.count(p.uid) > 0) {
      if (p.gone) released_pods_.erase(p.uid);
      continue;
    }
    const bool in_range = !indexed || (p.index >= 0 && p.index < completions);
    if (p.phase == "Succeeded") {
      if (!indexed) ++tally.succeeded;
      if (indexed && in_range) tally.complete.insert(p.index);
    } else if (p.phase == "Failed" || p.gone || (p.terminating && !only_failed)) {
      const bool let_go = suspended && p.phase != "Failed";
      const PolicyVerdict verdict = MatchPodFailurePolicy(job, p.doc);
      if (!let_go && in_range && verdict.count) ++tally.failed;
      if (!let_go && in_range && tally.fail_job.empty()) tally.fail_job = verdict.fail_job;
    } else {
      continue;  // still running
    }
    if (!p.gone) released_pods_.insert(p.uid);
  }
  return tally;
}

int64_t FakeApiServer::Impl::CreateJobPodsLocked(const Value& job, std::set<int64_t> taken,
                                                 const JobTally& tally, int64_t active,
                                                 int64_t want) {
  const bool indexed = PathText(job, "spec.completionMode") == "Indexed";
  const int64_t parallelism = std::max<int64_t>(0, IntAt(job, "spec.parallelism", 1));
  const int64_t completions = std::max<int64_t>(0, IntAt(job, "spec.completions", parallelism));
  // Indexed: the lowest indexes neither running nor complete; NonIndexed: free slots.
  const int64_t limit = indexed ? completions : completions + parallelism;
  for (int64_t i = 0; i < limit && active < want; ++i) {
    if (taken.count(i) > 0 || (indexed && tally.complete.count(i) > 0)) continue;
    static const char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    std::string suffix;
    for (uint64_t n = ++uid_seq_, k = 0; k < 5; ++k, n /= 27) suffix += kAlphabet[n % 27];
    Document pod;
    pod.Parse(JobPodJson(job, i, suffix).c_str());
    if (WriteLocked(*TypeByPlural("pods"), pod, true, false, nullptr).status < 300) {
      taken.insert(i);
      ++active;
    }
  }
  return active;
}

void FakeApiServer::Impl::JobWrittenLocked(const std::string& job_json, const Value* gone_pod) {
  Document job;
  job.Parse(job_json.c_str());
  if (job.HasParseError() || !job.IsObject()) return;
  const std::string gone_uid = gone_pod == nullptr ? "" : PathText(*gone_pod, "metadata.uid");
  if (ConditionIsTrue(job, "Complete") || ConditionIsTrue(job, "Failed")) {
    released_pods_.erase(gone_uid);  // a finished Job is not synced again (IsJobFinished)
    return;
  }
  const bool indexed = PathText(job, "spec.completionMode") == "Indexed";
  const bool suspended = PathText(job, "spec.suspend") == "true";
  const int64_t parallelism = std::max<int64_t>(0, IntAt(job, "spec.parallelism", 1));
  const int64_t completions = std::max<int64_t>(0, IntAt(job, "spec.completions", parallelism));
  const int64_t backoff_limit = IntAt(job, "spec.backoffLimit", 6);
  job_controller_busy_ = true;
  std::vector<JobPod> pods = JobPodsLocked(job, gone_pod);
  const JobTally tally = CountFinishedPodsLocked(job, pods);
  // Cumulative counters: what status already holds, and what this sync learnt.
  int64_t failed = IntAt(job, "status.failed", 0) + tally.failed;
  const int64_t succeeded = indexed ? static_cast<int64_t>(tally.complete.size())
                                    : IntAt(job, "status.succeeded", 0) + tally.succeeded;
  // Active: not finished. Terminating pods stay active until they are gone (they keep their index:
  // the replacement comes when they are deleted).
  std::vector<const JobPod*> active;
  std::set<int64_t> taken;
  for (const JobPod& p : pods) {
    if (p.gone || p.phase == "Succeeded" || p.phase == "Failed") continue;
    active.push_back(&p);
    taken.insert(p.index);
  }
  std::optional<Condition> failure;
  if (!tally.fail_job.empty()) {
    failure = Condition{"Failed", "True", "PodFailurePolicy", tally.fail_job};
  } else if (failed > backoff_limit) {
    failure = Condition{"Failed", "True", "BackoffLimitExceeded",
                        "Job has reached the specified backoff limit"};
  }
  const bool complete = !failure && completions > 0 && succeeded >= completions;
  int64_t now_active = 0;
  if (failure || complete || suspended) {
    for (const JobPod* p : active) {
      // A failed Job's unfinished pods count as failed ("When the job is considered finished,
      // every non-terminated pod is considered failed"); a complete or suspended Job's do not.
      const bool in_range = !indexed || (p->index >= 0 && p->index < completions);
      if (released_pods_.erase(p->uid) == 0 && failure && in_range &&
          MatchPodFailurePolicy(job, p->doc).count) {
        ++failed;
      }
      // As the Job controller: a suspended Job's manageJob deletes activePodsForRemoval(activePods)
      // and a finished one's deleteActivePods, both over controller.FilterActivePods(pods), which
      // leaves out pods with a deletionTimestamp: a pod already terminating (evicted, deleted with
      // a grace period) is not deleted again and keeps its grace period.
      if (!p->terminating) DeleteLocked(*TypeByPlural("pods"), p->key);
    }
  } else {
    now_active = CreateJobPodsLocked(job, taken, tally, static_cast<int64_t>(active.size()),
                                     std::min(parallelism, completions - succeeded));
  }
  // status: counters, completedIndexes, startTime, conditions.
  auto& a = job.GetAllocator();
  Value& status = EnsureObject(job, job, "status");
  const std::string before = Serialize(status);
  const std::string now = Rfc3339(std::chrono::system_clock::now());
  auto set_count = [&](const char* field, int64_t value) {
    status.RemoveMember(field);
    status.AddMember(Value(field, a), Value(value), a);
  };
  set_count("active", now_active);
  set_count("succeeded", succeeded);
  set_count("failed", failed);
  if (indexed) SetString(job, status, "completedIndexes", FormatIndexes(tally.complete));
  if (!suspended && PathText(job, "status.startTime").empty()) {
    SetString(job, status, "startTime", now);
  }
  if (failure) {
    // FailureTarget first, then Failed once the pods are gone (here: at once).
    Condition target = *failure;
    target.type = "FailureTarget";
    SetCondition(job, job, target, now, "lastProbeTime");
    SetCondition(job, job, *failure, now, "lastProbeTime");
  } else if (complete) {
    const std::string message = "Reached expected number of succeeded pods";
    SetCondition(job, job, {"SuccessCriteriaMet", "True", "CompletionsReached", message}, now,
                 "lastProbeTime");
    SetCondition(job, job, {"Complete", "True", "CompletionsReached", message}, now,
                 "lastProbeTime");
    SetString(job, job["status"], "completionTime", now);
  } else if (suspended) {
    SetCondition(job, job, {"Suspended", "True", "JobSuspended", "Job suspended"}, now,
                 "lastProbeTime");
  } else if (SetCondition(job, job, {"Suspended", "False", "JobResumed", "Job resumed"}, now,
                          "lastProbeTime")) {
    // "Resumed jobs will always reset StartTime to current time."
    SetString(job, job["status"], "startTime", now);
  }
  if (Serialize(job["status"]) != before) {
    WriteLocked(*TypeByPlural("jobs"), job, false, true, nullptr);
  }
  job_controller_busy_ = false;
}

void FakeApiServer::Impl::PyTorchJobWrittenLocked(const std::string& job_json) {
  Document job;
  job.Parse(job_json.c_str());
  if (job.HasParseError() || !job.IsObject()) return;
  const std::string name = PathText(job, "metadata.name");
  const std::string ns = PathText(job, "metadata.namespace");
  const std::string uid = PathText(job, "metadata.uid");
  const bool suspended = PathText(job, "spec.runPolicy.suspend") == "true";
  job_controller_busy_ = true;
  std::set<std::string> active;  // pod keys
  for (const auto& [key, pod] : OwnedPodsLocked(ns, uid)) {
    const std::string phase = PathText(pod, "status.phase");
    if (phase != "Succeeded" && phase != "Failed") active.insert(key);
  }
  if (suspended) {
    for (const std::string& key : active) DeleteLocked(*TypeByPlural("pods"), key);
    active.clear();
  } else if (const Value* specs = Member(job, "spec");
             specs != nullptr && (specs = Member(*specs, "pytorchReplicaSpecs")) != nullptr &&
             specs->IsObject()) {
    // Master first, then the Workers: "<job>-<type>-<index>", as the operator names them.
    for (const char* type : {"Master", "Worker"}) {
      const Value* spec = Member(*specs, type);
      if (spec == nullptr || !spec->IsObject()) continue;
      std::string lower = type;
      lower[0] = static_cast<char>(std::tolower(lower[0]));
      const int64_t replicas = std::max<int64_t>(0, IntAt(*spec, "replicas", 1));
      for (int64_t i = 0; i < replicas; ++i) {
        const std::string pod_name = name + "-" + lower + "-" + std::to_string(i);
        if (active.count(ns + "/" + pod_name) > 0) continue;
        Document pod = OwnedPod(Member(*spec, "template"), ns, pod_name,
                                {{"training.kubeflow.org/job-name", name},
                                 {"training.kubeflow.org/operator-name", "pytorchjob-controller"},
                                 {"training.kubeflow.org/replica-type", lower},
                                 {"training.kubeflow.org/replica-index", std::to_string(i)}},
                                {"kubeflow.org/v1", "PyTorchJob", name, uid});
        if (WriteLocked(*TypeByPlural("pods"), pod, true, false, nullptr).status < 300) {
          active.insert(ns + "/" + pod_name);
        }
      }
    }
  }
  // Conditions as the training operator's ReconcileJobs writes them (kubeflow/training-operator,
  // pkg/controller.v1/common/job.go): Created; Suspended True while runPolicy.suspend, then False
  // (PyTorchJobResumed), which also restarts status.startTime.
  const std::string now = Rfc3339(std::chrono::system_clock::now());
  const std::string before = Serialize(EnsureObject(job, job, "status"));
  SetCondition(job, job,
               {"Created", "True", "PyTorchJobCreated", "PyTorchJob " + name + " is created."}, now,
               "lastUpdateTime");
  if (suspended) {
    SetCondition(
        job, job,
        {"Suspended", "True", "PyTorchJobSuspended", "PyTorchJob " + name + " is suspended."}, now,
        "lastUpdateTime");
  } else if (SetCondition(
                 job, job,
                 {"Suspended", "False", "PyTorchJobResumed", "PyTorchJob " + name + " is resumed."},
                 now, "lastUpdateTime") ||
             PathText(job, "status.startTime").empty()) {
    SetString(job, job["status"], "startTime", now);
  }
  if (Serialize(job["status"]) != before) {
    WriteLocked(*TypeByPlural("pytorchjobs"), job, false, true, nullptr);
  }
  job_controller_busy_ = false;
}

void FakeApiServer::Impl::JobDeletedLocked(const std::string& job_json) {
  Document job;
  job.Parse(job_json.c_str());
  if (job.HasParseError() || !job.IsObject()) return;
  const std::string ns = PathText(job, "metadata.namespace");
  const std::string uid = PathText(job, "metadata.uid");
  std::vector<std::string> owned;
  for (const auto& [key, pod] : OwnedPodsLocked(ns, uid)) {
    owned.push_back(key);
    released_pods_.erase(PathText(pod, "metadata.uid"));
  }
  // The garbage collector deletes them; with the Job gone nothing counts them.
  job_controller_busy_ = true;
  for (const std::string& key : owned) DeleteLocked(*TypeByPlural("pods"), key);
  job_controller_busy_ = false;
}

void FakeApiServer::Impl::OwnedPodChangedLocked(const std::string& pod_json, bool deleted) {
  Document pod;
  pod.Parse(pod_json.c_str());
  if (pod.HasParseError() || !pod.IsObject()) return;
  const auto [plural, uid] = OwnerJob(pod);
  if (uid.empty()) return;
  const std::string ns = PathText(pod, "metadata.namespace");
  for (const auto& [key, stored] : objects_[plural]) {
    if (stored.ns != ns) continue;
    Document job;
    job.Parse(stored.json.c_str());
    if (PathText(job, "metadata.uid") != uid) continue;
    const std::string json = stored.json;  // the controller may replace the stored entry
    if (plural == "jobs") {
      JobWrittenLocked(json, deleted ? &pod : nullptr);
    } else {
      PyTorchJobWrittenLocked(json);
    }
    return;
  }
  if (deleted) released_pods_.erase(PathText(pod, "metadata.uid"));  // its Job is gone
}

// ================================================================================================
// Control API

namespace {

std::vector<std::string> StringArray(const Value& value) {
  std::vector<std::string> out;
  if (!value.IsArray()) return out;
  for (const auto& v : value.GetArray()) {
    if (v.IsString()) out.emplace_back(v.GetString(), v.GetStringLength());
  }
  return out;
}

std::string JsonArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ",";
    out += items[i];
  }
  return out + "]";
}

}  // namespace

Reply FakeApiServer::Impl::Control(Incoming& in) {
  std::vector<std::string> parts = SplitPath(in.path);  // "fake", ...
  auto ok = [](std::string body = "{}") { return Reply{200, std::move(body)}; };
  auto bad = [](const std::string& why) { return Reply{400, StatusJson(400, "BadRequest", why)}; };
  Document body;
  if (!in.body.empty()) {
    body.Parse(in.body.c_str());
    if (body.HasParseError()) return bad("control body is not JSON");
  }
  const size_t n = parts.size();
  if (n == 3 && parts[1] == "objects" && in.method == "POST") {
    common::Result<std::string> stored = Upsert(parts[2], in.body);
    if (!stored.ok()) return bad(stored.error().message);
    return ok(*stored);
  }
  if ((n == 4 || n == 5) && parts[1] == "objects" && in.method == "DELETE") {
    const bool deleted =
        n == 5 ? Delete(parts[2], parts[3], parts[4]) : Delete(parts[2], "", parts[3]);
    return deleted ? ok() : Reply{404, StatusJson(404, "NotFound", "no such object")};
  }
  if (n == 2 && parts[1] == "faults") {
    if (in.method == "DELETE") {
      ClearFaults();
      return ok();
    }
    if (in.method != "POST" || !body.IsObject()) return bad("POST a fault object");
    FaultRule rule;
    rule.method = PathText(body, "method");
    rule.path_prefix = PathText(body, "pathPrefix");
    if (const Value* w = Member(body, "watch"); w != nullptr && w->IsBool())
      rule.watch = w->GetBool();
    rule.only_with_continue = PathText(body, "onlyWithContinue") == "true";
    if (const Value* t = Member(body, "times"); t != nullptr && t->IsInt())
      rule.times = t->GetInt();
    if (const Value* s = Member(body, "status"); s != nullptr && s->IsInt())
      rule.status = s->GetInt();
    rule.reason = PathText(body, "reason");
    rule.message = PathText(body, "message");
    if (const Value* r = Member(body, "retryAfterSeconds"); r != nullptr && r->IsInt()) {
      rule.retry_after_seconds = r->GetInt();
    }
    if (const Value* c = Member(body, "causes"); c != nullptr) rule.causes = StringArray(*c);
    if (const Value* d = Member(body, "delayMs"); d != nullptr && d->IsInt64()) {
      rule.delay = std::chrono::milliseconds(d->GetInt64());
    }
    rule.drop_connection = PathText(body, "drop") == "true";
    AddFault(std::move(rule));
    return ok();
  }
  if (n == 2 && parts[1] == "tokens" && in.method == "POST") {
    SetAcceptedTokens(StringArray(body));
    return ok();
  }
  if (n == 4 && parts[1] == "watches" && in.method == "POST") {
    static const std::map<std::string, WatchAction> actions = {
        {"end", WatchAction::kEnd},
        {"drop", WatchAction::kDrop},
        {"expire", WatchAction::kExpire},
        {"bookmark", WatchAction::kBookmark}};
    auto action = actions.find(parts[2]);
    if (action == actions.end()) return bad("unknown watch action " + parts[2]);
    ActOnWatches(parts[3], action->second);
    return ok();
  }
  if (n == 2 && parts[1] == "compact" && in.method == "POST") {
    Compact();
    return ok();
  }
  if (n == 3 && parts[1] == "evictions" && parts[2] == "complete" && in.method == "POST") {
    CompleteEvictions();
    return ok();
  }
  if (n == 3 && parts[1] == "evictions" && parts[2] == "block") {
    if (in.method == "DELETE") {
      UnblockEvictions();
      return ok();
    }
    const std::string pod = PathText(body, "pod");
    if (pod.empty()) return bad("block: want {\"pod\": \"ns/name\" or \"*\"}");
    BlockEvictions(pod, PathText(body, "message"));
    return ok();
  }
  if (n == 5 && parts[1] == "pods" && parts[4] == "phase" && in.method == "POST") {
    const std::string phase = PathText(body, "phase");
    if (phase.empty()) return bad("want {\"phase\": ...}");
    return SetPodPhase(parts[2], parts[3], phase)
               ? ok()
               : Reply{404, StatusJson(404, "NotFound", "no such pod")};
  }
  if (n == 2 && parts[1] == "recorded" && in.method == "GET") {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> writes;
    for (const auto& w : lease_writes_) writes.push_back(JsonString(w));
    return ok("{\"bindings\":" + JsonArray(bindings_) + ",\"evictions\":" + JsonArray(evictions_) +
              ",\"events\":" + JsonArray(events_) + ",\"leaseWrites\":" + JsonArray(writes) + "}");
  }
  if (n == 2 && parts[1] == "state" && in.method == "GET") {
    std::lock_guard<std::mutex> lock(mu_);
    std::string counts, open;
    for (const ResourceType& t : Types()) {
      auto bucket = objects_.find(t.plural);
      if (!counts.empty()) counts += ",";
      counts += JsonString(t.plural) + ":" +
                std::to_string(bucket == objects_.end() ? 0 : bucket->second.size());
      size_t watches = 0;
      for (const auto& w : watchers_) watches += w->type == &t ? 1 : 0;
      if (!open.empty()) open += ",";
      open += JsonString(t.plural) + ":" + std::to_string(watches);
    }
    return ok("{\"resourceVersion\":" + std::to_string(rv_) + ",\"counts\":{" + counts +
              "},\"openWatches\":{" + open + "}}");
  }
  return Reply{404,
               StatusJson(404, "NotFound", "no control endpoint " + in.method + " " + in.path)};
}

// ================================================================================================
// The sample cluster

void FakeApiServer::Impl::LoadSampleCluster() {
  struct InstanceType {
    const char* type;
    int count;
    const char* prefix;
    const char* cpu;
    const char* memory;
    const char* accelerator;
    int accelerators;
    int efa;
  };
  const InstanceType types[] = {
      {"ml.p5.48xlarge", 2, "hyperpod-p5", "192", "2048Gi", "nvidia.com/gpu", 8, 32},
      {"ml.g5.12xlarge", 2, "hyperpod-g5", "48", "192Gi", "nvidia.com/gpu", 4, 1},
      {"ml.trn1.32xlarge", 1, "hyperpod-trn1", "128", "512Gi", "aws.amazon.com/neuron", 16, 8},
  };
  for (const InstanceType& t : types) {
    for (int i = 0; i < t.count; ++i) {
      const std::string name = std::string(t.prefix) + "-" + std::to_string(i);
      std::string resources = "{\"cpu\":\"" + std::string(t.cpu) + "\",\"memory\":\"" + t.memory +
                              "\",\"pods\":\"110\",\"" + t.accelerator + "\":\"" +
                              std::to_string(t.accelerators) + "\",\"vpc.amazonaws.com/efa\":\"" +
                              std::to_string(t.efa) + "\"}";
      if (std::string(t.accelerator) == "aws.amazon.com/neuron") {
        resources.pop_back();
        resources +=
            ",\"aws.amazon.com/neuroncore\":\"" + std::to_string(t.accelerators * 2) + "\"}";
      }
      const std::string node = "{\"metadata\":{\"name\":\"" + name +
                               "\",\"labels\":{\"kubernetes.io/hostname\":\"" + name +
                               "\",\"node.kubernetes.io/instance-type\":\"" + t.type +
                               "\",\"topology.kubernetes.io/zone\":\"us-west-2a\","
                               "\"sagemaker.amazonaws.com/node-health-status\":\"Schedulable\"}},"
                               "\"spec\":{},\"status\":{\"capacity\":" +
                               resources + ",\"allocatable\":" + resources +
                               ",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}";
      (void)Upsert("nodes", node);
    }
  }
  for (const char* ns :
       {"default", "kube-system", "hyperpod-ns-a", "hyperpod-ns-b", "hyperpod-ns-c"}) {
    (void)Upsert("namespaces", "{\"metadata\":{\"name\":\"" + std::string(ns) +
                                   "\",\"labels\":{\"kubernetes.io/metadata.name\":\"" + ns +
                                   "\"}}}");
  }
  for (const char* team : {"a", "b", "c"}) {
    const std::string ns = std::string("hyperpod-ns-") + team;
    (void)Upsert("localqueues", "{\"metadata\":{\"name\":\"" + ns +
                                    "-localqueue\",\"namespace\":\"" + ns +
                                    "\"},\"spec\":{\"clusterQueue\":\"" + ns + "-clusterqueue\"}}");
  }
}

// ================================================================================================
// FakeApiServer

FakeApiServer::FakeApiServer(FakeApiServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
FakeApiServer::~FakeApiServer() = default;
common::Status FakeApiServer::Start() { return impl_->Start(); }
void FakeApiServer::Stop() { impl_->Stop(); }
uint16_t FakeApiServer::port() const { return impl_->port(); }
std::string FakeApiServer::url() const {
  return std::string(impl_->tls() ? "https" : "http") +
         "://127.0.0.1:" + std::to_string(impl_->port());
}
common::Result<std::string> FakeApiServer::Upsert(std::string_view resource,
                                                  std::string_view json) {
  return impl_->Upsert(resource, json);
}
bool FakeApiServer::Delete(std::string_view resource, const std::string& ns,
                           const std::string& name) {
  return impl_->Delete(resource, ns, name);
}
std::optional<std::string> FakeApiServer::Get(std::string_view resource, const std::string& ns,
                                              const std::string& name) const {
  return impl_->Get(resource, ns, name);
}
std::vector<std::string> FakeApiServer::List(std::string_view resource) const {
  return impl_->List(resource);
}
size_t FakeApiServer::Count(std::string_view resource) const { return impl_->Count(resource); }
int64_t FakeApiServer::resource_version() const { return impl_->resource_version(); }
bool FakeApiServer::SetPodPhase(const std::string& ns, const std::string& name,
                                const std::string& phase) {
  return impl_->SetPodPhase(ns, name, phase);
}
bool FakeApiServer::StartPod(const std::string& ns, const std::string& name,
                             const std::string& start_time) {
  return impl_->SetPodPhase(ns, name, "Running", start_time);
}
void FakeApiServer::LoadSampleCluster() { impl_->LoadSampleCluster(); }
void FakeApiServer::AddFault(FaultRule rule) { impl_->AddFault(std::move(rule)); }
void FakeApiServer::ClearFaults() { impl_->ClearFaults(); }
void FakeApiServer::SetAcceptedTokens(std::vector<std::string> tokens) {
  impl_->SetAcceptedTokens(std::move(tokens));
}
void FakeApiServer::SetAccessReviews(std::vector<ReviewUser> users, std::vector<AccessRule> rules) {
  impl_->SetAccessReviews(std::move(users), std::move(rules));
}
std::pair<size_t, size_t> FakeApiServer::review_counts() const { return impl_->review_counts(); }
std::string KubeconfigFor(const std::string& server_url) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: e2e\nclusters:\n- name: fake\n"
         "  cluster:\n    server: " +
         server_url +
         "\ncontexts:\n- name: e2e\n  context: {cluster: fake, user: e2e}\n"
         "users:\n- name: e2e\n  user: {}\n";
}

void FakeApiServer::SetRequestHook(RequestHook hook) { impl_->SetRequestHook(std::move(hook)); }
void FakeApiServer::SetServed(std::string_view resource, bool served) {
  impl_->SetServed(resource, served);
}
void FakeApiServer::SetJobController(bool on) { impl_->SetJobController(on); }
void FakeApiServer::SetServiceProxy(const std::string& ns, const std::string& name, int port,
                                    const std::string& backend_url) {
  impl_->SetServiceBackend(ns + "/" + name + ":" + std::to_string(port),
                           Impl::ServiceBackend{backend_url, nullptr});
}
void FakeApiServer::SetServiceHandler(const std::string& ns, const std::string& name, int port,
                                      ServiceHandler handler) {
  impl_->SetServiceBackend(ns + "/" + name + ":" + std::to_string(port),
                           Impl::ServiceBackend{"", std::move(handler)});
}
void FakeApiServer::RemoveServiceProxy(const std::string& ns, const std::string& name, int port) {
  impl_->RemoveServiceBackend(ns + "/" + name + ":" + std::to_string(port));
}
void FakeApiServer::BlockEvictions(const std::string& pod, const std::string& message) {
  impl_->BlockEvictions(pod, message);
}
void FakeApiServer::UnblockEvictions() { impl_->UnblockEvictions(); }
void FakeApiServer::SetEvictionMode(EvictionMode mode) { impl_->SetEvictionMode(mode); }
void FakeApiServer::CompleteEvictions() { impl_->CompleteEvictions(); }
void FakeApiServer::SetWatchSplitter(std::function<std::vector<size_t>(size_t)> splitter) {
  impl_->SetWatchSplitter(std::move(splitter));
}
void FakeApiServer::EndWatches(std::string_view resource) {
  impl_->ActOnWatches(resource, Impl::WatchAction::kEnd);
}
void FakeApiServer::DropWatches(std::string_view resource) {
  impl_->ActOnWatches(resource, Impl::WatchAction::kDrop);
}
void FakeApiServer::ExpireWatches(std::string_view resource) {
  impl_->ActOnWatches(resource, Impl::WatchAction::kExpire);
}
void FakeApiServer::SendBookmarks(std::string_view resource) {
  impl_->ActOnWatches(resource, Impl::WatchAction::kBookmark);
}
void FakeApiServer::InjectWatchEvent(std::string_view resource, const std::string& type,
                                     const std::string& object_json) {
  impl_->InjectWatchEvent(resource, type, object_json);
}
void FakeApiServer::Compact() { impl_->Compact(); }
size_t FakeApiServer::open_watches(std::string_view resource) const {
  return impl_->open_watches(resource);
}
uint64_t FakeApiServer::watches_started(std::string_view resource) const {
  return impl_->watches_started(resource);
}
std::vector<RecordedRequest> FakeApiServer::requests() const { return impl_->requests(); }
std::vector<std::string> FakeApiServer::bindings() const { return impl_->bindings(); }
std::vector<std::string> FakeApiServer::evictions() const { return impl_->evictions(); }
std::vector<std::string> FakeApiServer::events() const { return impl_->events(); }
std::vector<std::string> FakeApiServer::lease_writes() const { return impl_->lease_writes(); }
bool FakeApiServer::WaitFor(const std::function<bool()>& predicate,
                            std::chrono::milliseconds timeout) const {
  return impl_->WaitFor(predicate, timeout);
}

}  // namespace taskgov::scheduler::kube::testing
