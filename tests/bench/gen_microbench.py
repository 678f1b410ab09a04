"""Generates the microbench write-back benchmark input: a database CSV of N rows in the
parser's 62-column style (Add.csv) and an op_summary_*.csv of M rows whose signatures hit
existing rows (two samples each) plus some new ones.
Usage: gen_microbench.py DB_DIR PROF_DIR DB_ROWS SUMMARY_ROWS"""
import os
import random
import sys

from bench_columns import BASE, METRICS


def shape(i):
    return f"{1 + i % 997},{1 + (i // 997) % 4096}"


def main():
    db, prof, n, m = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    random.seed(1)
    os.makedirs(db, exist_ok=True)
    header = BASE + ["Average Duration(us)", "Profiling Average Duration(us)", "Profiling Median Duration(us)",
                     "Profiling Std Duration(us)"]
    for met in METRICS:
        header += ["MicroBench " + met, "Profiling Average " + met]
    with open(os.path.join(db, "Add.csv"), "w", newline="") as f:
        f.write(",".join(header) + "\n")
        for i in range(n):
            s = shape(i)
            cells = ["dynamic", "AI_VECTOR_CORE", f'"""{s};{s}"""', "DT_BF16;DT_BF16", "ND;ND", f'"""{s}"""',
                     "DT_BF16", "ND", "" if i % 3 else f"{random.uniform(1, 50):.6f}", f"{random.uniform(1, 50):.6f}",
                     "1.000000", "0.100000"]
            for _ in METRICS:
                cells += ["", f"{random.uniform(0, 1):.6f}"]
            f.write(",".join(cells) + "\n")
    out = os.path.join(prof, "PROF_000001", "mindstudio_profiler_output")
    os.makedirs(out, exist_ok=True)
    oh = ["Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "OP State", "Task Type",
          "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Num", "Mix Block Num",
          "HF32 Eligible", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
          "Output Data Types", "Output Formats", "Context ID"] + METRICS
    with open(os.path.join(out, "op_summary_000001.csv"), "w", newline="") as f:
        f.write(",".join(oh) + "\n")
        for j in range(m):
            # two samples per signature; one signature in 10 is new (an added row)
            k = j // 2
            i = k * 7 % n if k % 10 else n + k
            s = shape(i)
            cells = ["0", "4294967295", str(j), "2", f"Add_{j}", "Add", "dynamic", "AI_VECTOR_CORE",
                     f"{1764246877073569.640 + j:.3f}\t", f"{random.uniform(1, 50):.3f}", "0.000", "24", "0", "NO",
                     f'"""{s};{s}"""', "DT_BF16;DT_BF16", "ND;ND", f'"""{s}"""', "DT_BF16", "ND", "N/A"]
            cells += [f"{random.uniform(0, 100):.3f}" for _ in METRICS]
            f.write(",".join(cells) + "\n")


if __name__ == "__main__":
    main()
