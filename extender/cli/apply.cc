#include "extender/cli/apply.h"

#include "extender/cli/render.h"

#include <algorithm>
#include <optional>

#include "config/loader.h"
#include "extender/cli/diff.h"

namespace taskgov::cli {

namespace {

// The errors the extender would report for `files`, one line each; empty when it would load them.
std::vector<std::string> ValidationErrors(const std::vector<config::SourceFile>& files,
                                          const std::vector<config::SourceFile>& in_force) {
  config::DirectorySnapshot snapshot;
  snapshot.files = files;
  config::LoadResult result = config::LoadSnapshot(snapshot, &in_force);
  std::vector<std::string> errors;
  for (const config::Diagnostic& d : result.diagnostics) {
    if (d.severity == config::Severity::kError) errors.push_back(result.Format(d));
  }
  return errors;
}

std::string_view DryRunSuffix(DryRun d) {
  switch (d) {
    case DryRun::kNone:
      return "";
    case DryRun::kClient:
      return " (dry run)";
    case DryRun::kServer:
      return " (server dry run)";
  }
  return "";
}

enum class Step { kDone, kRetry };

// One read-edit-validate-write round. Sets *exit_code when done.
class Attempt {
 public:
  Attempt(ConfigMapStore& store, const Edit& edit, const ApplyOptions& options, std::ostream& out,
          std::ostream& err)
      : store_(store), edit_(edit), options_(options), out_(out), err_(err) {}

  // Read → edit → validate → write → report. Sets *exit_code when done; kRetry (with
  // *conflict saying why) when the write met a newer version.
  Step Run(int* exit_code, std::string* conflict) {
    std::optional<Plan> plan = MakePlan(exit_code);
    if (!plan) return Step::kDone;
    if (plan->after == plan->before) {
      out_ << plan->edited.subject << " unchanged\n";
      *exit_code = 0;
      return Step::kDone;
    }
    std::vector<config::SourceFile> files = WithKey(plan->state.files, kOwnedKey, plan->after);
    if (const auto& other = plan->edited.other_key) {
      files = WithKey(std::move(files), other->first, other->second);
    }
    if (!Valid(files, plan->state.files)) {
      *exit_code = 1;
      return Step::kDone;
    }
    if (options_.confirm) {
      ShowDiffs(*plan);
      if (!options_.confirm()) {
        err_ << "nothing was written\n";
        *exit_code = 1;
        return Step::kDone;
      }
    }
    if (options_.dry_run != DryRun::kClient) {
      common::Result<WriteResult> written =
          store_.Write(plan->state, files, options_.dry_run == DryRun::kServer);
      if (!written.ok()) {
        return Fail("writing " + store_.ref().ToString() + ": " + written.error().message,
                    exit_code);
      }
      if (written->status == WriteStatus::kConflict) {
        *conflict = "resourceVersion " + plan->state.resource_version + ": " + written->message;
        return Step::kRetry;
      }
    }
    if (options_.object_format == OutputFormat::kJson ||
        options_.object_format == OutputFormat::kYaml) {
      PrintObject(*plan, files);
    } else {
      Report(*plan);
    }
    if (options_.after) options_.after(files);
    *exit_code = 0;
    return Step::kDone;
  }

 private:
  struct Plan {
    ConfigMapState state;
    std::string before;  // the CLI's key as read
    std::string after;   // and as the edit leaves it
    EditResult edited;
  };

  // Reads the ConfigMap and runs the edit; nullopt when that failed (reported).
  std::optional<Plan> MakePlan(int* exit_code) {
    common::Result<ConfigMapState> state = store_.Read();
    if (!state.ok()) {
      Fail("reading " + store_.ref().ToString() + ": " + state.error().message, exit_code);
      return std::nullopt;
    }
    const std::string before = FileContent(state->files, kOwnedKey);
    common::Result<OwnedPolicy> owned = ParseOwned(before);
    if (!owned.ok()) {
      Fail("the CLI's key " + std::string(kOwnedKey) + " in " + store_.ref().ToString() +
               " cannot be read: " + owned.error().message +
               ". Move hand-written documents to another key, or delete the key to start again",
           exit_code);
      return std::nullopt;
    }
    const config::ConfigSet decoded = DecodeAll(state->files);
    common::Result<EditResult> edited = edit_(EditContext{*state, *owned, decoded});
    if (!edited.ok()) {
      Fail(edited.error().message, exit_code);
      return std::nullopt;
    }
    std::string after = RenderOwned(edited->owned);
    return Plan{std::move(*state), before, std::move(after), std::move(*edited)};
  }

  // Whether the extender would load `files`; otherwise every error is reported.
  bool Valid(const std::vector<config::SourceFile>& files,
             const std::vector<config::SourceFile>& in_force) {
    const std::vector<std::string> errors = ValidationErrors(files, in_force);
    if (errors.empty()) return true;
    err_ << "error: the change would leave " << store_.ref().ToString()
         << " invalid, so nothing was written (taskgov config validate shows the same checks):\n";
    for (const std::string& e : errors) err_ << "  " << e << "\n";
    return false;
  }

  // The diff of the CLI's key, and of the hand-written key a take-over rewrites.
  void ShowDiffs(const Plan& plan) {
    const ConfigMapState& s = plan.state;
    const std::string from = " (" + store_.ref().ToString() +
                             (s.exists ? ", resourceVersion " + s.resource_version : ", new") + ")";
    if (const auto& other = plan.edited.other_key) {
      out_ << UnifiedDiff(FileContent(s.files, other->first), other->second.value_or(""),
                          other->first + from,
                          other->first + (other->second ? " (after)" : " (removed)"));
    }
    out_ << UnifiedDiff(plan.before, plan.after, std::string(kOwnedKey) + from,
                        std::string(kOwnedKey) + " (after)");
  }

  // The diffs (unless shown already, before a confirmation) and the outcome line.
  void Report(const Plan& plan) {
    if (options_.show_diff && !options_.confirm) ShowDiffs(plan);
    out_ << plan.edited.subject << " " << plan.edited.verb << DryRunSuffix(options_.dry_run)
         << "\n";
  }

  // The ConfigMap with `files` as its data: the object the write sends.
  void PrintObject(const Plan& plan, const std::vector<config::SourceFile>& files) {
    rapidjson::Document doc(rapidjson::kObjectType);
    auto& a = doc.GetAllocator();
    auto str = [&](const std::string& s) {
      return rapidjson::Value(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), a);
    };
    doc.AddMember("apiVersion", "v1", a);
    doc.AddMember("kind", "ConfigMap", a);
    rapidjson::Value meta(rapidjson::kObjectType);
    meta.AddMember("name", str(store_.ref().name), a);
    meta.AddMember("namespace", str(store_.ref().ns), a);
    if (plan.state.exists) meta.AddMember("resourceVersion", str(plan.state.resource_version), a);
    doc.AddMember("metadata", meta, a);
    rapidjson::Value data(rapidjson::kObjectType);
    for (const config::SourceFile& f : files) data.AddMember(str(f.name), str(f.content), a);
    doc.AddMember("data", data, a);
    RenderDocument(doc, options_.object_format, out_);
  }

  Step Fail(const std::string& message, int* exit_code) {
    err_ << "error: " << message << "\n";
    *exit_code = 1;
    return Step::kDone;
  }

  ConfigMapStore& store_;
  const Edit& edit_;
  const ApplyOptions& options_;
  std::ostream& out_;
  std::ostream& err_;
};

}  // namespace

std::vector<config::SourceFile> WithKey(std::vector<config::SourceFile> files,
                                        std::string_view name,
                                        const std::optional<std::string>& content) {
  files.erase(std::remove_if(files.begin(), files.end(),
                             [&](const config::SourceFile& f) { return f.name == name; }),
              files.end());
  if (content && !content->empty()) {
    files.push_back(config::SourceFile{std::string(name), *content});
  }
  std::sort(
      files.begin(), files.end(),
      [](const config::SourceFile& a, const config::SourceFile& b) { return a.name < b.name; });
  return files;
}

std::string FileContent(const std::vector<config::SourceFile>& files, std::string_view key) {
  for (const config::SourceFile& f : files) {
    if (f.name == key) return f.content;
  }
  return "";
}

config::ConfigSet DecodeAll(const std::vector<config::SourceFile>& files) {
  config::Diagnostics ignored;
  return config::DecodeSources(files, &ignored);
}

int ApplyEdit(ConfigMapStore& store, const Edit& edit, const ApplyOptions& options,
              std::ostream& out, std::ostream& err) {
  Attempt attempt(store, edit, options, out, err);
  std::string conflict;
  for (int n = 1; n <= options.max_attempts; ++n) {
    int exit_code = 1;
    if (attempt.Run(&exit_code, &conflict) == Step::kDone) return exit_code;
    if (n < options.max_attempts) {
      err << "conflict: " << store.ref().ToString() << " changed since it was read (" << conflict
          << "); reading it again and re-applying the change (attempt " << n + 1 << " of "
          << options.max_attempts << ")\n";
    }
  }
  err << "error: " << store.ref().ToString() << " changed during each of " << options.max_attempts
      << " attempts (someone else is writing it), so nothing was written: run the command "
         "again\n";
  return 1;
}

}  // namespace taskgov::cli
