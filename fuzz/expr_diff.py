#!/usr/bin/env python3
"""Differential fuzzing of the grid expression language (lua/perfscript/expr.lua) against
Python's own integer semantics, which the language promises to follow.

Random expressions over the whole grammar (+ - * // % **, unary signs, chained comparisons,
and/or/not, x if c else y, min/max/abs/align, True/False, variables, literals with
underscores) are evaluated by perfscript (fuzz/expr_eval.lua) and by Python (ast, with the
same operators); results must agree, and where Python raises (division by zero, a negative
exponent) perfscript must give an error. Python's integers are unbounded: an expression whose
value or any intermediate leaves int64 is counted as "overflow" and reported apart (perfscript
must refuse it; with --strict-overflow a wrapped value is a failure).

  python3 fuzz/expr_diff.py PERFSCRIPT [--count N] [--seconds S] [--seed K] [--strict-overflow]
Exit 1 on a mismatch, with the failing expressions."""
import argparse, ast, os, random, subprocess, sys, time

LO, HI = -2**63, 2**63 - 1
HERE = os.path.dirname(os.path.abspath(__file__))


class Overflow(Exception):
    pass


class Refused(Exception):
    pass


def chk(v):
    if isinstance(v, bool):
        return v
    if not LO <= v <= HI:
        raise Overflow(v)
    return v


def num(v):
    return int(v)


def align(x, m):
    if m == 0:
        raise Refused("align to 0")
    return chk(chk((chk(chk(x + m) - 1)) // m) * m)


def ev(node, env):
    t = type(node)
    if t is ast.Expression:
        return ev(node.body, env)
    if t is ast.Constant:
        return node.value
    if t is ast.Name:
        if node.id in ("True", "False"):
            return node.id == "True"
        return env[node.id]
    if t is ast.UnaryOp:
        v = ev(node.operand, env)
        if isinstance(node.op, ast.Not):
            return not v
        if isinstance(node.op, ast.USub):
            return chk(-v)
        return chk(+v)
    if t is ast.BinOp:
        a, b = ev(node.left, env), ev(node.right, env)
        op = node.op
        if isinstance(op, ast.Add): return chk(a + b)
        if isinstance(op, ast.Sub): return chk(a - b)
        if isinstance(op, ast.Mult): return chk(a * b)
        if isinstance(op, (ast.FloorDiv, ast.Mod)):
            if b == 0: raise Refused("division by zero")
            return chk(a // b if isinstance(op, ast.FloorDiv) else a % b)
        if isinstance(op, ast.Pow):
            if b < 0: raise Refused("negative exponent")
            if abs(int(a)) > 1 and b > 64: raise Overflow("pow")
            # perfscript squares the base b's bit-length times: those squares must fit too
            r, base, e = 1, int(a), int(b)
            while e > 0:
                if e & 1: r = chk(r * base)
                e >>= 1
                if e: base = chk(base * base)
            return r
        raise Refused("operator")
    if t is ast.BoolOp:
        if isinstance(node.op, ast.And):
            v = True
            for x in node.values:
                v = ev(x, env)
                if not v: return v
            return v
        v = False
        for x in node.values:
            v = ev(x, env)
            if v: return v
        return v
    if t is ast.Compare:
        left = ev(node.left, env)
        for op, r in zip(node.ops, node.comparators):
            right = ev(r, env)
            ok = {ast.Lt: left < right, ast.LtE: left <= right, ast.Gt: left > right,
                  ast.GtE: left >= right, ast.Eq: left == right, ast.NotEq: left != right}[type(op)]
            if not ok: return False
            left = right
        return True
    if t is ast.IfExp:
        return ev(node.body, env) if ev(node.test, env) else ev(node.orelse, env)
    if t is ast.Call:
        args = [ev(a, env) for a in node.args]
        f = node.func.id
        if f == "abs": return chk(abs(args[0]))
        if f == "min": return min(args)
        if f == "max": return max(args)
        if f == "align": return align(args[0], args[1])
    raise Refused("unknown node %s" % t.__name__)


class Gen:
    """Random text of the grammar, level by level as Python parses it."""
    def __init__(self, rnd, names):
        self.r, self.names = rnd, names

    def lit(self):
        r = self.r
        k = r.random()
        if k < 0.5: v = r.randint(0, 9)
        elif k < 0.9: v = r.randint(0, 4096)
        elif k < 0.96: v = r.choice([2**31, 2**32, 2**62, 2**63 - 1, 10**18, 7 * 2**40])
        else: v = r.randint(0, 10**6)
        s = str(v)
        if len(s) > 3 and r.random() < 0.2:  # underscores between digit groups
            s = "{:_}".format(v)
        return s

    def atom(self, d):
        r = self.r
        k = r.random()
        if d <= 0 or k < 0.35: return self.lit()
        if k < 0.6: return r.choice(self.names)
        if k < 0.65: return r.choice(["True", "False"])
        if k < 0.8: return "(" + self.cond(d - 1) + ")"
        f = r.choice(["min", "max", "abs", "align"])
        n = {"abs": 1, "align": 2}.get(f, r.randint(1, 4))
        return f + "(" + ", ".join(self.cond(d - 1) for _ in range(n)) + ")"

    def power(self, d):
        a = self.atom(d)
        if self.r.random() < 0.12:
            e = self.r.choice([str(self.r.randint(0, 9)), str(self.r.randint(0, 70)), self.atom(0)])
            return a + " ** " + e
        return a

    def unary(self, d):
        if self.r.random() < 0.12: return self.r.choice(["-", "+", "- "]) + self.unary(d - 1)
        return self.power(d)

    def chain(self, sub, ops, d, p):
        s = sub(d)
        while self.r.random() < p:
            s += " " + self.r.choice(ops) + " " + sub(d - 1)
        return s

    def term(self, d): return self.chain(self.unary, ["*", "//", "%"], d, 0.35)
    def sum(self, d): return self.chain(self.term, ["+", "-"], d, 0.35)
    def comparison(self, d): return self.chain(self.sum, ["<", "<=", ">", ">=", "==", "!="], d, 0.15)

    def not_(self, d):
        if self.r.random() < 0.08: return "not " + self.not_(d - 1)
        return self.comparison(d)

    def and_(self, d): return self.chain(self.not_, ["and"], d, 0.1)
    def or_(self, d): return self.chain(self.and_, ["or"], d, 0.1)

    def cond(self, d):
        s = self.or_(d)
        if d > 0 and self.r.random() < 0.08:
            s += " if " + self.or_(d - 1) + " else " + self.cond(d - 1)
        return s


def python_value(text, env):
    try:
        v = ev(ast.parse(text, mode="eval"), env)
        return ("ok", int(v))
    except Overflow:
        return ("overflow", None)
    except Refused as e:
        return ("err", str(e))
    except RecursionError:
        return ("skip", None)


def batch(perfscript, rnd, n):
    names = ["a", "b", "c", "tokens"]
    cases = []
    for _ in range(n):
        env = {k: rnd.choice([0, 1, -1, 7, -8, 128, 4096, 2**40, -(2**20), rnd.randint(-1000, 1000)]) for k in names}
        text = Gen(rnd, names).cond(rnd.randint(1, 5))
        cases.append((env, text))
    stdin = "".join(",".join("%s=%d" % kv for kv in env.items()) + "\t" + text + "\n" for env, text in cases)
    out = subprocess.run([perfscript, os.path.join(HERE, "expr_eval.lua")], input=stdin,
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(out) == len(cases), (len(out), len(cases))
    return cases, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("perfscript")
    ap.add_argument("--count", type=int, default=2000, help="expressions per batch")
    ap.add_argument("--seconds", type=float, default=0, help="keep going for this long")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--strict-overflow", action="store_true")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(2**32)
    rnd = random.Random(seed)
    stats = dict(cases=0, agree=0, errors_agree=0, overflow_refused=0, overflow_wrapped=0, skipped=0)
    bad, wrapped = [], []
    t0 = time.time()
    while True:
        cases, out = batch(a.perfscript, rnd, a.count)
        for (env, text), got in zip(cases, out):
            stats["cases"] += 1
            kind, want = python_value(text, env)
            if kind == "skip":
                stats["skipped"] += 1
            elif kind == "overflow":
                if got.startswith("err"):
                    stats["overflow_refused"] += 1
                else:
                    stats["overflow_wrapped"] += 1
                    wrapped.append((env, text, got))
            elif kind == "err":
                if got.startswith("err"): stats["errors_agree"] += 1
                else: bad.append((env, text, "python: " + want, got))
            elif got == "ok %d" % want:
                stats["agree"] += 1
            else:
                bad.append((env, text, "python: %d" % want, got))
        if time.time() - t0 >= a.seconds: break
    print("expr_diff: seed %d, %s" % (seed, ", ".join("%s %d" % kv for kv in stats.items())))
    for env, text, got in wrapped[:3]:
        print("  overflow not refused (%s): %s -> %s" % (env, text, got))
    for env, text, want, got in bad[:20]:
        print("MISMATCH (%s): %s\n  %s, perfscript: %s" % (env, text, want, got))
    sys.exit(1 if bad or (a.strict_overflow and wrapped) else 0)


if __name__ == "__main__":
    main()
