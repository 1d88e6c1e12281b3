#include "extender/cli/render.h"

#include "extender/cli/json_builder.h"

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace taskgov::cli {

namespace {

using rapidjson::Value;

class ReportJson : public JsonBuilder {
 public:
  using JsonBuilder::JsonBuilder;

  Value Source(const Sourced& s) {
    Value v(rapidjson::kObjectType);
    v.AddMember("value", Str(s.value), a_);
    v.AddMember("source", Str(s.source), a_);
    return v;
  }
  Value Team(const TeamReport& t) {
    Value v(rapidjson::kObjectType);
    Add(&v, "apiVersion", Str("taskgov.io/v1"));
    Add(&v, "kind", Str("ComputeQuota"));
    Add(&v, "name", Str(t.name));
    Add(&v, "definedIn", Str(t.defined_in));
    Add(&v, "dialect", Str(t.dialect));
    Add(&v, "managedByCli", Value(t.managed));
    Add(&v, "namespaces", Source(t.namespaces));
    Add(&v, "cohort", Source(t.cohort));
    Add(&v, "strategy", Source(t.strategy));
    Add(&v, "borrowLimit", Source(t.borrow_limit));
    Add(&v, "preemptTeamTasks", Source(t.preempt_team_tasks));
    Add(&v, "fairShareWeight", Source(t.fair_share_weight));
    Value compute(rapidjson::kArrayType);
    for (const std::string& c : t.compute) compute.PushBack(Str(c), a_);
    Add(&v, "compute", std::move(compute));
    Value quota(rapidjson::kArrayType);
    for (const QuotaRow& r : t.quota) quota.PushBack(Row(r), a_);
    Add(&v, "quota", std::move(quota));
    return v;
  }

  Value Row(const QuotaRow& r) {
    Value v(rapidjson::kObjectType);
    Add(&v, "flavor", Str(r.flavor));
    Add(&v, "resource", Str(r.resource));
    Add(&v, "nominal", Source({FormatAmount(r.resource, r.nominal), r.nominal_source}));
    Add(&v, "borrowingLimit",
        Source({FormatAmount(r.resource, r.borrowing_limit), r.borrowing_source}));
    Add(&v, "lendingLimit", Source({FormatAmount(r.resource, r.lending_limit), r.lending_source}));
    return v;
  }

  Value Policy(const PolicyReport& p) {
    Value v(rapidjson::kObjectType);
    Add(&v, "apiVersion", Str("taskgov.io/v1"));
    Add(&v, "kind", Str("ClusterPolicy"));
    Add(&v, "taskPrioritization", Source(p.task_prioritization));
    Add(&v, "idleComputeAllocation", Source(p.idle_compute));
    Value classes(rapidjson::kArrayType);
    for (const PriorityClassRow& pc : p.priority_classes) {
      Value c(rapidjson::kObjectType);
      Add(&c, "name", Str(pc.name));
      Add(&c, "weight", Value(pc.weight));
      Add(&c, "source", Str(pc.source));
      classes.PushBack(std::move(c), a_);
    }
    Add(&v, "priorityClasses", std::move(classes));
    return v;
  }
};

// Whether YAML would read `s` as something other than a string (a number, bool or null).
bool LooksTyped(const std::string& s) {
  if (s.empty()) return true;
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* word : {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", ".inf",
                           "-.inf", ".nan"}) {
    if (lower == word) return true;
  }
  char* end = nullptr;
  (void)std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

void EmitYaml(const Value& v, YAML::Emitter& out) {
  if (v.IsObject()) {
    out << YAML::BeginMap;
    for (const auto& m : v.GetObject()) {
      out << YAML::Key << m.name.GetString() << YAML::Value;
      EmitYaml(m.value, out);
    }
    out << YAML::EndMap;
  } else if (v.IsArray()) {
    out << YAML::BeginSeq;
    for (const Value& item : v.GetArray()) EmitYaml(item, out);
    out << YAML::EndSeq;
  } else if (v.IsString()) {
    const std::string s(v.GetString(), v.GetStringLength());
    if (LooksTyped(s)) out << YAML::DoubleQuoted;
    out << s;
  } else if (v.IsBool()) {
    out << v.GetBool();
  } else if (v.IsInt64()) {
    out << v.GetInt64();
  } else if (v.IsNumber()) {
    out << v.GetDouble();
  } else {
    out << YAML::Null;
  }
}

}  // namespace

void RenderDocument(const Value& v, OutputFormat format, std::ostream& out) {
  if (format == OutputFormat::kYaml) {
    YAML::Emitter emitter;
    EmitYaml(v, emitter);
    out << emitter.c_str() << "\n";
    return;
  }
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> writer(buffer);
  writer.SetIndent(' ', 2);
  v.Accept(writer);
  out << buffer.GetString() << "\n";
}

namespace {

std::string JoinCompute(const std::vector<std::string>& compute) {
  std::string out;
  for (const std::string& c : compute) out += (out.empty() ? "" : "; ") + c;
  return out.empty() ? "-" : out;
}

void Labelled(std::ostream& out, std::string_view label, const Sourced& s) {
  std::string line = std::string(label) + ":";
  line.resize(std::max<size_t>(line.size() + 1, 21), ' ');
  out << line << s.value << "   (" << s.source << ")\n";
}

void DescribeTable(const TeamReport& t, const LiveQuotaReport& live, std::ostream& out) {
  Labelled(out, "Name", {t.name, t.dialect + " document"});
  Labelled(out, "Defined in",
           {t.defined_in,
            t.managed ? "written by the taskgov CLI" : "hand-written: the CLI leaves it as it is"});
  Labelled(out, "Namespaces", t.namespaces);
  Labelled(out, "Cohort", t.cohort);
  Labelled(out, "Strategy", t.strategy);
  Labelled(out, "Borrow limit", t.borrow_limit);
  Labelled(out, "Preempt team tasks", t.preempt_team_tasks);
  Labelled(out, "Fair-share weight", t.fair_share_weight);
  out << "Compute:\n";
  for (const std::string& c : t.compute) out << "  " << c << "\n";
  out << "Quota (what the extender enforces):\n";
  std::vector<std::vector<std::string>> rows = {
      {"FLAVOR", "RESOURCE", "NOMINAL", "BORROWING-LIMIT", "LENDING-LIMIT"}};
  for (const QuotaRow& r : t.quota) {
    rows.push_back({r.flavor, r.resource, FormatAmount(r.resource, r.nominal),
                    FormatAmount(r.resource, r.borrowing_limit),
                    FormatAmount(r.resource, r.lending_limit)});
  }
  RenderTable(rows, out, "  ");
  out << "Where the values come from:\n";
  for (const QuotaRow& r : t.quota) {
    out << "  " << r.flavor << " " << r.resource << ":\n";
    out << "    nominal " << FormatAmount(r.resource, r.nominal) << ": " << r.nominal_source
        << "\n";
    out << "    borrowing limit " << FormatAmount(r.resource, r.borrowing_limit) << ": "
        << r.borrowing_source << "\n";
    out << "    lending limit " << FormatAmount(r.resource, r.lending_limit) << ": "
        << r.lending_source << "\n";
  }
  if (!live.team) {
    out << "Live use, borrowed, lent: not shown: " << live.missing << "\n";
    return;
  }
  out << "Live (the extender's admin API):\n";
  std::vector<std::vector<std::string>> use = {
      {"FLAVOR", "RESOURCE", "NOMINAL", "USE", "BORROWED", "LENT"}};
  for (const LiveQuota& q : live.team->quotas) {
    use.push_back({q.flavor, q.resource, q.nominal, q.usage, q.borrowed, q.lent});
  }
  RenderTable(use, out, "  ");
  out << "  Pods: " << live.team->running_pods << " running, " << live.team->pending_pods
      << " pending; workloads: " << live.team->admitted_workloads << " admitted, "
      << live.team->pending_workloads << " pending\n";
}

}  // namespace

std::optional<OutputFormat> ParseOutputFormat(std::string_view name) {
  for (OutputFormat f : {OutputFormat::kTable, OutputFormat::kWide, OutputFormat::kJson,
                         OutputFormat::kYaml, OutputFormat::kName}) {
    if (OutputFormatName(f) == name) return f;
  }
  return std::nullopt;
}

std::string_view OutputFormatName(OutputFormat f) {
  switch (f) {
    case OutputFormat::kTable:
      return "table";
    case OutputFormat::kWide:
      return "wide";
    case OutputFormat::kJson:
      return "json";
    case OutputFormat::kYaml:
      return "yaml";
    case OutputFormat::kName:
      return "name";
  }
  return "table";
}

void RenderTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out,
                 std::string_view indent) {
  // Columns by what a terminal shows: UTF-8 code points (✓, ×), not bytes.
  auto columns = [](const std::string& s) {
    return static_cast<size_t>(
        std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
  };
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], columns(row[i]));
  }
  for (const auto& row : rows) {
    std::string line(indent);
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - columns(row[i]) + 3, ' ');
    }
    out << line << "\n";
  }
}

void RenderQuotaList(const std::vector<TeamReport>& teams, OutputFormat format, std::ostream& out) {
  if (format == OutputFormat::kName) {
    for (const TeamReport& t : teams) out << "quota/" << t.name << "\n";
    return;
  }
  if (format == OutputFormat::kJson || format == OutputFormat::kYaml) {
    rapidjson::Document doc(rapidjson::kObjectType);
    ReportJson b(&doc);
    b.Add(&doc, "apiVersion", b.Str("taskgov.io/v1"));
    b.Add(&doc, "kind", b.Str("ComputeQuotaList"));
    Value items(rapidjson::kArrayType);
    for (const TeamReport& t : teams) items.PushBack(b.Team(t), doc.GetAllocator());
    b.Add(&doc, "items", std::move(items));
    RenderDocument(doc, format, out);
    return;
  }
  const bool wide = format == OutputFormat::kWide;
  std::vector<std::vector<std::string>> rows;
  rows.push_back(
      {"NAME", "STRATEGY", "BORROW-LIMIT", "FAIR-SHARE-WEIGHT", "DEFINED-IN", "COMPUTE"});
  if (wide) {
    rows[0].insert(rows[0].end() - 1, {"NAMESPACES", "COHORT", "PREEMPT-TEAM-TASKS", "DIALECT"});
  }
  for (const TeamReport& t : teams) {
    std::vector<std::string> row = {t.name, t.strategy.value, t.borrow_limit.value,
                                    t.fair_share_weight.value, t.defined_in};
    if (wide) {
      row.insert(row.end(),
                 {t.namespaces.value, t.cohort.value, t.preempt_team_tasks.value, t.dialect});
    }
    row.push_back(JoinCompute(t.compute));
    rows.push_back(std::move(row));
  }
  RenderTable(rows, out);
}

void RenderQuotaDescribe(const TeamReport& team, const LiveQuotaReport& live, OutputFormat format,
                         std::ostream& out) {
  if (format == OutputFormat::kName) {
    out << "quota/" << team.name << "\n";
  } else if (format == OutputFormat::kJson || format == OutputFormat::kYaml) {
    rapidjson::Document doc;
    ReportJson b(&doc);
    Value v = b.Team(team);
    if (live.team) {
      Value lines(rapidjson::kArrayType);
      for (const LiveQuota& q : live.team->quotas) {
        Value l(rapidjson::kObjectType);
        b.Add(&l, "flavor", b.Str(q.flavor));
        b.Add(&l, "resource", b.Str(q.resource));
        b.Add(&l, "nominal", b.Str(q.nominal));
        b.Add(&l, "usage", b.Str(q.usage));
        b.Add(&l, "borrowed", b.Str(q.borrowed));
        b.Add(&l, "lent", b.Str(q.lent));
        lines.PushBack(std::move(l), doc.GetAllocator());
      }
      b.Add(&v, "live", std::move(lines));
    } else {
      b.Add(&v, "live", Value(rapidjson::kNullType));
    }
    RenderDocument(v, format, out);
  } else {
    DescribeTable(team, live, out);
  }
}

void RenderPolicy(const PolicyReport& policy, OutputFormat format, std::ostream& out) {
  if (format == OutputFormat::kJson || format == OutputFormat::kYaml) {
    rapidjson::Document doc;
    ReportJson b(&doc);
    RenderDocument(b.Policy(policy), format, out);
    return;
  }
  if (format == OutputFormat::kName) {
    out << "policy/cluster\n";
    return;
  }
  Labelled(out, "Task prioritization", policy.task_prioritization);
  Labelled(out, "Idle compute", policy.idle_compute);
  out << "Priority classes:" << (policy.priority_classes.empty() ? " none" : "") << "\n";
  std::vector<std::vector<std::string>> rows = {{"NAME", "WEIGHT", "SOURCE"}};
  for (const PriorityClassRow& pc : policy.priority_classes) {
    rows.push_back({pc.name, std::to_string(pc.weight), pc.source});
  }
  if (!policy.priority_classes.empty()) RenderTable(rows, out, "  ");
}

}  // namespace taskgov::cli
