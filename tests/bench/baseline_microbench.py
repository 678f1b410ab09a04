"""The original write-back's cost structure, reduced to its core, as the benchmark baseline:
op_summary rows read with csv.DictReader and grouped by a pure-Python signature (the spec's
normalisation); the database CSV loaded whole into a list of dicts; signatures recomputed per
row for the index and the duplicate count; a projected snapshot for change detection; the file
rewritten with csv.DictWriter. Usage: baseline_microbench.py DB_DIR PROF_DIR"""
import csv
import glob
import os
import re
import sys

from bench_columns import BASE, METRICS
MB = "Average Duration(us)"
EMPTY = {"()", "N/A", "NA", "NULL", "None", "none"}


def split_slots(v):
    v = (v or "").strip().strip('"')
    return [p.strip().strip('"') for p in v.split(";")] if v else []


def norm_slot(s):
    s = s.strip().strip('"').strip()
    if s in EMPTY:
        return ""
    if s.startswith("(") and s.endswith(")"):
        s = s[1:-1]
    return ",".join(p for p in re.split(r"[,\s]+", s) if p)


def shape_attr(shapes, attrs):
    sh = [norm_slot(s) for s in split_slots(shapes)]
    at = split_slots(attrs)
    n = max(len(sh), len(at))
    sh += [""] * (n - len(sh))
    at += [""] * (n - len(at))
    at = [a if s else "" for s, a in zip(sh, at)]
    while sh and not sh[-1]:
        sh.pop()
    while at and not at[-1]:
        at.pop()
    return ";".join(sh), ";".join(at)


def get_sig(row, op):
    s, d = shape_attr(row.get("Input Shapes"), row.get("Input Data Types"))
    _, f = shape_attr(row.get("Input Shapes"), row.get("Input Formats"))
    os_, od = shape_attr(row.get("Output Shapes"), row.get("Output Data Types"))
    return (s, d, f, os_, od)


def num(v):
    try:
        return float((v or "").strip())
    except ValueError:
        return 0.0


def main():
    db, prof = sys.argv[1], sys.argv[2]
    groups = {}
    for path in sorted(glob.glob(os.path.join(prof, "**", "PROF_*", "mindstudio_profiler_output", "op_summary_*.csv"),
                                 recursive=True)):
        with open(path, encoding="utf-8-sig", newline="") as f:
            for r in csv.DictReader(f):
                op = (r.get("OP Type") or "").strip()
                if not op:
                    continue
                key = (op, get_sig(r, op))
                g = groups.setdefault(key, {"n": 0, "first": r, "min": None, "sums": {m: 0.0 for m in METRICS}})
                g["n"] += 1
                d = num(r.get("Task Duration(us)"))
                g["min"] = d if g["min"] is None else min(g["min"], d)
                for m in METRICS:
                    g["sums"][m] += num(r.get(m))
    rows_by_op = {}
    for (op, _), g in groups.items():
        row = {c: (g["first"].get(c) or "").strip() for c in BASE}
        row[MB] = f"{g['min']:.6f}"
        for m in METRICS:
            row["MicroBench " + m] = f"{g['sums'][m] / g['n']:.6f}"
        rows_by_op.setdefault(op, []).append(row)
    for op, incoming in rows_by_op.items():
        path = os.path.join(db, op + ".csv")
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f)
            cols = list(reader.fieldnames)
            rows = list(reader)
        index, counts = {}, {}
        for i, r in enumerate(rows):
            s = get_sig(r, op)
            index.setdefault(s, i)
            counts[s] = counts.get(s, 0) + 1
        dups = [(get_sig(rows[index[s]], op), c) for s, c in counts.items() if c > 1]
        snapshot = [{c: r.get(c, "") for c in cols} for r in rows]
        updated = added = 0
        for r in incoming:
            s = get_sig(r, op)
            if s in index:
                t = rows[index[s]]
                if (t.get(MB) or "").strip() != r[MB]:
                    updated += 1
                t[MB] = r[MB]
                for m in METRICS:
                    t["MicroBench " + m] = r["MicroBench " + m]
            else:
                rows.append(r)
                index[s] = len(rows) - 1
                added += 1
        projected = [{c: r.get(c, "") for c in cols} for r in rows]
        if projected != snapshot:
            with open(path, "w", encoding="utf-8", newline="") as f:
                w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
                w.writeheader()
                w.writerows(projected)
        print(f"{op}: updated {updated}, added {added}, duplicates {len(dups)}")


if __name__ == "__main__":
    main()
