#!/usr/bin/env python3
"""Writes scheduler/decisions/testdata/kueue_preemption_cases.json from Kueue's preemption tables.

Kueue's unit tables TestPreemption (pkg/scheduler/preemption/preemption_test.go) and
TestFairPreemptions (pkg/scheduler/preemption/preemption_fair_test.go) are the reference the
victim chooser is held to (scheduler/decisions/kueue_preemption_test.cc). This script turns a
machine-readable extraction of those tables (cases.json: the Go builder chains already resolved to
values) into the checked-in data file: numbers only, no Go code.

Usage:
  tools/kueue/kueue_cases.py CASES_JSON KUEUE_SOURCES [OUT]

  CASES_JSON     the extraction: {"TestPreemption": [...], "TestFairPreemptions": [...]}, each
                 case with clusterQueues, cohorts, admitted, incoming, targetCQ, assignment, want.
  KUEUE_SOURCES  a Kueue git directory (a bare mirror is enough; files are read at KUEUE_COMMIT)
                 or a directory holding preemption_test.go and preemption_fair_test.go of that
                 commit. Used only for each case's "source": "<file>:<line>" of its table entry.
  OUT            default: scheduler/decisions/testdata/kueue_preemption_cases.json under the
                 repository root (two levels above this script).

What it writes (stdlib only; deterministic output):
  * Quantities in taskgov's canonical integer units, converted exactly and rounded up as
    scheduler/model/quantity.h does: cpu in millicores, every other resource (memory) in base
    units (bytes).
  * Times as milliseconds relative to the harness's `now` ("now+1s" is 1000); null where Kueue
    leaves the timestamp unset (the zero time, before every other).
  * Preemption policies as Kueue spells them without the Go prefix ("LowerPriority", "Any",
    "Never"); "" for a field a Go literal leaves unset; "preemption": null for a ClusterQueue
    without a Preemption (Kueue then uses Never / Never).
  * Admitted workloads: their admission's usage per flavor (what Kueue's cache charges), the
    QuotaReserved time (reserved_ms), creation time, priority (null: 0) and UID as the harness
    sets it (TestFairPreemptions sets UID = name on every admitted workload).
  * The incoming workload's pod sets (per-pod requests, count) and the assignment handed to
    GetTargets (per pod set: count and resource -> [flavor, mode]) verbatim; the C++ test derives
    the usage from them as Kueue's Assignment.TotalRequestsFor does.
  * The expected victims: {workload name: Kueue reason} ("InClusterQueue", ...).
  * A table's shared ClusterQueue list (defaultClusterQueues, baseCQs) once, under
    "cluster_queue_sets"; a case using it names it in "cluster_queue_set" (checked identical).
"""

import json
import os
import re
import subprocess
import sys
from fractions import Fraction

KUEUE_COMMIT = "ff69552e79ad21652c36caa97038382e55625cf7"
TABLES = [
    # (key in cases.json, Go file, test function, fair sharing enabled)
    ("TestPreemption", "pkg/scheduler/preemption/preemption_test.go", "TestPreemption", False),
    ("TestFairPreemptions", "pkg/scheduler/preemption/preemption_fair_test.go",
     "TestFairPreemptions", True),
]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
            "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def canonical(resource, text):
    """A Kubernetes quantity in taskgov's canonical unit for `resource` (exact, rounded up)."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)", text)
    if not m:
        raise ValueError("unsupported quantity %r" % text)
    number, suffix = m.groups()
    value = Fraction(number) * (_BINARY.get(suffix) or _DECIMAL[suffix])
    if resource == "cpu":
        value *= 1000
    return -((-value.numerator) // value.denominator)  # ceiling


def offset_ms(text):
    """"now", "now+1s", "now-15s" -> milliseconds from now; None stays None."""
    if text is None:
        return None
    m = re.fullmatch(r"now(?:([+-])([0-9]+)s)?", text)
    if not m:
        raise ValueError("unsupported time %r" % text)
    sign, seconds = m.groups()
    if sign is None:
        return 0
    return (1 if sign == "+" else -1) * int(seconds) * 1000


def strip(prefix, value):
    if value is None:
        return ""
    if not value.startswith(prefix):
        raise ValueError("%r does not start with %r" % (value, prefix))
    return value[len(prefix):]


def flavor_quotas(resource_groups):
    """Kueue resource groups -> [{"flavor", "resources": [...]}] in the ClusterQueue's order."""
    out = []
    for group in resource_groups:
        for fq in group:
            resources = []
            for r in fq["resources"]:
                line = {"resource": r["resource"],
                        "nominal": canonical(r["resource"], r["nominal"])}
                for key, name in (("borrowingLimit", "borrowing_limit"),
                                  ("lendingLimit", "lending_limit")):
                    if r.get(key) not in (None, ""):
                        line[name] = canonical(r["resource"], r[key])
                unknown = set(r) - {"resource", "nominal", "borrowingLimit", "lendingLimit"}
                if unknown:
                    raise ValueError("unknown quota fields %s" % sorted(unknown))
                resources.append(line)
            out.append({"flavor": fq["name"], "resources": resources})
    return out


def weight(text):
    return None if text is None else float(text)


def cluster_queue(cq):
    p = cq["preemption"]
    preemption = None
    if p is not None:
        unknown = set(p) - {"WithinClusterQueue", "ReclaimWithinCohort", "BorrowWithinCohort"}
        if unknown:
            raise ValueError("unknown preemption fields %s" % sorted(unknown))
        preemption = {
            "withinClusterQueue": strip("PreemptionPolicy", p.get("WithinClusterQueue")),
            "reclaimWithinCohort": strip("PreemptionPolicy", p.get("ReclaimWithinCohort")),
        }
        b = p.get("BorrowWithinCohort")
        if b is not None:
            threshold = b.get("MaxPriorityThreshold")
            preemption["borrowWithinCohort"] = {
                "policy": strip("BorrowWithinCohortPolicy", b.get("Policy")),
                "maxPriorityThreshold": None if threshold is None else int(threshold),
            }
    out = {"name": cq["name"], "cohort": cq["cohort"] or "", "quota": flavor_quotas(cq["rgs"]),
           "preemption": preemption, "weight": weight(cq["fairWeight"])}
    for key, value in cq["extra"]:
        if key != "FlavorFungibility":
            raise ValueError("unknown ClusterQueue field %s" % key)
        out["flavorFungibility"] = value
    return out


def cohort(c):
    return {"name": c["name"], "parent": c.get("parent") or "", "quota": flavor_quotas(c["rgs"]),
            "weight": weight(c["fairWeight"])}


def reserved_ms(w):
    times = [c["LastTransitionTime"] for c in w["conditions"]
             if c["Type"] == "QuotaReserved" and c["Status"] == "True"]
    if len(times) != 1 or len(w["conditions"]) != 1:
        raise ValueError("%s: expected exactly one QuotaReserved=True condition" % w["name"])
    return offset_ms(times[0])


def admitted(w, fair):
    if w["extra"]:
        raise ValueError("%s: unhandled workload fields %s" % (w["name"], w["extra"]))
    usage = {}
    adm = w["admission"]
    for ps in adm["podsets"]:
        for resource, amount in ps["usage"].items():
            flavor = ps["flavors"][resource]
            per = usage.setdefault(flavor, {})
            per[resource] = per.get(resource, 0) + canonical(resource, amount)
    return {"name": w["name"], "uid": w["name"] if fair else (w["uid"] or ""), "cq": adm["cq"],
            "priority": w["priority"], "creation_ms": offset_ms(w["creation"]),
            "reserved_ms": reserved_ms(w), "usage": usage}


def incoming(w):
    if w["extra"]:
        raise ValueError("%s: unhandled workload fields %s" % (w["name"], w["extra"]))
    return {"name": w["name"], "uid": w["uid"] or "", "priority": w["priority"],
            "creation_ms": offset_ms(w["creation"]),
            "pod_sets": [{"name": p["name"], "count": p["count"],
                          "requests": {r: canonical(r, q) for r, q in p["requests"].items()}}
                         for p in w["podsets"]]}


def assignment(pod_sets):
    return [{"pod_set": p["name"], "count": p["count"],
             "flavors": {r: [f["flavor"], f["mode"]] for r, f in p["flavors"].items()}}
            for p in pod_sets]


def read_source(sources, path):
    if os.path.isfile(os.path.join(sources, "HEAD")) or sources.endswith(".git"):
        return subprocess.run(["git", "--git-dir", sources, "show", KUEUE_COMMIT + ":" + path],
                              check=True, capture_output=True, text=True).stdout
    return open(os.path.join(sources, os.path.basename(path)), encoding="utf-8").read()


def entry_lines(text, function):
    """Case name -> line of its entry in the function's `cases := map` literal."""
    lines = text.split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith("func %s(" % function))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("}"))
    out = {}
    for i in range(start, end):
        m = re.fullmatch(r'\t\t"((?:[^"\\]|\\.)*)": \{', lines[i])
        if m:
            name = json.loads('"%s"' % m.group(1))
            if name in out:
                raise ValueError("case %r listed twice in %s" % (name, function))
            out[name] = i + 1
    return out


def convert(cases, sources):
    out = {"kueue_commit": KUEUE_COMMIT,
           "generated_by": "tools/kueue/kueue_cases.py",
           "units": "cpu in millicores, other resources in base units (memory: bytes); "
                    "times in ms from the harness's now, null for Kueue's zero time",
           "tables": []}
    for key, path, function, fair in TABLES:
        lines = entry_lines(read_source(sources, path), function)
        sets = {}
        table_cases = []
        for c in cases[key]:
            queues = [cluster_queue(cq) for cq in c["clusterQueues"]]
            case = {"name": c["name"], "source": "%s:%d" % (path, lines[c["name"]])}
            ref = c["clusterQueuesRef"]
            if ref:
                if sets.setdefault(ref, queues) != queues:
                    raise ValueError("%s: %s differs from its first use" % (c["name"], ref))
                case["cluster_queue_set"] = ref
            else:
                case["cluster_queues"] = queues
            case["cohorts"] = [cohort(x) for x in c["cohorts"]]
            if "flavors" in c:
                case["resource_flavors"] = c["flavors"]
            if "strategies" in c:
                case["strategies"] = c["strategies"]
            case["admitted"] = [admitted(w, fair) for w in c["admitted"]]
            case["incoming"] = incoming(c["incoming"])
            case["target_cq"] = c["targetCQ"]
            case["assignment"] = assignment(c["assignment"])
            case["want"] = c["want"]
            if "wantPreemptedCount" in c and c["wantPreemptedCount"] != len(c["want"]):
                raise ValueError("%s: wantPreempted differs from the victims" % c["name"])
            table_cases.append(case)
        missing = set(lines) - {c["name"] for c in cases[key]}
        if missing:
            raise ValueError("%s: cases not in the extraction: %s" % (key, sorted(missing)))
        out["tables"].append({
            "name": key,
            "source": path,
            "fair_sharing": fair,
            "resource_flavors": ["default", "alpha", "beta"] if not fair else ["default"],
            "cluster_queue_sets": sets,
            "cases": table_cases,
        })
    return out


# Case fields written on one line each; lists of records (ClusterQueues, workloads) one record a
# line.
_INLINE = {"name", "source", "cluster_queue_set", "resource_flavors", "strategies", "incoming",
           "target_cq", "assignment", "want"}
_RECORDS = {"cluster_queues", "cohorts", "admitted"}


def dump(value, indent=0, key=None):
    """JSON with one line per case field, per ClusterQueue and per workload."""
    pad = " " * indent
    if key in _INLINE or not isinstance(value, (dict, list)) or not value:
        return json.dumps(value)
    if key in _RECORDS:
        return "[\n" + ",\n".join(pad + "  " + json.dumps(v) for v in value) + "\n" + pad + "]"
    if isinstance(value, list):
        items = (pad + "  " + dump(v, indent + 2) for v in value)
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    child = lambda k: "cluster_queues" if key == "cluster_queue_sets" else k
    return "{\n" + ",\n".join(pad + "  " + json.dumps(k) + ": " + dump(v, indent + 2, child(k))
                              for k, v in value.items()) + "\n" + pad + "}"


def main(argv):
    if len(argv) not in (3, 4):
        sys.stderr.write(__doc__)
        return 2
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out_path = argv[3] if len(argv) == 4 else os.path.join(
        root, "scheduler/decisions/testdata/kueue_preemption_cases.json")
    with open(argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    data = convert(cases, argv[2])
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(dump(data) + "\n")
    for t in data["tables"]:
        print("%s: %d cases" % (t["name"], len(t["cases"])))
    print("wrote", out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
