"""The original parser's method, reduced to its core, as the benchmark baseline: csv.DictReader
over every file, every row loaded into memory, groups in a dict keyed by (Type, Input Shapes,
Output Shapes), a list of durations per group, statistics, one CSV per type.
Usage: baseline.py KERNEL_DETAILS OUT_DIR"""
import csv
import math
import os
import statistics
import sys
from collections import defaultdict

from bench_columns import BASE, METRICS


def num(v):
    try:
        return float((v or "").strip())
    except ValueError:
        return 0.0


def main():
    src, out_dir = sys.argv[1], sys.argv[2]
    rows = []
    with open(src, encoding="utf-8-sig", newline="") as f:
        rows.extend(csv.DictReader(f))
    grouped = defaultdict(lambda: {"sum": 0.0, "sumsq": 0.0, "durs": [], "count": 0,
                                   "first": None, "extra": dict.fromkeys(METRICS, 0.0)})
    for row in rows:
        t = (row.get("Type") or "").strip()
        ins = (row.get("Input Shapes") or "").strip()
        outs = (row.get("Output Shapes") or "").strip()
        if ins.strip('"').upper() == "N/A" or outs.strip('"').upper() == "N/A":
            continue
        g = grouped[(t, ins, outs)]
        d = num(row.get("Duration(us)"))
        g["sum"] += d
        g["sumsq"] += d * d
        g["durs"].append(d)
        g["count"] += 1
        for m in METRICS:
            g["extra"][m] += num(row.get(m))
        if g["first"] is None:
            g["first"] = {c: (row.get(c) or "").strip() for c in BASE}
    by_type = defaultdict(list)
    for (t, ins, outs), g in grouped.items():
        if not t:
            continue
        n = g["count"]
        mean = g["sum"] / n
        std = math.sqrt(max(0.0, g["sumsq"] / n - mean * mean))
        r = dict(g["first"])
        r["Profiling Average Duration(us)"] = "%.6f" % mean
        r["Profiling Median Duration(us)"] = "%.6f" % statistics.median(g["durs"])
        r["Profiling Std Duration(us)"] = "%.6f" % std
        for m in METRICS:
            r["Profiling Average " + m] = "%.6f" % (g["extra"][m] / n)
        by_type[t].append(r)
    os.makedirs(out_dir, exist_ok=True)
    cols = BASE + ["Profiling Average Duration(us)", "Profiling Median Duration(us)",
                   "Profiling Std Duration(us)"] + ["Profiling Average " + m for m in METRICS]
    for t, trows in by_type.items():
        with open(os.path.join(out_dir, t + ".csv"), "w", encoding="utf-8", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            w.writerows(trows)
    print("groups", sum(len(v) for v in by_type.values()), "rows", len(rows))


if __name__ == "__main__":
    main()
