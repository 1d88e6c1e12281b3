#pragma once

// Output of the read commands in kubectl's formats (`-o table|wide|json|yaml|name`): tables with
// columns padded by three spaces, `describe` as labelled lines, JSON and YAML of one document
// model (the YAML is the JSON document emitted by yaml-cpp, so the two never disagree).
// Pure functions; thread-safe.

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "extender/cli/report.h"

namespace taskgov::cli {

enum class OutputFormat { kTable, kWide, kJson, kYaml, kName };

// nullopt for an unknown name.
[[nodiscard]] std::optional<OutputFormat> ParseOutputFormat(std::string_view name);
[[nodiscard]] std::string_view OutputFormatName(OutputFormat f);

void RenderQuotaList(const std::vector<TeamReport>& teams, OutputFormat format, std::ostream& out);
void RenderQuotaDescribe(const TeamReport& team, OutputFormat format, std::ostream& out);
void RenderPolicy(const PolicyReport& policy, OutputFormat format, std::ostream& out);

// Rows padded into columns (three spaces between), the last column unpadded.
void RenderTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out,
                 std::string_view indent = "");

}  // namespace taskgov::cli
