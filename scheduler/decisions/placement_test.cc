#include "scheduler/decisions/placement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/testing/builders.h"

namespace taskgov::scheduler::decisions {
namespace {

using model::Labels;
using model::Node;
using model::NodePlacement;
using model::NodeSelectorOperator;
using model::NodeSelectorRequirement;
using model::NodeSelectorTerm;
using model::PlacementOf;
using model::PodPlacementSpec;
using model::Taint;
using model::TaintEffect;
using model::Toleration;
using model::TolerationOperator;
using testing::NodeBuilder;

constexpr TaintEffect kNoSchedule = TaintEffect::kNoSchedule;
constexpr TaintEffect kNoExecute = TaintEffect::kNoExecute;
constexpr TaintEffect kPreferNoSchedule = TaintEffect::kPreferNoSchedule;
constexpr TaintEffect kAllEffects = TaintEffect::kAll;
constexpr TolerationOperator kEqual = TolerationOperator::kEqual;
constexpr TolerationOperator kExists = TolerationOperator::kExists;

Toleration Tol(std::string key, TolerationOperator op, std::string value, TaintEffect effect) {
  return Toleration{std::move(key), std::move(value), op, effect};
}

// ---- tolerations ----

struct TolerationCase {
  const char* name;
  Toleration toleration;
  Taint taint;
  bool tolerates;
};

void PrintTo(const TolerationCase& c, std::ostream* os) { *os << c.name; }

class ToleratesTaintTest : public ::testing::TestWithParam<TolerationCase> {};

TEST_P(ToleratesTaintTest, Table) {
  EXPECT_EQ(ToleratesTaint(GetParam().toleration, GetParam().taint), GetParam().tolerates);
}

const Taint kGpuPresent{"nvidia.com/gpu", "present", kNoSchedule};

INSTANTIATE_TEST_SUITE_P(
    Rules, ToleratesTaintTest,
    ::testing::Values(
        TolerationCase{"EqualKeyValueEffect", Tol("nvidia.com/gpu", kEqual, "present", kNoSchedule),
                       kGpuPresent, true},
        TolerationCase{"EqualOtherValue", Tol("nvidia.com/gpu", kEqual, "absent", kNoSchedule),
                       kGpuPresent, false},
        TolerationCase{"EqualEmptyValueAgainstAValue",
                       Tol("nvidia.com/gpu", kEqual, "", kNoSchedule), kGpuPresent, false},
        TolerationCase{"ExistsIgnoresTheValue", Tol("nvidia.com/gpu", kExists, "", kNoSchedule),
                       kGpuPresent, true},
        TolerationCase{"ExistsWithAnIgnoredValue",
                       Tol("nvidia.com/gpu", kExists, "whatever", kNoSchedule), kGpuPresent, true},
        TolerationCase{"OtherKey", Tol("aws.amazon.com/neuron", kExists, "", kNoSchedule),
                       kGpuPresent, false},
        TolerationCase{"EmptyEffectMatchesEveryEffect",
                       Tol("nvidia.com/gpu", kExists, "", kAllEffects),
                       Taint{"nvidia.com/gpu", "", kNoExecute}, true},
        TolerationCase{"OtherEffect", Tol("nvidia.com/gpu", kExists, "", kNoExecute), kGpuPresent,
                       false},
        TolerationCase{"PreferNoScheduleTolerationOnNoSchedule",
                       Tol("nvidia.com/gpu", kExists, "", kPreferNoSchedule), kGpuPresent, false},
        TolerationCase{"EmptyKeyExistsToleratesEverything", Tol("", kExists, "", kAllEffects),
                       Taint{"node.kubernetes.io/unreachable", "", kNoExecute}, true},
        TolerationCase{"EmptyKeyExistsWithAnEffect", Tol("", kExists, "", kNoExecute), kGpuPresent,
                       false},
        // Invalid (API validation wants Exists with an empty key), but matched as Kubernetes
        // does: every key, then the values compared.
        TolerationCase{"EmptyKeyEqualComparesValues", Tol("", kEqual, "present", kAllEffects),
                       kGpuPresent, true},
        TolerationCase{"EmptyKeyEqualOtherValue", Tol("", kEqual, "", kAllEffects), kGpuPresent,
                       false},
        TolerationCase{"OtherOperatorToleratesNothing",
                       Tol("nvidia.com/gpu", TolerationOperator::kOther, "present", kAllEffects),
                       kGpuPresent, false},
        TolerationCase{"UnknownEffectToleratesNothingThatBlocks",
                       Tol("nvidia.com/gpu", kExists, "", TaintEffect::kOther), kGpuPresent,
                       false}),
    [](const ::testing::TestParamInfo<TolerationCase>& info) { return info.param.name; });

struct UntoleratedCase {
  const char* name;
  std::vector<Taint> taints;
  std::vector<Toleration> tolerations;
  const char* untolerated;  // FormatTaint of the taint found, "" for none
};

void PrintTo(const UntoleratedCase& c, std::ostream* os) { *os << c.name; }

class FindUntoleratedTaintTest : public ::testing::TestWithParam<UntoleratedCase> {};

TEST_P(FindUntoleratedTaintTest, Table) {
  const Taint* found = FindUntoleratedTaint(GetParam().taints, GetParam().tolerations);
  EXPECT_EQ(found == nullptr ? "" : FormatTaint(*found), GetParam().untolerated);
}

INSTANTIATE_TEST_SUITE_P(
    Rules, FindUntoleratedTaintTest,
    ::testing::Values(
        UntoleratedCase{"NoTaints", {}, {}, ""},
        UntoleratedCase{"NoScheduleBlocks", {kGpuPresent}, {}, "nvidia.com/gpu=present:NoSchedule"},
        UntoleratedCase{"NoExecuteBlocks",
                        {Taint{"aws.amazon.com/neuron", "", kNoExecute}},
                        {},
                        "aws.amazon.com/neuron:NoExecute"},
        UntoleratedCase{
            "PreferNoScheduleDoesNotBlock", {Taint{"spot", "true", kPreferNoSchedule}}, {}, ""},
        UntoleratedCase{"UnknownEffectDoesNotBlock", {Taint{"x", "", TaintEffect::kOther}}, {}, ""},
        UntoleratedCase{"EveryBlockingTaintNeedsAToleration",
                        {kGpuPresent, Taint{"aws.amazon.com/neuron", "", kNoSchedule}},
                        {Tol("nvidia.com/gpu", kExists, "", kAllEffects)},
                        "aws.amazon.com/neuron:NoSchedule"},
        UntoleratedCase{"AnyTolerationWill",
                        {kGpuPresent},
                        {Tol("other", kExists, "", kAllEffects),
                         Tol("nvidia.com/gpu", kEqual, "present", kNoSchedule)},
                        ""},
        UntoleratedCase{"TolerateAll",
                        {kGpuPresent, Taint{"dedicated", "ml", kNoExecute}},
                        {Tol("", kExists, "", kAllEffects)},
                        ""}),
    [](const ::testing::TestParamInfo<UntoleratedCase>& info) { return info.param.name; });

// ---- nodeSelector ----

TEST(MatchesNodeSelectorTest, EveryLabelMustMatch) {
  const Labels node{{"node.kubernetes.io/instance-type", "ml.p5.48xlarge"},
                    {"zone", "us-west-2a"},
                    {"empty", ""}};
  EXPECT_TRUE(MatchesNodeSelector({}, node));
  EXPECT_TRUE(MatchesNodeSelector({{"zone", "us-west-2a"}}, node));
  EXPECT_TRUE(MatchesNodeSelector(
      {{"zone", "us-west-2a"}, {"node.kubernetes.io/instance-type", "ml.p5.48xlarge"}}, node));
  EXPECT_FALSE(MatchesNodeSelector({{"zone", "us-west-2a"}, {"team", "a"}}, node));
  EXPECT_FALSE(MatchesNodeSelector({{"zone", "us-west-2b"}}, node));
  EXPECT_TRUE(MatchesNodeSelector({{"empty", ""}}, node));
  EXPECT_FALSE(MatchesNodeSelector({{"absent", ""}}, node));  // "" still needs the label
  EXPECT_FALSE(MatchesNodeSelector({{"zone", "us-west-2a"}}, {}));
}

// ---- label requirements ----

struct RequirementCase {
  const char* name;
  NodeSelectorRequirement requirement;
  bool matches;
};

void PrintTo(const RequirementCase& c, std::ostream* os) { *os << c.name; }

class LabelRequirementTest : public ::testing::TestWithParam<RequirementCase> {};

// The node every requirement is matched against.
const Labels kNodeLabels{{"node.kubernetes.io/instance-type", "ml.p5.48xlarge"},
                         {"gpus", "8"},
                         {"tier", "gold"},
                         {"empty", ""},
                         {"huge", "99999999999999999999"}};

TEST_P(LabelRequirementTest, Table) {
  EXPECT_EQ(MatchesLabelRequirement(GetParam().requirement, kNodeLabels), GetParam().matches);
}

NodeSelectorRequirement Req(std::string key, NodeSelectorOperator op,
                            std::vector<std::string> values = {}) {
  return NodeSelectorRequirement{std::move(key), op, std::move(values)};
}

constexpr NodeSelectorOperator kIn = NodeSelectorOperator::kIn;
constexpr NodeSelectorOperator kNotIn = NodeSelectorOperator::kNotIn;
constexpr NodeSelectorOperator kExistsOp = NodeSelectorOperator::kExists;
constexpr NodeSelectorOperator kDoesNotExist = NodeSelectorOperator::kDoesNotExist;
constexpr NodeSelectorOperator kGt = NodeSelectorOperator::kGt;
constexpr NodeSelectorOperator kLt = NodeSelectorOperator::kLt;

INSTANTIATE_TEST_SUITE_P(
    Rules, LabelRequirementTest,
    ::testing::Values(
        RequirementCase{
            "InOneOf",
            Req("node.kubernetes.io/instance-type", kIn, {"ml.p4d.24xlarge", "ml.p5.48xlarge"}),
            true},
        RequirementCase{"InNoneOf", Req("tier", kIn, {"silver"}), false},
        RequirementCase{"InAbsentLabel", Req("absent", kIn, {"x"}), false},
        RequirementCase{"InEmptyValue", Req("empty", kIn, {""}), true},
        RequirementCase{"NotInOther", Req("tier", kNotIn, {"silver"}), true},
        RequirementCase{"NotInListed", Req("tier", kNotIn, {"silver", "gold"}), false},
        RequirementCase{"NotInAbsentLabel", Req("absent", kNotIn, {"x"}), true},
        RequirementCase{"Exists", Req("tier", kExistsOp), true},
        RequirementCase{"ExistsEmptyValue", Req("empty", kExistsOp), true},
        RequirementCase{"ExistsAbsent", Req("absent", kExistsOp), false},
        RequirementCase{"DoesNotExist", Req("absent", kDoesNotExist), true},
        RequirementCase{"DoesNotExistPresent", Req("tier", kDoesNotExist), false},
        RequirementCase{"GtGreater", Req("gpus", kGt, {"4"}), true},
        RequirementCase{"GtEqual", Req("gpus", kGt, {"8"}), false},
        RequirementCase{"LtLess", Req("gpus", kLt, {"16"}), true},
        RequirementCase{"LtEqual", Req("gpus", kLt, {"8"}), false},
        RequirementCase{"GtAbsentLabel", Req("absent", kGt, {"0"}), false},
        RequirementCase{"GtNonIntegerLabel", Req("tier", kGt, {"0"}), false},
        RequirementCase{"GtLabelOutOfRange", Req("huge", kGt, {"0"}), false},
        RequirementCase{"GtLeadingZeros", Req("gpus", kGt, {"007"}), true},
        // Unparsable requirements: Kubernetes drops the whole term.
        RequirementCase{"GtTwoValues", Req("gpus", kGt, {"4", "5"}), false},
        RequirementCase{"GtNoValue", Req("gpus", kGt), false},
        RequirementCase{"GtNotAnInteger", Req("gpus", kGt, {"four"}), false},
        RequirementCase{"GtNegativeIsNoLabelValue", Req("gpus", kGt, {"-1"}), false},
        RequirementCase{"GtPlusIsNoLabelValue", Req("gpus", kGt, {"+1"}), false},
        RequirementCase{"InWithoutValues", Req("tier", kIn), false},
        RequirementCase{"NotInWithoutValues", Req("absent", kNotIn), false},
        RequirementCase{"ExistsWithValues", Req("tier", kExistsOp, {"gold"}), false},
        RequirementCase{"DoesNotExistWithValues", Req("absent", kDoesNotExist, {"x"}), false},
        RequirementCase{"UnknownOperator", Req("tier", NodeSelectorOperator::kOther, {"gold"}),
                        false},
        RequirementCase{"KeyNotAQualifiedName", Req("bad key", kNotIn, {"x"}), false},
        RequirementCase{"KeyUpperCasePrefix", Req("Example.com/tier", kNotIn, {"x"}), false},
        RequirementCase{"KeyEmptyPrefix", Req("/tier", kNotIn, {"x"}), false},
        RequirementCase{"KeyTwoSlashes", Req("a/b/c", kNotIn, {"x"}), false},
        RequirementCase{"KeyNameTooLong", Req(std::string(64, 'a'), kNotIn, {"x"}), false},
        RequirementCase{"KeyName63", Req(std::string(63, 'a'), kNotIn, {"x"}), true},
        RequirementCase{"ValueNotALabelValue", Req("tier", kNotIn, {"not gold"}), false},
        RequirementCase{"ValueTooLong", Req("tier", kNotIn, {std::string(64, 'x')}), false}),
    [](const ::testing::TestParamInfo<RequirementCase>& info) { return info.param.name; });

// ---- node selector terms ----

NodePlacement P5Node(std::string name = "p5-0") {
  return PlacementOf(NodeBuilder(std::move(name))
                         .InstanceType("ml.p5.48xlarge")
                         .Label("tier", "gold")
                         .Label("gpus", "8"));
}

struct TermsCase {
  const char* name;
  std::vector<NodeSelectorTerm> terms;
  bool matches;  // against P5Node("p5-0")
};

void PrintTo(const TermsCase& c, std::ostream* os) { *os << c.name; }

class NodeSelectorTermsTest : public ::testing::TestWithParam<TermsCase> {};

TEST_P(NodeSelectorTermsTest, Table) {
  EXPECT_EQ(MatchesNodeSelectorTerms(GetParam().terms, P5Node()), GetParam().matches);
}

NodeSelectorTerm Expr(std::vector<NodeSelectorRequirement> e) { return NodeSelectorTerm{e, {}}; }
NodeSelectorTerm Fields(std::vector<NodeSelectorRequirement> f) { return NodeSelectorTerm{{}, f}; }

INSTANTIATE_TEST_SUITE_P(
    Rules, NodeSelectorTermsTest,
    ::testing::Values(
        TermsCase{"NoTermsMatchNothing", {}, false},
        TermsCase{"AnEmptyTermMatchesNothing", {NodeSelectorTerm{}}, false},
        TermsCase{"OneTerm", {Expr({Req("tier", kIn, {"gold"})})}, true},
        TermsCase{"RequirementsAreAnded",
                  {Expr({Req("tier", kIn, {"gold"}), Req("gpus", kGt, {"8"})})},
                  false},
        TermsCase{"TermsAreOred",
                  {Expr({Req("tier", kIn, {"silver"})}), Expr({Req("gpus", kLt, {"9"})})},
                  true},
        TermsCase{"EmptyTermBesideAMatchingOne",
                  {NodeSelectorTerm{}, Expr({Req("tier", kExistsOp)})},
                  true},
        TermsCase{"AnUnparsableRequirementSinksItsTerm",
                  {Expr({Req("tier", kIn, {"gold"}), Req("gpus", kGt, {"x"})})},
                  false},
        TermsCase{"AnUnparsableTermLeavesTheOthers",
                  {Expr({Req("gpus", kGt, {"x"})}), Expr({Req("tier", kIn, {"gold"})})},
                  true},
        TermsCase{"FieldNameIn", {Fields({Req("metadata.name", kIn, {"p5-0"})})}, true},
        TermsCase{"FieldNameInOther", {Fields({Req("metadata.name", kIn, {"p5-1"})})}, false},
        TermsCase{"FieldNameNotIn", {Fields({Req("metadata.name", kNotIn, {"p5-0"})})}, false},
        TermsCase{"FieldNameNotInOther", {Fields({Req("metadata.name", kNotIn, {"p5-1"})})}, true},
        // Fields other than metadata.name read as "".
        TermsCase{"OtherFieldReadsEmpty", {Fields({Req("spec.unschedulable", kIn, {""})})}, true},
        TermsCase{"OtherFieldIn", {Fields({Req("spec.unschedulable", kIn, {"true"})})}, false},
        TermsCase{
            "FieldWithTwoValues", {Fields({Req("metadata.name", kIn, {"p5-0", "p5-1"})})}, false},
        TermsCase{"FieldExists", {Fields({Req("metadata.name", kExistsOp)})}, false},
        TermsCase{
            "LabelsAndFieldsAnded",
            {NodeSelectorTerm{{Req("tier", kIn, {"gold"})}, {Req("metadata.name", kIn, {"p5-1"})}}},
            false},
        TermsCase{
            "LabelsAndFieldsBoth",
            {NodeSelectorTerm{{Req("tier", kIn, {"gold"})}, {Req("metadata.name", kIn, {"p5-0"})}}},
            true}),
    [](const ::testing::TestParamInfo<TermsCase>& info) { return info.param.name; });

TEST(NodeSelectorTermsTest, ANodeWithoutANameHasNoFieldsToCheck) {
  NodePlacement nameless = P5Node("");
  EXPECT_TRUE(MatchesNodeSelectorTerms({Fields({Req("metadata.name", kIn, {"p5-0"})})}, nameless));
  // ...but its labels are still checked, and unparsable field requirements still sink the term.
  EXPECT_FALSE(MatchesNodeSelectorTerms(
      {NodeSelectorTerm{{Req("tier", kIn, {"silver"})}, {Req("metadata.name", kIn, {"x"})}}},
      nameless));
  EXPECT_FALSE(MatchesNodeSelectorTerms({Fields({Req("metadata.name", kExistsOp)})}, nameless));
}

// ---- the whole judgement ----

TEST(PlacementOfTest, KeepsOnlyTaintsThatKeepPodsOff) {
  Node node = NodeBuilder("n").InstanceType("ml.p5.48xlarge");
  node.taints = {kGpuPresent, Taint{"spot", "", kPreferNoSchedule},
                 Taint{"node.kubernetes.io/unreachable", "", kNoExecute}};
  NodePlacement p = PlacementOf(node);
  EXPECT_EQ(p.name, "n");
  EXPECT_EQ(p.labels, node.labels);
  ASSERT_EQ(p.taints.size(), 2u);
  EXPECT_EQ(FormatTaint(p.taints[0]), "nvidia.com/gpu=present:NoSchedule");
  EXPECT_EQ(FormatTaint(p.taints[1]), "node.kubernetes.io/unreachable:NoExecute");
}

struct JudgeCase {
  const char* name;
  Labels node_selector;
  std::vector<Toleration> tolerations;
  std::optional<std::vector<NodeSelectorTerm>> affinity;
  PlacementVerdict verdict;
};

void PrintTo(const JudgeCase& c, std::ostream* os) { *os << c.name; }

class JudgeTest : public ::testing::TestWithParam<JudgeCase> {};

// A p5 node tainted nvidia.com/gpu=present:NoSchedule.
TEST_P(JudgeTest, Table) {
  Node node = NodeBuilder("p5-0").InstanceType("ml.p5.48xlarge").Label("tier", "gold");
  node.taints = {kGpuPresent};
  const NodePlacement placement = PlacementOf(node);
  PodPlacementSpec spec{GetParam().tolerations, GetParam().affinity};
  const Taint* taint = nullptr;
  EXPECT_EQ(Judge(GetParam().node_selector, &spec, placement, &taint), GetParam().verdict);
  EXPECT_EQ(taint != nullptr, GetParam().verdict == PlacementVerdict::kUntoleratedTaint);
}

const Toleration kTolerateGpu = Tol("nvidia.com/gpu", kExists, "", kNoSchedule);

INSTANTIATE_TEST_SUITE_P(
    Rules, JudgeTest,
    ::testing::Values(
        JudgeCase{"UntoleratedTaint", {}, {}, std::nullopt, PlacementVerdict::kUntoleratedTaint},
        JudgeCase{"Tolerated", {}, {kTolerateGpu}, std::nullopt, PlacementVerdict::kAccepted},
        JudgeCase{"TaintsComeFirst",
                  {{"tier", "silver"}},
                  {},
                  std::vector<NodeSelectorTerm>{},
                  PlacementVerdict::kUntoleratedTaint},
        JudgeCase{"SelectorBeforeAffinity",
                  {{"tier", "silver"}},
                  {kTolerateGpu},
                  std::vector<NodeSelectorTerm>{},
                  PlacementVerdict::kNodeSelector},
        JudgeCase{"SelectorMatches",
                  {{"tier", "gold"}},
                  {kTolerateGpu},
                  std::nullopt,
                  PlacementVerdict::kAccepted},
        JudgeCase{"RequiredAffinityWithoutTerms",
                  {},
                  {kTolerateGpu},
                  std::vector<NodeSelectorTerm>{},
                  PlacementVerdict::kNodeAffinity},
        JudgeCase{"AffinityElsewhere",
                  {},
                  {kTolerateGpu},
                  std::vector<NodeSelectorTerm>{Fields({Req("metadata.name", kIn, {"p5-1"})})},
                  PlacementVerdict::kNodeAffinity},
        JudgeCase{"AffinityHere",
                  {{"tier", "gold"}},
                  {kTolerateGpu},
                  std::vector<NodeSelectorTerm>{Fields({Req("metadata.name", kIn, {"p5-0"})})},
                  PlacementVerdict::kAccepted}),
    [](const ::testing::TestParamInfo<JudgeCase>& info) { return info.param.name; });

TEST(JudgeTest, WithoutASpecOnlyTaintsAndTheSelectorCount) {
  NodePlacement plain = P5Node();
  EXPECT_EQ(Judge({}, nullptr, plain), PlacementVerdict::kAccepted);
  EXPECT_EQ(Judge({{"tier", "silver"}}, nullptr, plain), PlacementVerdict::kNodeSelector);
  plain.taints = {Taint{"aws.amazon.com/neuron", "", kNoSchedule}};
  EXPECT_EQ(Judge({}, nullptr, plain), PlacementVerdict::kUntoleratedTaint);
}

TEST(NodeEligibilityTest, TalliesAndExplains) {
  std::vector<std::shared_ptr<const NodePlacement>> nodes;
  for (int i = 0; i < 4; ++i) {
    Node node = NodeBuilder("p5-" + std::to_string(i)).InstanceType("ml.p5.48xlarge");
    if (i < 2) node.taints = {kGpuPresent};
    if (i == 2) node.labels["tier"] = "silver";
    if (i == 3) node.labels["tier"] = "gold";
    nodes.push_back(std::make_shared<const NodePlacement>(PlacementOf(node)));
  }
  NodeEligibility e;
  e.Compute({{"tier", "gold"}}, nullptr, nodes);
  EXPECT_EQ(e.accepts, (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(e.accepted, 1u);

  // Pinned by affinity to p5-2, which its selector refuses: no node at all.
  PodPlacementSpec spec;
  spec.required_node_affinity =
      std::vector<NodeSelectorTerm>{Fields({Req("metadata.name", kIn, {"p5-2"})})};
  e.Compute({{"tier", "gold"}}, &spec, nodes);
  EXPECT_EQ(e.accepts, (std::vector<uint8_t>{0, 0, 0, 0}));
  EXPECT_EQ(e.accepted, 0u);
  EXPECT_EQ(e.untolerated_taint, 2u);
  EXPECT_EQ(e.node_selector_mismatch, 1u);
  EXPECT_EQ(e.node_affinity_mismatch, 1u);
  EXPECT_EQ(e.Explain("ml.p5.48xlarge", "team-a/job-0"),
            "no ml.p5.48xlarge node accepts team-a/job-0: 2 nodes with an untolerated taint "
            "(nvidia.com/gpu=present:NoSchedule), 1 node not matching its nodeSelector, 1 node "
            "not matching its required node affinity");

  // Tolerating the taint opens p5-0 and p5-1 to a pod without a selector; a null entry (a node
  // without placement facts) is accepted.
  spec.tolerations = {kTolerateGpu};
  spec.required_node_affinity.reset();
  nodes.push_back(nullptr);
  e.Compute({}, &spec, nodes);
  EXPECT_EQ(e.accepts, (std::vector<uint8_t>{1, 1, 1, 1, 1}));
  EXPECT_EQ(e.untolerated_taint, 0u);
  EXPECT_EQ(e.first_taint, "");
}

}  // namespace
}  // namespace taskgov::scheduler::decisions
