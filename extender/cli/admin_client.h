#pragma once

// AdminApi: the extender's read-only admin API (extender/ADMIN_API.md) as the CLI reads it — by
// default through the API server's service proxy with the user's own credentials
// (GET /api/v1/namespaces/{ns}/services/{name}:{port}/proxy/api/v1/...), or directly at
// --console-url with the same credentials (a port-forward). Errors say what is missing and how
// to reach it: the Service, RBAC on services/proxy, the console's own token check. The API
// server keeps the caller's Authorization header for itself, so through the proxy the CLI sends
// its bearer token in X-Taskgov-Authorization, which the console reads instead.
// Thread-compatible.

#include <rapidjson/document.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "extender/cli/command.h"
#include "extender/cli/live.h"
#include "scheduler/common/result.h"

namespace taskgov::cli {

class AdminApi {
 public:
  virtual ~AdminApi() = default;
  // GET `target` ("/api/v1/teams?limit=500"): the JSON reply, or what is missing and how to fix it.
  [[nodiscard]] virtual common::Result<rapidjson::Document> Get(const std::string& target) = 0;
  // "service taskgov-system/taskgov-console:9091 through the API server's proxy", or the URL.
  [[nodiscard]] virtual std::string where() const = 0;
};

// The admin API the global flags name (connects lazily: an unreachable console shows on Get).
[[nodiscard]] common::Result<std::unique_ptr<AdminApi>> ConnectAdminApi(const Invocation& inv);

// One line for commands that work without the admin API: "note: <what is not shown>: <why>".
void NoteMissingLive(const Invocation& inv, const std::string& what, const common::Error& why);

// Every team (GET /api/v1/teams).
[[nodiscard]] common::Result<std::vector<LiveTeam>> ReadTeams(AdminApi& api);
// Every workload, all pages (GET /api/v1/workloads?...); `query` filters ("team=a&state=Pending").
[[nodiscard]] common::Result<std::vector<LiveWorkload>> ReadWorkloads(AdminApi& api,
                                                                      const std::string& query);

}  // namespace taskgov::cli
