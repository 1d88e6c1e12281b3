#include "e2e/quota_oracle.h"

#include <algorithm>
#include <set>

namespace taskgov::e2e {

std::map<std::string, int64_t> QuotaOracle::UsageOf(const std::vector<PodView>& pods) {
  std::map<std::string, int64_t> usage;
  for (const PodView& p : pods) {
    if (p.job.empty() || !p.active()) continue;
    for (const auto& [resource, amount] : p.request) {
      if (amount > 0) usage[Key(p.ns, p.instance_type, resource)] += amount;
    }
  }
  return usage;
}

std::vector<std::string> QuotaOracle::Violations(const std::vector<PodView>& pods) const {
  std::vector<std::string> out;
  std::map<std::string, int64_t> usage = UsageOf(pods);
  std::set<std::string> covered;
  struct Pool {
    int64_t used = 0;
    int64_t capacity = 0;
  };
  std::map<std::string, Pool> pools;  // cohort|instance type|resource
  for (const QuotaLine& line : lines_) {
    const std::string key = Key(line.ns, line.instance_type, line.resource);
    covered.insert(key);
    const int64_t u = usage.count(key) > 0 ? usage.at(key) : 0;
    const int64_t borrow = line.cohort.empty() ? 0 : line.borrowing_limit;
    if (borrow != kNoLimit && u > line.nominal + borrow) {
      out.push_back("team " + line.team + " uses " + std::to_string(u) + " " + line.resource +
                    " on " + line.instance_type + ", above nominal " +
                    std::to_string(line.nominal) + " + borrowing limit " + std::to_string(borrow));
    }
    if (line.cohort.empty()) continue;
    const int64_t lendable =
        line.lending_limit == kNoLimit ? line.nominal : std::min(line.lending_limit, line.nominal);
    const int64_t guaranteed = line.nominal - lendable;
    Pool& pool = pools[line.cohort + "|" + line.instance_type + "|" + line.resource];
    pool.used += std::max<int64_t>(0, u - guaranteed);
    pool.capacity += lendable;
  }
  for (const auto& [key, pool] : pools) {
    if (pool.used > pool.capacity) {
      out.push_back("cohort pool " + key + ": " + std::to_string(pool.used) +
                    " used above the guaranteed shares, more than the " +
                    std::to_string(pool.capacity) + " lent");
    }
  }
  for (const auto& [key, amount] : usage) {
    if (covered.count(key) == 0) {
      out.push_back("usage " + std::to_string(amount) + " of " + key + " without a quota line");
    }
  }
  return out;
}

}  // namespace taskgov::e2e
