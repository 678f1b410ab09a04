#!/usr/bin/env bash
# recipes/microbench.lua end to end with the stand-in msprof (tests/fixtures/microbench/msprof):
# plan, profile, aggregation, write-back, reports, fallback, failures, --devices, --prof-path,
# --simulate, timeouts, LFS pointers, and two concurrent write-backs that both land.
# The stand-in msprof also writes the side kernels a real replay launches (DSARandomNormal, Cast,
# TransData, MaskedFill, fill_zeros_kernel): none of them may become a file.
source "$(dirname "$0")/lib.sh" || exit 1
export PERFSCRIPT="$PS_BIN" PERFSCRIPT_LUA_DIR="$SRC/lua"
MSPROF="$SRC/tests/fixtures/microbench/msprof"
MB="$SRC/recipes/microbench.lua"
export MSPROF_STANDIN_LOG="$TMP/msprof.calls"
HEADER='OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us),Profiling Average Duration(us)'

make_db() {  # make_db DIR
  mkdir -p "$1"
  cat > "$1/MatMulV2.csv" <<EOF
$HEADER
dynamic,AI_CORE,"""1024,1024;1024,1024""",FLOAT16;FLOAT16,ND;ND,"""1024,1024""",FLOAT16,ND,,
dynamic,AI_CORE,"""24,512;4096,512""",DT_BF16;DT_BF16,ND;ND,"""24,4096""",DT_BF16,ND,,10.0
EOF
  cat > "$1/Add.csv" <<EOF
$HEADER
dynamic,AI_VECTOR_CORE,"""1024,1024;1024,1024""",FLOAT16;FLOAT16,ND;ND,"""1024,1024""",FLOAT16,ND,5.0,
dynamic,AI_VECTOR_CORE,"""8,8;8,8""",DT_BF16;DT_BF16,ND;ND,"""8,8""",DT_BF16,ND,,
EOF
  cat > "$1/RmsNorm.csv" <<EOF
$HEADER
dynamic,AI_VECTOR_CORE,"""128,4096;4096""",DT_BF16;DT_BF16,ND;ND,"""128,4096;128,1""",DT_BF16;FLOAT,ND;ND,,
dynamic,AI_VECTOR_CORE,"""128,4096;4096;4096""",DT_BF16;DT_BF16;DT_BF16,ND;ND;ND,"""128,4096""",DT_BF16,ND,,
dynamic,AI_VECTOR_CORE,"""128,4096;;4096""",DT_BF16;DT_BF16;DT_BF16,ND;ND;ND,"""128,4096""",DT_BF16,ND,,
EOF
  printf 'version https://git-lfs.github.com/spec/v1\noid sha256:0000\nsize 947024\n' > "$1/Sort.csv"
}
run_mb() { "$PS_BIN" "$MB" --msprof "$MSPROF" --work-dir "$TMP/work" "$@"; }
mkdir -p "$TMP/work"
cell() { # cell FILE ROW(1-based data row) COLUMN-NAME
  "$PS_BIN" -e "local r = assert(require('perfscript.csv').open('$1')); local c = r:column('$3'); local n = 0
    for f in r:lines() do n = n + 1; if n == $2 then io.write(f[c] or '') end end"
}
mtime() { stat -c %Y.%N "$1" 2>/dev/null || stat -c %Y "$1"; }

# 1. A full run fills every replayable row; the unreplayable one is reported and kept.
DB="$TMP/db1"; make_db "$DB"
lfs_before=$(cat "$DB/Sort.csv")
check=0; command -v python3 >/dev/null && check=1
out=$(MSPROF_STANDIN_CHECK=$check run_mb --database-path "$DB" 2>&1); rc=$?
expect_eq "full run exits 0" "$rc" "0"
expect_contains "plan counts" "$out" "[PLAN] 6 case(s) for 3 operator(s); 1 row(s) not replayable"
expect_contains "unreplayable row reported" "$out" "RmsNorm.csv:3"
expect_contains "the unreplayable row is kept" "$(cat "$DB/RmsNorm.csv")" '"""128,4096;4096;4096"""'
v=$(cell "$DB/RmsNorm.csv" 3 "Average Duration(us)")
[[ -n "$v" ]] && ok "a row with an empty slot replays (holes kept by index)" || not_ok "hole row replayed"
v=$(cell "$DB/MatMulV2.csv" 1 "Average Duration(us)")
[[ "$v" =~ ^[0-9]+\.[0-9]{6}$ ]] && ok "MatMulV2 row 1 filled ($v)" || not_ok "MatMulV2 row 1 filled" "got '$v'"
v=$(cell "$DB/Add.csv" 2 "Average Duration(us)")
[[ "$v" =~ ^[0-9]+\.[0-9]{6}$ ]] && ok "Add row 2 filled" || not_ok "Add row 2 filled" "got '$v'"
expect_eq "LFS pointer left untouched" "$(cat "$DB/Sort.csv")" "$lfs_before"
expect_eq "one markdown report" "$(ls "$DB/reports"/profile_update_report_*.md | wc -l)" "1"
expect_eq "one hotspot CSV" "$(ls "$DB/reports"/duration_gap_hotspots_full_*.csv | wc -l)" "1"
expect_eq "one JSON report" "$(ls "$DB/reports"/profile_update_report_*.json | wc -l)" "1"
expect_eq "scratch directory removed on success" "$(ls "$TMP/work" | wc -l)" "0"
expect_eq "the database was not changed during replay (no msprof_run_ dirs)" "$(ls -d "$DB"/msprof_run_* 2>/dev/null | wc -l)" "0"
expect_eq "side kernels created no file" "$(ls "$DB" | tr '\n' ' ')" "Add.csv MatMulV2.csv RmsNorm.csv Sort.csv reports "
expect_contains "side kernels reported as ignored" "$out" "[IGNORED] DSARandomNormal"

# 2. missing-only over a complete database: nothing to replay, files not rewritten.
before=$(mtime "$DB/Add.csv"); sum_before=$(md5sum "$DB"/*.csv)
sleep 1
out=$(run_mb --database-path "$DB" --update-mode missing-only 2>&1); rc=$?
expect_eq "missing-only exits 0" "$rc" "0"
expect_contains "missing-only plans nothing for filled rows" "$out" "[PLAN] 0 case(s)"
mkdir -p "$TMP/complete"
printf '%s\n%s\n' "$HEADER" 'dynamic,AI_VECTOR_CORE,"""8,8;8,8""",DT_BF16;DT_BF16,ND;ND,"""8,8""",DT_BF16,ND,5.0,' > "$TMP/complete/Add.csv"
out=$(run_mb --database-path "$TMP/complete" --update-mode missing-only 2>&1)
expect_contains "missing-only says all files are complete" "$out" "[SUMMARY] All target CSV files already have usable replay durations."
expect_eq "no report for a run with nothing to do" "$(ls "$TMP/complete/reports" 2>/dev/null | wc -l)" "0"
expect_eq "files byte-identical" "$(md5sum "$DB"/*.csv)" "$sum_before"
expect_eq "unchanged file not rewritten (mtime)" "$(mtime "$DB/Add.csv")" "$before"

# 3. Per-operator fallback when the combined run yields nothing (--ops given).
DB="$TMP/db3"; make_db "$DB"; : > "$MSPROF_STANDIN_LOG"
out=$(MSPROF_STANDIN_FAIL=combined run_mb --database-path "$DB" --ops MatMulV2 Add 2>&1); rc=$?
expect_eq "fallback run exits 0" "$rc" "0"
expect_contains "fallback announced" "$out" "Retrying each selected operator in a separate msprof run"
expect_eq "three msprof invocations" "$(wc -l < "$MSPROF_STANDIN_LOG")" "3"
v=$(cell "$DB/Add.csv" 2 "Average Duration(us)"); [[ -n "$v" ]] && ok "fallback results written" || not_ok "fallback results written"

# 4. Without --ops the fallback is not allowed: a clear error, the database untouched.
DB="$TMP/db4"; make_db "$DB"; sum_before=$(md5sum "$DB"/*.csv)
out=$(MSPROF_STANDIN_FAIL=all run_mb --database-path "$DB" 2>&1); rc=$?
expect_eq "failed combined run exits 1" "$rc" "1"
expect_contains "the error names the cause" "$out" "without op_summary data"
expect_contains "the error quotes msprof's log" "$out" "msprof log: msprof (stand-in): simulated failure"
expect_eq "database untouched after a failed run" "$(md5sum "$DB"/*.csv)" "$sum_before"
expect_eq "work directory removed after an error" "$(ls "$TMP/work" | wc -l)" "0"
rm -rf "${TMP:?}/work"/*

# 5. Non-zero exit with a summary: continue.
out=$(MSPROF_STANDIN_FAIL=partial run_mb --database-path "$DB" 2>&1)
expect_contains "partial run continues" "$out" "Continuing with generated profiling data"

# 6. An operator that produced no kernel: reported as failed, exit 3, other ops written; its
# CSV is not pruned (an environment failure must not delete rows).
DB="$TMP/db6"; make_db "$DB"
out=$(MSPROF_STANDIN_FAIL_OPS=Add run_mb --database-path "$DB" --prune-empty-duration-rows 2>&1); rc=$?
expect_eq "failed operator gives exit 3" "$rc" "3"
expect_contains "failure in the report" "$out" "## Failures"
expect_eq "Add row left as it was" "$(cell "$DB/Add.csv" 2 "Average Duration(us)")" ""
expect_eq "the failed operator's CSV is not pruned" "$(grep -c DT_BF16 "$DB/Add.csv")" "1"
expect_contains "and it says so" "$out" "[KEEP] Add.csv not pruned: Add failed in this run."
v=$(cell "$DB/RmsNorm.csv" 1 "Average Duration(us)"); [[ -n "$v" ]] && ok "other operators written" || not_ok "other operators written"
expect_eq "work directory removed after a failed operator" "$(ls "$TMP/work" | wc -l)" "0"
rm -rf "${TMP:?}/work"/*

# 7. msprof missing: a clear message.
out=$("$PS_BIN" "$MB" --database-path "$DB" --msprof perfscript-no-msprof --work-dir "$TMP/work" 2>&1); rc=$?
expect_eq "missing msprof exits 1" "$rc" "1"
expect_contains "missing msprof message" "$out" "msprof not found"
rm -rf "${TMP:?}/work"/*

# 8. Timeout kills the profiler's process tree.
start=$(date +%s)
out=$(MSPROF_STANDIN_SLEEP=30 run_mb --database-path "$DB" --timeout 1 2>&1); rc=$?
took=$(( $(date +%s) - start ))
expect_eq "timeout exits 1" "$rc" "1"
[[ $took -lt 20 ]] && ok "timeout honoured (${took}s)" || not_ok "timeout honoured" "took ${took}s"
rm -rf "${TMP:?}/work"/*

# 8b. A process the profiler leaves behind is killed with its group.
DB="$TMP/db8b"; make_db "$DB"
MSPROF_STANDIN_ORPHAN="$TMP/orphan.pid" run_mb --database-path "$DB" --ops Add >/dev/null 2>&1
opid=$(cat "$TMP/orphan.pid" 2>/dev/null)
alive() { local st; st=$(cut -d')' -f2 "/proc/$1/stat" 2>/dev/null | awk '{print $1}'); [[ -n "$st" && "$st" != Z && "$st" != X ]]; }
for _ in 1 2 3 4 5 6 7 8 9 10; do alive "$opid" || break; sleep 0.2; done
if [[ -n "$opid" ]] && ! alive "$opid"; then ok "orphans of the profiler are killed"; else not_ok "orphans of the profiler are killed" "pid '$opid' still alive"; kill "$opid" 2>/dev/null; fi

# 9. --devices: one stand-in msprof per device, results merged.
DB="$TMP/db9"; make_db "$DB"; : > "$MSPROF_STANDIN_LOG"
out=$(run_mb --database-path "$DB" --devices 0,1 2>&1); rc=$?
expect_eq "--devices run exits 0" "$rc" "0"
expect_eq "two workers" "$(wc -l < "$MSPROF_STANDIN_LOG")" "2"
for f in MatMulV2 Add RmsNorm; do
  v=$(cell "$DB/$f.csv" 1 "Average Duration(us)"); [[ -n "$v" ]] && ok "--devices wrote $f" || not_ok "--devices wrote $f"
done

# 10. --prof-path re-parses an existing profile without launching anything, named as users have
# it: a directory holding PROF_*, a PROF_* directory, its mindstudio_profiler_output, one
# op_summary_*.csv. The side kernels in it never become files; they are listed as ignored.
DB="$TMP/db10"; make_db "$DB"
out=$(run_mb --database-path "$DB" --keep-workdir 2>&1)
expect_contains "--keep-workdir says where the work directory is" "$out" "[KEEP] work directory kept: $TMP/work/perfscript-microbench-"
mv "$(ls -d "$TMP/work"/perfscript-microbench-*/prof | head -1)" "$TMP/prof10"
rm -rf "${TMP:?}/work"/*
PROF1=$(ls -d "$TMP/prof10"/PROF_* | head -1)
i=0
for given in "$TMP/prof10" "$PROF1" "$PROF1/mindstudio_profiler_output" "$(ls "$PROF1"/mindstudio_profiler_output/op_summary_*.csv)"; do
  i=$((i + 1)); DB2="$TMP/db10_$i"; make_db "$DB2"; : > "$MSPROF_STANDIN_LOG"
  out=$(run_mb --database-path "$DB2" --prof-path "$given" 2>&1); rc=$?
  expect_eq "--prof-path ${given#"$TMP/"} exits 0" "$rc" "0"
  expect_eq "--prof-path ${given#"$TMP/"}: the same values" "$(cell "$DB2/MatMulV2.csv" 1 "Average Duration(us)")" "$(cell "$DB/MatMulV2.csv" 1 "Average Duration(us)")"
  expect_eq "--prof-path ${given#"$TMP/"}: no file for side kernels" "$(ls "$DB2" | tr '\n' ' ')" "Add.csv MatMulV2.csv RmsNorm.csv Sort.csv reports "
done
expect_eq "--prof-path launched nothing" "$(wc -l < "$MSPROF_STANDIN_LOG")" "0"
expect_contains "ignored kernel types on the console" "$out" "[IGNORED] TransData: 4 signature(s), 6 sample(s): no TransData.csv in the database; not created."
expect_contains "ignored kernel types in the report" "$(cat "$DB2"/reports/*.md)" "## Ignored Kernel Types (not written)"
out=$(run_mb --database-path "$DB2" --prof-path "$TMP/prof10" --ops Add MaskedFill 2>&1); rc=$?
expect_eq "--ops naming an operator without a CSV: exit 0" "$rc" "0"
expect_eq "... and no new file" "$(ls "$DB2" | tr '\n' ' ')" "Add.csv MatMulV2.csv RmsNorm.csv Sort.csv reports "
expect_contains "... listed as ignored" "$out" "[IGNORED] MaskedFill: 4 signature(s), 6 sample(s): no MaskedFill.csv in the database; not created."
out=$(run_mb --database-path "$DB2" --prof-path "$TMP/nothing" 2>&1); rc=$?
expect_eq "a --prof-path that does not exist: exit 1" "$rc" "1"
expect_contains "... the error names it and what was looked for" "$out" "$TMP/nothing: no such file or directory (--prof-path takes a PROF_* directory, a directory holding PROF_* directories, a mindstudio_profiler_output directory or one op_summary_*.csv file)"
mkdir -p "$TMP/unexported/PROF_000009_x/device_0"
out=$(run_mb --database-path "$DB2" --prof-path "$TMP/unexported" 2>&1)
expect_contains "a PROF_* tree without op_summary: named, and what to do" "$out" "$TMP/unexported: 1 PROF_* directory ($TMP/unexported/PROF_000009_x) but no mindstudio_profiler_output/op_summary_*.csv"
mkdir -p "$TMP/db10_new"
out=$(run_mb --database-path "$TMP/db10_new" --prof-path "$TMP/prof10" --ops MatMulV2 Add 2>&1); rc=$?
expect_eq "re-parsing into a database without CSVs: exit 0" "$rc" "0"
expect_eq "... files only for --ops" "$(ls "$TMP/db10_new" | tr '\n' ' ')" "Add.csv MatMulV2.csv reports "
expect_contains "... the others listed as ignored" "$out" "[IGNORED] RmsNorm: 2 signature(s), 2 sample(s): no RmsNorm.csv in the database; not created (name it with --ops to create it)."
expect_eq "no work directory left by --prof-path runs, failed or not" "$(ls "$TMP/work" | wc -l)" "0"

# 11. Two concurrent write-backs on one database both land: the second waits for the lock.
DB="$TMP/db11"; make_db "$DB"
mkdir -p "$TMP/p1/PROF_1/mindstudio_profiler_output" "$TMP/p2/PROF_2/mindstudio_profiler_output"
OS_H='OP Type,OP State,Task Type,Task Duration(us),Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats'
printf '%s\nAdd,dynamic,AI_VECTOR_CORE,11.5,"""8,8;8,8""",DT_BF16;DT_BF16,ND;ND,"""8,8""",DT_BF16,ND\n' "$OS_H" > "$TMP/p1/PROF_1/mindstudio_profiler_output/op_summary_1.csv"
printf '%s\nAdd,dynamic,AI_VECTOR_CORE,22.5,"""1024,1024;1024,1024""",FLOAT16;FLOAT16,ND;ND,"""1024,1024""",FLOAT16,ND\n' "$OS_H" > "$TMP/p2/PROF_2/mindstudio_profiler_output/op_summary_2.csv"
# hold the lock so that both runs queue up behind it
"$PS_BIN" -e "local l = assert(require('perfscript.fs').lock('$DB')); io.open('$TMP/locked', 'w'):close(); os.execute('sleep 2')" &
holder=$!
while [[ ! -e "$TMP/locked" ]]; do sleep 0.1; done
run_mb --database-path "$DB" --prof-path "$TMP/p1" --ops Add > "$TMP/run1.out" 2>&1 &
r1=$!
run_mb --database-path "$DB" --prof-path "$TMP/p2" --ops Add > "$TMP/run2.out" 2>&1 &
r2=$!
wait $r1; rc1=$?
wait $r2; rc2=$?
wait $holder
expect_eq "concurrent run 1 exits 0" "$rc1" "0"
expect_eq "concurrent run 2 exits 0" "$rc2" "0"
expect_contains "a run said it waits for the lock" "$(cat "$TMP/run1.out" "$TMP/run2.out")" "waiting for it to finish"
expect_eq "run 1's update landed" "$(cell "$DB/Add.csv" 2 "Average Duration(us)")" "11.500000"
expect_eq "run 2's update landed" "$(cell "$DB/Add.csv" 1 "Average Duration(us)")" "22.500000"
expect_eq "no stray temporary files" "$(ls -a "$DB" | grep -c '\.tmp')" "0"

# 12. --simulate with no database: the seed database is read, a separate copy is written.
mkdir -p "$TMP/sim" && cd "$TMP/sim"
out=$("$PS_BIN" "$MB" --simulate --work-dir "$TMP/work" --ops RmsNorm MatMulV2 2>&1); rc=$?
cd - >/dev/null
expect_eq "--simulate exits 0" "$rc" "0"
expect_contains "report says SIMULATED" "$out" "SIMULATED"
n=$(ls "$TMP/sim/perfdb_simulated"/*/vllm_ascend/*/RmsNorm.csv 2>/dev/null | wc -l)
expect_eq "simulated results in a separate copy" "$n" "1"
expect_eq "the bundled seed database is untouched" "$(cd "$SRC" && git status --porcelain data/ 2>/dev/null | wc -l)" "0"

# 13. The executor validates plans without torch (python3 only).
if command -v python3 >/dev/null; then
  DB="$TMP/db13"; make_db "$DB"
  run_mb --database-path "$DB" --plan-only --keep-profiler-output >/dev/null 2>&1
  plan=$(ls "$TMP/work"/perfscript-microbench-*/plan.jsonl | tail -1)
  out=$(python3 "$SRC/lua/perfscript/replay/executor.py" "$plan" --check 2>&1); rc=$?
  expect_eq "executor --check accepts the plan" "$rc" "0"
  expect_contains "executor --check summary" "$out" "plan OK: 6 case(s)"
  sed 's/"DT_BF16"/"DT_BOGUS"/' "$plan" > "$TMP/bad.jsonl"
  out=$(python3 "$SRC/lua/perfscript/replay/executor.py" "$TMP/bad.jsonl" --check 2>&1); rc=$?
  expect_eq "executor --check rejects a bad dtype" "$rc" "2"
  expect_contains "executor names the problem" "$out" "unsupported dtype 'DT_BOGUS'"
else
  echo "SKIP: python3 absent, executor --check not tested"
fi

# 14. A write-back killed at any moment leaves the database whole: the old file or the new one.
if command -v python3 >/dev/null; then
  C="$TMP/crash"
  python3 "$SRC/tests/bench/gen_microbench.py" "$C/db" "$C/prof" 200000 20000
  head1=$(head -1 "$C/db/Add.csv")
  count_rows() { "$PS_BIN" -e "local r = assert(require('perfscript.csv').open('$1')); local n = 0
    for _ in r:lines() do n = n + 1 end; io.write(n)"; }
  whole=1
  for delay in 0.3 0.8 1.5; do
    "$PS_BIN" "$MB" --database-path "$C/db" --prof-path "$C/prof" --ops Add --work-dir "$TMP/work" > /dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    n=$(count_rows "$C/db/Add.csv" 2>&1)
    [[ "$(head -1 "$C/db/Add.csv")" == "$head1" ]] || whole=0
    [[ "$n" == 200000 || "$n" == 201000 ]] || { whole=0; echo "    after a kill at ${delay}s: $n rows"; }
  done
  expect_eq "killed write-backs leave the database whole" "$whole" "1"
  # what a kill mid-write leaves (whether the kills above hit a write or not): a temporary file
  # of a dead process, which the next lock holder removes; a live writer's file stays
  ( : ) & dead=$!; wait "$dead"
  printf 'half a file' > "$C/db/.Add.csv.tmp.$dead.Xy12Ab"
  printf 'busy' > "$C/db/.Add.csv.tmp.$$.Ab12Cd"
  out=$("$PS_BIN" "$MB" --database-path "$C/db" --prof-path "$C/prof" --ops Add --work-dir "$TMP/work" 2>&1); rc=$?
  expect_eq "a later run completes" "$rc" "0"
  expect_eq "its rows landed" "$(count_rows "$C/db/Add.csv")" "201000"
  expect_contains "it says it removed a dead run's leftover" "$out" "removed $C/db/.Add.csv.tmp.$dead.Xy12Ab, left by a write of process $dead that did not finish"
  expect_contains "... in the report too" "$(cat "$C"/db/reports/*.md)" "## Removed Leftovers of Interrupted Writes"
  expect_eq "no leftover of a dead run remains; the live writer's file does" "$(ls -a "$C/db" | grep '\.tmp\.' | tr '\n' ' ')" ".Add.csv.tmp.$$.Ab12Cd "
  rm -f "$C/db/.Add.csv.tmp.$$.Ab12Cd"
  rm -rf "${TMP:?}/work"/* # the work directories of the runs killed with SIGKILL
fi

# 15. --prune-empty-duration-rows prunes every targeted CSV, also one for which this run brought
# no sample (RmsNorm: two rows the builder rejects, one with inf, which the consumer rejects
# too), and leaves the Git LFS pointer alone.
DB="$TMP/db15"; make_db "$DB"
cat > "$DB/RmsNorm.csv" <<EOF
$HEADER
dynamic,AI_VECTOR_CORE,"""128,4096;4096;4096""",DT_BF16;DT_BF16;DT_BF16,ND;ND;ND,"""128,4096""",DT_BF16,ND,inf,
dynamic,AI_VECTOR_CORE,"""64,4096;4096;4096""",DT_BF16;DT_BF16;DT_BF16,ND;ND;ND,"""64,4096""",DT_BF16,ND,,0
EOF
lfs_before=$(cat "$DB/Sort.csv")
out=$(run_mb --database-path "$DB" --prune-empty-duration-rows 2>&1); rc=$?
expect_eq "prune run exits 0" "$rc" "0"
expect_eq "a target without samples is pruned to its header" "$(cat "$DB/RmsNorm.csv")" "$HEADER"
expect_contains "its deletions are written and reported" "$out" "[WRITE] replaced $DB/RmsNorm.csv (updated 0, added 0, deleted 2)"
expect_eq "the LFS pointer is left alone" "$(cat "$DB/Sort.csv")" "$lfs_before"

# 16. Ctrl-C while msprof runs: the profiler's process group is killed and the work directory
# removed.
DB="$TMP/db16"; make_db "$DB"; rm -rf "${TMP:?}/work"/* "${TMP:?}/orphan16.pid"
MSPROF_STANDIN_SLEEP=30 MSPROF_STANDIN_ORPHAN="$TMP/orphan16.pid" "$PS_BIN" "$MB" --msprof "$MSPROF" \
  --work-dir "$TMP/work" --database-path "$DB" --ops Add > "$TMP/run16.out" 2>&1 &
pid=$!
for _ in $(seq 100); do [[ -s "$TMP/orphan16.pid" ]] && break; sleep 0.1; done
kill -INT "$pid"; wait "$pid"; rc=$?
expect_eq "Ctrl-C stops the run" "$rc" "1"
expect_contains "... saying so" "$(cat "$TMP/run16.out")" "interrupted"
expect_eq "... and removes the work directory" "$(ls "$TMP/work" | wc -l)" "0"
opid=$(cat "$TMP/orphan16.pid")
for _ in 1 2 3 4 5 6 7 8 9 10; do alive "$opid" || break; sleep 0.2; done
if ! alive "$opid"; then ok "... and kills the profiler's processes"; else not_ok "... and kills the profiler's processes" "pid $opid alive"; kill "$opid"; fi

finish
