#!/usr/bin/env python3
"""Extracts Kueue's TestPreemption / TestFairPreemptions tables to JSON (cases.json).

Step 1 of 2: the Go table literals are parsed (goparse.py) and their builder chains evaluated
(evalcases.py) into plain values; kueue_cases.py (step 2) turns that into the checked-in
scheduler/decisions/testdata/kueue_preemption_cases.json. Written for this project; reads
Kueue's test sources as data and contains none of their code.
"""
import sys, json, re
import os; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from goparse import unparse
from evalcases import *


def parse_assignment(e, env):
    # singlePodSetAssignment(ResourceAssignment{res: &FlavorAssignment{Name, Mode}})
    def ra(lit):
        out = {}
        for el in lit[2]:
            res = const(el[1])
            val = el[2]
            if val[0] == 'un':
                val = val[2]
            d = lit_to_py(val, env)
            out[res] = {'flavor': d['Name'], 'mode': d['Mode']}
        return out
    if e[0] == 'call' and e[1] == ('id', 'singlePodSetAssignment'):
        return [{'name': 'main', 'count': 1, 'flavors': ra(e[2][0])}]
    assert e[0] == 'lit', unparse(e)
    out = []
    for el in e[2]:
        if el[0] == 'kv' and el[1][1] == 'PodSets':
            for ps in el[2][2]:
                d = {'name': None, 'count': 0, 'flavors': {}}
                for f in ps[1][2]:
                    k = f[1][1]
                    if k == 'Name':
                        d['name'] = f[2][1]
                    elif k == 'Count':
                        d['count'] = int(f[2][1])
                    elif k == 'Flavors':
                        d['flavors'] = ra(f[2])
                    else:
                        raise ValueError(k)
                out.append(d)
    return out


def targets_from_sets(e):
    # sets.New(targetKeyReason("/b1", kueue.InCohortReclamationReason), ...)
    if e[0] == 'id' and e[1] == 'nil':
        return {}
    res = {}
    assert e[0] == 'call', e
    args = e[2]
    for a in args:
        name = a[2][0][1].lstrip('/')
        reason = const(a[2][1]).replace('Reason', '')
        res[name] = reason
    return res


def extract(path, func):
    src = open(path).read()
    fsrc = src[src.index('func %s(' % func):]
    env = parse_func_env(src, 'func %s(' % func, 'cases := map')
    cases = parse_cases(fsrc, 'cases := map', env)
    out = []
    for name, f in cases:
        c = {'name': name}
        def lst(e):
            if e[0] == 'id':
                return env[e[1]]
            return [evaluate(x[1], env) for x in e[2]]
        c['clusterQueuesRef'] = f['clusterQueues'][1] if f.get('clusterQueues', ('x',))[0] == 'id' else None
        c['clusterQueues'] = lst(f['clusterQueues']) if 'clusterQueues' in f else []
        c['cohorts'] = lst(f['cohorts']) if 'cohorts' in f else []
        c['admitted'] = lst(f['admitted']) if 'admitted' in f else []
        c['incoming'] = evaluate(f['incoming'], env)
        c['targetCQ'] = f['targetCQ'][1]
        if 'assignment' in f:
            c['assignment'] = parse_assignment(f['assignment'], env)
        else:
            flv = f['assignmentFlavor'][1] if 'assignmentFlavor' in f else 'default'
            c['assignment'] = [{'name': 'main', 'count': 1, 'flavors': {'cpu': {'flavor': flv, 'mode': 'Preempt'}}}]
        if 'strategies' in f:
            c['strategies'] = [const(x[1]) for x in f['strategies'][2]]
        if 'flavors' in f:
            c['flavors'] = [x['name'] for x in lst(f['flavors'])]
        if 'wantWorkloads' in f:
            want = {}
            for w in lst(f['wantWorkloads']):
                for cnd in w['conditions']:
                    if cnd.get('Type') == 'WorkloadPreempted':
                        want[w['name']] = cnd['Reason']
            c['want'] = want
            c['wantMessages'] = {w['name']: [cnd['Message'] for cnd in w['conditions'] if cnd.get('Type') == 'WorkloadPreempted'][0]
                                 for w in lst(f['wantWorkloads']) if any(cnd.get('Type') == 'WorkloadPreempted' for cnd in w['conditions'])}
            c['wantPreemptedCount'] = int(f['wantPreempted'][1]) if 'wantPreempted' in f else 0
        else:
            c['want'] = targets_from_sets(f['wantPreempted']) if 'wantPreempted' in f else {}
        out.append(c)
    return out


if __name__ == '__main__':
    # extract_json.py GO_DIR OUT_JSON: GO_DIR holds Kueue's pkg/scheduler/preemption/
    # preemption_test.go and preemption_fair_test.go (see kueue_cases.py for the commit).
    if len(sys.argv) != 3:
        sys.exit('usage: extract_json.py GO_DIR OUT_JSON')
    go_dir, out_json = sys.argv[1], sys.argv[2]
    res = {
        'TestPreemption': extract(os.path.join(go_dir, 'preemption_test.go'), 'TestPreemption'),
        'TestFairPreemptions': extract(os.path.join(go_dir, 'preemption_fair_test.go'),
                                       'TestFairPreemptions'),
    }
    with open(out_json, 'w') as f:
        json.dump(res, f, indent=1)
    for k, v in res.items():
        print(k, len(v))
        for c in v:
            if 'wantPreemptedCount' in c and c['wantPreemptedCount'] != len(c['want']):
                print('  COUNT MISMATCH', c['name'])
