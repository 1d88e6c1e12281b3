#pragma once

// The admin API's replies as the CLI's live commands use them (teams, workloads): plain values
// decoded from extender/ADMIN_API.md's JSON, every access type-checked. Pure; thread-safe.

#include <rapidjson/document.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/common/result.h"

namespace taskgov::cli {

// One quota line of /api/v1/teams (quantity strings as the API gives them).
struct LiveQuota {
  std::string flavor;
  std::string resource;
  std::string nominal;
  std::optional<std::string> borrowing_limit;  // nullopt: unlimited
  std::string usage;
  std::string borrowed;
  std::string lent;
};

struct LiveTeam {
  std::string name;
  std::vector<LiveQuota> quotas;
  int64_t running_pods = 0;
  int64_t pending_pods = 0;
  int64_t admitted_workloads = 0;
  int64_t pending_workloads = 0;
};

// Who suspended a job and why (issue 35): from the job's taskgov.io/ annotations
// (scheduler/model/job_control.h), or the admin API's workload `suspended`.
struct JobSuspension {
  bool by_taskgov = false;  // taskgov paused it and resumes it; else its user suspended it
  std::string reason;       // taskgov's: Reclaim, InTeamPriority, FairShare ("" for a user's)
  std::string since;        // RFC 3339, when taskgov paused it ("" if not known)
  int64_t suspensions = 0;  // times taskgov paused it
};

struct LiveWorkload {
  std::string ns;
  std::string name;
  std::string kind;  // "Job", "PyTorchJob", "Pod", ...
  std::string team;
  std::string state;  // Pending, Admitted, Running, Terminating
  std::string priority_class;
  int64_t priority = 0;
  int64_t pods = 0;
  int64_t declared_pods = 0;
  // Its pods by state (podStates): Pending, Admitted, Running, Terminating.
  std::map<std::string, int64_t> pod_states;
  std::string instance_type;  // what its pods ask for ("" if nothing)
  std::map<std::string, std::string> request;
  std::optional<int64_t> queue_position;
  int64_t wait_seconds = 0;
  bool refused = false;
  std::string refusal;
  std::string preemption;
  std::string why;                         // why it waits, in one line ("" when it does not)
  std::string created;                     // its first pod's creation, RFC 3339
  std::optional<JobSuspension> suspended;  // its job is suspended (state Suspended: paused)
  // Its topology domain (issue 37): "network-node-layer-2 domain spine-1 (required)", or "".
  std::string topology;
};

[[nodiscard]] common::Result<std::vector<LiveTeam>> DecodeTeams(const rapidjson::Value& reply);
[[nodiscard]] common::Result<LiveWorkload> DecodeWorkload(const rapidjson::Value& item);

// GET /api/v1/workloads/{ns}/{name}/explanation (kind WorkloadExplanation): why a workload waits,
// rule by rule, per flavor and mode, with the numbers and what would change the outcome.
struct ExplanationCheck {
  std::string rule;
  bool passed = false;
  std::string detail;
  std::optional<std::string> change;  // what would make it pass
};

struct ExplanationQuota {
  std::string resource;
  std::string need;
  std::string in_use;
  std::string nominal;
  std::string limit;                           // the mode's cap; "unlimited" for none
  std::optional<std::string> borrowing_limit;  // nullopt: unlimited
  std::string pool_used;
  std::string pool_capacity;
  std::string others_borrowed;  // what the other teams of its cohort borrow ("-": not said)
  bool fits = false;
};

struct ExplanationFlavor {
  std::string flavor;
  std::string mode;  // WithinNominal, Borrowing
  bool admissible = false;
  std::vector<ExplanationCheck> checks;
  std::vector<ExplanationQuota> quota;
};

struct Explanation {
  std::string ns;
  std::string name;
  std::string kind;
  std::string team;
  std::string state;
  std::optional<std::string> evaluated_pod;
  std::string verdict;  // Admissible, Waiting, NeverFits, NotPending, NotGoverned
  std::string summary;
  std::map<std::string, std::string> request;
  std::map<std::string, std::string> need;
  int64_t pods_not_created = 0;  // members of the gang not created yet (counted in `need`)
  std::vector<ExplanationCheck> checks;
  std::vector<ExplanationFlavor> flavors;
  std::string preemption;
  // Every `change` of a failed check, in order, once each.
  [[nodiscard]] std::vector<std::string> Changes() const;
};

[[nodiscard]] common::Result<Explanation> DecodeExplanation(const rapidjson::Value& reply);

}  // namespace taskgov::cli
