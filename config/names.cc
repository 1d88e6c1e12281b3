#include "config/names.h"

#include "scheduler/model/quantity.h"

namespace taskgov::config {

std::string_view Name(scheduler::TaskPrioritization v) {
  return v == scheduler::TaskPrioritization::kTaskRanking ? "TaskRanking" : "FirstComeFirstServe";
}

std::string_view Name(scheduler::IdleComputeAllocation v) {
  return v == scheduler::IdleComputeAllocation::kFairShare ? "FairShare" : "FirstComeFirstServe";
}

std::string_view Name(scheduler::NoTeamAction v) {
  return v == scheduler::NoTeamAction::kPassThrough ? "PassThrough" : "Refuse";
}

std::string_view Name(scheduler::QueueingStrategy v) {
  return v == scheduler::QueueingStrategy::kStrictFIFO ? "StrictFIFO" : "BestEffortFIFO";
}

std::string_view Name(scheduler::WithinTeamPreemption v) {
  switch (v) {
    case scheduler::WithinTeamPreemption::kNever:
      return "Never";
    case scheduler::WithinTeamPreemption::kLowerPriority:
      return "LowerPriority";
    case scheduler::WithinTeamPreemption::kLowerOrNewerEqualPriority:
      return "LowerOrNewerEqualPriority";
  }
  return "?";
}

std::string_view Name(scheduler::ReclaimPolicy v) {
  switch (v) {
    case scheduler::ReclaimPolicy::kNever:
      return "Never";
    case scheduler::ReclaimPolicy::kLowerPriority:
      return "LowerPriority";
    case scheduler::ReclaimPolicy::kAny:
      return "Any";
  }
  return "?";
}

std::string_view Name(SharingStrategy v) {
  switch (v) {
    case SharingStrategy::kDontLend:
      return "DontLend";
    case SharingStrategy::kLend:
      return "Lend";
    case SharingStrategy::kLendAndBorrow:
      return "LendAndBorrow";
  }
  return "?";
}

std::string FormatAmount(std::string_view resource, int64_t amount) {
  return amount == scheduler::kUnlimited ? "unlimited"
                                         : scheduler::FormatQuantity(resource, amount);
}

}  // namespace taskgov::config
