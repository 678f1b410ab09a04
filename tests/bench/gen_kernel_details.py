"""Writes a synthetic torch_npu kernel_details.csv of about SIZE_MB megabytes with NSIG distinct
signatures (type, shapes, dtypes), in the real export's 46-column layout and cell conventions
(triple-quoted shapes, TAB-guarded start times, N/A cells). Usage: gen.py OUT SIZE_MB NSIG"""
import random
import sys

from bench_columns import METRICS
HEADER = ("Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),"
          "Duration(us),Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,Input Shapes,"
          "Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Context ID,"
          + ",".join(METRICS))
TYPES = ["MatMulV2", "MatMulV3", "RmsNorm", "Add", "Mul", "Cast", "SoftmaxV2", "GatherV2",
         "FusedInferAttentionScore", "DynamicQuant", "QuantBatchMatmulV3", "Transpose",
         "ConcatD", "SplitV", "Slice", "ReduceSum", "Sigmoid", "SwiGlu", "AddRmsNorm",
         "RotaryMul", "TopKV2", "Sort", "Index", "ScatterNdUpdate"]


def main():
    out, size_mb, nsig = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rnd = random.Random(7)
    sigs = []
    for i in range(nsig):
        t = TYPES[i % len(TYPES)]
        m, k, n = 1 + i // len(TYPES), rnd.choice([128, 512, 1024, 4096, 7168]), rnd.choice([256, 768, 2048])
        ins = '"""%d,%d;%d,%d"""' % (m, k, n, k)
        outs = '"""%d,%d"""' % (m, n)
        base = rnd.uniform(2.0, 500.0)
        sigs.append((t, ins, outs, base))
    limit = size_mb * 1024 * 1024
    written = 0
    task = 0
    start = 1736413971000000000  # ns
    with open(out, "w", newline="") as f:
        f.write(HEADER + "\r\n")
        while written < limit:
            lines = []
            for _ in range(2000):
                t, ins, outs, base = sigs[rnd.randrange(nsig)]
                task += 1
                start += rnd.randrange(1000, 90000)
                dur = base * rnd.uniform(0.95, 1.10)
                metrics = ",".join("%.3f" % (dur * rnd.random()) for _ in METRICS)
                lines.append(
                    "7,4294967295,%d,2,aclnn%s_%s,%s,dynamic,AI_CORE,\"%d.%03d\t\",%.3f,%.3f,24,0,NO,"
                    "%s,DT_BF16;DT_BF16,ND;ND,%s,DT_BF16,ND,N/A,%s\r\n"
                    % (task, t, t, t, start // 1000, start % 1000, dur, rnd.random(), ins, outs, metrics))
            block = "".join(lines)
            f.write(block)
            written += len(block)


if __name__ == "__main__":
    main()
