#include "scheduler/decisions/placement.h"

#include <algorithm>
#include <limits>

#include "scheduler/common/k8s_names.h"

namespace taskgov::scheduler::decisions {

using model::KeepsPodsOff;
using model::Labels;
using model::NodePlacement;
using model::NodeSelectorOperator;
using model::NodeSelectorRequirement;
using model::NodeSelectorTerm;
using model::PodPlacementSpec;
using model::Taint;
using model::TaintEffect;
using model::Toleration;
using model::TolerationOperator;

namespace {

const std::vector<Toleration> kNoTolerations;

// Go's strconv.ParseInt(text, 10, 64): an optional sign, then decimal digits, in range.
bool ParseInt64(std::string_view text, int64_t* out) {
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return false;
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  uint64_t magnitude = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (magnitude > (limit - digit) / 10) return false;
    magnitude = magnitude * 10 + digit;
  }
  *out = !negative                        ? static_cast<int64_t>(magnitude)
         : magnitude == uint64_t{1} << 63 ? std::numeric_limits<int64_t>::min()
                                          : -static_cast<int64_t>(magnitude);
  return true;
}

bool Contains(const std::vector<std::string>& values, std::string_view value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// labels.NewRequirement's checks.
bool ParsableLabelRequirement(const NodeSelectorRequirement& r) {
  if (!common::IsQualifiedName(r.key)) return false;
  switch (r.op) {
    case NodeSelectorOperator::kIn:
    case NodeSelectorOperator::kNotIn:
      if (r.values.empty()) return false;
      break;
    case NodeSelectorOperator::kExists:
    case NodeSelectorOperator::kDoesNotExist:
      if (!r.values.empty()) return false;
      break;
    case NodeSelectorOperator::kGt:
    case NodeSelectorOperator::kLt: {
      int64_t unused = 0;
      if (r.values.size() != 1 || !ParseInt64(r.values[0], &unused)) return false;
      break;
    }
    case NodeSelectorOperator::kOther:
      return false;
  }
  return std::all_of(r.values.begin(), r.values.end(), common::IsLabelValue);
}

// labels.Requirement.Matches, for a parsable requirement.
bool LabelRequirementHolds(const NodeSelectorRequirement& r, const Labels& labels) {
  const auto it = labels.find(r.key);
  const bool present = it != labels.end();
  switch (r.op) {
    case NodeSelectorOperator::kIn:
      return present && Contains(r.values, it->second);
    case NodeSelectorOperator::kNotIn:
      return !present || !Contains(r.values, it->second);
    case NodeSelectorOperator::kExists:
      return present;
    case NodeSelectorOperator::kDoesNotExist:
      return !present;
    case NodeSelectorOperator::kGt:
    case NodeSelectorOperator::kLt: {
      int64_t have = 0;
      int64_t want = 0;
      if (!present || !ParseInt64(it->second, &have) || !ParseInt64(r.values[0], &want)) {
        return false;
      }
      return r.op == NodeSelectorOperator::kGt ? have > want : have < want;
    }
    case NodeSelectorOperator::kOther:
      return false;
  }
  return false;
}

// nodeSelectorRequirementsAsFieldSelector's checks.
bool ParsableFieldRequirement(const NodeSelectorRequirement& r) {
  return (r.op == NodeSelectorOperator::kIn || r.op == NodeSelectorOperator::kNotIn) &&
         r.values.size() == 1;
}

// A term that can match some node: not empty, and parsable throughout.
bool UsableTerm(const NodeSelectorTerm& term) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;
  return std::all_of(term.match_expressions.begin(), term.match_expressions.end(),
                     ParsableLabelRequirement) &&
         std::all_of(term.match_fields.begin(), term.match_fields.end(), ParsableFieldRequirement);
}

// nodeSelectorTerm.match, for a usable term. The only node field is metadata.name; a node
// without a name has no fields, and then field requirements are not checked.
bool TermHolds(const NodeSelectorTerm& term, const NodePlacement& node) {
  for (const NodeSelectorRequirement& r : term.match_expressions) {
    if (!LabelRequirementHolds(r, node.labels)) return false;
  }
  if (node.name.empty()) return true;
  for (const NodeSelectorRequirement& r : term.match_fields) {
    const std::string_view field = r.key == "metadata.name" ? std::string_view(node.name) : "";
    if ((field == r.values[0]) != (r.op == NodeSelectorOperator::kIn)) return false;
  }
  return true;
}

// `usable` is parallel to `terms` (UsableTerm of each).
bool AnyTermHolds(const std::vector<NodeSelectorTerm>& terms, const std::vector<uint8_t>& usable,
                  const NodePlacement& node) {
  for (size_t i = 0; i < terms.size(); ++i) {
    if (usable[i] && TermHolds(terms[i], node)) return true;
  }
  return false;
}

void UsableTerms(const std::vector<NodeSelectorTerm>& terms, std::vector<uint8_t>* usable) {
  usable->resize(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) (*usable)[i] = UsableTerm(terms[i]) ? 1 : 0;
}

// Judge, with the affinity's terms already checked for use (`terms` null: no affinity).
PlacementVerdict JudgeWith(const Labels& node_selector, const std::vector<Toleration>& tolerations,
                           const std::vector<NodeSelectorTerm>* terms,
                           const std::vector<uint8_t>& usable, const NodePlacement& node,
                           const Taint** taint) {
  if (const Taint* t = FindUntoleratedTaint(node.taints, tolerations); t != nullptr) {
    if (taint != nullptr) *taint = t;
    return PlacementVerdict::kUntoleratedTaint;
  }
  if (!MatchesNodeSelector(node_selector, node.labels)) return PlacementVerdict::kNodeSelector;
  if (terms != nullptr && !AnyTermHolds(*terms, usable, node)) {
    return PlacementVerdict::kNodeAffinity;
  }
  return PlacementVerdict::kAccepted;
}

std::string_view EffectName(TaintEffect effect) {
  switch (effect) {
    case TaintEffect::kAll:
      return "";
    case TaintEffect::kNoSchedule:
      return "NoSchedule";
    case TaintEffect::kPreferNoSchedule:
      return "PreferNoSchedule";
    case TaintEffect::kNoExecute:
      return "NoExecute";
    case TaintEffect::kOther:
      return "(unknown effect)";
  }
  return "";
}

std::string Nodes(size_t n) { return std::to_string(n) + (n == 1 ? " node" : " nodes"); }

}  // namespace

bool ToleratesTaint(const Toleration& toleration, const Taint& taint) {
  if (toleration.effect != TaintEffect::kAll && toleration.effect != taint.effect) return false;
  if (!toleration.key.empty() && toleration.key != taint.key) return false;
  switch (toleration.op) {
    case TolerationOperator::kEqual:
      return toleration.value == taint.value;
    case TolerationOperator::kExists:
      return true;
    case TolerationOperator::kOther:
      return false;
  }
  return false;
}

const Taint* FindUntoleratedTaint(const std::vector<Taint>& taints,
                                  const std::vector<Toleration>& tolerations) {
  for (const Taint& taint : taints) {
    if (!KeepsPodsOff(taint)) continue;
    const bool tolerated =
        std::any_of(tolerations.begin(), tolerations.end(),
                    [&](const Toleration& t) { return ToleratesTaint(t, taint); });
    if (!tolerated) return &taint;
  }
  return nullptr;
}

bool MatchesNodeSelector(const Labels& node_selector, const Labels& labels) {
  for (const auto& [key, value] : node_selector) {
    const auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return true;
}

bool MatchesLabelRequirement(const NodeSelectorRequirement& requirement, const Labels& labels) {
  return ParsableLabelRequirement(requirement) && LabelRequirementHolds(requirement, labels);
}

bool MatchesNodeSelectorTerms(const std::vector<NodeSelectorTerm>& terms,
                              const NodePlacement& node) {
  return std::any_of(terms.begin(), terms.end(), [&](const NodeSelectorTerm& term) {
    return UsableTerm(term) && TermHolds(term, node);
  });
}

std::string FormatTaint(const Taint& taint) {
  std::string out = taint.key;
  if (!taint.value.empty()) out += "=" + taint.value;
  out += ":";
  out += EffectName(taint.effect);
  return out;
}

PlacementVerdict Judge(const Labels& node_selector, const PodPlacementSpec* spec,
                       const NodePlacement& node, const Taint** taint) {
  const std::vector<NodeSelectorTerm>* terms =
      spec != nullptr && spec->required_node_affinity ? &*spec->required_node_affinity : nullptr;
  std::vector<uint8_t> usable;
  if (terms != nullptr) UsableTerms(*terms, &usable);
  return JudgeWith(node_selector, spec != nullptr ? spec->tolerations : kNoTolerations, terms,
                   usable, node, taint);
}

void NodeEligibility::Compute(const Labels& node_selector, const PodPlacementSpec* spec,
                              const std::vector<std::shared_ptr<const NodePlacement>>& nodes) {
  Compute(node_selector, spec, nodes.size(), [&](size_t i) { return nodes[i].get(); });
}

void NodeEligibility::Compute(const Labels& node_selector, const PodPlacementSpec* spec,
                              size_t count,
                              const std::function<const NodePlacement*(size_t)>& node) {
  accepts.assign(count, 0);
  accepted = untolerated_taint = node_selector_mismatch = node_affinity_mismatch = 0;
  first_taint.clear();
  const std::vector<NodeSelectorTerm>* terms =
      spec != nullptr && spec->required_node_affinity ? &*spec->required_node_affinity : nullptr;
  std::vector<uint8_t> usable;
  if (terms != nullptr) UsableTerms(*terms, &usable);
  const std::vector<Toleration>& tolerations = spec != nullptr ? spec->tolerations : kNoTolerations;
  for (size_t i = 0; i < count; ++i) {
    const Taint* taint = nullptr;
    const NodePlacement* facts = node(i);
    const PlacementVerdict verdict =
        facts == nullptr ? PlacementVerdict::kAccepted
                         : JudgeWith(node_selector, tolerations, terms, usable, *facts, &taint);
    switch (verdict) {
      case PlacementVerdict::kAccepted:
        accepts[i] = 1;
        ++accepted;
        break;
      case PlacementVerdict::kUntoleratedTaint:
        if (untolerated_taint++ == 0) first_taint = FormatTaint(*taint);
        break;
      case PlacementVerdict::kNodeSelector:
        ++node_selector_mismatch;
        break;
      case PlacementVerdict::kNodeAffinity:
        ++node_affinity_mismatch;
        break;
    }
  }
}

std::string NodeEligibility::Explain(std::string_view flavor, std::string_view pod_key) const {
  std::string out = "no " + std::string(flavor) + " node accepts " + std::string(pod_key) + ":";
  const char* sep = " ";
  if (untolerated_taint > 0) {
    out += sep + Nodes(untolerated_taint) + " with an untolerated taint (" + first_taint + ")";
    sep = ", ";
  }
  if (node_selector_mismatch > 0) {
    out += sep + Nodes(node_selector_mismatch) + " not matching its nodeSelector";
    sep = ", ";
  }
  if (node_affinity_mismatch > 0) {
    out += sep + Nodes(node_affinity_mismatch) + " not matching its required node affinity";
  }
  return out;
}

}  // namespace taskgov::scheduler::decisions
