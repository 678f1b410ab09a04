#!/usr/bin/env bash
# Resume of recipes/microbench.lua runs (the run journal under <db>/.perfscript/runs/<id>/):
# kill -9 at random points (while replaying, between staging and the journal, in the
# write-back, after the commit), then --resume completes with exactly the missing cases
# measured once, the database byte-identical to an uninterrupted run, and the journal's
# counts adding up; the refusals (version, database path, plan inputs, device) and --force;
# --retry-failed; shards staged apart and written back once (--stage-only, --writeback-only).
source "$(dirname "$0")/lib.sh" || exit 1
export PERFSCRIPT="$PS_BIN" PERFSCRIPT_LUA_DIR="$SRC/lua"
MSPROF="$SRC/tests/fixtures/microbench/msprof"
MB="$SRC/recipes/microbench.lua"
HEADER='OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us),Profiling Average Duration(us)'
mkdir -p "$TMP/work"

make_db() {  # make_db DIR: 9 replayable rows of 3 operators
  mkdir -p "$1"
  cat > "$1/MatMulV2.csv" <<EOF
$HEADER
dynamic,AI_CORE,"""1024,1024;1024,1024""",FLOAT16;FLOAT16,ND;ND,"""1024,1024""",FLOAT16,ND,,
dynamic,AI_CORE,"""24,512;4096,512""",DT_BF16;DT_BF16,ND;ND,"""24,4096""",DT_BF16,ND,,10.0
dynamic,AI_CORE,"""64,512;4096,512""",DT_BF16;DT_BF16,ND;ND,"""64,4096""",DT_BF16,ND,,
EOF
  cat > "$1/Add.csv" <<EOF
$HEADER
dynamic,AI_VECTOR_CORE,"""1024,1024;1024,1024""",FLOAT16;FLOAT16,ND;ND,"""1024,1024""",FLOAT16,ND,5.0,
dynamic,AI_VECTOR_CORE,"""8,8;8,8""",DT_BF16;DT_BF16,ND;ND,"""8,8""",DT_BF16,ND,,
dynamic,AI_VECTOR_CORE,"""16,8;16,8""",DT_BF16;DT_BF16,ND;ND,"""16,8""",DT_BF16,ND,,
EOF
  cat > "$1/RmsNorm.csv" <<EOF
$HEADER
dynamic,AI_VECTOR_CORE,"""128,4096;4096""",DT_BF16;DT_BF16,ND;ND,"""128,4096;128,1""",DT_BF16;FLOAT,ND;ND,,
dynamic,AI_VECTOR_CORE,"""256,4096;4096""",DT_BF16;DT_BF16,ND;ND,"""256,4096;256,1""",DT_BF16;FLOAT,ND;ND,,
dynamic,AI_VECTOR_CORE,"""128,4096;;4096""",DT_BF16;DT_BF16;DT_BF16,ND;ND;ND,"""128,4096""",DT_BF16,ND,,
EOF
}
NCASES=9
SRCDB="$TMP/src"; make_db "$SRCDB"
sim() { "$PS_BIN" "$MB" --simulate --database-path "$SRCDB" --work-dir "$TMP/work" "$@"; }
same_db() {  # same_db A B: the CSV files byte for byte (reports and the run directory aside)
  local f d=""
  for f in "$1"/*.csv; do cmp -s "$f" "$2/${f##*/}" || d="$d ${f##*/}"; done
  [[ $(ls "$1"/*.csv | wc -l) == $(ls "$2"/*.csv | wc -l) ]] || d="$d (file count)"
  echo "${d:-same}"
}
# done_marks DB: the done records of the newest run (each case must have exactly one)
run_dir() { ls -td "$1"/.perfscript/runs/*/ | head -1; }
done_marks() { cat "$(run_dir "$1")"/journal*.jsonl | grep -c '"ev":"done"'; }
dup_marks() { cat "$(run_dir "$1")"/journal*.jsonl | grep '"ev":"done"' | grep -o '"case":"[^"]*"' | sort | uniq -d | wc -l; }

# 0. The uninterrupted reference (one batch) and the same in batches of one case: equal.
out=$(sim --output "$TMP/ref" 2>&1); rc=$?
expect_eq "reference run exits 0" "$rc" "0"
expect_contains "the run has a journal" "$out" "[RUN] run "
expect_contains "its summary" "$out" "$NCASES case(s): $NCASES done, 0 failed, 0 timed out, 0 left; written back 1 time(s)"
sim --output "$TMP/ref1" --batch-size 1 >/dev/null 2>&1
expect_eq "batches of one case write the same database as one batch" "$(same_db "$TMP/ref" "$TMP/ref1")" "same"
expect_eq "run.json records the run" "$(grep -c '"plan_hash"' "$(run_dir "$TMP/ref")"/run.json)" "1"
expect_eq "no staged file looks like a database CSV" "$(find "$TMP/ref/.perfscript" -name '*.csv' | wc -l)" "0"

# 1. kill -9 at random points, then --resume last: the same database, each case measured once.
crash_then_resume() {  # NAME POINT
  local name=$1 point=$2 db="$TMP/c_$1"
  out=$(PERFSCRIPT_CRASH_AT=$point sim --output "$db" --batch-size 2 2>&1); rc=$?
  expect_eq "$name: killed (137)" "$rc" "137"
  out=$(sim --output "$db" --batch-size 2 --resume last 2>&1); rc=$?
  expect_eq "$name: --resume exits 0" "$rc" "0"
  expect_contains "$name: resume summary" "$out" "[RESUME] run "
  expect_contains "$name: every case done at the end" "$out" "$NCASES case(s): $NCASES done, 0 failed, 0 timed out, 0 left"
  expect_eq "$name: the database equals the uninterrupted run's" "$(same_db "$TMP/ref" "$db")" "same"
  expect_eq "$name: each case measured (marked done) once" "$(done_marks "$db") $(dup_marks "$db")" "$NCASES 0"
  RESUME_OUT=$out
}
# batches of 2 cases: 5 batches; the nth pass of a point is random
n=$((RANDOM % 5 + 1))
crash_then_resume "staged-$n" "staged:$n"   # results staged, journal not yet told: measured again
expect_contains "staged-$n: the batch staged without marks is measured again" "$RESUME_OUT" \
  "case(s) to replay"
n=$((RANDOM % 4 + 1))
crash_then_resume "marked-$n" "marked:$n"   # between batches
done_before=$((n * 2))
expect_contains "marked-$n: replays exactly the missing cases" "$RESUME_OUT" \
  "$((NCASES - done_before)) case(s) to replay"
expect_contains "marked-$n: the closing summary" "$RESUME_OUT" \
  "$done_before case(s) done before this resume, $((NCASES - done_before)) replayed by it (left)"
crash_then_resume "writeback" "writeback-staged"   # files staged by the write-back, not committed
expect_contains "writeback: nothing measured again" "$RESUME_OUT" "0 case(s) to replay"
crash_then_resume "committed" "committed"           # written, the journal not yet told
expect_contains "committed: nothing measured again" "$RESUME_OUT" "0 case(s) to replay"

# a real kill -9 of the whole run while the stand-in msprof replays (its timing is random)
if command -v setsid >/dev/null; then
  db="$TMP/k9"
  MSPROF_STANDIN_SLEEP=0.3 setsid "$PS_BIN" "$MB" --database-path "$SRCDB" --output "$db" --msprof "$MSPROF" \
    --work-dir "$TMP/work" --batch-size 1 >"$TMP/k9.log" 2>&1 &
  pid=$!
  sleep "$(( RANDOM % 3 + 1 )).$(( RANDOM % 10 ))"
  kill -9 -- "-$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  resume=(--resume last)
  if ! ls "$db"/.perfscript/runs/*/run.json >/dev/null 2>&1; then
    echo "# the kill came before the run had a journal (a loaded machine): a fresh run instead"
    resume=()
    before=0
  else
    before=$(cat "$(run_dir "$db")"/journal*.jsonl 2>/dev/null | grep -c '"ev":"done"')
  fi
  out=$("$PS_BIN" "$MB" --database-path "$SRCDB" --output "$db" --msprof "$MSPROF" --work-dir "$TMP/work" \
    --batch-size 1 "${resume[@]}" 2>&1); rc=$?
  expect_eq "kill -9 during the replay: --resume exits 0" "$rc" "0"
  [[ ${#resume[@]} -eq 0 ]] ||
    expect_contains "kill -9: replays what was not done ($before done before)" "$out" "$((NCASES - before)) case(s) to replay"
  expect_contains "kill -9: all done" "$out" "$NCASES case(s): $NCASES done, 0 failed, 0 timed out, 0 left"
  expect_eq "kill -9: each case measured once" "$(done_marks "$db") $(dup_marks "$db")" "$NCASES 0"
  expect_eq "kill -9: no row left without a duration" "$(grep -c ',,$' "$db"/*.csv | awk -F: '{s += $2} END {print s}')" "0"
else
  echo "SKIP: setsid is absent (the real kill -9 part)"
fi

# 2. Refusals: what differs is said; --force resumes anyway.
db="$TMP/refuse"
PERFSCRIPT_CRASH_AT=marked:1 sim --output "$db" --batch-size 2 >/dev/null 2>&1
out=$(sim --output "$db" --resume last --repeat-count 2 2>&1); rc=$?
expect_eq "changed plan inputs: refused" "$rc" "1"
expect_contains "says the plan inputs differ" "$out" "the plan inputs differ"
expect_contains "names --force" "$out" "--force"
rd=$(run_dir "$db")
cp "$rd/run.json" "$TMP/run.json.orig"
sed -i 's/"version":"[^"]*"/"version":"0.0.1"/' "$rd/run.json"
out=$(sim --output "$db" --resume last 2>&1); rc=$?
expect_eq "another perfscript version: refused" "$rc" "1"
expect_contains "says the version differs" "$out" "the perfscript version differs (run: 0.0.1, now:"
cp "$TMP/run.json.orig" "$rd/run.json"
sed -i 's/"device":"[^"]*"/"device":"910B3"/' "$rd/run.json"
out=$(sim --output "$db" --resume last 2>&1); rc=$?
expect_eq "another device: refused" "$rc" "1"
expect_contains "says the device differs" "$out" "the device differs (run: 910B3"
cp "$TMP/run.json.orig" "$rd/run.json"
mv "$db" "$TMP/moved"
out=$(sim --output "$TMP/moved" --resume last 2>&1); rc=$?
expect_eq "another database path: refused" "$rc" "1"
expect_contains "says the database path differs" "$out" "the database path differs"
out=$(sim --output "$TMP/moved" --resume last --force 2>&1); rc=$?
expect_eq "--force resumes" "$rc" "0"
expect_contains "--force says what differs" "$out" "[RESUME] --force: the database path differs"
expect_eq "--force completes the database" "$(same_db "$TMP/ref" "$TMP/moved")" "same"
out=$(sim --output "$TMP/none" --resume nosuchrun 2>&1); rc=$?
expect_eq "an unknown run: refused" "$rc" "1"
expect_contains "says there is no such run" "$out" "no run nosuchrun"
out=$(sim --output "$TMP/none" --writeback-only 2>&1); rc=$?
expect_contains "--writeback-only needs --resume" "$out" "--writeback-only needs --resume"
out=$(sim --output "$TMP/none" --run-id ../x 2>&1); rc=$?
expect_contains "a bad --run-id is refused" "$out" "--run-id ../x: a run id is"
out=$(sim --output "$TMP/none" --shard 3/2 2>&1); rc=$?
expect_contains "a bad --shard is refused" "$out" "--shard 3/2: expected K/N"

# 3. --retry-failed: failures stay failed on a plain resume, are replayed with the flag.
db="$TMP/retry"
out=$(MSPROF_STANDIN_FAIL_OPS=Add "$PS_BIN" "$MB" --database-path "$SRCDB" --output "$db" --msprof "$MSPROF" \
  --work-dir "$TMP/work" 2>&1); rc=$?
expect_eq "a failing operator: exit 3" "$rc" "3"
expect_contains "its cases failed in the journal" "$out" "$NCASES case(s): 6 done, 3 failed, 0 timed out, 0 left"
out=$("$PS_BIN" "$MB" --database-path "$SRCDB" --output "$db" --msprof "$MSPROF" --work-dir "$TMP/work" \
  --resume last 2>&1); rc=$?
expect_contains "a plain resume replays no failure" "$out" "0 case(s) to replay"
out=$("$PS_BIN" "$MB" --database-path "$SRCDB" --output "$db" --msprof "$MSPROF" --work-dir "$TMP/work" \
  --resume last --retry-failed 2>&1); rc=$?
expect_eq "--retry-failed exits 0" "$rc" "0"
expect_contains "--retry-failed replays the failures" "$out" "3 case(s) to replay"
expect_contains "--retry-failed: all done" "$out" "$NCASES case(s): $NCASES done, 0 failed, 0 timed out, 0 left"
expect_eq "--retry-failed: the Add rows are filled" "$(grep -c ',,$' "$db/Add.csv")" "0"

# 4. Shards staged apart (the Slurm array tasks), one write-back (the final job).
db="$TMP/shards"
for k in 1 2 3; do
  out=$(sim --output "$db" --run-id R1 --shard "$k/3" --stage-only 2>&1); rc=$?
  expect_eq "shard $k/3 stages (exit 0)" "$rc" "0"
done
expect_contains "the last shard's summary counts every shard" "$out" "shard 3: 3 case(s): 3 done"
expect_eq "stage-only writes no database file" "$(cmp -s "$SRCDB/Add.csv" "$db/Add.csv" && echo same)" "same"
expect_eq "one journal file per shard" "$(ls "$db/.perfscript/runs/R1/" | grep -c '^journal-shard[123].jsonl$')" "3"
out=$(sim --output "$db" --run-id R1 --shard 2/3 --stage-only 2>&1)
expect_contains "a shard run again replays nothing" "$out" "0 case(s) to replay in shard 2/3"
out=$(sim --output "$db" --resume R1 --writeback-only 2>&1); rc=$?
expect_eq "--writeback-only exits 0" "$rc" "0"
expect_eq "shards written back: the uninterrupted run's database" "$(same_db "$TMP/ref" "$db")" "same"
expect_eq "each case measured once over the shards" "$(done_marks "$db") $(dup_marks "$db")" "$NCASES 0"

# 5. A shard that never started: the write-back journals its cases under that shard, not shard 1.
db="$TMP/lost"
for k in 1 3; do sim --output "$db" --run-id R2 --shard "$k/3" --stage-only >/dev/null 2>&1; done
out=$(sim --output "$db" --resume R2 --writeback-only 2>&1); rc=$?
expect_eq "a shard lost: --writeback-only exits 0" "$rc" "0"
# the closing summary (the last lines that name each shard)
expect_contains "shard 1 counts only its own cases" "$(grep 'shard 1:' <<<"$out" | tail -n 1)" \
  "shard 1: 3 case(s): 3 done, 0 failed, 0 timed out, 0 left"
expect_contains "the lost shard's cases count under it" "$(grep 'shard 2:' <<<"$out" | tail -n 1)" \
  "shard 2: 3 case(s): 0 done, 0 failed, 0 timed out, 3 left"
expect_eq "the write-back planned them with their shard" \
  "$(grep -c '"shard":2' "$db/.perfscript/runs/R2/journal.jsonl")" "3"

# 6. A write-back-only resume measures nothing: another device, CANN or torch does not refuse it
# (the Slurm final job may land on a node without npu-smi); the version and database path do.
db="$TMP/wbonly"
for k in 1 2; do sim --output "$db" --run-id W --shard "$k/2" --stage-only >/dev/null 2>&1; done
rd="$db/.perfscript/runs/W"
cp "$rd/run.json" "$TMP/run.json.w"
sed -i 's/"version":"[^"]*"/"version":"0.0.1"/' "$rd/run.json"
out=$(sim --output "$db" --resume W --writeback-only 2>&1); rc=$?
expect_eq "--writeback-only, another perfscript version: refused" "$rc" "1"
expect_contains "says the version differs" "$out" "the perfscript version differs (run: 0.0.1, now:"
expect_contains "says what a write-back-only resume compares" "$out" \
  "compares the perfscript version, the database path and the plan inputs, not the device, CANN or torch"
cp "$TMP/run.json.w" "$rd/run.json"
sed -i 's/"device":"[^"]*"/"device":"910B3"/; s/"cann":"[^"]*"/"cann":"8.5.RC1"/; s/"torch":"[^"]*"/"torch":"2.9.0"/' "$rd/run.json"
out=$(sim --output "$db" --resume W --writeback-only 2>&1); rc=$?
expect_eq "--writeback-only, another device / CANN / torch: written back (exit 0)" "$rc" "0"
expect_not_contains "the measuring identity is not compared" "$out" "differs"
expect_eq "the shards written back: the uninterrupted run's database" "$(same_db "$TMP/ref" "$db")" "same"
expect_eq "the provenance names the device that measured (the run's), not the write-back's" \
  "$(grep -c '"device":"910B3"' "$db/.perfscript/provenance.jsonl")" "$NCASES"
out=$(sim --output "$db" --resume W 2>&1); rc=$?
expect_eq "a resume that measures still compares the device: refused" "$rc" "1"
expect_contains "it says the device differs" "$out" "the device differs (run: 910B3"

finish
