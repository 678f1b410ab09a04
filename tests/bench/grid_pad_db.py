#!/usr/bin/env python3
"""Makes a database directory realistic and N data rows per CSV (benchmark input).

  grid_pad_db.py DB_DIR N [SHAPE_DIR]

Every CSV gets a real database's columns: the 62 of a file the import or the write-back
creates (8 base columns, the 4 durations, MicroBench and Profiling Average of the 25 counters:
bench_columns.py, the lists of src/schema/counters.c and microbench/schema.lua), then the
file's own other columns and those of the same file in SHAPE_DIR (a copy of the database
grown once by the grid: the Runtime and EP Size columns its generators write), so the grid
extends no header. Rows are then added up to N: copies of the template row (the first) whose
first input dimension is made unique (900001, 900002, ...), so they are distinct signatures
that no grid rule generates, with the durations, counters and Runtime cells filled (about
600 bytes a row, as a measured database holds)."""
import csv, os, random, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_columns import BASE, METRICS

DURATIONS = ["Average Duration(us)", "Profiling Average Duration(us)",
             "Profiling Median Duration(us)", "Profiling Std Duration(us)"]
COLUMNS = BASE + DURATIONS + [c for m in METRICS for c in ("MicroBench " + m, "Profiling Average " + m)]
# Plausible measured values of the Runtime columns (the attention and MLA metadata).
RUNTIME = {"avg_seq_len": "4096", "sparse_mode": "3", "num_key_value_heads": "1", "num_heads": "128",
           "block_size": "128", "input_layout": "TND", "metadata_completeness": "complete",
           "source_profile": "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv",
           "block_table_valid_blocks": "32"}


def read(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return (rows[0], rows[1:]) if rows else ([], [])


def fill(col, rnd):
    """A measured value for an empty cell of column col (None: leave it as it is)."""
    if col in DURATIONS or col.startswith("MicroBench ") or col.startswith("Profiling Average "):
        if "ratio" in col or "rate" in col:
            return "%.6f" % rnd.random()
        if "cycles" in col:
            return str(rnd.randrange(1000, 10 ** 7))
        return "%.6f" % rnd.uniform(1, 5000)
    if col.startswith("Runtime "):
        field = col[len("Runtime "):]
        if field in RUNTIME:
            return RUNTIME[field]
        if field.endswith("_shape"):
            return "32"
        if field.endswith("_values"):
            return ",".join(str(rnd.randrange(1, 8192)) for _ in range(8))
        if field.endswith("_raw"):
            return "32,1,576;32,1,512;8192,128,1,576"
    return None


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    shaped = sys.argv[3] if len(sys.argv) > 3 else None
    rnd = random.Random(20260101)
    for name in sorted(os.listdir(d)):
        if not name.endswith(".csv"):
            continue
        path = os.path.join(d, name)
        header, body = read(path)
        if not body or "Input Shapes" not in header:
            continue
        cols = list(COLUMNS)
        more = list(header)
        if shaped and os.path.exists(os.path.join(shaped, name)):
            more += read(os.path.join(shaped, name))[0]
        for c in more:
            if c not in cols:
                cols.append(c)
        old = [dict(zip(header, r)) for r in body]
        col = cols.index("Input Shapes")
        with open(path, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(cols)
            for r in old:
                w.writerow([r.get(c, "") for c in cols])
            tmpl = old[0]
            for i in range(len(body), n):
                r = [tmpl.get(c, "") for c in cols]
                r[col] = re.sub(r"^(\"?)(\d+)", lambda m: m.group(1) + str(900001 + i), r[col], count=1)
                for j, c in enumerate(cols):
                    if r[j] == "":
                        v = fill(c, rnd)
                        if v is not None:
                            r[j] = v
                w.writerow(r)


main()
