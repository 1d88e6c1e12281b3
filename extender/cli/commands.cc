#include "extender/cli/commands.h"

#include <algorithm>
#include <fstream>

#include "config/check_config.h"
#include "config/resolve.h"
#include "extender/cli/admin_client.h"
#include "extender/cli/apply.h"
#include "extender/cli/capacity.h"
#include "extender/cli/job_commands.h"
#include "extender/cli/quota_flags.h"
#include "extender/cli/report.h"
#include "extender/cli/simulate_command.h"
#include "extender/cli/take_over.h"
#include "scheduler/common/k8s_names.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/config.h"
#include "scheduler/model/kube_json.h"

namespace taskgov::cli {

namespace {

const std::vector<OutputFormat> kReadFormats = {OutputFormat::kTable, OutputFormat::kWide,
                                                OutputFormat::kJson, OutputFormat::kYaml,
                                                OutputFormat::kName};
// What writes print: the diff (table), or the ConfigMap they write (-o json|yaml).
const std::vector<OutputFormat> kWriteFormats = {OutputFormat::kTable, OutputFormat::kJson,
                                                 OutputFormat::kYaml};

FlagSpec DryRunFlag() {
  return ValueFlag("dry-run", "MODE",
                   "client: validate and print the diff, write nothing; server: the API server "
                   "checks the write too (dryRun=All); none (default): write")
      .Values({"none", "client", "server"})
      .Optional("client");
}

std::optional<DryRun> ParseDryRun(const ParsedArgs& args) {
  const std::string mode = args.Get("dry-run").value_or("none");
  if (mode == "none") return DryRun::kNone;
  if (mode == "client") return DryRun::kClient;
  if (mode == "server") return DryRun::kServer;
  return std::nullopt;
}

// The ConfigMap as read, decoded and loaded, for the read commands.
struct Loaded {
  ConfigMapState state;
  config::ConfigSet decoded;
  config::LoadResult result;
  [[nodiscard]] const scheduler::model::Policy& policy() const {
    return result.policy ? *result.policy : *result.draft;
  }
};

std::string NotFoundHint(const ConfigMapRef& ref) {
  return "configmap " + ref.ToString() +
         " not found: install taskgov (deploy/taskgov-config.yaml), or name the policy ConfigMap "
         "with --configmap and --configmap-namespace";
}

common::Result<Loaded> LoadPolicy(const Invocation& inv) {
  common::Result<std::unique_ptr<ConfigMapStore>> store = inv.env.connect(inv.global);
  if (!store.ok()) return store.error();
  Loaded loaded;
  common::Result<ConfigMapState> state = (*store)->Read();
  if (!state.ok()) return state.error().Wrap("reading " + inv.global.configmap.ToString());
  if (!state->exists) return common::Error{NotFoundHint(inv.global.configmap)};
  loaded.state = std::move(*state);
  loaded.decoded = DecodeAll(loaded.state.files);
  loaded.result = config::LoadSources(loaded.state.files);
  if (!loaded.result.ok()) {
    inv.err() << "warning: the policy in " << inv.global.configmap.ToString() << " does not load ("
              << loaded.result.error_count()
              << (loaded.result.error_count() == 1 ? " error" : " errors")
              << "; the first: " << loaded.result.FirstError()
              << "); the extender keeps its last good policy; shown here: what would load\n";
  }
  return loaded;
}

common::Error HandWritten(const std::string& team, const config::TeamSpec& spec) {
  return common::Error{
      "quota/" + team + " is defined in the hand-written key " + spec.origin.file + " (a " +
      std::string(config::DialectName(spec.dialect)) +
      " document); the CLI changes only the teams it wrote (key " + std::string(kOwnedKey) +
      ") and leaves hand-written keys as they are: 'taskgov quota take-over " + team +
      "' moves it into the CLI's key (it shows the change and asks), or edit " + spec.origin.file};
}

common::Error NoSuchTeam(const std::string& team, const ConfigMapRef& ref) {
  return common::Error{"quota/" + team + " not found in " + ref.ToString() +
                       ": 'taskgov quota list' shows the teams; 'taskgov quota create " + team +
                       "' makes it"};
}

// The team `name` of the CLI's key, or why the CLI may not change it.
common::Result<TeamQuota*> OwnedTeam(const EditContext& ctx, OwnedPolicy* owned,
                                     const std::string& name, const ConfigMapRef& ref) {
  if (TeamQuota* t = owned->FindTeam(name)) return t;
  if (const config::TeamSpec* spec = FindTeamSpec(ctx.decoded, name)) {
    return HandWritten(name, *spec);
  }
  return NoSuchTeam(name, ref);
}

// The cluster's nodes, as the extender decodes them.
common::Result<std::vector<scheduler::model::Node>> ListNodes(const Invocation& inv) {
  common::Result<std::unique_ptr<scheduler::kube::KubeClient>> client =
      inv.env.kube(inv.global, "");
  if (!client.ok()) return client.error();
  std::vector<scheduler::model::Node> nodes;
  scheduler::kube::ListOptions list;
  do {
    scheduler::kube::ApiResult<scheduler::kube::ListPage> page =
        (*client)->List("/api/v1/nodes", list);
    if (!page.ok()) return common::Error{"listing nodes: " + page.error().ToString()};
    for (const rapidjson::Value& item : page.value().items().GetArray()) {
      common::Result<scheduler::model::Node> node = scheduler::model::DecodeNode(item);
      if (node.ok()) nodes.push_back(std::move(*node));
    }
    list.continue_token = page.value().continue_token;
  } while (!list.continue_token.empty());
  return nodes;
}

// Warnings about the instance types of `lines` under the policy `files` leave: quotas above what
// the nodes have, and types nothing knows (capacity.h). The nodes are read through the API
// server; when they cannot be, one note says the check was not made.
void WarnAboutCapacity(const Invocation& inv, const std::vector<ComputeLine>& lines,
                       const std::vector<config::SourceFile>& files) {
  if (lines.empty()) return;
  const config::LoadResult loaded = config::LoadSources(files);
  if (!loaded.ok()) return;  // ApplyEdit refused it already
  std::vector<std::string> flavors;
  for (const ComputeLine& l : lines) flavors.push_back(l.instance_type);
  common::Result<std::vector<scheduler::model::Node>> nodes = ListNodes(inv);
  if (!nodes.ok()) {
    inv.err() << "note: the quotas were not checked against the cluster's nodes: "
              << nodes.error().message << "\n";
    return;
  }
  for (const std::string& w :
       CapacityWarnings(*loaded.policy, *nodes, flavors, config::Catalogue::Builtin())) {
    inv.err() << "warning: " << w << "\n";
  }
}

// Connects, then runs `edit` through ApplyEdit with the command's --dry-run; `lines`: the compute
// lines the command gives (checked against the nodes once written).
int RunEdit(const Invocation& inv, const Edit& edit, const std::vector<ComputeLine>& lines = {}) {
  std::optional<DryRun> dry_run = ParseDryRun(inv.args);
  if (!dry_run) {
    return inv.Usage("invalid --dry-run " + Quoted(*inv.args.Get("dry-run")) +
                     ": use none, client or server");
  }
  common::Result<std::unique_ptr<ConfigMapStore>> store = inv.env.connect(inv.global);
  if (!store.ok()) return inv.Failed(store.error().message);
  ApplyOptions options;
  options.dry_run = *dry_run;
  options.object_format = inv.global.output;
  options.after = [&](const std::vector<config::SourceFile>& files) {
    WarnAboutCapacity(inv, lines, files);
  };
  return ApplyEdit(**store, edit, options, inv.out(), inv.err());
}

// The quota change of a create or update, or the exit code of its usage error.
std::variant<QuotaChange, int> QuotaArgs(const Invocation& inv) {
  const std::string& team = inv.args.positional[0];
  if (auto problem = CheckDnsLabel("team name", team)) return inv.Usage(*problem);
  common::Result<QuotaChange> change = ParseQuotaChange(inv.args);
  if (!change.ok()) return inv.Usage(change.error().message);
  return std::move(*change);
}

int QuotaCreate(const Invocation& inv) {
  auto parsed = QuotaArgs(inv);
  if (auto* code = std::get_if<int>(&parsed)) return *code;
  const QuotaChange change = std::get<QuotaChange>(std::move(parsed));
  if (change.compute.empty()) {
    return inv.Usage(
        "a quota needs at least one compute line: --instance-type TYPE followed by --count N, "
        "or by any of --accelerators, --vcpu and --memory");
  }
  const std::string team = inv.args.positional[0];
  return RunEdit(
      inv,
      [&](const EditContext& ctx) -> common::Result<EditResult> {
        if (const config::TeamSpec* spec = FindTeamSpec(ctx.decoded, team)) {
          return common::Error{"quota/" + team + " already exists (in key " + spec->origin.file +
                               "): use 'taskgov quota update " + team + "' to change it"};
        }
        EditResult result{ctx.owned, "quota/" + team, "created", std::nullopt};
        TeamQuota quota;
        quota.name = team;
        quota.cohort =
            ctx.decoded.hyperpod_cohort.value.value_or(std::string(config::kDefaultHyperPodCohort));
        if (common::Status s = ApplyQuotaChange(change, &quota); !s.ok()) return s.error();
        result.owned.teams.push_back(std::move(quota));
        return result;
      },
      change.compute);
}

int QuotaUpdate(const Invocation& inv) {
  auto parsed = QuotaArgs(inv);
  if (auto* code = std::get_if<int>(&parsed)) return *code;
  const QuotaChange change = std::get<QuotaChange>(std::move(parsed));
  if (change.empty()) {
    return inv.Usage(
        "nothing to update: give compute lines (--instance-type ...), --strategy, "
        "--borrow-limit, --preempt-team-tasks, --fair-share-weight or -n/--namespace");
  }
  const std::string team = inv.args.positional[0];
  return RunEdit(
      inv,
      [&](const EditContext& ctx) -> common::Result<EditResult> {
        EditResult result{ctx.owned, "quota/" + team, "configured", std::nullopt};
        common::Result<TeamQuota*> quota =
            OwnedTeam(ctx, &result.owned, team, inv.global.configmap);
        if (!quota.ok()) return quota.error();
        if (common::Status s = ApplyQuotaChange(change, *quota); !s.ok()) return s.error();
        return result;
      },
      change.compute);
}

int QuotaDelete(const Invocation& inv) {
  const std::string team = inv.args.positional[0];
  return RunEdit(inv, [&](const EditContext& ctx) -> common::Result<EditResult> {
    EditResult result{ctx.owned, "quota/" + team, "deleted", std::nullopt};
    common::Result<TeamQuota*> quota = OwnedTeam(ctx, &result.owned, team, inv.global.configmap);
    if (!quota.ok()) return quota.error();
    std::erase_if(result.owned.teams, [&](const TeamQuota& t) { return t.name == team; });
    return result;
  });
}

// The team's live use from the admin API, or why it is not shown.
LiveQuotaReport LiveQuotaOf(const Invocation& inv, const std::string& team) {
  LiveQuotaReport live;
  if (inv.global.output == OutputFormat::kName) return live;
  common::Result<std::unique_ptr<AdminApi>> admin = ConnectAdminApi(inv);
  common::Result<std::vector<LiveTeam>> teams =
      admin.ok() ? ReadTeams(**admin) : common::Result<std::vector<LiveTeam>>(admin.error());
  if (!teams.ok()) {
    live.missing = teams.error().message;
    return live;
  }
  for (LiveTeam& t : *teams) {
    if (t.name == team) live.team = std::move(t);
  }
  if (!live.team) {
    live.missing = "the extender does not enforce this team yet (its policy has no team " + team +
                   "; it reloads the ConfigMap within a minute of a change)";
  }
  return live;
}

int QuotaDescribe(const Invocation& inv) {
  common::Result<Loaded> loaded = LoadPolicy(inv);
  if (!loaded.ok()) return inv.Failed(loaded.error().message);
  const std::string& team = inv.args.positional[0];
  for (const TeamReport& r : BuildTeamReports(loaded->decoded, loaded->policy())) {
    if (r.name != team) continue;
    RenderQuotaDescribe(r, LiveQuotaOf(inv, team), inv.global.output, inv.out());
    return kExitOk;
  }
  return inv.Failed(NoSuchTeam(team, inv.global.configmap).message);
}

int QuotaList(const Invocation& inv) {
  common::Result<Loaded> loaded = LoadPolicy(inv);
  if (!loaded.ok()) return inv.Failed(loaded.error().message);
  std::vector<TeamReport> teams = BuildTeamReports(loaded->decoded, loaded->policy());
  if (!inv.global.namespaces.empty()) {
    const scheduler::model::Policy& policy = loaded->policy();
    std::erase_if(teams, [&](const TeamReport& r) {
      return std::none_of(inv.global.namespaces.begin(), inv.global.namespaces.end(),
                          [&](const std::string& ns) {
                            const scheduler::model::Team* owner = policy.TeamOfNamespace(ns);
                            return owner != nullptr && owner->name == r.name;
                          });
    });
  }
  if (teams.empty() &&
      (inv.global.output == OutputFormat::kTable || inv.global.output == OutputFormat::kWide)) {
    inv.err() << "No quotas found in " << inv.global.configmap.ToString()
              << (inv.global.namespaces.empty() ? "" : " for the namespaces given") << ".\n";
    return kExitOk;
  }
  RenderQuotaList(teams, inv.global.output, inv.out());
  return kExitOk;
}

int PolicyShow(const Invocation& inv) {
  common::Result<Loaded> loaded = LoadPolicy(inv);
  if (!loaded.ok()) return inv.Failed(loaded.error().message);
  RenderPolicy(BuildPolicyReport(loaded->decoded, loaded->policy()), inv.global.output, inv.out());
  return kExitOk;
}

// --priority-class NAME=WEIGHT values; an error is a usage error's message.
common::Result<std::vector<PriorityClassWeight>> PriorityClasses(const ParsedArgs& args) {
  std::vector<PriorityClassWeight> out;
  for (const std::string& v : args.All("priority-class")) {
    const size_t eq = v.find('=');
    const std::string name = v.substr(0, eq);
    const std::string weight = eq == std::string::npos ? "" : v.substr(eq + 1);
    const bool digits =
        !weight.empty() && weight.size() <= 3 &&
        std::all_of(weight.begin(), weight.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (eq == std::string::npos || !digits || std::stoi(weight) > 100) {
      return common::Error{"invalid --priority-class " + Quoted(v) +
                           ": use NAME=WEIGHT with a weight from 0 to 100, such as inference=100"};
    }
    if (!common::IsDnsSubdomain(name)) {
      return common::Error{"invalid priority class name " + Quoted(name) +
                           ": use a DNS-1123 subdomain (lowercase letters, digits, '-' and '.')"};
    }
    if (std::any_of(out.begin(), out.end(), [&](const auto& p) { return p.name == name; })) {
      return common::Error{"priority class " + Quoted(name) + " is given twice"};
    }
    out.push_back({name, std::stoi(weight)});
  }
  return out;
}

// Asks on the terminal whether to write what a take-over shows; nullptr (no question) with
// --yes or a dry run.
std::function<bool()> TakeOverQuestion(const Invocation& inv, const std::string& what) {
  if (inv.args.Has("yes") || inv.args.Has("dry-run")) return nullptr;
  return [&inv, what] {
    inv.err() << "Take over " << what << " into " << kOwnedKey
              << ", as the diffs above show? Nothing else changes. [y/N] " << std::flush;
    std::string answer;
    if (!std::getline(*inv.env.in, answer)) return false;
    return answer == "y" || answer == "Y" || answer == "yes";
  };
}

// Moves what `take` names out of its hand-written key into the CLI's — shown, asked, and refused
// when it would change anything the extender enforces (take_over.h).
int RunTakeOver(const Invocation& inv, const std::string& what,
                const std::function<common::Result<TakeOver>(const EditContext&)>& take) {
  std::optional<DryRun> dry_run = ParseDryRun(inv.args);
  if (!dry_run) {
    return inv.Usage("invalid --dry-run " + Quoted(*inv.args.Get("dry-run")) +
                     ": use none, client or server");
  }
  if (!inv.args.Has("yes") && !inv.args.Has("dry-run") &&
      (inv.env.in == nullptr || !inv.env.interactive)) {
    return inv.Failed(
        "a take-over shows its change and asks before it writes, and there is no "
        "terminal to ask: add --yes (or --dry-run to see it)");
  }
  common::Result<std::unique_ptr<ConfigMapStore>> store = inv.env.connect(inv.global);
  if (!store.ok()) return inv.Failed(store.error().message);
  ApplyOptions options;
  options.dry_run = *dry_run;
  options.confirm = TakeOverQuestion(inv, what);
  return ApplyEdit(
      **store,
      [&](const EditContext& ctx) -> common::Result<EditResult> {
        common::Result<TakeOver> t = take(ctx);
        if (!t.ok()) return t.error();
        const std::vector<config::SourceFile> after = WithKey(
            WithKey(ctx.state.files, kOwnedKey, RenderOwned(t->owned)), t->key, t->key_content);
        if (std::string changed = PolicyDifference(ctx.state.files, after); !changed.empty()) {
          return common::Error{"taking over " + t->moved +
                               " would change what the extender enforces (" + changed +
                               "), so nothing was written: keep editing " + t->key};
        }
        return EditResult{t->owned, t->moved, "taken over into " + std::string(kOwnedKey),
                          std::make_pair(t->key, t->key_content)};
      },
      options, inv.out(), inv.err());
}

int QuotaTakeOver(const Invocation& inv) {
  const std::string team = inv.args.positional[0];
  return RunTakeOver(inv, "quota/" + team, [&](const EditContext& ctx) {
    return TakeOverTeam(ctx.state.files, ctx.decoded, ctx.owned, team);
  });
}

int PolicyTakeOver(const Invocation& inv) {
  return RunTakeOver(inv, "the cluster policy", [&](const EditContext& ctx) {
    return TakeOverPolicy(ctx.state.files, ctx.decoded, ctx.owned);
  });
}

int PolicySet(const Invocation& inv) {
  ClusterSettings change;
  const ParsedArgs& args = inv.args;
  if (auto t = args.Get("task-prioritization")) {
    if (*t != "TaskRanking" && *t != "FirstComeFirstServe") {
      return inv.Usage("invalid --task-prioritization " + Quoted(*t) +
                       ": use TaskRanking or FirstComeFirstServe");
    }
    change.task_prioritization = *t;
  }
  if (auto i = args.Get("idle-compute")) {
    if (*i != "FairShare" && *i != "FirstComeFirstServe") {
      return inv.Usage("invalid --idle-compute " + Quoted(*i) +
                       ": use FairShare or FirstComeFirstServe");
    }
    change.idle_compute = *i;
  }
  common::Result<std::vector<PriorityClassWeight>> classes = PriorityClasses(args);
  if (!classes.ok()) return inv.Usage(classes.error().message);
  if (!classes->empty() && args.Bool("clear-priority-classes")) {
    return inv.Usage("--priority-class and --clear-priority-classes exclude each other");
  }
  if (!classes->empty() || args.Bool("clear-priority-classes")) change.priority_classes = *classes;
  if (change.empty()) {
    return inv.Usage(
        "nothing to set: give --task-prioritization, --idle-compute, --priority-class or "
        "--clear-priority-classes");
  }
  return RunEdit(inv, [&](const EditContext& ctx) -> common::Result<EditResult> {
    EditResult result{ctx.owned, "policy/cluster", "configured", std::nullopt};
    ClusterSettings& c = result.owned.cluster;
    if (change.task_prioritization) c.task_prioritization = change.task_prioritization;
    if (change.idle_compute) c.idle_compute = change.idle_compute;
    if (change.priority_classes) {
      c.priority_classes = change.priority_classes;
      if (c.priority_classes->empty()) c.priority_classes.reset();
    }
    return result;
  });
}

int Completion(const Invocation& inv) {
  const std::string& shell = inv.args.positional[0];
  if (shell != "bash" && shell != "zsh") {
    return inv.Usage("unsupported shell " + Quoted(shell) + ": use bash or zsh");
  }
  inv.out() << inv.cli.Completion(shell);
  return kExitOk;
}

int ConfigValidate(const Invocation& inv) {
  return config::RunCheckConfig(inv.args.positional[0], inv.out()) == 0 ? kExitOk : kExitFailed;
}

Command QuotaCreateCommand() {
  std::vector<FlagSpec> write_flags = QuotaFlags();
  write_flags.push_back(DryRunFlag());
  return Command{
      "create",
      "create a team's compute quota (HyperPod create-compute-quota)",
      "TEAM",
      "Creates the compute quota of a team: one compute line per instance type. Every\n"
      "--instance-type starts a line; the --count, --accelerators, --vcpu and --memory after it\n"
      "belong to that line. --count gives whole instances; otherwise what a line does not give\n"
      "follows the instance's proportions (accelerators only: vCPU and memory scale with them).\n"
      "The team joins the cohort all HyperPod teams share; its namespace is hyperpod-ns-TEAM\n"
      "unless -n/--namespace names others. The quota is written to the CLI's key taskgov-cli.yaml\n"
      "of the policy ConfigMap, after the whole ConfigMap is validated as the extender would.\n",
      "taskgov quota create ml-research --instance-type ml.p5.48xlarge --count 2\n"
      "taskgov quota create inference --instance-type ml.g5.12xlarge --accelerators 4 \\\n"
      "    --instance-type ml.c5.4xlarge --vcpu 16 --strategy Lend --fair-share-weight 10\n"
      "taskgov quota create data --instance-type ml.p5.48xlarge --accelerators 8 "
      "--borrow-limit 100 --dry-run",
      write_flags,
      1,
      1,
      kWriteFormats,
      QuotaCreate,
      {}};
}

// The same flags as create's: what they give replaces, the rest stays.
Command QuotaUpdateCommand(const Command& create) {
  Command update = create;
  update.name = "update";
  update.summary = "change a team's compute quota (HyperPod update-compute-quota)";
  update.description =
      "Changes what the flags give and keeps the rest. Compute lines given replace the team's\n"
      "lines as a whole, as HyperPod's UpdateComputeQuota replaces ComputeQuotaResources; a\n"
      "strategy other than LendAndBorrow drops the borrow limit. Only teams the CLI wrote (key\n"
      "taskgov-cli.yaml) can be updated: hand-written keys are left as they are.\n"
      "A concurrent change to the ConfigMap is detected (resourceVersion), re-read and the\n"
      "update applied to it again; nothing is overwritten.\n";
  update.example =
      "taskgov quota update ml-research --borrow-limit 100\n"
      "taskgov quota update ml-research --instance-type ml.p5.48xlarge --count 4 --dry-run=server";
  update.run = QuotaUpdate;
  return update;
}

Command QuotaCommands() {
  const Command create = QuotaCreateCommand();
  const Command update = QuotaUpdateCommand(create);
  Command describe{
      "describe",
      "show a team's quota and where every value comes from",
      "TEAM",
      "Shows what the extender enforces for the team — per flavor and resource the\n"
      "nominal quota, borrowing and lending limits — and where each value comes from:\n"
      "the key and path that set it, or the rule that derived it (the HyperPod ratio\n"
      "defaults, the sharing strategy, defaults of the dialect).\n",
      "taskgov quota describe ml-research\ntaskgov quota describe ml-research -o yaml",
      {},
      1,
      1,
      kReadFormats,
      QuotaDescribe,
      {}};
  Command list{
      "list",
      "list the teams' quotas (HyperPod list-compute-quotas)",
      "",
      "Lists every team of the policy, whatever key or dialect defines it; -n NS shows the\n"
      "team owning NS.\n",
      "taskgov quota list\ntaskgov quota list -o wide\ntaskgov quota list -n "
      "hyperpod-ns-ml-research -o json",
      {},
      0,
      0,
      kReadFormats,
      QuotaList,
      {}};
  Command del{"delete",
              "delete a team's compute quota (HyperPod delete-compute-quota)",
              "TEAM",
              "",
              "taskgov quota delete ml-research\ntaskgov quota delete ml-research --dry-run",
              {DryRunFlag()},
              1,
              1,
              kWriteFormats,
              QuotaDelete,
              {}};
  Command take_over{
      "take-over",
      "move a team written by hand into the CLI's key, so the CLI can change it",
      "TEAM",
      "Moves a team defined in a hand-written key of the ConfigMap (a native Team document, a\n"
      "team listed in a TaskGovernancePolicy, a HyperPod document alone in its key) into\n"
      "taskgov-cli.yaml, where 'quota update|delete' change it. Both keys' diffs are shown and\n"
      "the change is written after you say yes (--yes: without asking). Refused when it would\n"
      "change anything the extender enforces, and for Kueue and Volcano objects.\n",
      "taskgov quota take-over ml-platform --dry-run\ntaskgov quota take-over ml-platform --yes",
      {BoolFlag("yes", "write without asking"), DryRunFlag()},
      1,
      1,
      kWriteFormats,
      QuotaTakeOver,
      {}};
  return Command{"quota",
                 "teams' compute quotas (allocations)",
                 "",
                 "",
                 "taskgov quota list\ntaskgov quota describe ml-research",
                 {},
                 0,
                 0,
                 {},
                 nullptr,
                 {create, update, describe, list, del, take_over}};
}

Command PolicyCommands() {
  Command show{"show",
               "show the cluster policy: task prioritization, idle compute, priority classes",
               "",
               "",
               "taskgov policy show\ntaskgov policy show -o json",
               {},
               0,
               0,
               {OutputFormat::kTable, OutputFormat::kJson, OutputFormat::kYaml},
               PolicyShow,
               {}};
  Command set{
      "set",
      "change the cluster policy (HyperPod create-cluster-scheduler-config)",
      "",
      "Sets the cluster policy in the CLI's key taskgov-cli.yaml. --priority-class, repeatable,\n"
      "replaces the list of priority classes. A cluster policy written by hand in another key\n"
      "conflicts and is reported by the validation, naming both keys.\n",
      "taskgov policy set --task-prioritization TaskRanking --priority-class inference=100 \\\n"
      "    --priority-class training=50\n"
      "taskgov policy set --idle-compute FirstComeFirstServe --dry-run",
      {ValueFlag("task-prioritization", "P",
                 "TaskRanking (by priority class) or FirstComeFirstServe")
           .Values({"TaskRanking", "FirstComeFirstServe"}),
       ValueFlag("idle-compute", "A",
                 "FairShare or FirstComeFirstServe: who gets idle compute first")
           .Values({"FairShare", "FirstComeFirstServe"}),
       ValueFlag("priority-class", "NAME=WEIGHT", "a priority class and its weight 0..100")
           .Repeatable(),
       BoolFlag("clear-priority-classes", "remove the priority classes the CLI set"), DryRunFlag()},
      0,
      0,
      kWriteFormats,
      PolicySet,
      {}};
  Command take_over{
      "take-over",
      "move the hand-written cluster policy, with its teams, into the CLI's key",
      "",
      "Moves the TaskGovernancePolicy document written by hand in another key of the ConfigMap\n"
      "into taskgov-cli.yaml — its cluster settings and the teams it lists — so that 'policy set'\n"
      "and 'quota update|delete' change them. The document is cut out of its key (a key left\n"
      "empty goes); both keys' diffs are shown and the change is written after you say yes\n"
      "(--yes: without asking). Refused when it would change anything the extender enforces.\n",
      "taskgov policy take-over --dry-run\ntaskgov policy take-over --yes",
      {BoolFlag("yes", "write without asking"), DryRunFlag()},
      0,
      0,
      kWriteFormats,
      PolicyTakeOver,
      {}};
  return Command{"policy", "the cluster policy",  "", "", "taskgov policy show", {}, 0, 0, {},
                 nullptr,  {show, set, take_over}};
}

Command ConfigCommands() {
  Command validate{
      "validate",
      "validate a policy directory with the extender's own checks",
      "DIR",
      "Reads DIR as the extender reads its mounted ConfigMap and reports every error\n"
      "and warning (file, path, reason), the teams and their effective quotas.\n"
      "Exits 1 when the configuration has errors.\n",
      "taskgov config validate /etc/taskgov\ntaskgov config validate config/samples/native",
      {},
      1,
      1,
      {},
      ConfigValidate,
      {}};
  return Command{
      "config", "policy files", "",        "", "taskgov config validate /etc/taskgov", {}, 0, 0,
      {},       nullptr,        {validate}};
}

}  // namespace

Command TaskgovCommands() {
  Command completion{"completion",
                     "print the shell completion script",
                     "bash|zsh",
                     "",
                     "taskgov completion bash > /etc/bash_completion.d/taskgov\n"
                     "taskgov completion zsh > \"${fpath[1]}/_taskgov\"",
                     {},
                     1,
                     1,
                     {},
                     Completion,
                     {}};
  return Command{
      "",
      "",
      "",
      "taskgov governs how teams share an accelerator cluster (SageMaker HyperPod task\n"
      "governance on kube-scheduler). This CLI manages the teams' compute quotas and the\n"
      "cluster policy in the policy ConfigMap, submits and follows training jobs, and shows\n"
      "live use from the extender's admin API; also usable as `kubectl taskgov`.\n",
      "taskgov quota list\ntaskgov quota create ml-research --instance-type "
      "ml.p5.48xlarge --count 2\ntaskgov job submit train --image pytorch:2.3 --node-count 2\n"
      "taskgov top teams",
      {},
      0,
      0,
      {},
      nullptr,
      {QuotaCommands(), PolicyCommands(), ConfigCommands(), JobCommands(), TopCommands(),
       SimulateCommand(), completion}};
}

common::Result<std::unique_ptr<scheduler::kube::KubeClient>> ConnectKube(
    const GlobalOptions& global, const std::string& server_url) {
  const scheduler::kube::GetEnv env = scheduler::kube::ProcessEnv();
  common::Result<scheduler::kube::ClusterConfig> cluster =
      !global.kubeconfig.empty() || env("KUBECONFIG") || !scheduler::kube::InClusterAvailable(env)
          ? scheduler::kube::LoadKubeconfig({global.kubeconfig, env("KUBECONFIG").value_or(""),
                                             env("HOME").value_or(""), global.context})
          : scheduler::kube::LoadInClusterConfig(env);
  if (!cluster.ok()) {
    return cluster.error().Wrap(
        "no usable Kubernetes configuration (use --kubeconfig or "
        "--context, or set KUBECONFIG)");
  }
  if (!server_url.empty()) {
    // The same credentials at another URL (the console behind a port-forward). A CA or server
    // name pinned for the API server does not apply there.
    cluster->ca_pem.clear();
    cluster->tls_server_name.clear();
    if (!global.console.ca_file.empty()) {
      std::ifstream in(global.console.ca_file, std::ios::binary);
      if (!in) return common::Error{"cannot read --console-ca-file " + global.console.ca_file};
      cluster->ca_pem.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    if (common::Status s = scheduler::kube::ParseServerUrl(server_url, &*cluster); !s.ok()) {
      return s.error().Wrap("--console-url " + server_url);
    }
    cluster->server = server_url;
  }
  scheduler::kube::ClientOptions options;
  options.user_agent = "taskgov-cli";
  options.impersonate_user = global.as;
  options.request_timeout = global.request_timeout.value_or(std::chrono::seconds(30));
  options.max_throttle_retries = 2;
  auto client = scheduler::kube::KubeClient::Create(std::move(*cluster), options);
  if (!client.ok()) return client.error();
  return std::move(*client);
}

common::Result<std::unique_ptr<ConfigMapStore>> ConnectApi(const GlobalOptions& global) {
  common::Result<std::unique_ptr<scheduler::kube::KubeClient>> client = ConnectKube(global, "");
  if (!client.ok()) return client.error();
  return MakeApiConfigMapStore(std::move(*client), global.configmap);
}

int RunTaskgov(const std::vector<std::string>& argv, Environment& env) {
  const Cli cli(TaskgovCommands());
  if (!env.connect) env.connect = ConnectApi;
  if (!env.kube) env.kube = ConnectKube;
  return cli.Run(argv, env);
}

}  // namespace taskgov::cli
