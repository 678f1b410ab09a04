#!/usr/bin/env bash
# The replay, profile and write-back loop on a device plain torch drives (issue 15, the GPU
# part): microbench.lua --torch-device runs the plain-torch rows under torch.profiler
# (executor.py --profile), reads the Chrome trace back and writes each row's duration into a
# separate copy of the database. CI has no GPU, so this runs --torch-device cpu; the CUDA trace
# shape is tested in tests/lua/test_torchprof.lua. Rows that call an Ascend API are skipped with
# the reason and keep their values; the source database is never written.
source "$(dirname "$0")/lib.sh" || exit 1
torch_python
export PERFSCRIPT_LUA_DIR="${PERFSCRIPT_LUA_DIR:-$SRC/lua}"
SEED="$SRC/data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"

cp -r "$SEED" "$TMP/db"
before=$(cd "$TMP/db" && find . -type f | sort | xargs md5sum)
out=$("$PS_BIN" "$SRC/recipes/microbench.lua" --database-path "$TMP/db" --torch-device cpu --python "$PY" \
  --ops Add,SoftmaxV2,Mul,RmsNorm --repeat-count 3 --work-dir "$TMP" --keep-workdir 2>&1); rc=$?
expect_eq "torch cpu run ends well" "$rc" "0"
[[ $rc -eq 0 ]] || echo "$out" | tail -30
expect_contains "the run says what it measured on" "$out" "TORCH run: durations measured with plain torch on cpu"
expect_contains "the interpreter is named" "$out" "under torch.profiler; Python $PY"
expect_contains "three rows timed" "$out" "[TORCH] 3 of 4 case(s) timed on cpu"
expect_contains "results go to a separate copy" "$out" "-> results into $TMP/db_torch_cpu"
expect_eq "the source database is untouched" "$(cd "$TMP/db" && find . -type f | sort | xargs md5sum)" "$before"

work=$(ls -d "$TMP"/perfscript-microbench-* | head -1)
expect_contains "the Ascend API is skipped with its reason" "$(cat "$work/torch_executor.log")" \
  "[SKIP] RmsNorm:2: torch_npu.npu_rms_norm is an Ascend API with no cpu kernel"
# Each written duration is the smallest of the row's three timed calls, and each timed call the
# sum of the outermost operators in its range of the trace (computed here from the trace itself).
expected=$("$PY" - "$work/torch_trace.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in (d["traceEvents"] if isinstance(d, dict) else d) if e.get("ph") == "X"]
ranges = [e for e in ev if str(e.get("name", "")).startswith("perfscript:")]
out = {}
for r in ranges:
    case = r["name"].split(":")[1]
    lo, hi = r["ts"], r["ts"] + r["dur"]
    ops = sorted((e for e in ev if e is not r and e.get("cat") in (None, "cpu_op") and e["tid"] == r["tid"]
                  and e["pid"] == r["pid"] and lo <= e["ts"] and e["ts"] + e["dur"] <= hi),
                 key=lambda e: (e["ts"], -e["dur"]))
    total, end = 0, -1
    for e in ops:
        if e["ts"] >= end:
            total += e["dur"]; end = e["ts"] + e["dur"]
    out.setdefault(case, []).append(total)
for case in sorted(out):
    print(f"{case} {min(out[case]):.6f}")
PY
)
got=""
for op in Add Mul SoftmaxV2; do
  got+="$op $("$PY" -c "import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(r[0]['Average Duration(us)'])" "$TMP/db_torch_cpu/$op.csv")"$'\n'
done
expect_eq "each row holds the minimum of its timed calls in the trace" "$got" "$expected"$'\n'
expect_eq "the skipped row keeps its value" "$(sed -n 2p "$TMP/db_torch_cpu/RmsNorm.csv")" "$(sed -n 2p "$SEED/RmsNorm.csv")"

# The provenance log says what measured them: torch on the CPU, not an NPU.
prov=$(cat "$TMP/db_torch_cpu/.perfscript/provenance.jsonl" 2>/dev/null)
expect_eq "provenance: one line per written row" "$(grep -c . <<<"$prov")" "3"
expect_eq "provenance: measured with torch on the cpu" "$(grep -c '"device":"torch cpu (cpu)"' <<<"$prov")" "3"

# A bad combination is refused before anything runs.
out=$("$PS_BIN" "$SRC/recipes/microbench.lua" --database-path "$TMP/db" --torch-device cpu --simulate 2>&1); rc=$?
expect_eq "--torch-device with --simulate is refused" "$rc" "1"
expect_contains "and says why" "$out" "--torch-device cannot be combined with --simulate"
finish
