#!/usr/bin/env bash
# The analysis recipes end to end: exit statuses, output files, messages for bad input.
source "$(dirname "$0")/lib.sh" || exit 1
R=$SRC/recipes
run() { "$PS_BIN" "$@" >"$TMP/out" 2>"$TMP/err"; echo $?; }
out() { cat "$TMP/out"; }
err() { cat "$TMP/err"; }
# expect_run NAME STATUS STREAM(out|err) NEEDLE ARGS...: the exit status and a text in the output
expect_run() {
  local name=$1 want=$2 stream=$3 needle=$4
  shift 4
  expect_eq "$name: exit status" "$(run "$@")" "$want"
  expect_contains "$name: message" "$($stream)" "$needle"
}

for r in op_comparison m6 per_shape_comparison comm_validate comm_bench; do
  expect_eq "$r --help exits 0" "$(run "$R/$r.lua" --help)" 0
  expect_contains "$r --help shows usage" "$(out)" "Usage:"
done

# Fixtures (tests/fixtures/analysis): a two-model TC trace; a forward-pass slice with a BOM, CRLF,
# a TAB after a timestamp, triple-quoted shapes, the two copies of one hcom, an AICPU kernel; an
# op_mapping.yaml with its entries under operator_mappings.
FX=$SRC/tests/fixtures/analysis
cp "$FX/tc_trace.json" "$TMP/tc.json"
cp "$FX/prof_forward.csv" "$TMP/prof.csv"
mkdir -p "$TMP/db"
cp "$FX/op_mapping.yaml" "$TMP/db/op_mapping.yaml"

# --- op_comparison ------------------------------------------------------------------------------
cd "$TMP"
st=$(run "$R/op_comparison.lua" --tc-trace tc.json --prof-trace prof.csv --data-dir db --name "Qwen3 DC" \
     --output res/cmp.json --html res/cmp.html)
expect_eq "op_comparison exits 0" "$st" 0
expect_contains "op_comparison table" "$(out)" "MatMulV2                                    42.8       2         46.5        2     -8.0%      0.0%    76.9% HIT   "
expect_contains "op_comparison: the two copies of one hcom are one collective" "$(out)" "hcom_allReduce_                              8.3       1         12.0        1    -30.9%"
expect_contains "op_comparison: MISS op mapped through operator_mappings" "$(out)" "Add                                          3.0       1          2.0        1     50.0%      0.0%     3.3% MISS  "
expect_not_contains "op_comparison: zero-cost op left out" "$(out)" "aten.view"
expect_contains "op_comparison saved" "$(out)" "Saved to res/cmp.json"
expect_contains "op_comparison JSON" "$(cat res/cmp.json)" $'{\n  "Qwen3 DC": [\n    {\n      "kernel_type": "MatMulV2",\n      "tc_funcs": "aten.mm.default, tensor_cast.matmul_all_reduce.default",\n      "tc_total_us": 42.8,'
expect_eq "op_comparison JSON has no trailing newline" "$(tail -c 1 res/cmp.json | od -An -c | tr -d ' ')" "}"
expect_contains "op_comparison HTML written" "$(cat res/cmp.html)" "<svg"

expect_run "op_comparison: missing trace" 1 err "perfscript: No such file: missing.json" \
  "$R/op_comparison.lua" --tc-trace missing.json --prof-trace prof.csv
printf '{"traceEvents": [\n {"ph": "X", "pid": 1, "dur": 1},\n {"ph": "X" "pid": 1}\n]}' >bad.json
expect_run "op_comparison: malformed trace" 1 err "perfscript: bad.json:3:" \
  "$R/op_comparison.lua" --tc-trace bad.json --prof-trace prof.csv
printf 'Type,Duration(us),Start Time(us)\nMatMulV2,1,1\n"MatMulV2,2,2\n' >badq.csv
expect_run "op_comparison: malformed CSV" 1 err "badq.csv:3" \
  "$R/op_comparison.lua" --tc-trace tc.json --prof-trace badq.csv
printf 'Type,Duration(us),Start Time(us)\nMatMulV2,abc,1\nMatMulV2,3,2\n' >baddur.csv
expect_run "op_comparison: a bad duration is skipped" 0 err \
  "warning: baddur.csv:2: bad Duration(us) 'abc' (row skipped)" \
  "$R/op_comparison.lua" --tc-trace tc.json --prof-trace baddur.csv

mkdir -p sc
cp tc.json prof.csv sc/
cat >sc/scenarios.lua <<'LUA'
return {
  data_dir = "../db",
  scenarios = {
    { name = "A", tc_trace = "tc.json", prof_trace = "prof.csv", n_forward = 2 },
    { name = "B", tc_trace = "absent.json", prof_trace = "prof.csv" },
  },
}
LUA
st=$(run "$R/op_comparison.lua" --scenarios sc/scenarios.lua --output res/sc.json)
expect_eq "op_comparison --scenarios exits 0" "$st" 0
expect_contains "op_comparison --scenarios skips a missing trace" "$(err)" "SKIP B: No such file: sc/absent.json"
expect_contains "op_comparison --scenarios divides by n_forward" "$(out)" "MatMulV2                                    42.8       2         23.2        1     84.0%    100.0%"
expect_contains "op_comparison --scenarios JSON" "$(cat res/sc.json)" '"A": ['
echo 'return { { name = "X" } }' >sc/bad.lua
st=$(run "$R/op_comparison.lua" --scenarios sc/bad.lua)
expect_eq "op_comparison: bad scenario file exits 1" "$st" 1
expect_contains "op_comparison: bad scenario file message" "$(err)" "sc/bad.lua: scenario 1 has no 'tc_trace'"
echo 'return { os.exit(3) }' >sc/evil.lua
st=$(run "$R/op_comparison.lua" --scenarios sc/evil.lua)
expect_eq "op_comparison: scenario files get no library" "$st" 1

# --- m6 -------------------------------------------------------------------------------------------
st=$(run "$R/m6.lua" --tc-trace tc.json --prof-trace prof.csv --json-output res/m6/m6.json --html res/m6.html)
expect_eq "m6 exits 0" "$st" 0
expect_contains "m6 report" "$(out)" "M6 = 0.843  (Empirical / Real)"
expect_contains "m6 JSON" "$(cat res/m6/m6.json)" '"m6_ratio": 0.8429752066115702,'
expect_contains "m6 JSON path said" "$(out)" "JSON output written to: res/m6/m6.json"
st=$(run "$R/m6.lua" --tc-trace nope.json --prof-trace prof.csv)
expect_eq "m6: missing TC trace exits 1" "$st" 1
expect_contains "m6: missing TC trace message" "$(err)" "TC trace not found: nope.json"
st=$(run "$R/m6.lua" --tc-trace tc.json --prof-trace nope.csv)
expect_eq "m6: missing prof trace exits 1" "$st" 1
expect_contains "m6: missing prof trace message" "$(err)" "Prof trace not found: nope.csv"
st=$(run "$R/m6.lua" --tc-trace tc.json --prof-trace prof.csv --model analytic --source-filter '*')
expect_contains "m6 --model picks the other process" "$(out)" "Empirical HIT total:         99.0 us"

# --- per_shape_comparison -------------------------------------------------------------------------
st=$(run "$R/per_shape_comparison.lua" --tc-trace tc.json --prof-trace prof.csv --output res/ps.csv)
expect_eq "per_shape exits 0" "$st" 0
expect_contains "per_shape says what it wrote" "$(out)" "Generated 5 per-shape comparison rows → res/ps.csv"
expect_eq "per_shape CSV" "$(head -3 res/ps.csv)" $'kernel_type,shape_key,tc_dur_us,prof_dur_us,delta_pct,tc_count,prof_count,source\r\nMatMulV2,"16,5120;5120,768",20.0,25.5,-21.6,1,1,MEASURED\r\nMatMulV2,"16,512;512,5120",22.77,21.0,8.4,1,1,INTERPOLATED\r'
st=$(run "$R/per_shape_comparison.lua" --tc-trace tc.json --prof-trace prof.csv)
expect_contains "per_shape to stdout" "$(out)" "hcom_allReduce_,N/A,0,12.0,-100.0,0,1,"

# --- hcom collectives: (Type, exact start); a DeepSeek-V3 decode slice with two all-reduces on
# streams 5 and 9 starting 0.24 us apart, each with its stream-N/A copy -----------------------------
cp "$FX/prof_dsv3_decode_hcom.csv" dsv3.csv
st=$(run "$R/m6.lua" --tc-trace tc.json --prof-trace dsv3.csv --json-output res/dsv3_m6.json)
expect_eq "hcom: m6 exits 0" "$st" 0
expect_contains "hcom: m6 counts both all-reduces" "$(out)" "  hcom:                      38.8 us"
expect_contains "hcom: m6 JSON" "$(cat res/dsv3_m6.json)" '"selected_fwd_hcom_us": 38.82,'
expect_not_contains "hcom: identical copies give no warning" "$(err)" "warning"
expect_run "hcom: op comparison counts both all-reduces" 0 out \
  "hcom_allReduce_                              8.3       1         26.3        2" \
  "$R/op_comparison.lua" --tc-trace tc.json --prof-trace dsv3.csv
expect_run "hcom: per-shape counts both all-reduces" 0 out "hcom_allReduce_,N/A,0,26.32,-100.0,0,2," \
  "$R/per_shape_comparison.lua" --tc-trace tc.json --prof-trace dsv3.csv
expect_run "hcom: --hcom-window-us 1 still merges on request" 0 out "  hcom:                      29.5 us" \
  "$R/m6.lua" --tc-trace tc.json --prof-trace dsv3.csv --hcom-window-us 1
expect_contains "hcom: merged copies of different durations are reported" "$(err)" \
  "warning: dsv3.csv: 1 hcom collective has copies of different durations (the longest copy counted)"
expect_run "hcom: a negative window is refused" 1 err \
  "--hcom-window-us must be a number of microseconds, 0 or more (got '-1')" \
  "$R/op_comparison.lua" --tc-trace tc.json --prof-trace dsv3.csv --hcom-window-us=-1
printf 'Type,Duration(us),Start Time(us)\nhcom_allGather_,8.0,100.5\nhcom_allGather_,15.0,100.5\nhcom_allGather_,3.0,200.5\nhcom_allGather_,3.0,200.5\n' >mixed.csv
for r in m6 op_comparison per_shape_comparison; do
  expect_run "hcom: $r warns on copies of different durations" 0 err \
    "warning: mixed.csv: 1 hcom collective has copies of different durations (the longest copy counted)" \
    "$R/$r.lua" --tc-trace tc.json --prof-trace mixed.csv
done

# --- comm_validate --------------------------------------------------------------------------------
mkdir -p hccl_ok hccl_bad hccl_bom
H=message_bytes,num_devices,dtype,topology_tier,Duration\(us\),bandwidth_gbps
printf '%s\n65536,16,DT_BF16,1,5.50,11.9\n1310720,16,DT_BF16,1,25.00,52.4\n' "$H" >hccl_ok/hcom_allReduce_.csv
printf '%s\n655360,16,DT_BF16,1,80.00,8.2\n' "$H" >hccl_ok/hcom_allGather_.csv
st=$(run "$R/comm_validate.lua" --csv-dir hccl_ok)
expect_eq "comm_validate: all PASS exits 0" "$st" 0
expect_contains "comm_validate: PASS counts" "$(out)" "  PASS=2  WARN=0  FAIL=0"
expect_contains "comm_validate: skipped files" "$(out)" "  [SKIP] hcom_reduceScatter_.csv not found in hccl_ok"
expect_contains "comm_validate: result" "$(out)" "  TOTAL: 3 rows  PASS=3  WARN=0  FAIL=0"
expect_contains "comm_validate: OK" "$(out)" "  Result: OK"
cp hccl_ok/* hccl_bad/
printf '10485760,16,DT_BF16,1,12000.00,0.9\n' >>hccl_bad/hcom_allGather_.csv
st=$(run "$R/comm_validate.lua" --csv-dir hccl_bad)
expect_eq "comm_validate: a FAIL row exits 1" "$st" 1
expect_contains "comm_validate: FAIL row listed" "$(out)" "  FAIL        10485760     16     1"
expect_contains "comm_validate: FAILED" "$(out)" "  Result: FAILED"
printf '%s\n65536,16,DT_BF16,1,12.00,5.4\n' "$H" >hccl_bad/hcom_alltoallv_.csv
printf '\xef\xbb\xbf%s\n65536,16,DT_BF16,1,11.00,11.9\n' "$H" >hccl_bom/hcom_allReduce_.csv
st=$(run "$R/comm_validate.lua" --csv-dir hccl_bom --verbose)
expect_eq "comm_validate: WARN only exits 0" "$st" 0
expect_contains "comm_validate: a BOM file keeps its rows" "$(out)" "  TOTAL: 1 rows  PASS=0  WARN=1  FAIL=0"
expect_contains "comm_validate: ratio line" "$(out)" "  ratio: mean=2.22x  min=2.22x  max=2.22x"
st=$(run "$R/comm_validate.lua" --csv-dir nodir)
expect_eq "comm_validate: not a directory exits 1" "$st" 1
expect_contains "comm_validate: not a directory message" "$(err)" "ERROR: nodir is not a directory"
printf '%s\n65536,16,DT_BF16,7,5.50,11.9\n' "$H" >hccl_bom/hcom_allGather_.csv
st=$(run "$R/comm_validate.lua" --csv-dir hccl_bom)
expect_contains "comm_validate: unknown tier dropped with its line" "$(err)" "hcom_allGather_.csv:2: unknown topology tier 7 (row dropped)"

# --- comm_bench -----------------------------------------------------------------------------------
st=$(run "$R/comm_bench.lua" --database-path out --ops all_reduce,all_to_all --num-devices 16,2 \
     --bytes-grid 1024,2048 --plan-json res/plan.json --commands res/run.sh)
expect_eq "comm_bench plan exits 0" "$st" 0
expect_contains "comm_bench plan: sessions" "$(out)" "Comm microbench plan: 4 sessions, 2 message sizes"
expect_contains "comm_bench plan: command" "$(out)" "torchrun --nproc_per_node=2 --master_port=29701 tools/perf_data_collection/comm_bench/generate_comm_microbench.py --ops all_reduce --num-devices 2 --topology-tier 2"
expect_contains "comm_bench plan JSON" "$(cat res/plan.json)" '"master_port": 29703'
expect_contains "comm_bench commands script" "$(cat res/run.sh)" "--bytes-grid 1024 2048 --database-path out"
st=$(run "$R/comm_bench.lua" --num-devices 4 --topology-tier 2 --ops all_reduce)
expect_eq "comm_bench: nothing buildable exits 1" "$st" 1
expect_contains "comm_bench: unbuildable tier warned" "$(err)" "WARNING: skipping tier=2, num_devices=4: num_devices=4 exceeds span size 2"
st=$(run "$R/comm_bench.lua" --ops broadcast)
expect_eq "comm_bench: unknown op is a usage error" "$st" 1

# --do-run with a stand-in torchrun: argv passed as is (no shell), 139 harmless, failures and
# timeouts reported, the next session still runs, exit status 1 when one failed.
cat >fake-torchrun <<'SH'
#!/bin/sh
echo "$@" >>"$(dirname "$0")/calls.txt"
case "$*" in
  *"--ops all_gather --num-devices 2 "*) kill -SEGV $$ ;;
  *"--ops all_gather --num-devices 4 "*) echo "HCCL init failed" >&2; exit 3 ;;
  *"--ops all_to_all --num-devices 2 "*) sleep 30 ;;
esac
exit 0
SH
chmod +x fake-torchrun
expect_run "comm_bench --do-run" 1 out "2 of 4 sessions succeeded; results in bench out, logs in bench out/logs" \
  "$R/comm_bench.lua" --do-run --torchrun "$TMP/fake-torchrun" --ops all_gather,all_to_all \
  --num-devices 2,4 --topology-tier 1 --bytes-grid 1024 --database-path "bench out" --timeout 1
expect_contains "comm_bench --do-run: harmless SIGSEGV" "$(out)" "[1/4] all_gather n=2 tier=1 ... ok"
expect_contains "comm_bench --do-run: failure reported" "$(out)" "[2/4] all_gather n=4 tier=1 ... FAILED with status 3 (exit); log bench out/logs/02_all_gather_n4_tier1.err"
expect_contains "comm_bench --do-run: timeout reported" "$(out)" "[3/4] all_to_all n=2 tier=1 ... TIMEOUT after 1s (process group killed)"
expect_contains "comm_bench --do-run: the session's stderr logged" "$(cat "bench out/logs/02_all_gather_n4_tier1.err")" "HCCL init failed"
expect_eq "comm_bench --do-run: every session started" "$(wc -l <calls.txt | tr -d ' ')" 4
expect_contains "comm_bench --do-run: argv kept whole" "$(head -1 calls.txt)" "--nproc_per_node=2 --master_port=29700 tools/perf_data_collection/comm_bench/generate_comm_microbench.py --ops all_gather"
expect_run "comm_bench --do-run without torchrun" 1 err "nonexistent-torchrun not found on PATH" \
  "$R/comm_bench.lua" --do-run --torchrun nonexistent-torchrun --ops all_reduce --num-devices 2

# --- real exports (skipped when absent) -------------------------------------------------------------
echo '{"traceEvents": []}' >empty.json
if K=$(real_data Ascend-msinsight/test/st/level2/rank_0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv); then
  expect_run "op_comparison on a real kernel_details.csv (TAB after timestamps)" 0 out \
    "hcom_allReduce_                              0.0       0      40342.5        7" \
    "$R/op_comparison.lua" --tc-trace empty.json --prof-trace "$K"
  expect_not_contains "real kernel_details: no row skipped" "$(err)" "skipped"
  expect_run "m6 on a real kernel_details.csv" 0 out "  hcom:                 420,174.3 us" \
    "$R/m6.lua" --tc-trace empty.json --prof-trace "$K"
fi
if T=$(real_data Ascend-msinsight/test/data/pytorch/text/level2/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json); then
  expect_run "a real trace_view.json (bare array, string ts) with several processes" 1 err \
    "cannot tell which model to analyse; pids: 3178231 (Python), 3254508960 (Ascend Hardware)" \
    "$R/op_comparison.lua" --tc-trace "$T" --prof-trace prof.csv
  expect_run "a real trace_view.json, one process chosen by name" 0 out "TOTAL" \
    "$R/op_comparison.lua" --tc-trace "$T" --prof-trace prof.csv --model "ascend hardware"
fi
finish
