#pragma once

// QuotaOracle: DESIGN §3.3's admission rules checked against the truth — the pods the fake API
// server holds bound and not ended — independently of the extender's own ledger. Test support.
//
// For every (team, flavor, resource) line: usage U ≤ nominal N + borrowing limit B. For every
// (cohort, flavor, resource): Σ_t max(0, U_t − G_t) ≤ Σ_t L_t, with L_t = min(lending limit, N)
// and G_t = N − L_t. A team using a resource on a flavor it has no line for is a violation too.
// Pure value code over a list of pods; not synchronised.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "e2e/harness.h"

namespace taskgov::e2e {

inline constexpr int64_t kNoLimit = -1;

struct QuotaLine {
  std::string team;
  std::string ns;      // the team's namespace
  std::string cohort;  // "" : none (neither lends nor borrows)
  std::string instance_type;
  std::string resource;
  int64_t nominal = 0;
  int64_t borrowing_limit = kNoLimit;
  int64_t lending_limit = kNoLimit;
};

class QuotaOracle {
 public:
  explicit QuotaOracle(std::vector<QuotaLine> lines) : lines_(std::move(lines)) {}

  // Usage per (namespace, instance type, resource) of the active pods among `pods`.
  [[nodiscard]] static std::map<std::string, int64_t> UsageOf(const std::vector<PodView>& pods);
  // Every broken rule, one message each (empty: all hold).
  [[nodiscard]] std::vector<std::string> Violations(const std::vector<PodView>& pods) const;
  [[nodiscard]] const std::vector<QuotaLine>& lines() const { return lines_; }

  // "ns|instance_type|resource", the key of UsageOf.
  [[nodiscard]] static std::string Key(const std::string& ns, const std::string& instance_type,
                                       const std::string& resource) {
    return ns + "|" + instance_type + "|" + resource;
  }

 private:
  std::vector<QuotaLine> lines_;
};

}  // namespace taskgov::e2e
