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
  std::map<std::string, std::string> request;
  std::optional<int64_t> queue_position;
  int64_t wait_seconds = 0;
  bool refused = false;
  std::string refusal;
  std::string preemption;
};

[[nodiscard]] common::Result<std::vector<LiveTeam>> DecodeTeams(const rapidjson::Value& reply);
[[nodiscard]] common::Result<LiveWorkload> DecodeWorkload(const rapidjson::Value& item);

}  // namespace taskgov::cli
