#include "config/test_util.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "scheduler/model/quantity.h"

namespace taskgov::config::testing {

LoadResult Load(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<SourceFile> sources;
  for (const auto& [name, content] : files) sources.push_back(SourceFile{name, content});
  return LoadSources(sources);
}

LoadResult LoadOne(const std::string& name, const std::string& content) {
  return Load({{name, content}});
}

std::string Dump(const LoadResult& result) {
  std::string out;
  for (const Diagnostic& d : result.diagnostics) {
    out += (d.severity == Severity::kError ? "error: " : "warning: ") + result.Format(d) + "\n";
  }
  return out.empty() ? "(no diagnostics)\n" : out;
}

bool HasDiagnostic(const LoadResult& result, Severity severity, const std::string& file,
                   const std::string& path, const std::string& text) {
  return std::any_of(result.diagnostics.begin(), result.diagnostics.end(), [&](const auto& d) {
    return d.severity == severity && d.file == file && (path.empty() || d.path == path) &&
           d.message.find(text) != std::string::npos;
  });
}

const scheduler::model::ResourceQuota* FindQuota(const scheduler::model::Policy& policy,
                                                 const std::string& team, const std::string& flavor,
                                                 const std::string& resource) {
  const scheduler::model::Team* t = policy.FindTeam(team);
  if (t == nullptr) return nullptr;
  for (const scheduler::model::FlavorQuota& fq : t->flavors) {
    if (fq.flavor != flavor) continue;
    for (const scheduler::model::ResourceQuota& q : fq.resources) {
      if (q.resource == resource) return &q;
    }
  }
  return nullptr;
}

namespace {

std::string Amount(const std::string& resource, int64_t v) {
  return v == scheduler::model::kUnlimited ? "unlimited"
                                           : scheduler::model::FormatQuantity(resource, v);
}

}  // namespace

std::string ModelSummary(const scheduler::model::Policy& policy) {
  std::vector<const scheduler::model::Team*> teams;
  for (const scheduler::model::Team& t : policy.teams) teams.push_back(&t);
  std::sort(teams.begin(), teams.end(), [](auto* a, auto* b) { return a->name < b->name; });
  std::ostringstream out;
  std::map<std::string, std::vector<std::string>> cohorts;
  for (const scheduler::model::Team* t : teams) {
    out << "team " << t->name << " weight=" << t->fair_share_weight
        << " within=" << static_cast<int>(t->within_team)
        << " reclaim=" << static_cast<int>(t->reclaim) << " active=" << t->active
        << " reclaimable=" << t->reclaimable << " cohort=" << (t->cohort.empty() ? "none" : "yes")
        << "\n";
    if (!t->cohort.empty()) cohorts[t->cohort].push_back(t->name);
    for (const scheduler::model::FlavorQuota& fq : t->flavors) {
      out << "  flavor " << fq.flavor << "\n";
      for (const scheduler::model::ResourceQuota& q : fq.resources) {
        out << "    " << q.resource << " nominal=" << Amount(q.resource, q.nominal)
            << " borrowing=" << Amount(q.resource, q.borrowing_limit)
            << " lending=" << Amount(q.resource, q.lending_limit) << "\n";
      }
    }
  }
  std::set<std::string> partition;
  for (auto& [name, members] : cohorts) {
    std::string line;
    for (const std::string& m : members) line += m + " ";
    partition.insert(line);
  }
  for (const std::string& line : partition) out << "cohort of: " << line << "\n";
  return out.str();
}

TempDir::TempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base ? base : "/tmp") + "/config_test_XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    std::cerr << "mkdtemp failed\n";
    std::abort();
  }
  path_ = buffer.data();
}

namespace {

void RemoveTree(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    if (DIR* d = ::opendir(path.c_str())) {
      while (dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        RemoveTree(path + "/" + name);
      }
      ::closedir(d);
    }
    ::rmdir(path.c_str());
  } else {
    ::unlink(path.c_str());
  }
}

}  // namespace

TempDir::~TempDir() { RemoveTree(path_); }

void TempDir::Write(const std::string& name, const std::string& content) const {
  std::ofstream out(path_ + "/" + name, std::ios::trunc | std::ios::binary);
  out << content;
  if (!out) {
    std::cerr << "cannot write " << path_ << "/" << name << "\n";
    std::abort();
  }
}

void KubeletPublish(const std::string& dir,
                    const std::vector<std::pair<std::string, std::string>>& files,
                    const std::string& stamp) {
  auto check = [](bool ok, const std::string& what) {
    if (!ok) {
      std::cerr << "KubeletPublish: " << what << "\n";
      std::abort();
    }
  };
  const std::string version = "..2026_11_29_" + stamp;
  check(::mkdir((dir + "/" + version).c_str(), 0755) == 0, "mkdir " + version);
  for (const auto& [name, content] : files) {
    std::ofstream out(dir + "/" + version + "/" + name, std::ios::trunc | std::ios::binary);
    out << content;
    check(static_cast<bool>(out), "write " + name);
  }
  char old_target[4096] = {0};
  const ssize_t old_len = ::readlink((dir + "/..data").c_str(), old_target, sizeof old_target - 1);
  ::unlink((dir + "/..data_tmp").c_str());
  check(::symlink(version.c_str(), (dir + "/..data_tmp").c_str()) == 0, "symlink ..data_tmp");
  check(::rename((dir + "/..data_tmp").c_str(), (dir + "/..data").c_str()) == 0, "rename ..data");
  std::set<std::string> names;
  for (const auto& [name, content] : files) {
    names.insert(name);
    const std::string link = dir + "/" + name;
    struct stat st;
    if (::lstat(link.c_str(), &st) != 0) {
      check(::symlink(("..data/" + name).c_str(), link.c_str()) == 0, "symlink " + name);
    }
  }
  if (DIR* d = ::opendir(dir.c_str())) {
    std::vector<std::string> stale;
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.empty() || name[0] == '.' || names.count(name)) continue;
      stale.push_back(name);
    }
    ::closedir(d);
    for (const std::string& name : stale) ::unlink((dir + "/" + name).c_str());
  }
  if (old_len > 0) {
    const std::string old_version(old_target, static_cast<size_t>(old_len));
    if (old_version != version) RemoveTree(dir + "/" + old_version);
  }
}

std::string ReadRunfile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "missing runfile " << path << "\n";
    std::abort();
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace taskgov::config::testing
