#!/usr/bin/env python3
"""Evaluate Kueue preemption test case tables into plain data."""
import sys, json, copy, re
import os; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from goparse import tokenize, P, unparse

DEFAULT_PS = 'main'


def chain(e):
    """Flatten call chain into (root, [(method, args)])."""
    calls = []
    while True:
        if e[0] == 'call' and e[1][0] == 'sel':
            calls.append((e[1][2], e[2]))
            e = e[1][1]
        elif e[0] == 'sel':
            calls.append((e[2], None))  # field access
            e = e[1]
        elif e[0] == 'call' and e[1][0] == 'id':
            calls.append((e[1][1], e[2]))
            e = None
            break
        else:
            break
    calls.reverse()
    return e, calls


class Env(dict):
    pass


def timeval(e):
    s = unparse(e)
    s = s.replace('time.Second', 's').replace('time.Minute', 'min')
    import re as _re
    m = _re.fullmatch(r'now\.Add\((-?)(?:(\d+) \* )?(s|min)\)', s)
    if m:
        return 'now%s%s%s' % (m.group(1) or '+', m.group(2) or '1', m.group(3))
    return s


def qty(e):
    if e[0] == 'str':
        return e[1]
    return unparse(e)


def const(e):
    if e[0] == 'str':
        return e[1]
    s = unparse(e)
    for p in ('kueue.', 'corev1.', 'flavorassigner.', 'config.', 'metav1.'):
        s = s.replace(p, '')
    if s == 'DefaultPodSetName':
        return 'main'
    if s.startswith('Resource') and s != 'ResourceAssignment':
        s = s[len('Resource'):].lower()
    return s


def lit_to_py(e, env):
    """Convert a composite literal / value to python, best effort."""
    k = e[0]
    if k == 'str':
        return e[1]
    if k == 'num':
        return e[1]
    if k == 'un' and e[1] == '-':
        return '-' + str(lit_to_py(e[2], env))
    if k == 'un' and e[1] in ('&', '*'):
        return lit_to_py(e[2], env)
    if k == 'lit':
        if all(el[0] == 'kv' for el in e[2]) and e[2]:
            d = {}
            for el in e[2]:
                key = el[1]
                kk = key[1] if key[0] in ('id', 'str') else const(key)
                d[kk] = lit_to_py(el[2], env)
            return d
        return [lit_to_py(el[1], env) for el in e[2]]
    if k == 'call':
        root, calls = chain(e)
        if calls and calls[0][0] == 'new':
            return lit_to_py(calls[0][1][0], env)
        if calls and calls[0][0] == 'int32':
            return lit_to_py(calls[0][1][0], env)
        return evaluate(e, env)
    if k in ('id', 'sel'):
        if k == 'id' and e[1] in env:
            return env[e[1]]
        if k == 'id' and e[1] == 'now':
            return 'now'
        return const(e)
    return unparse(e)


def new_workload(name, ns):
    return {'kind': 'Workload', 'name': name, 'ns': ns, 'priority': None, 'uid': None,
            'labels': {}, 'creation': None,
            'podsets': [{'name': DEFAULT_PS, 'count': 1, 'requests': {}}],
            'admission': None, 'conditions': [], 'extra': []}


def set_cond(w, cond):
    for i, c in enumerate(w['conditions']):
        if c.get('Type') == cond.get('Type'):
            w['conditions'][i] = cond
            return
    w['conditions'].append(cond)


def evaluate(e, env):
    if e[0] == 'un' and e[1] in ('*', '&'):
        return evaluate(e[2], env)
    if e[0] == 'id':
        if e[1] in env:
            return copy.deepcopy(env[e[1]])
        return e[1]
    if e[0] in ('str', 'num'):
        return e[1]
    if e[0] == 'lit':
        return lit_to_py(e, env)
    root, calls = chain(e)
    obj = None
    if root is not None and root[0] == 'id' and root[1] in env:
        obj = copy.deepcopy(env[root[1]])
    elif root is not None and root[0] == 'id' and root[1] == 'now':
        return timeval(e)
    elif root is not None and root[0] not in ('id',):
        obj = evaluate(root, env)
    for m, args in calls:
        if m in ('utiltestingapi', 'utiltesting'):
            continue
        if m == 'NewTime':
            return timeval(args[0])
        if m == 'MustParse':
            return qty(args[0])
        if m == 'MakeWorkload':
            obj = new_workload(args[0][1], args[1][1])
        elif m == 'MakeAdmission':
            names = [const(a) for a in args[1:]] or [DEFAULT_PS]
            obj = {'kind': 'Admission', 'cq': args[0][1],
                   'podsets': [{'name': n, 'count': 1, 'flavors': {}, 'usage': {}} for n in names]}
        elif m == 'MakePodSetAssignment':
            obj = {'kind': 'PSA', 'name': const(args[0]), 'count': 1, 'flavors': {}, 'usage': {}}
        elif m == 'MakePodSet':
            obj = {'kind': 'PodSet', 'name': const(args[0]), 'count': int(lit_to_py(args[1], env)), 'requests': {}}
        elif m == 'MakeClusterQueue':
            obj = {'kind': 'CQ', 'name': args[0][1], 'cohort': None, 'rgs': [], 'preemption': None,
                   'fairWeight': None, 'extra': []}
        elif m == 'MakeCohort':
            obj = {'kind': 'Cohort', 'name': args[0][1], 'parent': None, 'rgs': [], 'fairWeight': None}
        elif m == 'MakeFlavorQuotas':
            obj = {'kind': 'FQ', 'name': args[0][1], 'resources': []}
        elif m == 'MakeResourceFlavor':
            obj = {'kind': 'RF', 'name': args[0][1]}
        elif m == 'Obj' or m == 'Clone' or m == 'Workload':
            pass
        elif obj is None:
            raise ValueError('no obj for %s in %s' % (m, unparse(e)))
        elif obj['kind'] == 'Workload':
            if m == 'Priority':
                obj['priority'] = int(lit_to_py(args[0], env))
            elif m == 'Request':
                obj['podsets'][0]['requests'][const(args[0])] = qty(args[1])
            elif m == 'Name':
                obj['name'] = args[0][1]
            elif m == 'UID':
                obj['uid'] = args[0][1]
            elif m == 'Label':
                obj['labels'][const(args[0])] = args[1][1]
            elif m == 'Creation':
                obj['creation'] = timeval(args[0])
            elif m == 'PodSets':
                obj['podsets'] = [evaluate(a, env) for a in args]
            elif m == 'ReserveQuotaAt':
                obj['admission'] = evaluate(args[0], env)
                obj['conditions'] = [{'Type': 'QuotaReserved', 'Status': 'True', 'LastTransitionTime': timeval(args[1])}]
            elif m == 'SimpleReserveQuota':
                ps = obj['podsets'][0]
                flv = args[1][1]
                adm = {'kind': 'Admission', 'cq': args[0][1], 'podsets': [
                    {'name': ps['name'], 'count': ps['count'],
                     'flavors': {r: flv for r in ps['requests']},
                     'usage': {r: ('%s x%d' % (q, ps['count']) if ps['count'] != 1 else q) for r, q in ps['requests'].items()}}]}
                obj['admission'] = adm
                obj['conditions'] = [{'Type': 'QuotaReserved', 'Status': 'True', 'LastTransitionTime': timeval(args[2])}]
            elif m == 'Condition':
                c = lit_to_py(args[0], env)
                if isinstance(c, dict) and 'LastTransitionTime' in c:
                    c['LastTransitionTime'] = str(c['LastTransitionTime'])
                set_cond(obj, c)
            elif m == 'SchedulingStatsEviction':
                obj['extra'].append(('SchedulingStatsEviction', lit_to_py(args[0], env)))
            else:
                obj['extra'].append((m, [unparse(a) for a in args]))
        elif obj['kind'] == 'Admission':
            if m == 'PodSets':
                obj['podsets'] = [evaluate(a, env) for a in args]
            else:
                raise ValueError('adm ' + m)
        elif obj['kind'] == 'PSA':
            if m == 'Assignment':
                obj['flavors'][const(args[0])] = args[1][1]
                obj['usage'][const(args[0])] = qty(args[2])
            elif m == 'Count':
                obj['count'] = int(lit_to_py(args[0], env))
            elif m == 'Flavor':
                obj['flavors'][const(args[0])] = args[1][1]
            elif m == 'ResourceUsage':
                obj['usage'][const(args[0])] = qty(args[1])
            else:
                raise ValueError('psa ' + m)
        elif obj['kind'] == 'PodSet':
            if m == 'Request':
                obj['requests'][const(args[0])] = qty(args[1])
            else:
                raise ValueError('ps ' + m)
        elif obj['kind'] == 'FQ':
            if m == 'Resource':
                vals = [qty(a) for a in args[1:]]
                r = {'resource': const(args[0])}
                if len(vals) > 0:
                    r['nominal'] = vals[0]
                if len(vals) > 1 and vals[1]:
                    r['borrowingLimit'] = vals[1]
                if len(vals) > 2 and vals[2]:
                    r['lendingLimit'] = vals[2]
                obj['resources'].append(r)
            else:
                raise ValueError('fq ' + m)
        elif obj['kind'] in ('CQ', 'Cohort'):
            if m == 'Cohort':
                obj['cohort'] = args[0][1]
            elif m == 'Parent':
                obj['parent'] = args[0][1]
            elif m == 'ResourceGroup':
                obj['rgs'].append([evaluate(a, env) for a in args])
            elif m == 'Preemption':
                obj['preemption'] = lit_to_py(args[0], env)
            elif m == 'FairWeight':
                obj['fairWeight'] = unparse(args[0]).replace('resource.MustParse(', '').rstrip(')').strip('"')
            else:
                obj.setdefault('extra', []).append((m, lit_to_py(args[0], env) if args else None))
        else:
            raise ValueError('unknown %s on %s' % (m, obj.get('kind')))
    return obj


def parse_func_env(src, start_marker, cases_marker):
    """Evaluate `x := expr` definitions between start and cases."""
    i = src.index(start_marker)
    j = src.index(cases_marker, i)
    body = src[src.index('{', i) + 1:j]
    toks = tokenize(body)
    p = P(toks)
    env = Env()
    while p.peek()[0] != 'eof':
        if p.peek()[0] == 'id' and p.is_op(':=', 1):
            name = p.next()[1]
            p.next()
            ex = p.expr()
            if name == 'now':
                continue
            try:
                env[name] = evaluate(ex, env)
            except Exception as exc:
                env[name] = ('unevaluated', unparse(ex), str(exc))
        else:
            p.next()
    return env


def parse_cases(src, cases_marker, env):
    i = src.index(cases_marker)
    # find the map literal start "map[string]struct {...}{"
    toks = tokenize(src[i + len('cases :='):])
    p = P(toks)
    lit = p.expr()
    assert lit[0] == 'lit', lit[0]
    out = []
    for el in lit[2]:
        assert el[0] == 'kv'
        name = el[1][1]
        fields = {}
        for f in el[2][2]:
            fname = f[1][1]
            fields[fname] = f[2]
        out.append((name, fields))
    return out
