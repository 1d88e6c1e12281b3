#include "scheduler/kube/config.h"

#include "scheduler/common/base64.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace taskgov::scheduler::kube {
namespace {

constexpr size_t kMaxConfigFileBytes = 16 * 1024 * 1024;

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string Resolve(const std::string& dir, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  return dir + "/" + path;
}

// A YAML scalar as a string, or an error naming `where`; an absent or null node yields "".
common::Result<std::string> ScalarString(const YAML::Node& node, const std::string& where) {
  if (!node.IsDefined() || node.IsNull()) return std::string();
  if (!node.IsScalar()) return common::Error{where + ": expected a string"};
  return node.Scalar();
}

common::Result<bool> ScalarBool(const YAML::Node& node, const std::string& where) {
  if (!node.IsDefined() || node.IsNull()) return false;
  if (!node.IsScalar()) return common::Error{where + ": expected a boolean"};
  const std::string& s = node.Scalar();
  if (s == "true" || s == "True" || s == "TRUE" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "False" || s == "FALSE" || s == "no" || s == "off") return false;
  return common::Error{where + ": expected a boolean, got '" + s + "'"};
}

// One named entry (cluster, context or user) and the directory its relative paths resolve in.
struct Named {
  YAML::Node body;
  std::string file;
  std::string dir;
};

struct Merged {
  std::map<std::string, Named> clusters, contexts, users;
  std::string current_context;
  std::string current_context_file;
};

common::Status MergeList(const YAML::Node& root, const char* list_key, const char* body_key,
                         const std::string& file, std::map<std::string, Named>* out) {
  YAML::Node list = root[list_key];
  if (!list.IsDefined() || list.IsNull()) return common::Status::Ok();
  if (!list.IsSequence()) return common::Error{file + ": " + list_key + ": expected a list"};
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = file + ": " + list_key + "[" + std::to_string(i) + "]";
    YAML::Node entry = list[i];
    if (!entry.IsMap()) return common::Error{where + ": expected a map"};
    common::Result<std::string> name = ScalarString(entry["name"], where + ".name");
    if (!name.ok()) return name.error();
    if (name->empty()) return common::Error{where + ".name: missing"};
    YAML::Node body = entry[body_key];
    if (body.IsDefined() && !body.IsNull() && !body.IsMap()) {
      return common::Error{where + "." + body_key + ": expected a map"};
    }
    out->emplace(*name, Named{body, file, DirOf(file)});  // first definition wins
  }
  return common::Status::Ok();
}

common::Status MergeFile(const std::string& path, bool must_exist, Merged* merged) {
  std::error_code exists_error;
  if (!must_exist && !std::filesystem::exists(path, exists_error)) return common::Status::Ok();
  common::Result<std::string> text = ReadFile(path, "kubeconfig");
  if (!text.ok()) return text.error();
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return common::Error{"kubeconfig " + path + ": invalid YAML at line " +
                         std::to_string(e.mark.line + 1) + ": " + e.msg};
  }
  if (root.IsNull()) return common::Status::Ok();  // an empty file contributes nothing
  if (!root.IsMap())
    return common::Error{"kubeconfig " + path + ": expected a map at the top level"};
  const std::string file = "kubeconfig " + path;
  if (common::Status s = MergeList(root, "clusters", "cluster", path, &merged->clusters); !s.ok())
    return s;
  if (common::Status s = MergeList(root, "contexts", "context", path, &merged->contexts); !s.ok())
    return s;
  if (common::Status s = MergeList(root, "users", "user", path, &merged->users); !s.ok()) return s;
  common::Result<std::string> current =
      ScalarString(root["current-context"], file + ": current-context");
  if (!current.ok()) return current.error();
  if (merged->current_context.empty() && !current->empty()) {
    merged->current_context = *current;
    merged->current_context_file = path;
  }
  return common::Status::Ok();
}

// Reads `<key>-data` (base64) or `<key>` (a path), data first.
common::Status ReadPemField(const Named& named, const std::string& where, const std::string& key,
                            std::string* out) {
  common::Result<std::string> data =
      ScalarString(named.body[key + "-data"], where + "." + key + "-data");
  if (!data.ok()) return data.error();
  if (!data->empty()) {
    common::Result<std::string> decoded = common::Base64Decode(*data, where + "." + key + "-data");
    if (!decoded.ok()) return decoded.error();
    *out = std::move(*decoded);
    return common::Status::Ok();
  }
  common::Result<std::string> path = ScalarString(named.body[key], where + "." + key);
  if (!path.ok()) return path.error();
  if (path->empty()) return common::Status::Ok();
  common::Result<std::string> contents = ReadFile(Resolve(named.dir, *path), where + "." + key);
  if (!contents.ok()) return contents.error();
  *out = std::move(*contents);
  return common::Status::Ok();
}

// exec.args (`w` is the path of exec), when present: a list of strings.
common::Status ReadExecArgs(const YAML::Node& args, const std::string& w,
                            std::vector<std::string>* out) {
  if (!args.IsDefined() || args.IsNull()) return common::Status::Ok();
  if (!args.IsSequence()) return common::Error{w + ".args: expected a list"};
  for (size_t i = 0; i < args.size(); ++i) {
    common::Result<std::string> arg = ScalarString(args[i], w + ".args[" + std::to_string(i) + "]");
    if (!arg.ok()) return arg.error();
    out->push_back(*arg);
  }
  return common::Status::Ok();
}

// exec.env, when present: a list of {name, value} with non-empty names.
common::Status ReadExecEnv(const YAML::Node& env, const std::string& w,
                           std::vector<std::pair<std::string, std::string>>* out) {
  if (!env.IsDefined() || env.IsNull()) return common::Status::Ok();
  if (!env.IsSequence()) return common::Error{w + ".env: expected a list"};
  for (size_t i = 0; i < env.size(); ++i) {
    const std::string ew = w + ".env[" + std::to_string(i) + "]";
    if (!env[i].IsMap()) return common::Error{ew + ": expected a map with name and value"};
    common::Result<std::string> name = ScalarString(env[i]["name"], ew + ".name");
    if (!name.ok()) return name.error();
    common::Result<std::string> value = ScalarString(env[i]["value"], ew + ".value");
    if (!value.ok()) return value.error();
    if (name->empty()) return common::Error{ew + ".name: missing"};
    out->emplace_back(*name, *value);
  }
  return common::Status::Ok();
}

// exec.interactiveMode: Never or IfAvailable (the default, except that v1 requires it); Always
// needs a terminal, which taskgov never has.
common::Result<std::string> ReadInteractiveMode(const YAML::Node& node, const std::string& w,
                                                const std::string& api_version) {
  common::Result<std::string> mode = ScalarString(node, w + ".interactiveMode");
  if (!mode.ok()) return mode.error();
  if (!mode->empty() && *mode != "Never" && *mode != "IfAvailable" && *mode != "Always") {
    return common::Error{w + ".interactiveMode: want Never, IfAvailable or Always, got '" + *mode +
                         "'"};
  }
  if (mode->empty() && api_version == "client.authentication.k8s.io/v1") {
    return common::Error{w + ".interactiveMode: required for client.authentication.k8s.io/v1"};
  }
  if (*mode == "Always") {
    return common::Error{w + ".interactiveMode: Always needs a terminal; taskgov runs unattended"};
  }
  return mode->empty() ? std::string("IfAvailable") : *mode;
}

common::Status ReadExec(const Named& named, const std::string& where, ClusterConfig* config) {
  YAML::Node exec = named.body["exec"];
  if (!exec.IsDefined() || exec.IsNull()) return common::Status::Ok();
  const std::string w = where + ".exec";
  if (!exec.IsMap()) return common::Error{w + ": expected a map"};
  ExecConfig out;
  common::Result<std::string> api = ScalarString(exec["apiVersion"], w + ".apiVersion");
  if (!api.ok()) return api.error();
  if (*api != "client.authentication.k8s.io/v1" && *api != "client.authentication.k8s.io/v1beta1") {
    return common::Error{w + ".apiVersion: unsupported '" + *api +
                         "' (want client.authentication.k8s.io/v1 or v1beta1)"};
  }
  out.api_version = *api;
  common::Result<std::string> command = ScalarString(exec["command"], w + ".command");
  if (!command.ok()) return command.error();
  if (command->empty()) return common::Error{w + ".command: missing"};
  out.command = command->find('/') != std::string::npos ? Resolve(named.dir, *command) : *command;
  if (common::Status s = ReadExecArgs(exec["args"], w, &out.args); !s.ok()) return s;
  if (common::Status s = ReadExecEnv(exec["env"], w, &out.env); !s.ok()) return s;
  common::Result<std::string> mode =
      ReadInteractiveMode(exec["interactiveMode"], w, out.api_version);
  if (!mode.ok()) return mode.error();
  out.interactive_mode = *mode;
  common::Result<bool> provide = ScalarBool(exec["provideClusterInfo"], w + ".provideClusterInfo");
  if (!provide.ok()) return provide.error();
  out.provide_cluster_info = *provide;
  common::Result<std::string> hint = ScalarString(exec["installHint"], w + ".installHint");
  if (!hint.ok()) return hint.error();
  out.install_hint = *hint;
  config->exec = std::move(out);
  return common::Status::Ok();
}

// A clusters[].cluster entry (at `where`): server URL and TLS settings.
common::Status ReadCluster(const Named& c, const std::string& where, ClusterConfig* config) {
  common::Result<std::string> server = ScalarString(c.body["server"], where + ".server");
  if (!server.ok()) return server.error();
  if (server->empty()) return common::Error{where + ".server: missing"};
  if (common::Status s = ParseServerUrl(*server, config); !s.ok())
    return s.error().Wrap(where + ".server");
  if (common::Status s = ReadPemField(c, where, "certificate-authority", &config->ca_pem);
      !s.ok()) {
    return s.error();
  }
  common::Result<bool> insecure =
      ScalarBool(c.body["insecure-skip-tls-verify"], where + ".insecure-skip-tls-verify");
  if (!insecure.ok()) return insecure.error();
  config->insecure_skip_tls_verify = *insecure;
  common::Result<std::string> sni =
      ScalarString(c.body["tls-server-name"], where + ".tls-server-name");
  if (!sni.ok()) return sni.error();
  config->tls_server_name = *sni;
  return common::Status::Ok();
}

// A users[].user entry (at `uw`): token, token file, client certificate and key, exec plugin.
common::Status ReadUser(const Named& u, const std::string& uw, ClusterConfig* config) {
  common::Result<std::string> token = ScalarString(u.body["token"], uw + ".token");
  if (!token.ok()) return token.error();
  config->token = *token;
  common::Result<std::string> token_file = ScalarString(u.body["tokenFile"], uw + ".tokenFile");
  if (!token_file.ok()) return token_file.error();
  if (!token_file->empty()) config->token_file = Resolve(u.dir, *token_file);
  if (common::Status s = ReadPemField(u, uw, "client-certificate", &config->client_cert_pem);
      !s.ok()) {
    return s.error();
  }
  if (common::Status s = ReadPemField(u, uw, "client-key", &config->client_key_pem); !s.ok()) {
    return s.error();
  }
  if (config->client_cert_pem.empty() != config->client_key_pem.empty()) {
    return common::Error{uw + ": client-certificate and client-key go together"};
  }
  return ReadExec(u, uw, config);
}

common::Result<ClusterConfig> Build(const Merged& merged, const std::string& context_override,
                                    const std::string& files) {
  const std::string context_name =
      context_override.empty() ? merged.current_context : context_override;
  if (context_name.empty())
    return common::Error{"kubeconfig (" + files + "): no current-context set"};
  auto ctx = merged.contexts.find(context_name);
  if (ctx == merged.contexts.end()) {
    return common::Error{"kubeconfig (" + files + "): context '" + context_name + "' not found"};
  }
  const std::string cw = ctx->second.file + ": contexts[" + context_name + "].context";
  common::Result<std::string> cluster_name =
      ScalarString(ctx->second.body["cluster"], cw + ".cluster");
  if (!cluster_name.ok()) return cluster_name.error();
  common::Result<std::string> user_name = ScalarString(ctx->second.body["user"], cw + ".user");
  if (!user_name.ok()) return user_name.error();
  common::Result<std::string> ns = ScalarString(ctx->second.body["namespace"], cw + ".namespace");
  if (!ns.ok()) return ns.error();
  auto cluster = merged.clusters.find(*cluster_name);
  if (cluster == merged.clusters.end()) {
    return common::Error{cw + ".cluster: cluster '" + *cluster_name + "' not found"};
  }

  ClusterConfig config;
  config.source = "kubeconfig " + files + " context " + context_name;
  if (!ns->empty()) config.default_namespace = *ns;
  const Named& c = cluster->second;
  const std::string where = c.file + ": clusters[" + *cluster_name + "].cluster";
  if (common::Status s = ReadCluster(c, where, &config); !s.ok()) return s.error();
  if (!user_name->empty()) {
    auto user = merged.users.find(*user_name);
    if (user == merged.users.end()) {
      return common::Error{cw + ".user: user '" + *user_name + "' not found"};
    }
    const Named& u = user->second;
    const std::string uw = u.file + ": users[" + *user_name + "].user";
    if (common::Status s = ReadUser(u, uw, &config); !s.ok()) return s.error();
  }
  return config;
}

}  // namespace

common::Status ParseServerUrl(const std::string& server, ClusterConfig* config) {
  std::string_view rest = server;
  if (rest.rfind("https://", 0) == 0) {
    config->scheme = "https";
    rest.remove_prefix(8);
  } else if (rest.rfind("http://", 0) == 0) {
    config->scheme = "http";
    rest.remove_prefix(7);
  } else {
    return common::Error{"server URL '" + server + "' must start with https:// or http://"};
  }
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string path = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  while (!path.empty() && path.back() == '/') path.pop_back();
  std::string_view port_text;
  if (!authority.empty() && authority[0] == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos)
      return common::Error{"server URL '" + server + "': unclosed '['"};
    config->host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return common::Error{"server URL '" + server + "': junk after ']'"};
      port_text = after.substr(1);
    }
  } else {
    size_t colon = authority.rfind(':');
    config->host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (config->host.empty()) return common::Error{"server URL '" + server + "': empty host"};
  if (port_text.empty()) {
    config->port = config->scheme == "https" ? 443 : 80;
  } else {
    unsigned long port = 0;
    for (char c : port_text) {
      if (c < '0' || c > '9' || port > 65535) {
        return common::Error{"server URL '" + server + "': invalid port"};
      }
      port = port * 10 + static_cast<unsigned long>(c - '0');
    }
    if (port == 0 || port > 65535)
      return common::Error{"server URL '" + server + "': invalid port"};
    config->port = static_cast<uint16_t>(port);
  }
  config->server = server;
  config->base_path = path;
  return common::Status::Ok();
}

GetEnv ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

bool InClusterAvailable(const GetEnv& env) {
  auto host = env("KUBERNETES_SERVICE_HOST");
  auto port = env("KUBERNETES_SERVICE_PORT");
  return host && !host->empty() && port && !port->empty();
}

common::Result<ClusterConfig> LoadInClusterConfig(const GetEnv& env, const InClusterPaths& paths) {
  if (!InClusterAvailable(env)) {
    return common::Error{
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set"};
  }
  std::string host = *env("KUBERNETES_SERVICE_HOST");
  const std::string port = *env("KUBERNETES_SERVICE_PORT");
  if (host.find(':') != std::string::npos) host = "[" + host + "]";  // IPv6
  ClusterConfig config;
  if (common::Status s = ParseServerUrl("https://" + host + ":" + port, &config); !s.ok()) {
    return s.error().Wrap("in-cluster config");
  }
  config.source = "in-cluster";
  common::Result<std::string> token = ReadFile(paths.token_file, "service-account token");
  if (!token.ok()) return token.error().Wrap("in-cluster config");
  config.token_file = paths.token_file;
  common::Result<std::string> ca = ReadFile(paths.ca_file, "service-account CA");
  if (!ca.ok()) return ca.error().Wrap("in-cluster config");
  config.ca_pem = std::move(*ca);
  common::Result<std::string> ns = ReadFile(paths.namespace_file, "service-account namespace");
  if (ns.ok()) {
    std::string value = *ns;
    while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.pop_back();
    if (!value.empty()) config.default_namespace = value;
  }
  return config;
}

std::vector<std::string> KubeconfigPaths(const KubeconfigSource& source) {
  if (!source.explicit_path.empty()) return {source.explicit_path};
  std::vector<std::string> paths;
  if (!source.env_kubeconfig.empty()) {
    std::set<std::string> seen;
    std::stringstream list(source.env_kubeconfig);
    std::string item;
    while (std::getline(list, item, ':')) {
      if (!item.empty() && seen.insert(item).second) paths.push_back(item);
    }
    if (!paths.empty()) return paths;
  }
  if (!source.home.empty()) paths.push_back(source.home + "/.kube/config");
  return paths;
}

common::Result<ClusterConfig> LoadKubeconfig(const KubeconfigSource& source) {
  std::vector<std::string> paths = KubeconfigPaths(source);
  if (paths.empty()) return common::Error{"kubeconfig: no --kubeconfig, $KUBECONFIG or $HOME"};
  const bool must_exist = !source.explicit_path.empty() || paths.size() == 1;
  Merged merged;
  std::string files;
  for (const std::string& path : paths) {
    if (!files.empty()) files += ":";
    files += path;
    try {
      if (common::Status s = MergeFile(path, must_exist, &merged); !s.ok()) return s.error();
    } catch (const std::exception& e) {  // yaml-cpp throws on some malformed inputs
      return common::Error{"kubeconfig " + path + ": " + e.what()};
    }
  }
  try {
    return Build(merged, source.context, files);
  } catch (const std::exception& e) {
    return common::Error{"kubeconfig (" + files + "): " + e.what()};
  }
}

common::Result<ClusterConfig> LoadClusterConfig(const std::string& kubeconfig_flag,
                                                const std::string& context, const GetEnv& env,
                                                const InClusterPaths& paths) {
  KubeconfigSource source;
  source.explicit_path = kubeconfig_flag;
  source.context = context;
  if (kubeconfig_flag.empty() && InClusterAvailable(env)) return LoadInClusterConfig(env, paths);
  source.env_kubeconfig = env("KUBECONFIG").value_or("");
  source.home = env("HOME").value_or("");
  return LoadKubeconfig(source);
}

common::Result<std::string> ReadFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return common::Error{std::string(what) + " '" + path + "': " + std::strerror(errno)};
  std::string data;
  char buf[8192];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    data.append(buf, static_cast<size_t>(in.gcount()));
    if (data.size() > kMaxConfigFileBytes) {
      return common::Error{std::string(what) + " '" + path + "': larger than " +
                           std::to_string(kMaxConfigFileBytes) + " bytes"};
    }
  }
  return data;
}

}  // namespace taskgov::scheduler::kube
