#include "config/names.h"

#include "scheduler/model/quantity.h"

namespace taskgov::config {

std::string_view Name(scheduler::model::TaskPrioritization v) {
  return v == scheduler::model::TaskPrioritization::kTaskRanking ? "TaskRanking"
                                                                 : "FirstComeFirstServe";
}

std::string_view Name(scheduler::model::IdleComputeAllocation v) {
  return v == scheduler::model::IdleComputeAllocation::kFairShare ? "FairShare"
                                                                  : "FirstComeFirstServe";
}

std::string_view Name(scheduler::model::NoTeamAction v) {
  return v == scheduler::model::NoTeamAction::kPassThrough ? "PassThrough" : "Refuse";
}

std::string_view Name(scheduler::model::QueueingStrategy v) {
  return v == scheduler::model::QueueingStrategy::kStrictFIFO ? "StrictFIFO" : "BestEffortFIFO";
}

std::string_view Name(scheduler::model::WithinTeamPreemption v) {
  switch (v) {
    case scheduler::model::WithinTeamPreemption::kNever:
      return "Never";
    case scheduler::model::WithinTeamPreemption::kLowerPriority:
      return "LowerPriority";
    case scheduler::model::WithinTeamPreemption::kLowerOrNewerEqualPriority:
      return "LowerOrNewerEqualPriority";
  }
  return "?";
}

std::string_view Name(scheduler::model::ReclaimPolicy v) {
  switch (v) {
    case scheduler::model::ReclaimPolicy::kNever:
      return "Never";
    case scheduler::model::ReclaimPolicy::kLowerPriority:
      return "LowerPriority";
    case scheduler::model::ReclaimPolicy::kAny:
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
  return amount == scheduler::model::kUnlimited
             ? "unlimited"
             : scheduler::model::FormatQuantity(resource, amount);
}

}  // namespace taskgov::config
