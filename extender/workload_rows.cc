#include "extender/workload_rows.h"

#include <algorithm>
#include <map>
#include <optional>

#include "scheduler/actions/job_resumer.h"
#include "scheduler/model/pod_identity.h"

namespace taskgov::extender {
namespace {

using scheduler::state::WorkloadEntry;
using scheduler::state::WorkloadMember;

// Its pods' states, counted.
struct Tally {
  size_t pods = 0, running = 0, terminating = 0, admitted = 0;
  void Add(std::string_view state) {
    ++pods;
    running += state == "Running";
    terminating += state == "Terminating";
    admitted += state == "Admitted";
  }
};

// The workload's state (see the header); `gang_holds` is asked only when it decides.
template <typename GangHolds>
std::string StateOf(const Tally& t, int32_t declared, GangHolds gang_holds) {
  if (t.terminating == t.pods) return "Terminating";
  const size_t expected = std::max<size_t>(t.pods, static_cast<size_t>(std::max(declared, 0)));
  if (t.running + t.terminating >= expected && t.running > 0) return "Running";
  if (t.running + t.admitted > 0 || gang_holds()) return "Admitted";
  return "Pending";
}

// A pod not on a node: Admitted while it holds a reservation.
std::string_view WaitingState(const scheduler::ledger::QuotaBook& book, std::string_view uid) {
  return book.Holds(uid) ? "Admitted" : "Pending";
}

std::string_view MemberState(const WorkloadMember& m, const scheduler::ledger::QuotaBook& book) {
  if (m.bound()) return m.terminating() ? "Terminating" : "Running";
  return WaitingState(book, m.uid());
}

}  // namespace

scheduler::model::NameId TeamOfJob(const scheduler::state::ClusterState& cluster,
                                   const scheduler::model::JobControl& job) {
  return cluster.teams().TeamOf(scheduler::actions::JobResumer::Representative(job));
}

scheduler::model::ResourceList JobDemand(const scheduler::model::JobControl& job) {
  scheduler::model::ResourceList demand;
  for (const scheduler::model::JobControl::PodSet& set : job.pod_sets) {
    demand.Add(scheduler::model::EffectiveRequest(set.pod).Times(set.count));
  }
  return demand;
}

int64_t WorkloadRow::created_ms() const {
  int64_t created = 0;
  for (const PodRow& p : pods) {
    if (created == 0 || (p.created_ms > 0 && p.created_ms < created)) created = p.created_ms;
  }
  return created;
}

WorkloadRows::WorkloadRows(const scheduler::ledger::QuotaBook& book,
                           scheduler::state::ClusterState& cluster)
    : book_(book), cluster_(cluster) {
  const scheduler::model::PolicyPtr policy = book.ledger().policy();
  instance_type_label_ = policy->instance_type_label;
  const bool by_priority =
      policy->task_prioritization == scheduler::model::TaskPrioritization::kTaskRanking;
  for (const scheduler::model::Team& team : policy->teams) {
    const scheduler::model::NameId id = scheduler::model::TeamNames().Intern(team.name);
    std::map<std::string, size_t> places;  // workload key → place
    for (scheduler::state::PendingQueues::Queued& q : cluster.pending().QueueOf(id, by_priority)) {
      const size_t place =
          places.emplace(scheduler::state::WorkloadKeyOf(q.pod.gang, q.pod.key), places.size() + 1)
              .first->second;
      std::string uid = q.pod.uid;
      queued_.emplace(std::move(uid), Queued{std::move(q.pod), q.refused, q.refused_ms, place});
    }
  }
  for (std::shared_ptr<const scheduler::model::JobControl>& job : cluster.PausedJobs()) {
    if (job->paused_by_taskgov()) paused_.push_back(PausedRow(std::move(job), *policy));
  }
}

WorkloadRow WorkloadRows::PausedRow(std::shared_ptr<const scheduler::model::JobControl> job,
                                    const scheduler::model::Policy& policy) const {
  const scheduler::model::Pod pod = scheduler::actions::JobResumer::Representative(*job);
  WorkloadRow w;
  w.key = job->workload;
  w.ns = job->ns;
  w.name = job->name;
  w.kind = job->kind;
  w.team = cluster_.teams().TeamOf(pod);
  w.priority = scheduler::model::ResolvePriority(policy, pod);
  w.priority_class = scheduler::model::PriorityClassOf(policy, pod);
  w.declared = static_cast<int32_t>(std::min<int64_t>(job->pods(), INT32_MAX));
  w.instance_type =
      scheduler::state::RequestedInstanceType(pod.node_selector, instance_type_label_);
  w.state = "Suspended";
  w.job = std::move(job);
  return w;
}

WorkloadRows::Reader::Reader(const WorkloadRows& rows,
                             const scheduler::state::WorkloadTable::View& view)
    : rows_(rows), view_(view) {
  // The pods known only from filter calls (kube-scheduler asked about them; the informers have
  // not reported them): members of a workload the table has, or workloads of their own.
  std::map<std::string, WorkloadRow> loose;               // by order key
  std::unordered_map<std::string, std::string> order_of;  // loose workload key → order key
  for (const auto& [uid, q] : rows.queued_) {
    const scheduler::state::PendingPod& p = q.pod;
    const auto [ns, name] = scheduler::state::SplitKey(p.key);
    if (view.HasPod(uid, ns, name)) continue;
    const std::string key = scheduler::state::WorkloadKeyOf(p.gang, p.key);
    if (const WorkloadEntry* entry = view.Find(key)) {
      extras_[entry->key()].push_back(&q);
      continue;
    }
    auto order = order_of.find(key);
    if (order == order_of.end()) {
      const auto [ns, name] = scheduler::state::SplitKey(p.key);
      const std::string kind = p.gang.empty() ? "Pod" : "Unknown";  // its pods were never listed
      order = order_of.emplace(key, scheduler::state::WorkloadOrderKey(ns, name, kind, key)).first;
      WorkloadRow& w = loose[order->second];
      w.key = key;
      w.ns = ns;
      w.name = name;
      w.kind = kind;
      w.team = p.team;
      w.declared = p.gang.empty() ? 1 : p.workload_size;
      w.priority = p.priority;
      w.instance_type =
          scheduler::state::RequestedInstanceType(p.node_selector, rows.instance_type_label_);
    }
    WorkloadRow& w = loose[order->second];
    w.pods.push_back(FilterOnlyPod(q, &w));
  }
  for (auto& w : loose) Settle(w.second);
  // The paused jobs whose pods are all gone (while any is listed, its entry is the workload).
  for (const WorkloadRow& paused : rows.paused_) {
    if (view.Find(paused.key) != nullptr || order_of.contains(paused.key)) continue;
    loose.emplace(
        scheduler::state::WorkloadOrderKey(paused.ns, paused.name, paused.kind, paused.key),
        paused);
  }
  loose_.reserve(loose.size());
  loose_order_.reserve(loose.size());
  for (auto& [order, w] : loose) {
    loose_order_.push_back(order);
    loose_.push_back(std::move(w));
  }
}

bool WorkloadRows::Reader::GangHolds(std::string_view kind, std::string_view key) const {
  if (kind == "Pod") return false;
  std::optional<scheduler::ledger::GangHold> hold = rows_.book_.FindGang(key);
  return hold && hold->holders > 0;
}

std::vector<WorkloadRows::Item> WorkloadRows::Reader::Merge(
    scheduler::state::WorkloadTable::Ordered::const_iterator from,
    scheduler::state::WorkloadTable::Ordered::const_iterator to, std::string_view prefix) const {
  std::vector<Item> items;
  items.reserve(static_cast<size_t>(std::distance(from, to)) + loose_.size());
  size_t l = 0;
  auto loose_in = [&](size_t i) { return loose_order_[i].starts_with(prefix); };
  while (l < loose_.size() && loose_order_[l] < prefix) ++l;
  for (auto it = from; it != to; ++it) {
    for (; l < loose_.size() && loose_in(l) && loose_order_[l] < it->first; ++l) {
      items.push_back(Item{loose_order_[l], nullptr, &loose_[l]});
    }
    items.push_back(Item{it->first, &it->second, nullptr});
  }
  for (; l < loose_.size() && loose_in(l); ++l) {
    items.push_back(Item{loose_order_[l], nullptr, &loose_[l]});
  }
  return items;
}

std::vector<WorkloadRows::Item> WorkloadRows::Reader::Items() const {
  return Merge(view_.ordered().begin(), view_.ordered().end(), "");
}

std::vector<WorkloadRows::Item> WorkloadRows::Reader::Named(std::string_view ns,
                                                            std::string_view name) const {
  std::string prefix(ns);
  prefix += '/';
  prefix += name;
  prefix += '/';
  const scheduler::state::WorkloadTable::Ordered& ordered = view_.ordered();
  auto from = ordered.lower_bound(prefix);
  auto to = from;
  while (to != ordered.end() && to->first.starts_with(prefix)) ++to;
  return Merge(from, to, prefix);
}

std::string_view WorkloadRows::Reader::Ns(const Item& item) const {
  return item.entry ? item.entry->ns() : item.loose->ns;
}

std::string_view WorkloadRows::Reader::Key(const Item& item) const {
  return item.entry ? item.entry->key() : item.loose->key;
}

scheduler::model::NameId WorkloadRows::Reader::Team(const Item& item) const {
  return item.entry ? item.entry->team : item.loose->team;
}

const std::vector<const WorkloadRows::Queued*>* WorkloadRows::Reader::ExtrasOf(
    const WorkloadEntry& entry) const {
  auto it = extras_.find(entry.key());
  return it == extras_.end() ? nullptr : &it->second;
}

std::string WorkloadRows::Reader::State(const Item& item) const {
  if (item.loose) return item.loose->state;
  const WorkloadEntry& e = *item.entry;
  Tally t;
  for (const WorkloadMember& m : e.members) t.Add(MemberState(m, rows_.book_));
  if (const auto* extras = ExtrasOf(e)) {
    for (const Queued* q : *extras) t.Add(WaitingState(rows_.book_, q->pod.uid));
  }
  return StateOf(t, e.declared, [&] { return GangHolds(e.kind(), e.key()); });
}

WorkloadRow WorkloadRows::Reader::Row(const Item& item) const {
  if (item.loose) return *item.loose;
  const WorkloadEntry& e = *item.entry;
  WorkloadRow w;
  w.key = e.key();
  w.ns = e.ns();
  w.name = e.name();
  w.kind = e.kind();
  w.team = e.team;
  w.priority = e.priority;
  w.priority_class = e.priority_class_name();
  w.declared = e.declared;
  w.instance_type = e.instance_type();
  w.pods.reserve(e.members.size());
  for (const WorkloadMember& m : e.members) {
    PodRow row;
    row.ns = e.ns();
    row.name = m.name();
    row.uid = m.uid();
    row.state = MemberState(m, rows_.book_);
    row.request = m.pod->request();
    row.created_ms = m.pod->creation_unix_ms();
    row.started_ms = m.pod->start_unix_ms().value_or(0);
    if (m.bound()) {
      w.nodes.insert(m.node_name());
    } else if (auto q = rows_.queued_.find(std::string(m.uid())); q != rows_.queued_.end()) {
      Queue(q->second, &row, &w);
    }
    w.pods.push_back(std::move(row));
  }
  if (const auto* extras = ExtrasOf(e)) {
    for (const Queued* q : *extras) w.pods.push_back(FilterOnlyPod(*q, &w));
  }
  Settle(w);
  return w;
}

void WorkloadRows::Reader::Queue(const Queued& q, PodRow* row, WorkloadRow* w) {
  row->refused = q.refused;
  row->refusal = q.pod.refusal;
  row->refused_ms = q.refused_ms;
  if (w->position == 0 || q.position < w->position) w->position = q.position;
}

PodRow WorkloadRows::Reader::FilterOnlyPod(const Queued& q, WorkloadRow* w) const {
  const scheduler::state::PendingPod& p = q.pod;
  const auto [ns, name] = scheduler::state::SplitKey(p.key);
  PodRow row;
  row.ns = ns;
  row.name = name;
  row.uid = p.uid;
  row.state = WaitingState(rows_.book_, p.uid);
  row.request = p.request;
  row.created_ms = p.created_ms;
  Queue(q, &row, w);
  return row;
}

void WorkloadRows::Reader::Settle(WorkloadRow& w) const {
  std::sort(w.pods.begin(), w.pods.end(),
            [](const PodRow& a, const PodRow& b) { return a.name < b.name; });
  Tally t;
  for (const PodRow& p : w.pods) t.Add(p.state);
  w.state = StateOf(t, w.declared, [&] { return GangHolds(w.kind, w.key); });
  if (w.state != "Pending" && w.state != "Admitted") w.position = 0;
}

void WorkloadRows::AddSuspension(WorkloadRow& row, const scheduler::state::ClusterState& cluster) {
  if (row.job != nullptr) return;
  std::shared_ptr<const scheduler::model::JobControl> job = cluster.JobOf(row.key);
  if (job != nullptr && job->suspended) row.job = std::move(job);
}

void WorkloadRows::AddPreemption(WorkloadRow& row,
                                 const std::function<std::string(std::string_view uid)>& status) {
  if (!status) return;
  for (PodRow& p : row.pods) {
    if (p.state == "Pending") p.preemption = status(p.uid);
  }
}

}  // namespace taskgov::extender
