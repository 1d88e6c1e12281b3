#!/usr/bin/env python3
"""Tiny Go expression parser, good enough for Kueue test-case tables."""
import re, sys, json

TOK = re.compile(r'''
 (?P<ws>\s+)|
 (?P<comment>//[^\n]*|/\*.*?\*/)|
 (?P<str>"(?:\\.|[^"\\])*"|`[^`]*`)|
 (?P<num>\d+(?:\.\d+)?)|
 (?P<id>[A-Za-z_][A-Za-z0-9_]*)|
 (?P<op>:=|==|!=|<=|>=|&&|\|\||[{}()\[\],:.*&\-+/<>=!;])
''', re.X | re.S)


def tokenize(s):
    out = []
    pos = 0
    while pos < len(s):
        m = TOK.match(s, pos)
        if not m:
            raise SyntaxError("bad char at %d: %r" % (pos, s[pos:pos + 30]))
        pos = m.end()
        k = m.lastgroup
        if k in ('ws', 'comment'):
            continue
        v = m.group(k)
        if k == 'str':
            v = json.loads(v) if v.startswith('"') else v[1:-1]
        out.append((k, v))
    out.append(('eof', None))
    return out


class P:
    def __init__(self, toks):
        self.t = toks
        self.i = 0

    def peek(self, o=0):
        return self.t[self.i + o]

    def next(self):
        x = self.t[self.i]
        self.i += 1
        return x

    def expect(self, v):
        k, x = self.next()
        if x != v:
            raise SyntaxError("expected %r got %r at tok %d (%r)" % (v, x, self.i, self.t[self.i - 5:self.i + 5]))

    def is_op(self, v, o=0):
        k, x = self.peek(o)
        return k == 'op' and x == v

    # expression: binary ops (+,-,*) at low priority
    def expr(self):
        left = self.unary()
        while self.peek()[0] == 'op' and self.peek()[1] in ('+', '-', '*', '/', '==', '<', '>'):
            op = self.next()[1]
            right = self.unary()
            left = ('bin', op, left, right)
        return left

    def unary(self):
        if self.is_op('&') or self.is_op('*') or self.is_op('-') or self.is_op('!'):
            op = self.next()[1]
            return ('un', op, self.unary())
        return self.postfix(self.primary())

    def typeexpr(self):
        # parse a type: []T, map[K]V, *T, pkg.T, T[...]
        if self.is_op('['):
            self.next(); self.expect(']')
            return ('slicetype', self.typeexpr())
        if self.is_op('*'):
            self.next()
            return ('ptrtype', self.typeexpr())
        k, v = self.next()
        if v == 'map':
            self.expect('[')
            kt = self.typeexpr()
            self.expect(']')
            return ('maptype', kt, self.typeexpr())
        if v == 'struct':
            self.expect('{')
            depth = 1
            while depth:
                k2, v2 = self.next()
                if v2 == '{':
                    depth += 1
                elif v2 == '}':
                    depth -= 1
            return ('structtype',)
        name = v
        while self.is_op('.'):
            self.next()
            name += '.' + self.next()[1]
        return ('type', name)

    def primary(self):
        k, v = self.peek()
        if k == 'str':
            self.next(); return ('str', v)
        if k == 'num':
            self.next(); return ('num', v)
        if k == 'op' and v == '(':
            self.next(); e = self.expr(); self.expect(')'); return e
        if k == 'op' and v == '[':
            t = self.typeexpr()
            return self.complit(t)
        if k == 'id' and v == 'map':
            t = self.typeexpr()
            return self.complit(t)
        if k == 'op' and v == '{':
            return self.complit(None)
        if k == 'id':
            self.next(); return ('id', v)
        raise SyntaxError("unexpected %r at %d: %r" % ((k, v), self.i, self.t[self.i - 5:self.i + 5]))

    def postfix(self, e):
        while True:
            if self.is_op('.'):
                self.next()
                name = self.next()[1]
                e = ('sel', e, name)
            elif self.is_op('('):
                self.next()
                args = []
                while not self.is_op(')'):
                    args.append(self.expr())
                    if self.is_op(','):
                        self.next()
                self.expect(')')
                e = ('call', e, args)
            elif self.is_op('['):
                # generic instantiation or index
                self.next()
                idx = self.expr() if not self.is_op(']') else None
                self.expect(']')
                e = ('index', e, idx)
            elif self.is_op('{') and e[0] in ('id', 'sel') and self._looks_type(e):
                e = self.complit(e)
            else:
                return e

    def _looks_type(self, e):
        # composite literal only if name starts with uppercase (type) in our tables
        name = e[1] if e[0] == 'id' else e[2]
        return name[:1].isupper()

    def complit(self, t):
        self.expect('{')
        elems = []
        while not self.is_op('}'):
            if self.is_op('{'):
                v = self.complit(None)
            else:
                v = self.expr()
            if self.is_op(':'):
                self.next()
                if self.is_op('{'):
                    val = self.complit(None)
                else:
                    val = self.expr()
                elems.append(('kv', v, val))
            else:
                elems.append(('v', v))
            if self.is_op(','):
                self.next()
        self.expect('}')
        return ('lit', t, elems)


def parse_expr(src):
    p = P(tokenize(src))
    e = p.expr()
    return e, p


def unparse(e):
    k = e[0]
    if k == 'str':
        return json.dumps(e[1])
    if k == 'num':
        return e[1]
    if k == 'id':
        return e[1]
    if k == 'sel':
        return unparse(e[1]) + '.' + e[2]
    if k == 'call':
        return unparse(e[1]) + '(' + ', '.join(unparse(a) for a in e[2]) + ')'
    if k == 'index':
        return unparse(e[1]) + '[' + (unparse(e[2]) if e[2] else '') + ']'
    if k == 'un':
        return e[1] + unparse(e[2])
    if k == 'bin':
        return unparse(e[2]) + ' ' + e[1] + ' ' + unparse(e[3])
    if k == 'lit':
        t = unparse_type(e[1]) if e[1] else ''
        parts = []
        for el in e[2]:
            if el[0] == 'kv':
                parts.append(unparse(el[1]) + ': ' + unparse(el[2]))
            else:
                parts.append(unparse(el[1]))
        return t + '{' + ', '.join(parts) + '}'
    if k in ('type', 'slicetype', 'maptype', 'ptrtype', 'structtype'):
        return unparse_type(e)
    return repr(e)


def unparse_type(t):
    if t is None:
        return ''
    k = t[0]
    if k == 'type':
        return t[1]
    if k == 'slicetype':
        return '[]' + unparse_type(t[1])
    if k == 'ptrtype':
        return '*' + unparse_type(t[1])
    if k == 'maptype':
        return 'map[' + unparse_type(t[1]) + ']' + unparse_type(t[2])
    if k == 'structtype':
        return 'struct{...}'
    if k in ('id', 'sel'):
        return unparse(t)
    return repr(t)
