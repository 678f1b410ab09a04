#!/usr/bin/env python3
"""Differential test of the cell number parser (src/schema/num.c, perfscript.num) against
Python itself: float() and int() (base 10, as num.int promises, within int64) on random
number-like cells: signs, digits, underscores placed well and badly, fractions, exponents,
inf/nan spellings, ASCII whitespace around and inside, hex, and long digit runs.

  python3 fuzz/num_diff.py PERFSCRIPT [--count N] [--seconds S] [--seed K]
Exit 1 on a mismatch, with the failing cells."""
import argparse, os, random, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
WS = [" ", "\t", "\n", "\r", "\v", "\f"]


def cell(r):
    parts = []
    if r.random() < 0.3: parts.append(r.choice(WS) * r.randint(1, 2))
    if r.random() < 0.3: parts.append(r.choice("+-"))
    k = r.random()
    if k < 0.06:
        parts.append(r.choice(["inf", "Infinity", "nan", "NaN", "iNF", "infinit", "nan1", "infinityy"]))
    elif k < 0.09:
        parts.append(r.choice(["0x10", "0X1p3", "1e", "e5", ".", "", "1.2.3"]))
    else:
        def digits(n):
            s = "".join(r.choice("0123456789") for _ in range(n))
            if len(s) > 1 and r.random() < 0.2:   # an underscore, sometimes misplaced
                i = r.randint(0, len(s))
                s = s[:i] + r.choice(["_", "_", "__"]) + s[i:]
            return s
        n = r.choice([0, 1, 1, 2, 3, 5, 8, 17, 20, 40, 130, 400])
        parts.append(digits(n))
        if r.random() < 0.5: parts.append("." + digits(r.choice([0, 1, 3, 6, 19, 60])))
        if r.random() < 0.3:
            parts.append(r.choice("eE") + r.choice(["", "+", "-"]) + digits(r.choice([0, 1, 2, 3, 5])))
    if r.random() < 0.03: parts.insert(r.randint(0, len(parts)), r.choice(WS))
    if r.random() < 0.3: parts.append(r.choice(WS) * r.randint(1, 2))
    return "".join(parts)


def py(c):
    try:
        f = float(c)
        ftext = "nan" if f != f else f.hex() if f not in (float("inf"), float("-inf")) else ("inf" if f > 0 else "-inf")
    except ValueError:
        ftext = "nil"
    try:
        i = int(c, 10)
        itext = str(i) if -2**63 <= i < 2**63 else "nil"
    except ValueError:
        itext = "nil"
    return ftext, itext


def lua_hex_to_py(t):
    # Lua's %a: "0x1.8p+1", "-0x0p+0", "inf", "-inf"; Python's hex(): "0x1.8000000000000p+1"
    if t in ("nil", "nan"): return t
    if t in ("inf", "-inf"): return t
    return float.fromhex(t).hex()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("perfscript")
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(2**32)
    r = random.Random(seed)
    n, bad, t0 = 0, [], time.time()
    while True:
        cells = [cell(r) for _ in range(a.count)]
        stdin = "".join(c.encode().hex() + "\n" for c in cells)
        out = subprocess.run([a.perfscript, os.path.join(HERE, "num_eval.lua")], input=stdin,
                             capture_output=True, text=True, check=True).stdout.splitlines()
        assert len(out) == len(cells)
        for c, got in zip(cells, out):
            n += 1
            f, i = got.split(" ")
            want = py(c)
            if (lua_hex_to_py(f), i) != want:
                bad.append((c, want, (f, i)))
        if time.time() - t0 >= a.seconds: break
    print("num_diff: seed %d, %d cells, %d mismatches" % (seed, n, len(bad)))
    for c, want, got in bad[:20]:
        print("MISMATCH %r: python float/int %s, perfscript %s" % (c, want, got))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
