#!/usr/bin/env python3
"""Baseline for grid_bench.sh: the Python original generate_shape_grid.py's cost structure.

Per CSV: csv.DictReader load of every row, candidates generated in Python (template
patterns evaluated with eval() per dimension, as the original does; the four complex
generators' rows are read from the rules dump, which makes the baseline cheaper than the
original), per-row memory estimate, set dedup against all source rows with the signature
tuples of signature_utils, and a full rewrite of the file (csv.DictWriter, temp file,
os.replace). Usage: grid_baseline.py RULES.json DB_DIR"""
import csv, itertools, json, os, re, sys
import yaml

RULES = json.load(open(sys.argv[1]))
DB = sys.argv[2]
LAT = ("duration", "latency", "time", "cycles", "ratio", "miss", "utilization")
BYTES = {"DT_FLOAT": 4, "DT_FLOAT16": 2, "DT_BF16": 2, "DT_INT8": 1, "DT_INT32": 4, "DT_INT64": 8,
         "FLOAT": 4, "INT8": 1, "INT32": 4, "INT64": 8, "BOOL": 1, "DT_BOOL": 1}
BUDGET = 32 * 1024 ** 3
FUNCS = {"max": max, "min": min, "abs": abs, "align": lambda x, a: ((x + a - 1) // a) * a}

def ev(expr, vars_):
    if re.search(r"(?:\b|[\._ ])__|\.", expr):
        raise ValueError(expr)
    return eval(expr, {"__builtins__": {}, **FUNCS}, vars_)

def split_dims(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            out.append(cur.strip()); cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return [p for p in out if p]

def shape(tmpl, vars_):
    s = tmpl.strip()
    if s == "()":
        return ()
    s = s.lstrip("(").rstrip(")")
    dims = []
    for p in split_dims(s):
        try:
            dims.append(int(p))
        except ValueError:
            dims.append(int(ev(p, vars_)))
    return tuple(dims)

def values(spec):
    return RULES["grids"][spec] if isinstance(spec, str) else spec

def expand(p):
    its = [(n, values(s)) for n, s in p.get("iterators", [])]
    if p.get("model_nk_pairs"):
        its += [(n, values(s)) for n, s in p.get("fallback_iterators", [])]
    consts = {k: int(v) for k, v in (p.get("constants") or {}).items()}
    names = [n for n, _ in its]
    for combo in itertools.product(*[v for _, v in its]):
        vars_ = dict(zip(names, combo)); vars_.update(consts)
        if all(ev(c, vars_) for c in p.get("constraints", [])):
            yield ([shape(t, vars_) for t in p["inputs"]], [shape(t, vars_) for t in p["outputs"]], {})

def render(shapes):
    t = ";".join(",".join(str(d) for d in s) for s in shapes)
    return '"%s"' % t if t else ""

def parse(cell):
    s = (cell or "").strip().strip('"')
    if not s:
        return []
    parts = s.split(";")
    if parts and parts[-1] == "":
        parts = parts[:-1]
    return [tuple(int(x) for x in re.split(r"[,\s]+", p.strip("()")) if x) if p.strip() else () for p in parts]

EMPTY_SLOTS = {"()", "N/A", "NA", "NULL", "None", "none"}

def split_slots(cell):
    s = str(cell or "").strip().strip('"')
    if not s:
        return []
    return [p.strip().strip('"') for p in s.split(";")]

def norm_slot(s):
    s = str(s or "").strip().strip('"').strip()
    if s in EMPTY_SLOTS:
        return ""
    if s.startswith("(") and s.endswith(")"):
        s = s[1:-1]
    return ",".join(p for p in re.split(r"[,\s]+", s) if p)

def parse_slot(s):
    s = norm_slot(s)
    if not s:
        return None
    try:
        return tuple(int(p) for p in s.split(","))
    except ValueError:
        return None

def norm_attr(shapes, attrs):
    sh = [norm_slot(x) for x in shapes]
    at = list(attrs)
    n = max(len(sh), len(at))
    sh += [""] * (n - len(sh)); at += [""] * (n - len(at))
    at = [a if s else "" for s, a in zip(sh, at)]
    while sh and not sh[-1]: sh.pop()
    while at and not at[-1]: at.pop()
    return ";".join(sh), ";".join(at)

def matmul_key(row):
    ins, outs = split_slots(row.get("Input Shapes")), split_slots(row.get("Output Shapes"))
    if len(ins) < 2 or not outs:
        return None
    a, b, o = parse_slot(ins[0]), parse_slot(ins[1]), parse_slot(outs[0])
    if not a or not b or not o or len(a) != 2 or len(b) != 2 or len(o) != 2:
        return None
    m, n = o
    k = None
    if a[0] == m and b[0] == n and a[1] == b[1]:
        k = a[1]
    elif a[0] == m and b[1] == n and a[1] == b[0]:
        k = a[1]
    else:
        common = set(a) & set(b)
        outside = [d for d in common if d not in (m, n)]
        if len(outside) == 1:
            k = outside[0]
        elif len(common) == 1:
            k = next(iter(common))
    if k is None:
        return None
    dt, fm = split_slots(row.get("Input Data Types")), split_slots(row.get("Input Formats"))
    return ("_matmul_family", "%d,%d;%d,%d" % (m, k, n, k), ";".join(dt[:2]), ";".join(fm[:2]), "%d,%d" % (m, n))

def sig(row, stem):
    """signature_utils as the original's dedup uses it (docs/rules.md, Shape grids: dedup)."""
    if stem in ("MatMulV2", "MatMulV3", "MatMulCommon"):
        k = matmul_key(row)
        if k is not None:
            return k
    sh, dt, fm = split_slots(row.get("Input Shapes")), split_slots(row.get("Input Data Types")), split_slots(row.get("Input Formats"))
    if stem == "Index":
        o = split_slots(row.get("Output Shapes"))
        first = parse_slot(o[0]) if o else None
        if first and sh:
            sh = [sh[0], str(first[0])]
            dt = [dt[0], dt[-1]] if dt else []
            fm = [fm[0], fm[-1]] if fm else []
    elif stem in ("Slice", "SliceAiCore", "Transpose", "TransposeAiCore"):
        sh, dt, fm = sh[:1], dt[:1], ["ND"] if fm else []
    s1, d1 = norm_attr(sh, dt)
    _, f1 = norm_attr(sh, fm)
    s2, d2 = norm_attr(split_slots(row.get("Output Shapes")), split_slots(row.get("Output Data Types")))
    t = ("_profile", s1, d1, f1, s2, d2)
    if stem == "DispatchFFNCombine":
        t += ((row.get("EP Size") or "").strip(),)
    return t

def nbytes(shapes, dtypes):
    total = 0
    for i, s in enumerate(shapes):
        if not s:
            continue
        n = 1
        for d in s:
            n *= d
        total += n * BYTES.get((dtypes[i] if i < len(dtypes) else "").strip().upper(), 2)
    return total

def main():
    doc = yaml.safe_load(open(os.path.join(DB, "op_mapping.yaml"))) or {}
    meta = {}
    for info in (doc.get("operator_mappings") or {}).values():
        if not isinstance(info, dict) or not info.get("kernel_type"):
            continue
        m = {"zero_cost": bool(info.get("zero_cost")), "composite": bool(info.get("composite")),
             "communication": info.get("category") == "communication", "query_mode": info.get("query_mode")}
        meta.setdefault(info["kernel_type"], m)
        for alt in info.get("alternate_kernel_types") or []:
            meta.setdefault(alt, dict(m, alternates_of=info["kernel_type"]))
    appended_total = 0
    for name in sorted(os.listdir(DB)):
        if not name.endswith(".csv"):
            continue
        stem = name[:-4]
        km = meta.get(stem, {})
        if km.get("zero_cost") or km.get("composite") or km.get("communication"):
            continue
        pname = RULES["assignments"].get(stem)
        if not pname and km.get("alternates_of"):
            pname = RULES["assignments"].get(km["alternates_of"])
        if not pname and km.get("query_mode") == "elementwise":
            pname = "elementwise_binary"
        p = RULES["patterns"].get(pname) if pname else None
        if p is None:
            continue
        path = os.path.join(DB, name)
        with open(path, newline="", encoding="utf-8") as f:
            r = csv.DictReader(f)
            header = list(r.fieldnames)
            rows = list(r)
        t = rows[0]
        if "generator" in p:
            cands = [([tuple(s) for s in g["i"]], [tuple(s) for s in g["o"]], g["e"]) for g in RULES["generated"][pname]]
        else:
            cands = expand(p)
        tin, tout = parse(t["Input Shapes"]), parse(t.get("Output Shapes"))
        idt = [x for x in re.split(r"[;\s]+", t.get("Input Data Types", "")) if x]
        odt = [x for x in re.split(r"[;\s]+", t.get("Output Data Types", "")) if x]
        new = []
        for ins, outs, extra in cands:
            ins = list(ins) + [()] * (len(tin) - len(ins))
            outs = list(outs) + [()] * (len(tout) - len(outs))
            if nbytes(ins, idt) + nbytes(outs, odt) > BUDGET:
                continue
            row = {}
            for h in header:
                if any(k in h.lower() for k in LAT):
                    row[h] = "0"
                else:
                    row[h] = t.get(h, "")
            row["Input Shapes"] = render(ins)
            if "Output Shapes" in header:
                row["Output Shapes"] = render(outs)
            for k, v in extra.items():
                if k in header:
                    row[k] = v
            new.append(row)
        seen = {sig(r, stem) for r in rows}
        kept = []
        for row in new:
            k = sig(row, stem)
            if k not in seen:
                seen.add(k); kept.append(row)
        kept.sort(key=lambda r: parse(r["Input Shapes"]))
        tmp = path[:-4] + ".tmp.csv"
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=header)
            w.writeheader()
            w.writerows(rows)
            w.writerows(kept)
        os.replace(tmp, path)
        appended_total += len(kept)
    print("Appended %d rows" % appended_total)

main()
