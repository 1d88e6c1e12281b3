#pragma once

// Output of the read commands in kubectl's formats (`-o table|wide|json|yaml|name`): tables with
// columns padded by three spaces, `describe` as labelled lines, JSON and YAML of one document
// model (the YAML is the JSON document emitted by yaml-cpp, so the two never disagree).
// Pure functions; thread-safe.

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "extender/cli/jobs.h"
#include "extender/cli/live.h"
#include "extender/cli/report.h"

namespace taskgov::cli {

enum class OutputFormat { kTable, kWide, kJson, kYaml, kName };

// nullopt for an unknown name.
[[nodiscard]] std::optional<OutputFormat> ParseOutputFormat(std::string_view name);
[[nodiscard]] std::string_view OutputFormatName(OutputFormat f);

void RenderQuotaList(const std::vector<TeamReport>& teams, OutputFormat format, std::ostream& out);
void RenderPolicy(const PolicyReport& policy, OutputFormat format, std::ostream& out);

// The live numbers `quota describe` adds: the team's line of /api/v1/teams, or why not shown.
struct LiveQuotaReport {
  std::optional<LiveTeam> team;
  std::string missing;  // set when `team` is not
};
void RenderQuotaDescribe(const TeamReport& team, const LiveQuotaReport& live, OutputFormat format,
                         std::ostream& out);

// Jobs (job_render.cc). `live`: whether the admin API answered (the queue columns).
void RenderJobList(const std::vector<JobView>& jobs, bool live, OutputFormat format,
                   std::ostream& out);
void RenderJobDescribe(const JobView& job, OutputFormat format, std::ostream& out);
// `top teams`: per team and instance type use, borrowed, lent; per team what waits.
void RenderTopTeams(const std::vector<LiveTeam>& teams, const std::vector<LiveWorkload>& pending,
                    OutputFormat format, std::ostream& out);

// `job why`: the explanation rule by rule — the workload's checks, a table per flavor and mode
// with ✓/✗ and the numbers, the preemption under way, and "to run:" with every change named.
// JSON and YAML print `raw`, the admin API's reply as it came.
void RenderWhy(const Explanation& why, const rapidjson::Value& raw, OutputFormat format,
               std::ostream& out);

// JSON (pretty, two-space indent) or YAML of `v`.
void RenderDocument(const rapidjson::Value& v, OutputFormat format, std::ostream& out);
// "45s", "3m20s", "2h5m", "3d4h".
[[nodiscard]] std::string FormatSeconds(int64_t seconds);

// Rows padded into columns (three spaces between), the last column unpadded.
void RenderTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out,
                 std::string_view indent = "");

}  // namespace taskgov::cli
