#pragma once

// FakeApiServer: an in-process Kubernetes API server for tests and the demo. It speaks the real
// wire format (JSON objects, metav1.Status errors, chunked newline-delimited watch streams) for
// what taskgov uses, over HTTP or HTTPS (optionally verifying client certificates):
//  * an in-memory object store with a global resourceVersion counter for pods, nodes, namespaces,
//    configmaps, leases (coordination.k8s.io/v1), events (events.k8s.io/v1), LocalQueues
//    (kueue.x-k8s.io/v1beta1) and PodGroups (scheduling.volcano.sh/v1beta1; these two CRDs can
//    be "uninstalled": their paths then answer 404);
//  * GET (item), LIST (limit/continue paging with opaque base64 tokens, fieldSelector and
//    labelSelector with = == != and existence terms), POST (create, 409 AlreadyExists), PUT
//    (update with resourceVersion precondition, 409 Conflict), PATCH, DELETE; POST, PUT and
//    PATCH honour dryRun=All (every check and the reply, nothing stored; other values answer
//    400);
//  * PATCH of any stored object (and pods/status), as the API server's patch handler
//    (k8s.io/apiserver pkg/endpoints/handlers/patch.go): Content-Type
//    application/merge-patch+json is an RFC 7386 merge patch (objects merge recursively, null
//    removes a member, anything else replaces); application/strategic-merge-patch+json is
//    applied the same way to built-in types (no list merge keys are simulated) and answers 415
//    UnsupportedMediaType for custom resources (LocalQueues, PodGroups, JobSets, Kubeflow jobs,
//    RayClusters), as CRDs have no strategic merge patch; other types (JSON patch, apply) answer
//    415. A metadata.resourceVersion in the patch is a precondition (409 Conflict); a patched
//    name or namespace answers 400, a patched uid 422 (immutable). 404 when absent. The result is
//    stored as an update: resourceVersion bumped, MODIFIED, the Job controller reacts as to PUT;
//  * WATCH (?watch=true) from a resourceVersion with a replayed history, bookmarks
//    (allowWatchBookmarks), field-selector transitions reported as ADDED/DELETED like the real
//    watch cache, timeoutSeconds, 410 for versions older than the last Compact() — in-stream as
//    an ERROR event by default, or as the reply status through a fault rule;
//  * subresources: pods/binding (sets spec.nodeName, MODIFIED; 409 when bound or uid differs),
//    pods/eviction (policy/v1; records it; first writes the condition DisruptionTarget=True,
//    reason EvictionByEvictionAPI, message "Eviction API: evicting" in one update (MODIFIED),
//    then deletes at once, after the grace period, or when the test says, as
//    pkg/registry/core/pod/storage/eviction.go does; 429 with a DisruptionBudget cause when
//    blocked), pods/status (PUT, PATCH);
//  * recording: every API request (method, target, Authorization, body, status), bindings,
//    evictions, events and lease writes;
//  * faults, as C++ methods and as an HTTP control API under /fake/ (for tests that drive a
//    separate process): reply statuses with a Status body (401, 410 Expired on continue tokens,
//    429 with Retry-After, 500...), delays (slow replies), dropped connections, watch streams
//    split at arbitrary byte offsets into separate HTTP chunks, watches ended cleanly / dropped /
//    expired on demand, raw injected watch events (duplicates, deletes of unknown objects),
//    token rotation; a request hook that runs before each API request is routed, so a test can
//    make a concurrent change between a client's GET and its PUT.
//  * a Job controller (FakeApiServerOptions::simulate_job_controller, off by default), with the
//    accounting of pkg/controller/job/job_controller.go (v1.31+). A batch/v1 Job written or one
//    of whose pods changes is synced: it keeps min(parallelism, completions - succeeded) pods
//    (the Job's pod template, its labels plus job-name, controller-uid and
//    batch.kubernetes.io/job-completion-index, a controller ownerReference, the index also as an
//    annotation and hostname; Indexed Jobs: the lowest indexes not yet succeeded). Each pod is
//    counted once (by uid): Succeeded completes its index (status.completedIndexes, succeeded);
//    FAILED when it reaches phase Failed, is deleted (plain DELETE or eviction) without having
//    succeeded, or, unless the Job has a podFailurePolicy or podReplacementPolicy Failed, starts
//    terminating. status.failed and status.succeeded are cumulative. Not counted: pods deleted
//    while the Job is suspended, pods deleted because the Job completed or was deleted, and pods
//    a spec.podFailurePolicy rule with action Ignore matches (rules in order, first match wins,
//    onPodConditions patterns {type, status (default True)}, e.g. DisruptionTarget; FailJob
//    fails the Job with reason PodFailurePolicy; Count counts; onExitCodes rules never match).
//    failed > spec.backoffLimit (default 6): conditions FailureTarget and Failed (reason
//    BackoffLimitExceeded, "Job has reached the specified backoff limit"); its unfinished pods
//    are then counted as failed too, as upstream, and deleted, and no pod is created again.
//    Otherwise a failed pod's index gets a new pod; a terminating pod (graceful eviction) keeps
//    its index until it is gone. Enough successes: SuccessCriteriaMet then Complete (reason
//    CompletionsReached), completionTime. spec.suspend: active pods deleted uncounted,
//    Suspended=True (JobSuspended, "Job suspended"), active 0; suspend false after that:
//    Suspended=False (JobResumed, "Job resumed"), startTime reset to now, pods created again for
//    the indexes not succeeded. A finished Job is not synced again; deleting a Job deletes its
//    pods. Not simulated: the pod failure back-off delay (a replacement comes at once),
//    backoffLimitPerIndex, activeDeadlineSeconds, successPolicy; status.active includes
//    terminating pods. With it, as the Kubeflow training operator: a PyTorchJob gets a pod per
//    replica of Master, then Worker ("<job>-master-0", "<job>-worker-<i>", labels
//    training.kubeflow.org/job-name, replica-type, replica-index; a controller ownerReference)
//    and the condition Created (PyTorchJobCreated); spec.runPolicy.suspend deletes them, with
//    Suspended=True (PyTorchJobSuspended); resuming sets Suspended=False (PyTorchJobResumed),
//    restarts status.startTime and creates them again; a deleted replica of a running
//    PyTorchJob is created again (runPolicy.backoffLimit is not simulated: nothing is counted);
//    deleting it deletes its pods;
//  * discovery: GET /apis/{group}/{version} lists the served resources of that group version
//    (an APIResourceList; 404 when it serves none, as for an uninstalled CRD);
//  * the service proxy: GET /api/v1/namespaces/{ns}/services/{[scheme:]name[:port]}/proxy/{path}
//    is forwarded to the backend registered for that service and port (a URL or an in-process
//    handler), after the caller is authenticated like any API request; as a real API server,
//    the caller's Authorization and Impersonate-* headers are not passed on. No backend
//    registered: 404 for the service; backend unreachable: 503.
// LoadSampleCluster() installs the simulated cluster tools/demo runs against.
//
// Control API (no authentication, no faults):
//   POST   /fake/objects/{resource}                 body: object → upsert (ADDED/MODIFIED)
//   DELETE /fake/objects/{resource}/{ns}/{name}     or /fake/objects/{resource}/{name}
//   POST   /fake/faults                             body: {"method","pathPrefix","watch",
//          "onlyWithContinue","times","status","reason","message","retryAfterSeconds",
//          "causes":[..],"delayMs","drop"}
//   DELETE /fake/faults
//   POST   /fake/tokens                             body: ["token", ...]
//   POST   /fake/watches/{end|drop|expire|bookmark}/{resource}
//   POST   /fake/compact
//   POST   /fake/evictions/complete
//   POST   /fake/evictions/block                    body: {"pod":"ns/name" or "*","message":..}
//   DELETE /fake/evictions/block
//   POST   /fake/pods/{ns}/{name}/phase             body: {"phase":"Succeeded"}
//   GET    /fake/recorded                           {"bindings","evictions","events","leaseWrites"}
//   GET    /fake/state                              {"resourceVersion","counts","openWatches"}
//
// Thread-safety: every public method is thread-safe. One mutex guards the store, the watch
// registry, faults and records; network I/O runs on `io_threads` Asio threads, one strand per
// connection.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/common/result.h"

namespace taskgov::scheduler::kube::testing {

enum class EvictionMode {
  kImmediate,    // the pod is deleted when the eviction is accepted
  kGracePeriod,  // deletionTimestamp is set; the pod is deleted after gracePeriodSeconds
  kManual,       // deletionTimestamp is set; CompleteEvictions() deletes
};

struct FakeApiServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;
  int io_threads = 2;
  // Both set: HTTPS. client_ca_pem set: client certificates are requested and a verified one
  // authenticates the request.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  std::string client_ca_pem;
  // Accepted bearer tokens; empty: no authentication.
  std::vector<std::string> tokens;
  bool serve_local_queues = true;
  bool serve_pod_groups = true;
  std::chrono::milliseconds bookmark_interval{0};  // 0: bookmarks only on demand
  int64_t default_watch_timeout_seconds = 1800;
  EvictionMode eviction_mode = EvictionMode::kImmediate;
  bool auto_run_bound_pods = false;  // binding also sets status.phase=Running and startTime
  size_t history_limit = 100'000;    // watch history kept; older versions answer 410
  std::chrono::milliseconds watch_piece_delay{0};  // pause between split pieces of an event
  // The Job controller of the header comment; off: Jobs are stored objects only.
  bool simulate_job_controller = false;
};

// A service proxy backend in-process: (method, target after .../proxy) → (status, JSON body).
// Runs on an I/O thread without the server's lock held.
using ServiceHandler = std::function<std::pair<int, std::string>(const std::string& method,
                                                                 const std::string& target)>;

// TokenReview (authentication.k8s.io/v1) and SubjectAccessReview (authorization.k8s.io/v1):
// a token of `ReviewUser` authenticates as its user; a SubjectAccessReview is allowed when a
// rule names the user (or "group:<g>" for one of its groups), the verb, the API group and the
// resource, and either no namespace (every namespace, and cluster-wide reviews) or the review's.
//
// Audiences, as the API server's authenticators answer a TokenReview that names spec.audiences
// (k8s.io/apiserver pkg/authentication/authenticator/audiences.go): a token issued for audiences
// (a bound service account token: `audiences`, e.g. {"https://kubernetes.default.svc"} for one
// the API server issued for itself) authenticates only when one of them is asked for, and
// status.audiences lists those; a token of an authenticator that is not audience-aware (static
// tokens: `audiences` empty) authenticates with no status.audiences. No spec.audiences asks for
// the API server's own ("https://kubernetes.default.svc").
struct ReviewUser {
  std::string token;
  std::string username;
  std::vector<std::string> groups;
  std::vector<std::string> audiences;
};
inline constexpr char kApiServerAudience[] = "https://kubernetes.default.svc";
struct AccessRule {
  std::string subject;  // a username, or "group:<name>"
  std::string verb;
  std::string group;
  std::string resource;
  std::string namespace_;  // "": all
};

struct FaultRule {
  std::string method;         // "" matches any
  std::string path_prefix;    // "" matches any; compared with the path without the query
  std::optional<bool> watch;  // only watches (true) / only non-watches (false)
  bool only_with_continue = false;
  int times = 1;  // how many matching requests it affects; -1: until ClearFaults
  // Effects, in order: delay, then drop the connection, or reply `status` with a Status body.
  std::chrono::milliseconds delay{0};
  bool drop_connection = false;
  int status = 0;
  std::string reason;
  std::string message;
  int retry_after_seconds = -1;  // >= 0: a Retry-After header
  std::vector<std::string> causes;
};

struct RecordedRequest {
  std::string method;
  std::string target;  // path and query
  std::string path;
  std::string authorization;
  std::string body;
  bool client_certificate = false;
  bool watch = false;
  int status = 0;  // for watches: 200 when the stream started
  std::chrono::steady_clock::time_point at;
  std::string impersonate_user;  // the Impersonate-User header
};

// Called with the method and path of every authorized, unfaulted API request (not /fake/), on
// the I/O thread, before the request is routed and without the server's lock held: it may call
// the public methods (Upsert, ...), and what it changes is what the request then sees.
using RequestHook = std::function<void(const std::string& method, const std::string& path)>;

// A kubeconfig (YAML) whose current context "e2e" names `server_url` (FakeApiServer::url())
// with a user without credentials: what a process under test reads with --kubeconfig.
[[nodiscard]] std::string KubeconfigFor(const std::string& server_url);

class FakeApiServer {
 public:
  explicit FakeApiServer(FakeApiServerOptions options = {});
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  [[nodiscard]] common::Status Start();
  void Stop();  // idempotent
  [[nodiscard]] uint16_t port() const;
  // "https://127.0.0.1:<port>" or "http://...".
  [[nodiscard]] std::string url() const;

  // ---- objects (JSON text) ----
  // Creates or replaces; assigns metadata.resourceVersion (and uid, creationTimestamp when
  // missing) and emits ADDED or MODIFIED. `resource` is the plural ("pods", "nodes", ...).
  // Returns the stored object.
  common::Result<std::string> Upsert(std::string_view resource, std::string_view json);
  // Emits DELETED. False when absent.
  bool Delete(std::string_view resource, const std::string& ns, const std::string& name);
  [[nodiscard]] std::optional<std::string> Get(std::string_view resource, const std::string& ns,
                                               const std::string& name) const;
  [[nodiscard]] std::vector<std::string> List(std::string_view resource) const;
  [[nodiscard]] size_t Count(std::string_view resource) const;
  [[nodiscard]] int64_t resource_version() const;
  // Sets status.phase (MODIFIED).
  bool SetPodPhase(const std::string& ns, const std::string& name, const std::string& phase);
  // Sets status.phase and status.startTime (RFC 3339) in one write (MODIFIED), as a kubelet
  // starting the pod does. False when absent.
  bool StartPod(const std::string& ns, const std::string& name, const std::string& start_time);
  // Nodes ml.p5.48xlarge ×2 (8 nvidia.com/gpu), ml.g5.12xlarge ×2 (4 GPUs), ml.trn1.32xlarge ×1
  // (16 aws.amazon.com/neurondevice); namespaces hyperpod-ns-a/b/c (+ default, kube-system);
  // a LocalQueue per team namespace.
  void LoadSampleCluster();

  // ---- faults and behaviour ----
  void AddFault(FaultRule rule);
  void ClearFaults();
  void SetAcceptedTokens(std::vector<std::string> tokens);
  void SetAccessReviews(std::vector<ReviewUser> users, std::vector<AccessRule> rules);
  // TokenReviews and SubjectAccessReviews answered so far.
  [[nodiscard]] std::pair<size_t, size_t> review_counts() const;
  // Replaces the request hook; nullptr removes it.
  void SetRequestHook(RequestHook hook);
  void SetServed(std::string_view resource, bool served);  // optional CRDs only
  // Turns the Job controller simulation on or off (FakeApiServerOptions::simulate_job_controller);
  // on: Jobs written from then on are reconciled.
  void SetJobController(bool on);
  // Service proxy backends for service `ns`/`name` port `port`: a base URL
  // ("http://127.0.0.1:PORT") the GET is forwarded to, or a handler. Replaces an earlier one.
  void SetServiceProxy(const std::string& ns, const std::string& name, int port,
                       const std::string& backend_url);
  void SetServiceHandler(const std::string& ns, const std::string& name, int port,
                         ServiceHandler handler);
  void RemoveServiceProxy(const std::string& ns, const std::string& name, int port);
  // Evictions of `pod` ("ns/name", or "*" for all) answer 429 with a DisruptionBudget cause.
  void BlockEvictions(const std::string& pod, const std::string& message = "");
  void UnblockEvictions();
  void SetEvictionMode(EvictionMode mode);
  // Deletes every pod with an accepted, not yet completed eviction.
  void CompleteEvictions();

  // ---- watches ----
  // Cuts each event (line including its '\n') at the returned offsets; every piece is sent as a
  // separate HTTP chunk with a separate write. nullptr: one chunk per event.
  void SetWatchSplitter(std::function<std::vector<size_t>(size_t event_bytes)> splitter);
  void EndWatches(std::string_view resource);     // terminating chunk: a clean end
  void DropWatches(std::string_view resource);    // close the connections abruptly
  void ExpireWatches(std::string_view resource);  // in-stream ERROR 410, then a clean end
  void SendBookmarks(std::string_view resource);  // to watches that allowed bookmarks
  // Sends a raw event to the current watches of `resource` without touching the store.
  void InjectWatchEvent(std::string_view resource, const std::string& type,
                        const std::string& object_json);
  // Forgets the watch history: watches from older versions and continue tokens get 410.
  void Compact();
  [[nodiscard]] size_t open_watches(std::string_view resource) const;
  [[nodiscard]] uint64_t watches_started(std::string_view resource) const;

  // ---- records ----
  [[nodiscard]] std::vector<RecordedRequest> requests() const;
  [[nodiscard]] std::vector<std::string> bindings() const;      // request bodies
  [[nodiscard]] std::vector<std::string> evictions() const;     // accepted eviction bodies
  [[nodiscard]] std::vector<std::string> events() const;        // created Event bodies
  [[nodiscard]] std::vector<std::string> lease_writes() const;  // "POST|PUT|PATCH <body>"

  // Waits until `predicate` holds, re-checking after every change the server sees (requests,
  // store changes, watch openings and closings). False on timeout. `predicate` may call the
  // public methods.
  bool WaitFor(const std::function<bool()>& predicate, std::chrono::milliseconds timeout) const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace taskgov::scheduler::kube::testing
