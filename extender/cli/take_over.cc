#include "extender/cli/take_over.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "config/names.h"
#include "config/resolve.h"
#include "extender/cli/apply.h"
#include "extender/cli/report.h"

namespace taskgov::cli {
namespace {

bool IsSeparator(std::string_view line) {
  return line.starts_with("---") && (line.size() == 3 || line[3] == ' ' || line[3] == '\t');
}

// Whether a chunk of YAML holds more than comments and blank lines.
bool HasContent(const std::string& chunk) {
  std::istringstream lines(chunk);
  for (std::string line; std::getline(lines, line);) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos && line[first] != '#') return true;
  }
  return false;
}

// The chunks of `text` between its `---` lines, each with the separator that opens it.
std::vector<std::string> Chunks(const std::string& text) {
  std::vector<std::string> chunks(1);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (IsSeparator(line)) chunks.emplace_back();
    chunks.back() += line + "\n";
  }
  return chunks;
}

// `text` without its document `index` (as the parser counts them: chunks with content), or
// nullopt when no document is left.
common::Result<std::optional<std::string>> WithoutDocument(const std::string& text, int index,
                                                           const std::string& key) {
  std::vector<std::string> chunks = Chunks(text);
  int n = -1;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (!HasContent(chunks[i]) || ++n != index) continue;
    chunks.erase(chunks.begin() + static_cast<std::ptrdiff_t>(i));
    std::string out;
    bool left = false;
    for (const std::string& c : chunks) {
      out += c;
      left = left || HasContent(c);
    }
    if (!left) return std::optional<std::string>();
    return std::optional<std::string>(out);
  }
  return common::Error{"key " + key + " has no document " + std::to_string(index)};
}

// `text` with team `team_index` removed from the `teams` of its document `index` (re-emitted).
common::Result<std::optional<std::string>> WithoutListedTeam(const std::string& text, int index,
                                                             size_t team_index,
                                                             const std::string& key) {
  std::vector<std::string> chunks = Chunks(text);
  int n = -1;
  for (std::string& chunk : chunks) {
    if (!HasContent(chunk) || ++n != index) continue;
    try {
      const bool separated = IsSeparator(chunk.substr(0, chunk.find('\n')));
      YAML::Node doc = YAML::Load(chunk);
      YAML::Node teams = doc["teams"];
      if (!teams.IsSequence() || team_index >= teams.size()) {
        return common::Error{"key " + key + ": no teams[" + std::to_string(team_index) + "]"};
      }
      YAML::Node kept(YAML::NodeType::Sequence);
      for (size_t i = 0; i < teams.size(); ++i) {
        if (i != team_index) kept.push_back(teams[i]);
      }
      doc["teams"] = kept;
      YAML::Emitter out;
      out << doc;
      chunk = (separated ? "---\n" : "") + std::string(out.c_str()) + "\n";
    } catch (const YAML::Exception& e) {
      return common::Error{"key " + key + " cannot be edited: " + e.what()};
    }
    std::string out;
    for (const std::string& c : chunks) out += c;
    return std::optional<std::string>(out);
  }
  return common::Error{"key " + key + " has no document " + std::to_string(index)};
}

// The team of `spec` as the CLI's key holds it, with the cohort it is in (a native team naming
// none is in the default cohort; every HyperPod team in the HyperPod cohort).
common::Result<TeamQuota> Movable(const config::TeamSpec& spec, const config::ConfigSet& decoded) {
  common::Result<TeamQuota> team = TeamFromSpec(spec);
  if (!team.ok()) {
    return common::Error{"quota/" + spec.name + " cannot be held by the CLI's key as it is (" +
                         team.error().message + "): keep editing " + spec.origin.file};
  }
  if (team->cohort.empty()) {
    team->cohort =
        spec.dialect == config::Dialect::kHyperPod
            ? decoded.hyperpod_cohort.value.value_or(std::string(config::kDefaultHyperPodCohort))
            : decoded.default_cohort.value.value_or("");
  }
  return team;
}

// The one-line dump of what a policy enforces, sorted: what PolicyDifference compares.
std::set<std::string> Governs(const scheduler::model::Policy& p) {
  std::set<std::string> out;
  auto add = [&](std::string line) { out.insert(std::move(line)); };
  add("cluster: taskPrioritization " + std::string(config::Name(p.task_prioritization)));
  add("cluster: idleComputeAllocation " + std::string(config::Name(p.idle_compute)));
  add("cluster: preemption gracePeriodSeconds " +
      std::to_string(p.preemption.grace_period_seconds));
  add("cluster: preemption minimumRuntimeSeconds " +
      std::to_string(p.preemption.minimum_runtime_seconds));
  add("cluster: gangs timeoutSeconds " + std::to_string(p.gang_timeout_seconds));
  add("cluster: podsWithoutTeam " + std::string(config::Name(p.no_team)));
  add("cluster: instanceTypeLabel " + p.instance_type_label);
  add("cluster: teamResolution " + p.team_resolution.pod_label + " " +
      p.team_resolution.namespace_label);
  for (const scheduler::model::PriorityClass& c : p.priority_classes) {
    add("cluster: priority class " + c.name + " " + std::to_string(c.value));
  }
  for (const scheduler::model::Team& t : p.teams) {
    const std::string team = "team " + t.name + ": ";
    std::string namespaces;
    for (const std::string& ns : t.namespaces) namespaces += " " + ns;
    add(team + "namespaces" + namespaces);
    add(team + "cohort " + t.cohort);
    std::ostringstream weight;
    weight << t.fair_share_weight;
    add(team + "fairShareWeight " + weight.str());
    add(team + "preemptTeamTasks " + std::string(config::Name(t.within_team)));
    add(team + "reclaim " + std::string(config::Name(t.reclaim)));
    add(team + "queueing " + std::string(config::Name(t.queueing)));
    add(team + (t.active ? "active" : "inactive"));
    for (const scheduler::model::FlavorQuota& fq : t.flavors) {
      for (const scheduler::model::ResourceQuota& q : fq.resources) {
        add(team + fq.flavor + " " + q.resource + " nominal " + std::to_string(q.nominal) +
            " borrowingLimit " + std::to_string(q.borrowing_limit) + " lendingLimit " +
            std::to_string(q.lending_limit));
      }
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> SplitDocuments(const std::string& text) {
  std::vector<std::string> docs;
  for (std::string& c : Chunks(text)) {
    if (HasContent(c)) docs.push_back(std::move(c));
  }
  return docs;
}

common::Result<TakeOver> TakeOverTeam(const std::vector<config::SourceFile>& files,
                                      const config::ConfigSet& decoded, const OwnedPolicy& owned,
                                      const std::string& team) {
  const config::TeamSpec* spec = FindTeamSpec(decoded, team);
  if (spec == nullptr) return common::Error{"quota/" + team + " is not in the ConfigMap"};
  const std::string& key = spec->origin.file;
  if (key == kOwnedKey) {
    return common::Error{"quota/" + team + " is the CLI's already (key " + key +
                         "): 'taskgov quota update " + team + "' changes it"};
  }
  if (spec->dialect == config::Dialect::kKueue || spec->dialect == config::Dialect::kVolcano) {
    return common::Error{"quota/" + team + " is a " +
                         std::string(config::DialectName(spec->dialect)) + " object in key " + key +
                         ": its queues, flavors and cohorts have no native form the CLI writes, "
                         "so it stays there: edit " +
                         key};
  }
  common::Result<TeamQuota> moved = Movable(*spec, decoded);
  if (!moved.ok()) return moved.error();
  const std::string content = FileContent(files, key);
  common::Result<std::optional<std::string>> left = std::optional<std::string>();
  if (spec->dialect == config::Dialect::kHyperPod) {
    if (SplitDocuments(content).size() != 1) {
      return common::Error{"quota/" + team + " is one of several documents of key " + key +
                           ": split them into keys of their own first"};
    }
  } else if (spec->origin.path.starts_with("teams[")) {
    const size_t i = std::stoul(spec->origin.path.substr(6));
    left = WithoutListedTeam(content, spec->origin.document, i, key);
  } else {
    left = WithoutDocument(content, spec->origin.document, key);
  }
  if (!left.ok()) return left.error();
  TakeOver out{owned, key, *left, "quota/" + team};
  out.owned.teams.push_back(std::move(*moved));
  return out;
}

common::Result<TakeOver> TakeOverPolicy(const std::vector<config::SourceFile>& files,
                                        const config::ConfigSet& decoded,
                                        const OwnedPolicy& owned) {
  if (decoded.policy_documents.empty()) {
    return common::Error{"the ConfigMap has no TaskGovernancePolicy document to take over"};
  }
  const config::Origin& doc = decoded.policy_documents.front();
  if (doc.file == kOwnedKey) {
    return common::Error{"the cluster policy is the CLI's already (key " + doc.file +
                         "): 'taskgov policy set' changes it"};
  }
  common::Result<std::optional<std::string>> left =
      WithoutDocument(FileContent(files, doc.file), doc.document, doc.file);
  if (!left.ok()) return left.error();
  TakeOver out{owned, doc.file, *left, "the cluster policy"};
  out.owned.cluster = ClusterFromSet(decoded);
  for (const config::TeamSpec& spec : decoded.teams) {
    if (spec.origin.file != doc.file || spec.origin.document != doc.document) continue;
    common::Result<TeamQuota> moved = Movable(spec, decoded);
    if (!moved.ok()) return moved.error();
    out.owned.teams.push_back(std::move(*moved));
    out.moved += (out.owned.teams.size() == owned.teams.size() + 1 ? " and " : ", ") +
                 std::string("quota/") + spec.name;
  }
  return out;
}

std::string PolicyDifference(const std::vector<config::SourceFile>& before,
                             const std::vector<config::SourceFile>& after) {
  const config::LoadResult a = config::LoadSources(before);
  const config::LoadResult b = config::LoadSources(after);
  if (!a.ok()) return "the ConfigMap does not load as it is: " + a.FirstError();
  if (!b.ok()) return "it would not load: " + b.FirstError();
  const std::set<std::string> was = Governs(*a.policy), will = Governs(*b.policy);
  for (const std::string& line : was) {
    if (!will.count(line)) return "\"" + line + "\" would be lost";
  }
  for (const std::string& line : will) {
    if (!was.count(line)) return "\"" + line + "\" would be new";
  }
  return "";
}

}  // namespace taskgov::cli
