// Random traces through the simulator (issue 34): after every step the quota guarantees of
// DESIGN §3.3 hold on what is bound, no gang stays partly bound beyond the gang timeout, every
// eviction for another team takes a pod of a team whose bound pods are above its nominal quota,
// and no pod (no gang) that took capacity from a team is that team's victim within 5 minutes.

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "scheduler/model/pod_identity.h"
#include "scheduler/sim/simulator.h"
#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::sim {
namespace {

using model::PolicyPtr;
using testing::PolicyBuilder;

constexpr char kP5[] = "ml.p5.48xlarge";
constexpr char kGpu[] = "nvidia.com/gpu";

struct Quota {
  int64_t nominal = 0;
  int64_t ceiling = 0;
  int64_t guaranteed = 0;
  int64_t lendable = 0;
};

// Three teams in one cohort: a lends all its 8 and may borrow 8; b lends 4 of its 8, borrows
// unlimited; c lends none of its 4 and may not borrow. A pod waiting over 2 minutes starves.
PolicyPtr Policy() {
  PolicyBuilder b;
  b.PriorityClass("high", 100).PriorityClass("low", 1);
  b.Team("a", "c").Quota(kP5, kGpu, 8, 8).Weight(2);
  b.Team("b", "c").Quota(kP5, kGpu, 8, model::kUnlimited, 4);
  b.Team("c", "c").Quota(kP5, kGpu, 4, 0, 0);
  b.mutable_policy().preemption.grace_period_seconds = 5;
  b.mutable_policy().gang_timeout_seconds = 60;
  b.mutable_policy().starvation_bound_seconds = 120;  // drains happen in the traces too
  return b.Build();
}

const std::map<std::string, Quota> kQuota = {
    {"ns-a", {8, 16, 0, 8}}, {"ns-b", {8, 1'000'000, 4, 4}}, {"ns-c", {4, 4, 4, 0}}};

// GPUs of bound pods that still hold their quota (terminating ones too), by namespace.
std::map<std::string, int64_t> BoundGpus(const Api& api) {
  std::map<std::string, int64_t> used;
  for (const PodObject* p : api.pods()) {
    const PodObject& o = *p;
    if (o.pod.bound() && !o.pod.terminal()) used[o.pod.namespace_] += o.request.Get(kGpu);
  }
  return used;
}

class PropertyTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(PropertyTest, RandomTracesKeepTheGuaranteesAtEveryStep) {
  GeneratorOptions g;
  g.seed = GetParam();
  g.jobs = 70;
  g.span_ms = 15 * 60'000;
  g.load = 1.5;
  g.gang_fraction = 0.5;
  g.checkpoint_every_ms = 60'000;
  NodeGroup p5;
  p5.instance_type = kP5;
  p5.count = 3;
  p5.name_prefix = "p5";
  p5.allocatable.Set(kGpu, 8);
  p5.allocatable.Set("cpu", 192'000);
  g.nodes = {p5};
  // What each team may ever hold: a's ceiling is 16, but what it borrows comes from a pool of
  // 12 (a lends 8, b 4, c none) and a guarantees itself nothing; b keeps 4 and borrows up to 12.
  g.teams = {{"ns-a", 2, {{kP5, 12}}}, {"ns-b", 2, {{kP5, 16}}}, {"ns-c", 1, {{kP5, 4}}}};
  g.priority_classes = {"high", "low"};
  const Trace trace = GenerateTrace(g);

  std::ostringstream failures;
  size_t steps = 0, evictions_checked = 0;
  // First time each gang attempt was partly bound (job/attempt → ms), while it is.
  std::map<std::string, int64_t> partly_since;
  int64_t longest_partial_ms = 0;
  // Who took from which team, when: by gang (its pod group) or lone pod (its uid).
  std::map<std::string, std::map<std::string, int64_t>> took;
  int64_t now_seen = 0;  // the last step's time: events come within a step
  size_t retaliations_checked = 0;
  const auto key_of = [](const Api& api, const std::string& ns, const std::string& name) {
    for (const PodObject* p : api.pods()) {
      const PodObject& o = *p;
      const std::string& uid = o.pod.uid;
      if (o.pod.namespace_ != ns || o.pod.name != name) continue;
      auto group = o.pod.labels.find("kueue.x-k8s.io/pod-group-name");
      return group == o.pod.labels.end() ? uid : ns + "/" + group->second;
    }
    return std::string();
  };
  SimulationOptions options;
  options.seed = GetParam();
  options.after_step = [&](const Api& api, int64_t now_ms) {
    ++steps;
    now_seen = now_ms;
    const std::map<std::string, int64_t> used = BoundGpus(api);
    int64_t above_guaranteed = 0, lendable = 0;
    for (const auto& [ns, q] : kQuota) {
      const int64_t u = used.count(ns) ? used.at(ns) : 0;
      if (u > q.ceiling)
        failures << "t=" << now_ms << " " << ns << " uses " << u << " > " << q.ceiling << "\n";
      above_guaranteed += std::max<int64_t>(0, u - q.guaranteed);
      lendable += q.lendable;
    }
    if (above_guaranteed > lendable) {
      failures << "t=" << now_ms << " the cohort pool holds " << above_guaranteed << " > "
               << lendable << "\n";
    }
    std::map<std::string, std::pair<int, int>> gangs;  // attempt → (bound, members)
    for (const PodObject* p : api.pods()) {
      const PodObject& o = *p;
      if (o.pod.labels.count("kueue.x-k8s.io/pod-group-name") == 0) continue;
      if (o.pod.deletion_unix_ms || o.pod.terminal()) continue;
      auto& [bound, members] = gangs[o.tag.job + "/" + std::to_string(o.tag.attempt)];
      ++members;
      bound += o.pod.bound() ? 1 : 0;
    }
    for (const auto& [attempt, counts] : gangs) {
      if (counts.first > 0 && counts.first < counts.second) {
        const int64_t since = partly_since.emplace(attempt, now_ms).first->second;
        longest_partial_ms = std::max(longest_partial_ms, now_ms - since);
      } else {
        partly_since.erase(attempt);
      }
    }
  };
  options.on_event = [&](const EventRecord& e, const Api& api) {
    if (e.reason == "Preempting") {  // "... from b (Reclaim), a (InTeamPriority): evicting ..."
      static const std::regex kTaken(R"(([\w-]+) \((Reclaim|FairShare)\))");
      const std::string key = key_of(api, e.ns, e.pod_name);
      for (std::sregex_iterator it(e.note.begin(), e.note.end(), kTaken), end; it != end; ++it) {
        took[key][(*it)[1]] = now_seen;
      }
      return;
    }
    if (e.reason != "Preempted") return;
    const bool other_team = e.note.rfind("Reclaim:", 0) == 0 || e.note.rfind("FairShare:", 0) == 0;
    if (!other_team) return;
    ++evictions_checked;
    // "Reclaim: b reclaims ..." / "FairShare: pod ns-b/x of b ..."
    static const std::regex kTaker(
        R"(^(?:Reclaim: ([\w-]+) reclaims|FairShare: pod \S+ of ([\w-]+)))");
    std::smatch taker;
    if (std::regex_search(e.note, taker, kTaker)) {
      const std::string team = taker[1].matched ? taker[1].str() : taker[2].str();
      auto victim = took.find(key_of(api, e.ns, e.pod_name));
      if (victim != took.end()) {
        ++retaliations_checked;
        auto when = victim->second.find(team);
        if (when != victim->second.end() && now_seen - when->second < 300'000 - 2'000) {
          failures << "t=" << now_seen << " " << e.ns << "/" << e.pod_name << " took from " << team
                   << " at " << when->second << " and is its victim now: " << e.note << "\n";
        }
      }
    }
    const int64_t u = BoundGpus(api)[e.ns];
    if (u <= kQuota.at(e.ns).nominal) {
      failures << "evicted " << e.ns << "/" << e.pod_name << " of a team using " << u
               << " bound GPUs of nominal " << kQuota.at(e.ns).nominal << ": " << e.note << "\n";
    }
  };
  const Report r = Simulate(Policy(), trace, options);
  EXPECT_EQ(failures.str(), "");
  EXPECT_GT(steps, 1000u);
  EXPECT_EQ(r.completed, 70);
  // The gang timeout (60 s), plus the grace period the timed-out members get to stop.
  EXPECT_LE(longest_partial_ms, 60'000 + 5'000 + 2'000);
  EXPECT_GT(r.counters.at("controller: drains"), 0u);  // the traces hold nodes for pods too
  std::cout << "seed " << GetParam() << ": " << steps << " steps, " << r.disruptions
            << " disruptions, " << evictions_checked << " evictions for another team checked, "
            << retaliations_checked << " of them of pods that had taken from a team, "
            << "gangs partly bound at most " << longest_partial_ms / 1000.0 << " s, "
            << r.counters.at("controller: drains") << " drains\n";
}

INSTANTIATE_TEST_SUITE_P(Seeds, PropertyTest, ::testing::Values(1, 2, 3, 4, 5, 6));

}  // namespace
}  // namespace taskgov::scheduler::sim
