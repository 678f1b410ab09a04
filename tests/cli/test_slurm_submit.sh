#!/usr/bin/env bash
# microbench.lua --slurm and recipes/runs.lua without a cluster: sbatch and squeue are stand-ins
# that record their arguments, and the generated scripts are run by hand as Slurm would run them
# (SLURM_ARRAY_TASK_ID set), one node lost. Checks the submissions (array, then the final job
# afterany the array), slurm.json, runs.lua's per-shard progress, the resubmission of only the
# unfinished shard (and --retry-failed, --dry-run, a queued job, a run that is not a Slurm run),
# and sbatch's errors. (tests/cli/test_slurm_cluster.sh does the same on a real one-node cluster.)
source "$(dirname "$0")/lib.sh" || exit 1
export PERFSCRIPT="$PS_BIN" PERFSCRIPT_LUA_DIR="$SRC/lua"
MSPROF="$SRC/tests/fixtures/microbench/msprof"
MB="$SRC/recipes/microbench.lua"
RUNS="$SRC/recipes/runs.lua"
SEED="$SRC/data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"

# the stand-ins: sbatch logs "args | PERFSCRIPT_RETRY_FAILED" and prints the next job id;
# squeue prints $FAKE/queue
export FAKE="$TMP/fake"
mkdir -p "$FAKE/bin" "$TMP/work"
cat > "$FAKE/bin/sbatch" <<'EOF'
#!/bin/bash
echo "$* | ${PERFSCRIPT_RETRY_FAILED:-}" >> "$FAKE/sbatch.log"
if [[ -n ${FAKE_SBATCH_FAIL:-} ]]; then
  echo "sbatch: error: Batch job submission failed: Invalid partition name specified" >&2; exit 1
fi
n=$(( $(cat "$FAKE/next" 2>/dev/null || echo 100) + 1 )); echo "$n" > "$FAKE/next"
echo "$n"
EOF
printf '#!/bin/bash\ncat "$FAKE/queue" 2>/dev/null || true\n' > "$FAKE/bin/squeue"
chmod +x "$FAKE/bin/sbatch" "$FAKE/bin/squeue"
export PATH="$FAKE/bin:$PATH"

small_db() { mkdir -p "$1"; local k; for k in MatMulV2 Add RmsNorm SwiGlu DynamicQuant; do cp "$SEED/$k.csv" "$1/"; done; }
same_db() {
  local f d=""
  for f in "$1"/*.csv; do cmp -s "$f" "$2/${f##*/}" || d="$d ${f##*/}"; done
  echo "${d:-same}"
}
cd "$TMP" || exit 1
small_db db; small_db ref
mb() { "$PS_BIN" "$MB" --msprof "$MSPROF" --work-dir "$TMP/work" "$@"; }

# the reference: shards 1 and 2 of 2 by hand, then the write-back
for k in 1 2; do mb --database-path ref --devices 0,1 --run-id H --shard "$k/2" --stage-only >/dev/null 2>&1; done
mb --database-path ref --resume H --writeback-only >/dev/null 2>&1
expect_eq "the reference is written" "$?" "0"

# 1. submission
out=$(mb --database-path db --slurm --nodes 2 --npus-per-node 2 --partition npu --sbatch-arg=--qos=high --run-id R 2>&1)
expect_eq "--slurm exits 0" "$?" "0"
D="$TMP/db/.perfscript/runs/R"
expect_contains "it says the jobs" "$out" "[SLURM] array job 101 (tasks 1-2), final job 102 (afterany:101)"
expect_contains "it says how to follow the run" "$out" "recipes/runs.lua --database-path $TMP/db --run R"
expect_eq "sbatch: the array, then the final job after it" "$(cat "$FAKE/sbatch.log")" \
  "--parsable $D/slurm-array.sbatch | 
--parsable --dependency=afterany:101 $D/slurm-final.sbatch | "
expect_contains "the scripts' writes are reported" "$out" "[WRITE] created $D/slurm-array.sbatch"
expect_contains "slurm.json records the submission" "$(cat "$D/slurm.json")" '"array_job":"101"'
expect_contains "the partition is in both scripts" "$(grep -h -- '--partition=npu' "$D"/slurm-*.sbatch | wc -l)" "2"
expect_contains "the pass-through sbatch option too" "$(grep -h -- '^#SBATCH --qos=high$' "$D"/slurm-*.sbatch | wc -l)" "2"
out=$(mb --database-path db --slurm --run-id R 2>&1)
expect_contains "a run id is not reused" "$out" "run R already exists"
out=$("$PS_BIN" "$RUNS" --database-path db --run R 2>&1)
expect_contains "runs.lua: a submitted run nothing has started" "$out" "no shard has started yet"
expect_contains "runs.lua: shards not started" "$out" "| 2     | 0     | 0    | 0      | 0         | 0    | not started |"

# 2. Slurm runs array task 1; node 2 is lost; the final job writes back what is staged
SLURM_ARRAY_TASK_ID=1 bash "$D/slurm-array.sbatch" > task1.out 2>&1
expect_eq "array task 1 exits 0" "$?" "0"
expect_contains "array task 1 stages shard 1" "$(cat task1.out)" "[STAGED] run R"
bash "$D/slurm-final.sbatch" > final.out 2>&1
expect_eq "the final job exits 0" "$?" "0"
out=$("$PS_BIN" "$RUNS" --database-path db 2>&1)
expect_contains "runs.lua lists the run: 1 of 2 shards done" "$out" "| R   |"
expect_contains "runs.lua lists the run: 1 of 2 shards done" "$out" "| slurm 2x2 | 1/2         |"
out=$("$PS_BIN" "$RUNS" --database-path db --run last 2>&1)
expect_contains "runs.lua: shard 2 not started, its cases left" "$out" "not started"
expect_contains "runs.lua: written back once" "$out" "Written back: 1"

# 3. --resume: only array index 2, then the final job
: > "$FAKE/sbatch.log"
out=$("$PS_BIN" "$RUNS" --database-path db --run R --resume --dry-run 2>&1)
expect_contains "--dry-run says what it would do" "$out" "resubmitting shard(s) 2 of 2"
expect_eq "--dry-run submits nothing" "$(cat "$FAKE/sbatch.log")" ""
echo "104 perfscript-R-writeback PENDING" > "$FAKE/queue"
out=$("$PS_BIN" "$RUNS" --database-path db --run R --resume 2>&1)
expect_contains "a run with jobs in the queue is not resubmitted" "$out" "still has jobs in the queue (104 perfscript-R-writeback PENDING)"
rm "$FAKE/queue"
out=$("$PS_BIN" "$RUNS" --database-path db --run R --resume 2>&1)
expect_eq "runs.lua --resume exits 0" "$?" "0"
expect_eq "sbatch: array index 2 only, then the final job" "$(cat "$FAKE/sbatch.log")" \
  "--parsable --array=2 $D/slurm-array.sbatch | 
--parsable --dependency=afterany:103 $D/slurm-final.sbatch | "
expect_contains "slurm.json records the resubmission" "$(cat "$D/slurm.json")" '"indices":"2"'
SLURM_ARRAY_TASK_ID=2 bash "$D/slurm-array.sbatch" > task2.out 2>&1
expect_eq "array task 2 exits 0" "$?" "0"
bash "$D/slurm-final.sbatch" > final2.out 2>&1
expect_eq "the second final job exits 0" "$?" "0"
expect_eq "the database equals the reference" "$(same_db ref db)" "same"
out=$("$PS_BIN" "$RUNS" --database-path db --run R 2>&1)
expect_contains "runs.lua: every shard finished" "$out" "| 2     | 2     | 2    | 0      | 0         | 0    | finished |"
: > "$FAKE/sbatch.log"
out=$("$PS_BIN" "$RUNS" --database-path db --run R --resume 2>&1)
expect_contains "a finished run is not resubmitted" "$out" "nothing to submit"
expect_eq "nothing submitted" "$(cat "$FAKE/sbatch.log")" ""

# 4. failed cases: only --retry-failed resubmits them, and tells the tasks
small_db db3
mb --database-path db3 --slurm --nodes 2 --npus-per-node 1 --run-id F >/dev/null 2>&1
D3="$TMP/db3/.perfscript/runs/F"
SLURM_ARRAY_TASK_ID=1 bash "$D3/slurm-array.sbatch" >/dev/null 2>&1
SLURM_ARRAY_TASK_ID=2 MSPROF_STANDIN_FAIL_OPS=RmsNorm bash "$D3/slurm-array.sbatch" >/dev/null 2>&1
bash "$D3/slurm-final.sbatch" >/dev/null 2>&1
out=$("$PS_BIN" "$RUNS" --database-path db3 --run F 2>&1)
expect_contains "runs.lua: shard 2 finished with failures" "$out" "finished, with failures"
expect_contains "runs.lua: the failure's reason" "$out" "[FAILED]"
: > "$FAKE/sbatch.log"
out=$("$PS_BIN" "$RUNS" --database-path db3 --run F --resume 2>&1)
expect_contains "without --retry-failed a failed shard is finished" "$out" "nothing to submit"
out=$("$PS_BIN" "$RUNS" --database-path db3 --run F --resume --retry-failed 2>&1)
expect_eq "--retry-failed: shard 2 again, told to retry; the final job" "$(cat "$FAKE/sbatch.log")" \
  "--parsable --array=2 $D3/slurm-array.sbatch | 1
--parsable --dependency=afterany:$(( $(cat "$FAKE/next") - 1 )) $D3/slurm-final.sbatch | "
out=$(SLURM_ARRAY_TASK_ID=2 PERFSCRIPT_RETRY_FAILED=1 bash "$D3/slurm-array.sbatch" 2>&1)
expect_contains "the retried task replays the failed cases" "$out" "(failed and timed-out ones included"

# 5. DispatchFFNCombine (torchrun) runs across every NPU of the task, never on one device's worker
# (its rows' EP Size is the default here: it shares the plan with the other operators)
mkdir -p dfc opp
for k in DispatchFFNCombine Add MatMulV2 RmsNorm; do cp "$SEED/$k.csv" dfc/; done
printf '#!/bin/bash\necho "${ASCEND_RT_VISIBLE_DEVICES:-} |$*" >> %q\nexec %q "$@"\n' "$TMP/visible.log" "$MSPROF" \
  > msprof-visible
chmod +x msprof-visible
export ASCEND_CUSTOM_OPP_PATH="$TMP/opp" LD_LIBRARY_PATH="$TMP/opp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mb --database-path dfc --msprof "$TMP/msprof-visible" --dispatch-ffn-combine-ep-size 32 --slurm --nodes 1 --npus-per-node 4 --run-id D >/dev/null 2>&1
out=$(SLURM_ARRAY_TASK_ID=1 bash dfc/.perfscript/runs/D/slurm-array.sbatch 2>&1)
expect_eq "the task with DispatchFFNCombine exits 0" "$?" "0"
expect_contains "it says where DispatchFFNCombine runs" "$out" "[RUN] devices 0,1,2,3: DispatchFFNCombine"
expect_eq "DispatchFFNCombine's msprof sees the task's 4 NPUs, and runs only it" \
  "$(grep -c '^0,1,2,3 |.* --ops DispatchFFNCombine$' visible.log)" "1"
expect_eq "the other operators run on one device each" "$(grep -c '^[0-3] |' visible.log)" "3"
expect_eq "no device worker gets DispatchFFNCombine" "$(grep '^[0-3] |' visible.log | grep -c DispatchFFNCombine)" "0"
out=$(bash dfc/.perfscript/runs/D/slurm-final.sbatch 2>&1)
expect_eq "its write-back exits 0" "$?" "0"
expect_contains "DispatchFFNCombine written back" "$out" "dfc/DispatchFFNCombine.csv"
unset ASCEND_CUSTOM_OPP_PATH

# 6. errors
out=$(FAKE_SBATCH_FAIL=1 mb --database-path db --slurm --run-id E 2>&1); rc=$?
expect_eq "a failing sbatch fails the run" "$rc" "1"
expect_contains "with sbatch's own message" "$out" "Invalid partition name specified"
mb --database-path db --run-id L >/dev/null 2>&1
out=$("$PS_BIN" "$RUNS" --database-path db --run L --resume 2>&1)
expect_contains "a run without Slurm is resumed by microbench.lua" "$out" "was not submitted with --slurm"
out=$("$PS_BIN" "$RUNS" --database-path db --run nosuch 2>&1)
expect_contains "an unknown run" "$out" "no run nosuch"
out=$("$PS_BIN" "$RUNS" --database-path db --retry-failed 2>&1)
expect_contains "--retry-failed needs --resume" "$out" "--retry-failed needs --resume"
out=$(mb --database-path db --nodes 2 2>&1)
expect_contains "--nodes needs --slurm" "$out" "--nodes needs --slurm"
out=$(mb --database-path db --slurm --devices 0,1 2>&1)
expect_contains "--devices is the jobs' own" "$out" "--devices cannot be combined with --slurm"
out=$(mb --database-path db --slurm --run-id 'a b' 2>&1)
expect_contains "a run id follows the journal's rule" "$out" "a run id is letters, digits"
out=$(mb --database-path db --slurm --sbatch-arg='--comment=a b' 2>&1)
expect_contains "an #SBATCH line cannot hold blanks" "$out" "an #SBATCH line cannot hold blanks"
expect_eq "a refused submission leaves no run directory" "$(ls db/.perfscript/runs | tr '\n' ' ')" "E L R "

finish
