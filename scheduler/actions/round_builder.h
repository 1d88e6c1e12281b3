#pragma once

// Test builders for rounds (round.h):
//   Round r = RoundBuilder("b-0").Team("team-b").Gpus(4)
//                 .Victim(VictimBuilder("a-3").Team("team-a").Gpus(4).Reason(kReclaim))
//                 .Build();
// Names follow the controller tests: pod "x" of team "t" has uid "uid-x" in namespace "ns-t";
// the flavor is ml.p5.48xlarge, the resource nvidia.com/gpu.

#include <string>
#include <utility>

#include "scheduler/actions/round.h"
#include "scheduler/model/interner.h"

namespace taskgov::scheduler::actions::testing {

inline constexpr char kRoundFlavor[] = "ml.p5.48xlarge";
inline constexpr char kRoundGpu[] = "nvidia.com/gpu";

class VictimBuilder {
 public:
  explicit VictimBuilder(std::string name) {
    v_.name = std::move(name);
    v_.uid = "uid-" + v_.name;
    v_.flavor = model::FlavorNames().Intern(kRoundFlavor);
    Team("team-a");
  }
  VictimBuilder& Team(const std::string& team) {
    v_.team = model::TeamNames().Intern(team);
    v_.ns = "ns-" + team;
    return *this;
  }
  VictimBuilder& Gpus(int64_t n) {
    v_.charged = {{model::ResourceNames().Intern(kRoundGpu), n}};
    v_.occupies = v_.charged;
    return *this;
  }
  VictimBuilder& Flavor(const std::string& flavor) {
    v_.flavor = model::FlavorNames().Intern(flavor);
    return *this;
  }
  VictimBuilder& Node(std::string node) {
    v_.node = std::move(node);
    return *this;
  }
  VictimBuilder& Gang(std::string gang) {
    v_.gang = std::move(gang);
    return *this;
  }
  VictimBuilder& Reason(decisions::PreemptionReason reason) {
    v_.reason = reason;
    return *this;
  }
  VictimBuilder& Note(std::string note) {
    v_.note = std::move(note);
    return *this;
  }
  VictimBuilder& Phase(VictimPhase phase, int64_t retry_at_ms = 0) {
    v_.phase = phase;
    v_.retry_at_ms = retry_at_ms;
    return *this;
  }
  VictimBuilder& Attempts(int n) {
    v_.attempts = n;
    return *this;
  }
  RoundVictim Build() const { return v_; }
  operator RoundVictim() const { return v_; }  // NOLINT: builders convert implicitly

 private:
  RoundVictim v_;
};

class RoundBuilder {
 public:
  explicit RoundBuilder(std::string preemptor) {
    name_ = std::move(preemptor);
    r_.preemptor.uid = "uid-" + name_;
    r_.flavor = model::FlavorNames().Intern(kRoundFlavor);
    Team("team-b");
  }
  // More of an existing round.
  explicit RoundBuilder(Round base) : r_(std::move(base)) {
    name_ = r_.preemptor.key.substr(r_.preemptor.key.find('/') + 1);
  }
  RoundBuilder& Team(const std::string& team) {
    r_.preemptor.team = model::TeamNames().Intern(team);
    r_.preemptor.key = "ns-" + team + "/" + name_;
    return *this;
  }
  RoundBuilder& Priority(int32_t priority) {
    r_.preemptor.priority = priority;
    return *this;
  }
  RoundBuilder& Request(const std::string& resource, int64_t amount) {
    r_.preemptor.request.Set(resource, amount);
    return *this;
  }
  RoundBuilder& Gpus(int64_t n) { return Request(kRoundGpu, n); }
  RoundBuilder& Flavor(const std::string& flavor) {
    r_.flavor = model::FlavorNames().Intern(flavor);
    return *this;
  }
  RoundBuilder& Node(std::string node) {
    r_.node = std::move(node);
    return *this;
  }
  RoundBuilder& Victim(RoundVictim v) {
    r_.victims.push_back(std::move(v));
    return *this;
  }
  RoundBuilder& Deadline(int64_t ms) {
    r_.deadline_ms = ms;
    return *this;
  }
  RoundBuilder& Nominated() {
    r_.nominated = true;
    return *this;
  }
  Round Build() const { return r_; }
  operator Round() const { return r_; }  // NOLINT: builders convert implicitly

 private:
  std::string name_;
  Round r_;
};

}  // namespace taskgov::scheduler::actions::testing
