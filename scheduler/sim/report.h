#pragma once

// Recorder: what `taskgov simulate` measures while a trace plays, and Report, what it prints
// (DESIGN §8, "Governance in motion"). Accelerators (every resource but cpu, memory, storage,
// pods and hugepages; model::IsAccelerator) are what is counted, in GPU-seconds:
//  * utilisation — accelerators held by bound, unfinished pods over the cluster's, from the first
//    arrival to the last completion (to the end of the simulation when jobs were left);
//  * stranded — accelerator-seconds idle while a waiting job would have fitted: sampled every
//    second, per flavor, the idle accelerators, up to the demand of the waiting jobs whose every
//    pod fits the free room of some node (first fit, largest first) and whose team's quota, counted
//    on bound pods only, admits it (its ceiling N + B, and its cohort's pool: Σ over the teams of
//    the cohort tree of (usage above the guaranteed part) ≤ Σ of what they lend; DESIGN §3.3);
//  * time to guarantee — for each job that, when it arrived, fitted within its team's nominal
//    quota beside what the team's bound pods used, while no other job of its team waited (what
//    it waits for is then the quota others borrowed): arrival → every pod bound;
//  * borrowed GPU-seconds per team (usage above nominal on each flavor), divided by the team's
//    fair-share weight, and Jain's index of those among the teams that borrowed;
//  * disruptions (a job's running attempt stopped by an eviction, a preemption or a suspension)
//    per job, by mechanism; work lost — the progress thrown away (since the last checkpoint) ×
//    the job's accelerators — over the accelerator-seconds used; ping-pong — disruptions of a job
//    within 60 s of its previous disruption;
//  * waits (arrival → every pod bound, first time) per priority class, p50 / p95; jobs that
//    never ran.
//
// Not synchronised (the simulator is single-threaded).

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/model/policy.h"
#include "scheduler/sim/api.h"
#include "scheduler/sim/trace.h"

namespace taskgov::scheduler::sim {

struct Report {
  std::string label;  // the policy's name in tables
  int jobs = 0;
  int completed = 0;
  int never_ran = 0;
  int64_t accelerators = 0;  // in the cluster
  double makespan_s = 0;
  double utilisation = 0;  // 0..1
  double stranded = 0;     // of the accelerator-seconds of the makespan, 0..1
  double used_gpu_s = 0;
  double lost_gpu_s = 0;
  // Time to guarantee, seconds.
  int guarantee_samples = 0;
  double guarantee_p50 = 0, guarantee_p95 = 0, guarantee_max = 0;
  uint64_t disruptions = 0;
  std::map<std::string, uint64_t> disruptions_by_mechanism;
  uint64_t ping_pong = 0;
  int max_disruptions_of_a_job = 0;
  std::string most_disrupted_job;
  struct TeamShare {
    double borrowed_gpu_s = 0;
    double weight = 1;
    double borrowed_of_fair = -1;  // while borrowers contended (-1: it never contended)
  };
  std::map<std::string, TeamShare> teams;
  double jain = 1.0;  // among teams that borrowed
  // While borrowers contend — two or more teams of a cohort want to borrow more on a flavor than
  // can be lent there — each contender's fair part is its weighted max-min share of what can be
  // lent (capped by what it wants). Over those times, per team: borrowed GPU-s ÷ fair-part GPU-s
  // (TeamShare::borrowed_of_fair); and Jain's index of those ratios (1: every team had its fair
  // part over time; -1 when borrowers never contended).
  double jain_contended = -1;
  double contended_s = 0;  // how long borrowers contended somewhere
  struct Waits {
    int jobs = 0;
    int never_ran = 0;
    double p50 = 0, p95 = 0;
  };
  std::map<std::string, Waits> waits_by_class;
  // Counters of the players and the extender, for the curious.
  std::map<std::string, uint64_t> counters;
  double wall_s = 0;       // how long the simulation took to run
  double simulated_s = 0;  // how much time it simulated

  [[nodiscard]] double disruptions_per_job() const {
    return jobs == 0 ? 0 : static_cast<double>(disruptions) / jobs;
  }
  [[nodiscard]] double work_lost() const { return used_gpu_s <= 0 ? 0 : lost_gpu_s / used_gpu_s; }
};

// The table: one column per report (two with --compare).
void PrintReports(const std::vector<Report>& reports, std::ostream& out);

class Recorder {
 public:
  Recorder(const model::Policy& policy, const Trace& trace, const Api* api);

  // Every watch event (after the API applied it), at `now_ms`.
  void OnEvent(const WatchEvent& event, int64_t now_ms);
  // Job lifecycle, from the controllers.
  void Arrived(const TraceJob& job, int64_t now_ms);
  void AllBound(const TraceJob& job, int64_t now_ms);
  void Disrupted(const TraceJob& job, int64_t now_ms, int64_t lost_progress_ms,
                 std::string_view mechanism);
  void Completed(const TraceJob& job, int64_t now_ms);
  // The stranded sample (every second while jobs wait): the free room of every node. A sample
  // that finds the jobs, the usage and the free room as the previous one did repeats its
  // findings without looking at the waiting jobs again.
  void Sample(int64_t now_ms, const std::map<std::string, model::ResourceList>& free_by_node);
  [[nodiscard]] bool waiting() const { return waiting_ > 0; }
  // Told, at a sample that finds idle accelerators a waiting job would fit, which (the timeline).
  void SetStrandedObserver(std::function<void(const std::string&)> observer) {
    stranded_observer_ = std::move(observer);
  }

  [[nodiscard]] Report Finish(int64_t now_ms);

 private:
  struct JobStats {
    const TraceJob* job = nullptr;
    int64_t arrived_ms = -1;
    int64_t first_bound_ms = -1;
    int64_t completed_ms = -1;
    bool bound_now = false;  // every member of its attempt bound
    bool within_nominal = false;
    int disruptions = 0;
    int64_t last_disruption_ms = -1;
    int64_t gpus = 0;
    std::string flavor;  // its pods' flavor ("" when it names none)
    std::string team;    // its namespace's team ("" when none)
    std::string shape;   // its pod sets (count, instance type, requests): jobs alike fit alike
  };
  // Usage of bound, unfinished pods per (team, flavor), in the accelerator resources.
  struct Cell {
    int64_t used = 0;
    int64_t nominal = 0;
    int64_t ceiling = 0;     // N + B (kUnlimited when B is)
    int64_t guaranteed = 0;  // N − L
    int64_t lendable = 0;    // L
  };
  // What a stranded sample found: per flavor (in flavor order), the idle accelerators up to the
  // fitting demand; and the timeline's note ("" when no job would fit).
  struct Stranded {
    std::vector<int64_t> by_flavor;
    std::string note;
  };
  [[nodiscard]] Stranded FindStranded(
      const std::map<std::string, model::ResourceList>& free_by_node) const;
  // Where borrowers contend now (Report::jain_contended): each contender's borrowed
  // accelerators and its fair part.
  struct FairPart {
    std::string team;
    int64_t borrowed = 0;
    double fair = 0;
  };
  [[nodiscard]] std::vector<FairPart> Contention() const;
  void Integrate(int64_t now_ms);
  [[nodiscard]] bool QuotaAdmits(const JobStats& job) const;
  [[nodiscard]] std::string FlavorOfNode(const std::string& node) const;
  [[nodiscard]] std::string TeamOf(const std::string& ns) const;
  Cell& CellOf(const std::string& team, const std::string& flavor);
  void MayWait(const std::string& name);  // adds the job to maybe_waiting_

  const model::Policy& policy_;
  const Api* const api_;
  std::map<std::string, JobStats> jobs_;  // by job name
  int waiting_ = 0;
  // The names of the jobs that may be waiting (arrived, not completed, not all bound), and of
  // some that no longer are: a superset, for the scans that look at waiting jobs only.
  std::map<std::string_view, JobStats*> maybe_waiting_;             // keys and values: jobs_' own
  std::map<std::string, std::pair<std::string, int64_t>> counted_;  // pod uid → (node, gpus)
  std::map<std::string, std::string> job_of_pod_;                   // pod uid → job
  std::map<std::pair<std::string, std::string>, Cell> cells_;       // (team, flavor)
  std::map<std::string, std::string> root_of_team_;                 // team → cohort root
  int64_t in_use_ = 0;
  int64_t accelerators_ = 0;
  int64_t first_ms_ = -1;
  int64_t last_ms_ = -1;
  int64_t last_completion_ms_ = -1;
  double used_gpu_ms_ = 0;
  double lost_gpu_ms_ = 0;
  double stranded_gpu_ms_ = 0;
  int64_t last_sample_ms_ = -1;
  // The last stranded sample's findings, and the input it read; `changed_` is set whenever the
  // jobs or the usage change (then the next sample looks again).
  Stranded last_stranded_;
  std::vector<FairPart> last_contention_;  // Contention() at the last look
  double contended_ms_ = 0;
  struct ContendedShare {
    double borrowed_gpu_ms = 0;
    double fair_gpu_ms = 0;
  };
  std::map<std::string, ContendedShare> contended_;  // by team
  std::map<std::string, model::ResourceList> last_free_;
  bool changed_ = true;
  std::map<std::string, double> borrowed_gpu_ms_;  // by team
  std::vector<double> guarantee_s_;
  uint64_t disruptions_ = 0;
  uint64_t ping_pong_ = 0;
  std::map<std::string, uint64_t> by_mechanism_;
  std::function<void(const std::string&)> stranded_observer_;
};

}  // namespace taskgov::scheduler::sim
