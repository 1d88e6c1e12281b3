#pragma once

// ApplyEdit: one change to the policy ConfigMap with optimistic concurrency, validated first.
//
//   1. Read the ConfigMap (its data and metadata.resourceVersion).
//   2. Run the edit on what was read: the CLI's own key (owned_policy.h) parsed, and every key
//      decoded, so the edit can refuse what it must not do (a team defined by hand elsewhere).
//   3. Validate the whole resulting set of keys with config/'s loader — the server's own rules —
//      plus its truncation check; any error refuses the change, naming key, path and reason.
//   4. Unless --dry-run=client: write with the resourceVersion read as precondition (server dry
//      run: dryRun=All). A 409 means someone else changed the ConfigMap meanwhile: go back to 1 —
//      re-read, re-apply the edit to the new content, re-validate — at most `max_attempts` times
//      in all, then give up having written nothing. Nothing is ever written blindly.
//   5. Print the diff of the CLI's key (the only key it changes) and the outcome line.
//
// Exit codes: 0 written (or unchanged, or a dry run that would write), 1 refused or failed.
// Thread-compatible.

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

#include "config/spec.h"
#include "extender/cli/configmap_store.h"
#include "extender/cli/owned_policy.h"
#include "extender/cli/render.h"
#include "scheduler/common/result.h"

namespace taskgov::cli {

// What an edit sees: the ConfigMap as read, the CLI's key parsed, and every key decoded.
struct EditContext {
  const ConfigMapState& state;
  const OwnedPolicy& owned;
  const config::ConfigSet& decoded;
};

struct EditResult {
  OwnedPolicy owned;    // the CLI's key after the change
  std::string subject;  // "quota/team-a"
  std::string verb;     // "created", "configured", "deleted"
  // A hand-written key a take-over rewrites: its name and new content (nullopt: the key goes).
  // No other edit touches a key but the CLI's.
  std::optional<std::pair<std::string, std::optional<std::string>>> other_key;
};

using Edit = std::function<common::Result<EditResult>(const EditContext&)>;

enum class DryRun { kNone, kClient, kServer };

struct ApplyOptions {
  DryRun dry_run = DryRun::kNone;
  int max_attempts = 5;
  bool show_diff = true;
  // kJson / kYaml: print the ConfigMap object as the change leaves it (what is written, or
  // would be in a dry run) instead of the diff and the outcome line, as `kubectl ... -o yaml`.
  OutputFormat object_format = OutputFormat::kTable;
  // Called once the change is written (or would be, in a dry run) with the keys it leaves: what
  // a command has to say about the result (quota warnings).
  std::function<void(const std::vector<config::SourceFile>& files)> after;
  // Set: the diffs are shown first and the change is written only if this says yes (a
  // take-over asks); a no writes nothing (exit code 1).
  std::function<bool()> confirm;
};

[[nodiscard]] int ApplyEdit(ConfigMapStore& store, const Edit& edit, const ApplyOptions& options,
                            std::ostream& out, std::ostream& err);

// `files` with key `name` set to `content` (nullopt or empty: without the key), sorted by name.
[[nodiscard]] std::vector<config::SourceFile> WithKey(std::vector<config::SourceFile> files,
                                                      std::string_view name,
                                                      const std::optional<std::string>& content);
// The content of `key` among `files`; "" when absent.
[[nodiscard]] std::string FileContent(const std::vector<config::SourceFile>& files,
                                      std::string_view key);
// Every key decoded (diagnostics dropped: for lookups, not validation).
[[nodiscard]] config::ConfigSet DecodeAll(const std::vector<config::SourceFile>& files);

}  // namespace taskgov::cli
