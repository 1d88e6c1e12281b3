#include "scheduler/sim/scheduler_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace taskgov::scheduler::sim {

namespace {

using common::Error;
using common::Result;
using common::Status;

constexpr std::string_view kApiVersion = "kubescheduler.config.k8s.io/v1";
constexpr int64_t kMaxBackoffSeconds = 1'000'000'000;
constexpr int64_t kMaxExtenderWeight = 1'000'000;
constexpr size_t kDescribedResources = 6;

// ---- paths and errors ----

// `base.key`, or `base["key"]` when the key is not a plain identifier (config/reader.h's form).
std::string JoinPath(std::string_view base, std::string_view key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  if (plain) return base.empty() ? std::string(key) : std::string(base) + "." + std::string(key);
  return std::string(base) + "[\"" + std::string(key) + "\"]";
}

std::string IndexPath(std::string_view base, size_t index) {
  return std::string(base) + "[" + std::to_string(index) + "]";
}

Error At(std::string_view path, const std::string& message) {
  return Error{path.empty() ? message : std::string(path) + ": " + message};
}

std::string Quote(std::string_view text) { return "\"" + std::string(text) + "\""; }

std::string TypeOf(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return Quote(node.Scalar());
    default:
      return "null";
  }
}

// ---- typed reading ----

// One map of the document at `path`: its entries, each key once and known to the caller.
class MapReader {
 public:
  static Result<MapReader> Of(const YAML::Node& node, std::string path,
                              std::initializer_list<std::string_view> known) {
    if (!node.IsMap()) return At(path, "must be a map, got " + TypeOf(node));
    MapReader map;
    map.path_ = std::move(path);
    for (const auto& entry : node) {
      if (!entry.first.IsScalar()) return At(map.path_, "a key must be a string");
      const std::string key = entry.first.Scalar();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        return At(map.PathOf(key), "unknown field");
      }
      if (map.Find(key) != nullptr) return At(map.PathOf(key), "given twice");
      map.entries_.emplace_back(key, entry.second);
    }
    return map;
  }

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string PathOf(std::string_view key) const { return JoinPath(path_, key); }
  // The value, or nullptr when absent or null.
  [[nodiscard]] const YAML::Node* Get(std::string_view key) const {
    const YAML::Node* value = Find(key);
    return value == nullptr || value->IsNull() ? nullptr : value;
  }

  // A string; nullopt when absent.
  [[nodiscard]] Result<std::optional<std::string>> String(std::string_view key) const {
    const YAML::Node* value = Get(key);
    if (value == nullptr) return std::optional<std::string>();
    if (!value->IsScalar()) return At(PathOf(key), "must be a string, got " + TypeOf(*value));
    return std::optional<std::string>(value->Scalar());
  }

  // A plain (unquoted) decimal integer within [lo, hi]; nullopt when absent.
  [[nodiscard]] Result<std::optional<int64_t>> Integer(std::string_view key, int64_t lo,
                                                       int64_t hi) const {
    const YAML::Node* value = Get(key);
    if (value == nullptr) return std::optional<int64_t>();
    const std::string range = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    if (!value->IsScalar() || value->Tag() != "?") {
      return At(PathOf(key), "must be " + range + ", got " + TypeOf(*value));
    }
    const std::string& text = value->Scalar();
    size_t digits = text.size() > 0 && (text[0] == '-' || text[0] == '+') ? 1 : 0;
    const bool numeric = digits < text.size() && text.size() - digits <= 18 &&
                         std::all_of(text.begin() + static_cast<long>(digits), text.end(),
                                     [](char c) { return c >= '0' && c <= '9'; });
    const int64_t n = numeric ? std::stoll(text) : 0;
    if (!numeric || n < lo || n > hi) return At(PathOf(key), "must be " + range + ", got " + text);
    return std::optional<int64_t>(n);
  }

  // A list; an empty one when absent.
  [[nodiscard]] Result<std::vector<YAML::Node>> List(std::string_view key) const {
    const YAML::Node* value = Get(key);
    std::vector<YAML::Node> items;
    if (value == nullptr) return items;
    if (!value->IsSequence()) return At(PathOf(key), "must be a list, got " + TypeOf(*value));
    for (const YAML::Node& item : *value) items.push_back(item);
    return items;
  }

 private:
  [[nodiscard]] const YAML::Node* Find(std::string_view key) const {
    for (const auto& [k, v] : entries_) {
      if (k == key) return &v;
    }
    return nullptr;
  }

  std::string path_;
  std::vector<std::pair<std::string, YAML::Node>> entries_;
};

// The one document of `text` (at `path`: "" for the file, a ConfigMap's data key inside it).
Result<YAML::Node> LoadOne(std::string_view text, const std::string& path) {
  std::vector<YAML::Node> documents;
  try {
    for (const YAML::Node& d : YAML::LoadAll(std::string(text))) {
      if (!d.IsNull()) documents.push_back(d);
    }
  } catch (const YAML::Exception& e) {
    return At(path, "not valid YAML (line " + std::to_string(e.mark.line + 1) + ", column " +
                        std::to_string(e.mark.column + 1) + "): " + e.msg);
  }
  if (documents.size() != 1) {
    return At(path, std::to_string(documents.size()) +
                        " YAML documents: give one KubeSchedulerConfiguration, or one ConfigMap "
                        "holding it");
  }
  return documents.front();
}

// ---- the configuration ----

// The one value of a ConfigMap's data, and its path.
Result<std::pair<std::string, std::string>> ConfigMapValue(const YAML::Node& node) {
  auto cm = MapReader::Of(node, "", {"apiVersion", "kind", "metadata", "data", "immutable"});
  if (!cm.ok()) return cm.error();
  auto version = cm->String("apiVersion");
  if (!version.ok()) return version.error();
  if (*version != "v1") return At("apiVersion", "a ConfigMap's is v1");
  const YAML::Node* data = cm->Get("data");
  if (data == nullptr || !data->IsMap() || data->size() != 1) {
    return At("data", "must hold one key, the KubeSchedulerConfiguration, got " +
                          (data == nullptr ? std::string("none")
                           : data->IsMap() ? std::to_string(data->size()) + " keys"
                                           : TypeOf(*data)));
  }
  const auto entry = *data->begin();
  const std::string key = entry.first.Scalar();
  const std::string path = JoinPath("data", key);
  if (!entry.second.IsScalar()) return At(path, "must be a string, got " + TypeOf(entry.second));
  return std::make_pair(path, entry.second.Scalar());
}

Result<ScoringStrategy::Resource> ReadResource(const YAML::Node& node, const std::string& path) {
  auto item = MapReader::Of(node, path, {"name", "weight"});
  if (!item.ok()) return item.error();
  auto name = item->String("name");
  if (!name.ok()) return name.error();
  if (!name->has_value() || (*name)->empty()) return At(item->PathOf("name"), "required");
  // A weight absent or 0 is 1 (SetDefaults_NodeResourcesFitArgs), then (0, 100].
  auto weight = item->Integer("weight", 0, 100);
  if (!weight.ok()) return weight.error();
  return ScoringStrategy::Resource{**name, weight->value_or(0) == 0 ? 1 : **weight};
}

Result<ScoringStrategy> ReadScoringStrategy(const YAML::Node& node, const std::string& path) {
  auto map = MapReader::Of(node, path, {"type", "resources", "requestedToCapacityRatio"});
  if (!map.ok()) return map.error();
  ScoringStrategy strategy;
  auto type = map->String("type");
  if (!type.ok()) return type.error();
  const std::string played = "the simulator plays LeastAllocated and MostAllocated";
  if (*type == "LeastAllocated") {
    strategy.type = ScoringStrategy::Type::kLeastAllocated;
  } else if (*type == "MostAllocated") {
    strategy.type = ScoringStrategy::Type::kMostAllocated;
  } else if (*type == "RequestedToCapacityRatio") {
    return At(map->PathOf("type"), "RequestedToCapacityRatio is not played: " + played);
  } else {
    return At(map->PathOf("type"),
              (type->has_value() ? "unknown type " + Quote(**type) : std::string("required")) +
                  ": " + played + " (kube-scheduler also knows RequestedToCapacityRatio)");
  }
  if (map->Get("requestedToCapacityRatio") != nullptr) {
    return At(map->PathOf("requestedToCapacityRatio"), "not played: " + played);
  }
  auto resources = map->List("resources");
  if (!resources.ok()) return resources.error();
  if (!resources->empty()) strategy.resources.clear();  // none: cpu and memory, weight 1
  for (size_t i = 0; i < resources->size(); ++i) {
    auto r = ReadResource((*resources)[i], IndexPath(map->PathOf("resources"), i));
    if (!r.ok()) return r.error();
    strategy.resources.push_back(std::move(*r));
  }
  return strategy;
}

Result<ScoringStrategy> ReadNodeResourcesFitArgs(const YAML::Node* node, const std::string& path) {
  if (node == nullptr) return ScoringStrategy{};
  auto args = MapReader::Of(
      *node, path,
      {"apiVersion", "kind", "scoringStrategy", "ignoredResources", "ignoredResourceGroups"});
  if (!args.ok()) return args.error();
  auto version = args->String("apiVersion");
  if (!version.ok()) return version.error();
  if (version->has_value() && **version != kApiVersion) {
    return At(args->PathOf("apiVersion"), "must be " + std::string(kApiVersion));
  }
  auto kind = args->String("kind");
  if (!kind.ok()) return kind.error();
  if (kind->has_value() && **kind != "NodeResourcesFitArgs") {
    return At(args->PathOf("kind"), "must be NodeResourcesFitArgs");
  }
  for (const char* relaxing : {"ignoredResources", "ignoredResourceGroups"}) {
    auto list = args->List(relaxing);
    if (!list.ok()) return list.error();
    if (!list->empty()) {
      return At(args->PathOf(relaxing), "not played: the simulator's fit checks every resource");
    }
  }
  const YAML::Node* strategy = args->Get("scoringStrategy");
  if (strategy == nullptr) return ScoringStrategy{};
  return ReadScoringStrategy(*strategy, args->PathOf("scoringStrategy"));
}

// The governed profile's NodeResourcesFit scoring strategy.
Result<ScoringStrategy> ReadProfile(const YAML::Node& node, const std::string& path) {
  auto profile = MapReader::Of(
      node, path, {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"});
  if (!profile.ok()) return profile.error();
  if (profile->Get("plugins") != nullptr) {
    return At(profile->PathOf("plugins"),
              "not played: the simulator plays kube-scheduler's default plugins");
  }
  auto percentage = profile->Integer("percentageOfNodesToScore", 0, 100);
  if (!percentage.ok()) return percentage.error();
  if (percentage->value_or(0) != 0 && **percentage != 100) {
    return At(profile->PathOf("percentageOfNodesToScore"),
              "not played: the simulator scores every feasible node (0 or 100)");
  }
  auto configs = profile->List("pluginConfig");
  if (!configs.ok()) return configs.error();
  std::optional<ScoringStrategy> strategy;
  for (size_t i = 0; i < configs->size(); ++i) {
    const std::string at = IndexPath(profile->PathOf("pluginConfig"), i);
    auto config = MapReader::Of((*configs)[i], at, {"name", "args"});
    if (!config.ok()) return config.error();
    auto name = config->String("name");
    if (!name.ok()) return name.error();
    if (*name != "NodeResourcesFit") {
      return At(config->PathOf("name"),
                (name->has_value() ? Quote(**name) + " is not played" : std::string("required")) +
                    ": the simulator plays NodeResourcesFit's arguments only");
    }
    if (strategy) return At(config->PathOf("name"), "NodeResourcesFit is configured twice");
    auto read = ReadNodeResourcesFitArgs(config->Get("args"), config->PathOf("args"));
    if (!read.ok()) return read.error();
    strategy = std::move(*read);
  }
  return strategy.value_or(ScoringStrategy{});
}

// The profile of `scheduler_name` among `profiles` (at `path`), read.
Result<ScoringStrategy> ReadGovernedProfile(const std::vector<YAML::Node>& profiles,
                                            const std::string& path,
                                            const std::string& scheduler_name) {
  std::optional<size_t> governed;
  std::string names;
  for (size_t i = 0; i < profiles.size(); ++i) {
    const std::string at = IndexPath(path, i);
    if (!profiles[i].IsMap()) return At(at, "must be a map, got " + TypeOf(profiles[i]));
    const YAML::Node name_node = profiles[i]["schedulerName"];
    std::string name;
    if (name_node.IsDefined() && !name_node.IsNull()) {
      if (!name_node.IsScalar()) {
        return At(JoinPath(at, "schedulerName"), "must be a string, got " + TypeOf(name_node));
      }
      name = name_node.Scalar();
    } else if (profiles.size() == 1) {
      name = "default-scheduler";  // SetDefaults_KubeSchedulerConfiguration
    } else {
      return At(JoinPath(at, "schedulerName"), "required when there are several profiles");
    }
    names += (names.empty() ? "" : ", ") + name;
    if (name != scheduler_name) continue;
    if (governed) return At(JoinPath(at, "schedulerName"), Quote(name) + " is given twice");
    governed = i;
  }
  if (!governed) {
    return At(path, "no profile has schedulerName " + Quote(scheduler_name) +
                        ", the scheduler taskgov governs (found: " +
                        (names.empty() ? "none" : names) + ")");
  }
  return ReadProfile(profiles[*governed], IndexPath(path, *governed));
}

// The extender (taskgov) into `options`.
Status ReadExtender(const std::vector<YAML::Node>& extenders, const std::string& path,
                    KubeScheduler::Options* options) {
  if (extenders.size() != 1) {
    return At(path,
              std::to_string(extenders.size()) + " extenders: the simulator plays one, taskgov");
  }
  auto extender = MapReader::Of(extenders.front(), IndexPath(path, 0),
                                {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb",
                                 "weight", "bindVerb", "enableHTTPS", "tlsConfig", "httpTimeout",
                                 "nodeCacheCapable", "managedResources", "ignorable"});
  if (!extender.ok()) return extender.error();
  // The verbs it registers (a string given and not empty).
  std::map<std::string_view, bool> has;
  for (const std::string_view verb : {"filterVerb", "bindVerb", "prioritizeVerb", "preemptVerb"}) {
    auto text = extender->String(verb);
    if (!text.ok()) return text.error();
    has[verb] = text->has_value() && !(*text)->empty();
  }
  if (!has["filterVerb"]) {
    return At(extender->PathOf("filterVerb"), "required: the simulator plays taskgov's filter");
  }
  if (!has["bindVerb"]) {
    return At(extender->PathOf("bindVerb"),
              "required: the simulator binds through taskgov (kube-scheduler's own binding, with "
              "taskgov confirming from the watched pods, is not played)");
  }
  auto managed = extender->List("managedResources");
  if (!managed.ok()) return managed.error();
  if (!managed->empty()) {
    return At(extender->PathOf("managedResources"),
              "not played: the simulator sends every pod to taskgov");
  }
  auto weight = extender->Integer("weight", 0, kMaxExtenderWeight);
  if (!weight.ok()) return weight.error();
  options->extender_weight = 0;  // no prioritizeVerb: not called
  if (has["prioritizeVerb"]) {
    if (weight->value_or(0) <= 0) {
      return At(extender->PathOf("weight"),
                "must be positive with a prioritizeVerb (kube-scheduler refuses 0)");
    }
    options->extender_weight = **weight;
  }
  options->preempt_verb = has["preemptVerb"];
  return Status::Ok();
}

Status ReadBackoffs(const MapReader& config, KubeScheduler::Options* options) {
  auto initial = config.Integer("podInitialBackoffSeconds", 1, kMaxBackoffSeconds);
  if (!initial.ok()) return initial.error();
  auto max = config.Integer("podMaxBackoffSeconds", 1, kMaxBackoffSeconds);
  if (!max.ok()) return max.error();
  const int64_t initial_s = initial->value_or(1);
  const int64_t max_s = max->value_or(10);
  if (max_s < initial_s) {
    return At(config.PathOf(max->has_value() ? "podMaxBackoffSeconds" : "podInitialBackoffSeconds"),
              "podMaxBackoffSeconds (" + std::to_string(max_s) +
                  ") must be at least podInitialBackoffSeconds (" + std::to_string(initial_s) +
                  ")");
  }
  options->initial_backoff_ms = initial_s * 1000;
  options->max_backoff_ms = max_s * 1000;
  return Status::Ok();
}

Result<KubeScheduler::Options> ReadConfiguration(const YAML::Node& node, const std::string& path,
                                                 KubeScheduler::Options options) {
  auto config = MapReader::Of(
      node, path,
      {"apiVersion", "kind", "parallelism", "leaderElection", "clientConnection",
       "healthzBindAddress", "metricsBindAddress", "enableProfiling", "enableContentionProfiling",
       "percentageOfNodesToScore", "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles",
       "extenders", "delayCacheUntilActive"});
  if (!config.ok()) return config.error();
  auto version = config->String("apiVersion");
  if (!version.ok()) return version.error();
  if (*version != kApiVersion) {
    return At(config->PathOf("apiVersion"),
              "must be " + std::string(kApiVersion) + ", got " + Quote(version->value_or("")));
  }
  auto kind = config->String("kind");
  if (!kind.ok()) return kind.error();
  if (*kind != "KubeSchedulerConfiguration") {
    return At(config->PathOf("kind"),
              "must be KubeSchedulerConfiguration, got " + Quote(kind->value_or("")));
  }
  auto percentage = config->Integer("percentageOfNodesToScore", 0, 100);
  if (!percentage.ok()) return percentage.error();
  if (percentage->value_or(0) != 0 && **percentage != 100) {
    return At(config->PathOf("percentageOfNodesToScore"),
              "not played: the simulator scores every feasible node (0 or 100)");
  }
  if (Status s = ReadBackoffs(*config, &options); !s.ok()) return s.error();
  auto profiles = config->List("profiles");
  if (!profiles.ok()) return profiles.error();
  if (profiles->empty()) {
    return At(config->PathOf("profiles"), "no profile has schedulerName " +
                                              Quote(options.scheduler_name) +
                                              ", the scheduler taskgov governs");
  }
  auto scoring = ReadGovernedProfile(*profiles, config->PathOf("profiles"), options.scheduler_name);
  if (!scoring.ok()) return scoring.error();
  options.scoring = std::move(*scoring);
  auto extenders = config->List("extenders");
  if (!extenders.ok()) return extenders.error();
  if (Status s = ReadExtender(*extenders, config->PathOf("extenders"), &options); !s.ok()) {
    return s.error();
  }
  return options;
}

Result<KubeScheduler::Options> Apply(std::string_view text, KubeScheduler::Options options) {
  auto loaded = LoadOne(text, "");
  if (!loaded.ok()) return loaded.error();
  const YAML::Node& document = *loaded;  // const: operator[] must not add the key
  const YAML::Node kind = document.IsMap() ? document["kind"] : YAML::Node();
  const std::string kind_name = kind.IsDefined() && kind.IsScalar() ? kind.Scalar() : "";
  if (kind_name == "ConfigMap") {
    auto value = ConfigMapValue(document);
    if (!value.ok()) return value.error();
    auto inner = LoadOne(value->second, value->first);
    if (!inner.ok()) return inner.error();
    return ReadConfiguration(*inner, value->first, std::move(options));
  }
  if (kind_name != "KubeSchedulerConfiguration") {
    return At("kind", "must be KubeSchedulerConfiguration, or a ConfigMap holding one; got " +
                          (kind_name.empty() ? std::string("none") : Quote(kind_name)));
  }
  return ReadConfiguration(document, "", std::move(options));
}

std::string Seconds(int64_t ms) {
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
}

}  // namespace

Result<KubeScheduler::Options> ApplySchedulerConfig(std::string_view text,
                                                    KubeScheduler::Options options) {
  try {
    return Apply(text, std::move(options));
  } catch (const YAML::Exception& e) {  // a node read against its type; not expected
    return Error{"unreadable kube-scheduler configuration: " + e.msg};
  }
}

std::string DescribeScheduling(const KubeScheduler::Options& options) {
  std::string out = std::string(TypeName(options.scoring.type)) + " (";
  const std::vector<ScoringStrategy::Resource>& resources = options.scoring.resources;
  for (size_t i = 0; i < resources.size() && i < kDescribedResources; ++i) {
    out += (i == 0 ? "" : ", ") + resources[i].name + " " + std::to_string(resources[i].weight);
  }
  if (resources.size() > kDescribedResources) {
    out += " and " + std::to_string(resources.size() - kDescribedResources) + " more";
  }
  out += "), backoff " + Seconds(options.initial_backoff_ms) + " to " +
         Seconds(options.max_backoff_ms) + ", extender weight " +
         std::to_string(options.extender_weight);
  if (!options.preempt_verb) out += ", no preempt verb";
  return out;
}

}  // namespace taskgov::scheduler::sim
