#include "scheduler/sim/kube_scheduler.h"

#include <algorithm>
#include <limits>

#include "scheduler/decisions/placement.h"

namespace taskgov::scheduler::sim {

using model::Pod;
using model::ResourceAmount;
using model::ResourceList;

namespace {

constexpr int64_t kBackoffFlushMs = 1'000;
constexpr int64_t kUnschedulableFlushMs = 30'000;

int32_t PriorityOf(const Pod& pod) { return pod.priority.value_or(0); }

bool Counts(const Pod& pod) { return pod.bound() && !pod.terminal(); }

// free ≥ request on every resource the request names (a resource the node lacks has 0 free).
bool FitsIn(const ResourceList& request, const ResourceList& allocatable, const ResourceList& used,
            const ResourceList& extra_free) {
  for (const ResourceAmount& r : request) {
    if (r.amount <= 0) continue;
    const int64_t free = allocatable.Get(r.name) - used.Get(r.name) + extra_free.Get(r.name);
    if (r.amount > free) return false;
  }
  return true;
}

void Subtract(ResourceList* from, const ResourceList& amounts) {
  for (const ResourceAmount& r : amounts) from->Set(r.name, from->Get(r.name) - r.amount);
}

// MoreImportantPod: higher priority first, then the one that started earlier.
bool MoreImportant(const Pod& a, const Pod& b) {
  if (PriorityOf(a) != PriorityOf(b)) return PriorityOf(a) > PriorityOf(b);
  return a.start_unix_ms.value_or(std::numeric_limits<int64_t>::max()) <
         b.start_unix_ms.value_or(std::numeric_limits<int64_t>::max());
}

}  // namespace

KubeScheduler::KubeScheduler(Api* api, Decider* extender, EventLoop* loop, Options options)
    : api_(api), extender_(extender), loop_(loop), options_(options), rng_(options.seed) {}

// ---- the queue ----

void KubeScheduler::OnEvent(const WatchEvent& event) {
  if (event.type == WatchEvent::Type::kNodeUpsert) {
    MoveAllToActiveOrBackoff(Event::kNodeChanged);
    return;
  }
  const Pod& pod = event.pod;
  const std::string& uid = pod.uid;
  const bool gone = event.type == WatchEvent::Type::kPodDelete;
  // The cache of assigned pods (a pod assumed by a cycle is counted already).
  const bool counts = !gone && Counts(pod);
  const bool was_counted = counted_.count(uid) != 0;
  if (!counts) {
    Forget(uid);
  } else if (const PodObject* o = api_->Find(uid)) {
    Assume(uid, pod.node_name, o->request, PriorityOf(o->pod));
  }
  // The queue of pending pods.
  const bool pending = !gone && !pod.bound() && !pod.terminal() && !pod.deletion_unix_ms &&
                       pod.scheduler_name == options_.scheduler_name;
  if (pending) {
    if (auto q = queued_.find(uid); q != queued_.end()) {
      Updated(&q->second, pod);
    } else if (counted_.count(uid) == 0) {
      Enqueue(uid, pod);
    }
  } else {
    Dequeue(uid, pod.bound());
  }
  // An assigned pod added, changed or deleted (AssignedPodAdd/Update/Delete).
  if (pod.bound() || !event.previous_node.empty()) {
    MoveAllToActiveOrBackoff(was_counted && !counts ? Event::kRoomFreed
                                                    : Event::kAssignedPodChanged);
  }
}

void KubeScheduler::Assume(const std::string& uid, const std::string& node,
                           const ResourceList& request, int32_t priority) {
  if (counted_.count(uid) != 0) return;
  Counted& c = counted_[uid];
  c.node = node;
  c.request = request;
  c.priority = priority;
  used_[node].Add(request);
  pods_on_[node].insert(uid);
  priorities_on_[node].insert(priority);
}

void KubeScheduler::Forget(const std::string& uid) {
  auto counted = counted_.find(uid);
  if (counted == counted_.end()) return;
  Subtract(&used_[counted->second.node], counted->second.request);
  pods_on_[counted->second.node].erase(uid);
  std::multiset<int32_t>& priorities = priorities_on_[counted->second.node];
  priorities.erase(priorities.find(counted->second.priority));
  counted_.erase(counted);
}

void KubeScheduler::Enqueue(const std::string& uid, const Pod& pod) {
  QueuedPod& q = queued_[uid];
  q.uid = uid;
  q.priority = PriorityOf(pod);
  q.created_ms = pod.creation_unix_ms;
  q.labels = pod.labels;
  q.annotations = pod.annotations;
  ToActive(&q);
  ScheduleFlushes();
}

void KubeScheduler::Updated(QueuedPod* q, const Pod& pod) {
  const bool metadata = pod.labels != q->labels || pod.annotations != q->annotations;
  q->labels = pod.labels;
  q->annotations = pod.annotations;
  if (unschedulable_.count(q) == 0) return;
  if (options_.minor >= 32) {
    // QueueingHints: every update (its status too) is an event; one that changes none of the
    // scheduling properties is UpdatePodOther, which only the extender's wildcard matches.
    if ((q->rejected_by & kByExtender) == 0) return;
  } else if (!metadata) {
    return;  // isPodUpdated: a status update is no update
  }
  unschedulable_.erase(q);
  ToActiveOrBackoff(q);
}

void KubeScheduler::Dequeue(const std::string& uid, bool bound) {
  auto it = queued_.find(uid);
  if (it == queued_.end()) return;
  QueuedPod* q = &it->second;
  const int32_t priority = q->priority;
  active_.erase(q);
  backoff_.erase({BackoffEnd(*q), q});
  error_backoff_.erase({BackoffEnd(*q), q});
  unschedulable_.erase(q);
  queued_.erase(it);
  // A nominated pod that leaves the queue unbound frees the room it held on its node for the
  // pods of its priority or lower (deletePodFromSchedulingQueue).
  if (!ClearNomination(uid).empty() && !bound) {
    MoveAllToActiveOrBackoff(Event::kNominationLost, priority);
  }
}

void KubeScheduler::ToActive(QueuedPod* q) { active_.insert(q); }

void KubeScheduler::ToActiveOrBackoff(QueuedPod* q) {
  const int64_t end = BackoffEnd(*q);
  if (end <= loop_->now_ms()) {
    ToActive(q);
  } else {
    (q->attempts > 0 && q->rejected_by == 0 ? error_backoff_ : backoff_).emplace(end, q);
  }
}

int64_t KubeScheduler::BackoffEnd(const QueuedPod& q) const {
  int64_t backoff = options_.initial_backoff_ms;
  for (int i = 1; i < q.attempts && backoff < options_.max_backoff_ms; ++i) backoff *= 2;
  return q.last_attempt_ms + std::min(backoff, options_.max_backoff_ms);
}

bool KubeScheduler::WorthRetry(const QueuedPod& q, Event event) const {
  if (options_.minor == 0) return event != Event::kNominationLost;  // every event, every pod
  switch (event) {
    case Event::kNodeChanged:
      return true;
    case Event::kRoomFreed:
      return (q.rejected_by & (kByExtender | kByRoom)) != 0;
    case Event::kAssignedPodChanged:
      return options_.minor >= 32 && (q.rejected_by & kByExtender) != 0;
    case Event::kNominationLost:
      return options_.minor >= 33 && (q.rejected_by & (kByExtender | kByRoom)) != 0;
  }
  return false;
}

void KubeScheduler::MoveAllToActiveOrBackoff(Event event, int32_t up_to_priority) {
  for (auto it = unschedulable_.begin(); it != unschedulable_.end();) {
    if ((*it)->priority > up_to_priority || !WorthRetry(**it, event)) {
      ++it;
      continue;
    }
    ToActiveOrBackoff(*it);
    it = unschedulable_.erase(it);
  }
}

void KubeScheduler::FlushBackoff() {
  const int64_t now = loop_->now_ms();
  for (std::set<BackoffKey, BackoffOrder>* queue : {&backoff_, &error_backoff_}) {
    while (!queue->empty() && queue->begin()->first <= now) {
      ToActive(queue->begin()->second);
      queue->erase(queue->begin());
    }
  }
}

void KubeScheduler::FlushUnschedulableLeftover() {
  const int64_t now = loop_->now_ms();
  for (auto it = unschedulable_.begin(); it != unschedulable_.end();) {
    if (now - (*it)->unschedulable_since_ms < options_.unschedulable_max_ms) {
      ++it;
      continue;
    }
    ToActiveOrBackoff(*it);
    it = unschedulable_.erase(it);
  }
}

// The queue's periodic flushes run while it holds pods (and stop when it is empty, so that a
// finished simulation has nothing left to run).
void KubeScheduler::ScheduleFlushes() {
  if (flushes_scheduled_) return;
  flushes_scheduled_ = true;
  auto tick = std::make_shared<std::function<void(int64_t)>>();
  *tick = [this, tick](int64_t count) {
    if (queued_.empty()) {
      flushes_scheduled_ = false;
      return;
    }
    FlushBackoff();
    if (count % (kUnschedulableFlushMs / kBackoffFlushMs) == 0) FlushUnschedulableLeftover();
    loop_->After(kBackoffFlushMs, [tick, count] { (*tick)(count + 1); });
  };
  loop_->After(kBackoffFlushMs, [tick] { (*tick)(1); });
}

void KubeScheduler::Failed(QueuedPod* q, uint8_t rejected_by) {
  q->rejected_by = rejected_by;
  if (rejected_by == 0 && options_.minor != 0) {
    ToActiveOrBackoff(q);  // rejected by nothing: retried after its backoff, not on an event
    return;
  }
  q->unschedulable_since_ms = loop_->now_ms();
  unschedulable_.insert(q);
}

size_t KubeScheduler::RunCycles() {
  size_t tried = 0;
  while (has_active()) {
    QueuedPod* q = nullptr;
    if (!active_.empty()) {
      q = *active_.begin();
      active_.erase(active_.begin());
    } else {  // v1.33: activeQ empty, the backoffQ's head (not a pod that failed with an error)
      q = backoff_.begin()->second;
      backoff_.erase(backoff_.begin());
    }
    ++tried;
    ScheduleOne(q);
  }
  return tried;
}

// ---- a cycle ----

const ResourceList& KubeScheduler::Used(const std::string& node) const {
  static const ResourceList kNone;
  auto it = used_.find(node);
  return it == used_.end() ? kNone : it->second;
}

ResourceList KubeScheduler::NominatedOn(const std::string& node, int32_t priority,
                                        const std::string& except) const {
  ResourceList out;
  auto it = nominated_.find(node);
  if (it == nominated_.end()) return out;
  for (const std::string& uid : it->second) {
    if (uid == except) continue;
    const PodObject* o = api_->Find(uid);
    if (o != nullptr && PriorityOf(o->pod) >= priority) out.Add(o->request);
  }
  return out;
}

bool KubeScheduler::Fits(const PodObject& pod, const model::Node& node,
                         const ResourceList& extra_free) const {
  const ResourceList& used = Used(node.name);
  auto nominated = nominated_.find(node.name);
  if (nominated == nominated_.end() || nominated->second.empty()) {
    return FitsIn(pod.request, node.allocatable, used, extra_free);
  }
  ResourceList with_nominated = used;
  with_nominated.Add(NominatedOn(node.name, PriorityOf(pod.pod), pod.pod.uid));
  return FitsIn(pod.request, node.allocatable, with_nominated, extra_free);
}

void KubeScheduler::Refresh(const PodObject& pod, QueuedPod* q) const {
  const size_t node_count = api_->nodes().size();
  if (q->filter_args.pod.uid.empty() ||
      q->filter_args.pod.resource_version != pod.pod.resource_version) {
    q->filter_args.pod = pod.pod;
    q->preempt_args.pod = pod.pod;
    q->selects.clear();
  }
  if (q->selects.size() != node_count) {
    q->selects.resize(node_count);
    for (size_t i = 0; i < node_count; ++i) {
      q->selects[i] =
          decisions::MatchesNodeSelector(pod.pod.node_selector, api_->nodes()[i].labels);
    }
  }
}

std::vector<size_t> KubeScheduler::NodesThatFit(const PodObject& pod, const QueuedPod& q,
                                                const std::vector<size_t>& among,
                                                std::vector<size_t>* resolvable) const {
  std::vector<size_t> fit;
  for (const size_t i : among) {
    const model::Node& node = api_->nodes()[i];
    if (node.unschedulable || !q.selects[i]) continue;
    if (Fits(pod, node, ResourceList())) {
      fit.push_back(i);
    } else if (resolvable != nullptr) {
      resolvable->push_back(i);  // Insufficient resources: preemption may help
    }
  }
  return fit;
}

void KubeScheduler::ScheduleOne(QueuedPod* q) {
  const std::string& uid = q->uid;
  const PodObject* object = api_->Find(uid);
  if (object == nullptr) return;
  const PodObject& pod = *object;
  QueuedPod& queued = *q;
  ++queued.attempts;
  queued.last_attempt_ms = loop_->now_ms();
  ++stats_.attempts;
  Refresh(pod, &queued);

  const std::vector<model::Node>& nodes = api_->nodes();
  std::vector<size_t> resolvable;
  std::vector<size_t> fit;
  // evaluateNominatedNode: the nominated node alone first.
  if (!pod.nominated_node.empty()) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].name != pod.nominated_node) continue;
      fit = NodesThatFit(pod, queued, {i}, nullptr);
      break;
    }
  }
  uint8_t rejected_by = 0;  // what rejected it on some node (PodInfo.UnschedulablePlugins)
  if (fit.empty()) {
    std::vector<size_t> all(nodes.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    fit = NodesThatFit(pod, queued, all, &resolvable);
    if (!resolvable.empty()) rejected_by |= kByRoom;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].unschedulable || !queued.selects[i]) rejected_by |= kBySelector;
    }
  }

  FilterArgs& args = queued.filter_args;
  std::vector<std::string> feasible;
  if (!fit.empty()) {
    args.node_names.resize(fit.size());
    for (size_t i = 0; i < fit.size(); ++i) args.node_names[i] = nodes[fit[i]].name;
    const FilterResult result = extender_->Filter(args);
    if (!result.error.empty()) {
      Failed(q, /*rejected_by=*/0);
      return;
    }
    if (!result.failed.empty() || !result.unresolvable.empty()) rejected_by |= kByExtender;
    feasible = result.FeasibleNames(args);
    for (const FilterResult::Refused& r : result.failed) resolvable.push_back(fit[r.node]);
    if (feasible.empty()) {
      ++stats_.refused_by_extender;
      if (attempt_observer_) {
        std::string why;
        for (const std::string& reason : result.reasons) why += (why.empty() ? "" : " | ") + reason;
        attempt_observer_(pod.pod, "refused: " + why);
      }
    }
  } else {
    ++stats_.no_fit;
    if (attempt_observer_) {
      std::string why = "no node fits (free:";
      for (const size_t i : resolvable) {
        ResourceList free = nodes[i].allocatable;
        Subtract(&free, Used(nodes[i].name));
        why += " " + nodes[i].name + " " + free.ToString() + ";";
      }
      attempt_observer_(pod.pod, why + ")");
    }
  }
  if (feasible.empty()) {
    std::sort(resolvable.begin(), resolvable.end(),
              [&](size_t a, size_t b) { return nodes[a].name < nodes[b].name; });
    (void)PostFilter(pod, &queued, resolvable);
    Failed(q, rejected_by);
    return;
  }
  args.node_names = feasible;
  const std::string host = SelectHost(pod, args, feasible);
  // The cache assumes the pod on its node before the binding (the next cycle counts it there).
  Assume(uid, host, pod.request, PriorityOf(pod.pod));
  BindArgs bind{pod.pod.name, pod.pod.namespace_, pod.pod.uid, host};
  const BindResult bound = extender_->Bind(bind);
  if (!bound.error.empty()) {
    ++stats_.bind_errors;
    // Forgetting an assumed pod is an AssignedPodDelete for the others (handleBindingCycleError).
    Forget(uid);
    if (options_.minor != 0) MoveAllToActiveOrBackoff(Event::kRoomFreed);
    Failed(q, /*rejected_by=*/0);
    return;
  }
  ++stats_.bound;
  if (attempt_observer_) attempt_observer_(pod.pod, "");
  // The pod leaves the queue when its binding is seen (OnEvent).
}

std::string KubeScheduler::SelectHost(const PodObject& pod, const FilterArgs& args,
                                      const std::vector<std::string>& feasible) {
  std::map<std::string, int64_t> scores;
  for (const std::string& name : feasible) {
    const model::Node* node = api_->FindNode(name);
    scores[name] =
        NodeResourcesFitScore(options_.scoring, pod.request, node->allocatable, Used(name));
  }
  // prioritizeNodes: the extender's score (0..10) × its weight × MaxNodeScore /
  // MaxExtenderPriority.
  if (options_.extender_weight > 0) {
    for (const HostPriority& p : extender_->Prioritize(args)) {
      if (scores.count(p.host) != 0) scores[p.host] += p.score * options_.extender_weight * 10;
    }
  }
  // selectHost: the best score; among equals, each is kept with probability 1/seen.
  std::string best;
  int64_t best_score = std::numeric_limits<int64_t>::min();
  int64_t ties = 0;
  for (const std::string& name : feasible) {
    const int64_t s = scores[name];
    if (s > best_score) {
      best = name;
      best_score = s;
      ties = 1;
    } else if (s == best_score) {
      ++ties;
      if (static_cast<int64_t>(rng_() % static_cast<uint64_t>(ties)) == 0) best = name;
    }
  }
  return best;
}

// ---- DefaultPreemption ----

std::vector<const PodObject*> KubeScheduler::VictimsOn(const PodObject& pod,
                                                       const model::Node& node) const {
  const int32_t priority = PriorityOf(pod.pod);
  auto priorities = priorities_on_.find(node.name);
  if (priorities == priorities_on_.end() || priorities->second.empty() ||
      *priorities->second.begin() >= priority) {
    return {};  // no pod of lower priority: no victim
  }
  std::vector<const PodObject*> potential;
  ResourceList freed;
  auto on = pods_on_.find(node.name);
  if (on != pods_on_.end()) {
    for (const std::string& uid : on->second) {
      const PodObject* o = api_->Find(uid);
      if (o == nullptr || PriorityOf(o->pod) >= priority) continue;
      potential.push_back(o);
      freed.Add(o->request);
    }
  }
  if (potential.empty() || !Fits(pod, node, freed)) return {};
  std::sort(potential.begin(), potential.end(),
            [](const PodObject* a, const PodObject* b) { return MoreImportant(a->pod, b->pod); });
  std::vector<const PodObject*> victims;
  for (const PodObject* p : potential) {
    Subtract(&freed, p->request);  // reprieved, if the pod fits without it
    if (!Fits(pod, node, freed)) {
      freed.Add(p->request);
      victims.push_back(p);
    }
  }
  return victims;
}

bool KubeScheduler::PostFilter(const PodObject& pod, QueuedPod* q,
                               const std::vector<size_t>& candidates) {
  // PodEligibleToPreemptOthers: not while a lower-priority pod terminates on its nominated node.
  if (!pod.nominated_node.empty()) {
    auto on = pods_on_.find(pod.nominated_node);
    if (on != pods_on_.end()) {
      for (const std::string& uid : on->second) {
        const PodObject* o = api_->Find(uid);
        if (o && o->pod.deletion_unix_ms && PriorityOf(o->pod) < PriorityOf(pod.pod)) return false;
      }
    }
  }
  PreemptArgs& args = q->preempt_args;
  args.node_to_victims.clear();
  args.meta = true;
  for (const size_t i : candidates) {
    const model::Node& node = api_->nodes()[i];
    const std::vector<const PodObject*> victims = VictimsOn(pod, node);
    if (victims.empty()) continue;
    Victims& v = args.node_to_victims[node.name];
    for (const PodObject* p : victims) {
      Pod meta;
      meta.uid = p->pod.uid;
      v.pods.push_back(std::move(meta));
    }
  }
  // No candidate (here, or after the extender): the pod's nomination is cleared
  // (NewPostFilterResultWithNominatedNode("")).
  if (args.node_to_victims.empty()) {
    LoseNomination(pod.pod);
    return false;
  }
  // The extender trims the candidates when it registers a preempt verb.
  PreemptResult result;
  if (options_.preempt_verb) {
    result = extender_->Preempt(args);
  } else {
    result.node_to_victims = args.node_to_victims;
  }
  std::vector<std::pair<std::string, std::vector<const PodObject*>>> nodes;
  if (result.error.empty()) {
    for (const auto& [name, victims] : result.node_to_victims) {
      std::vector<const PodObject*> objects;
      for (const Pod& p : victims.pods) {
        if (const PodObject* o = api_->Find(p.uid)) objects.push_back(o);
      }
      if (!objects.empty()) nodes.emplace_back(name, std::move(objects));
    }
  }
  if (nodes.empty()) {
    ++stats_.preemptions_vetoed;
    LoseNomination(pod.pod);
    return false;
  }
  // pickOneNodeForPreemption (no PDBs are simulated).
  auto rank = [](const std::vector<const PodObject*>& v) {
    int64_t highest = std::numeric_limits<int64_t>::min();
    int64_t sum = 0;
    int64_t earliest_of_highest = std::numeric_limits<int64_t>::max();
    for (const PodObject* o : v) highest = std::max<int64_t>(highest, PriorityOf(o->pod));
    for (const PodObject* o : v) {
      sum += PriorityOf(o->pod) + std::numeric_limits<int32_t>::max() + 1LL;
      if (PriorityOf(o->pod) == highest) {
        earliest_of_highest =
            std::min(earliest_of_highest, o->pod.start_unix_ms.value_or(o->pod.creation_unix_ms));
      }
    }
    // Smaller is better; the latest start of the highest-priority victims wins.
    return std::make_tuple(highest, sum, static_cast<int64_t>(v.size()), -earliest_of_highest);
  };
  auto best = std::min_element(nodes.begin(), nodes.end(), [&](const auto& a, const auto& b) {
    return rank(a.second) < rank(b.second);
  });
  Victims chosen;
  for (const PodObject* o : best->second) chosen.pods.push_back(o->pod);
  PrepareCandidate(pod, best->first, chosen);
  return true;
}

void KubeScheduler::PrepareCandidate(const PodObject& pod, const std::string& node,
                                     const Victims& victims) {
  ++stats_.preemptions;
  if (attempt_observer_) {
    std::string what = "preempts on " + node + ":";
    for (const Pod& v : victims.pods) what += " " + v.namespace_ + "/" + v.name;
    attempt_observer_(pod.pod, what);
  }
  for (const Pod& v : victims.pods) {
    const PodObject* o = api_->Find(v.uid);
    if (o == nullptr) continue;
    ++stats_.preemption_victims;
    (void)api_->DeleteGracefully(v.uid, o->tag.grace_ms, "PreemptionByScheduler");
  }
  // Lower-priority pods nominated to the node lose their nomination.
  std::set<std::string>& here = nominated_[node];
  std::vector<const PodObject*> lose;
  for (auto it = here.begin(); it != here.end();) {
    const PodObject* o = api_->Find(*it);
    if (o != nullptr && PriorityOf(o->pod) < PriorityOf(pod.pod)) {
      lose.push_back(o);
      ++it;
    } else if (o == nullptr) {
      it = here.erase(it);
    } else {
      ++it;
    }
  }
  for (const PodObject* o : lose) LoseNomination(o->pod);
  const std::string before = ClearNomination(pod.pod.uid);
  here.insert(pod.pod.uid);
  api_->SetNominatedNode(pod.pod.uid, node);
  if (!before.empty() && before != node) {
    MoveAllToActiveOrBackoff(Event::kNominationLost, PriorityOf(pod.pod));
  }
}

std::string KubeScheduler::ClearNomination(const std::string& uid) {
  std::string was;
  for (auto& [node, uids] : nominated_) {
    if (uids.erase(uid) != 0) was = node;
  }
  const PodObject* o = api_->Find(uid);
  if (o != nullptr && !o->nominated_node.empty()) api_->SetNominatedNode(uid, "");
  return was;
}

void KubeScheduler::LoseNomination(const Pod& pod) {
  if (!ClearNomination(pod.uid).empty()) {
    MoveAllToActiveOrBackoff(Event::kNominationLost, PriorityOf(pod));
  }
}

std::map<std::string, ResourceList> KubeScheduler::FreeByNode() const {
  std::map<std::string, ResourceList> out;
  for (const model::Node& n : api_->nodes()) {
    ResourceList free = n.allocatable;
    Subtract(&free, Used(n.name));
    out[n.name] = std::move(free);
  }
  return out;
}

}  // namespace taskgov::scheduler::sim
