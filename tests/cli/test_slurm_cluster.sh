#!/usr/bin/env bash
# microbench.lua --slurm on a real one-node Slurm cluster that this script starts and stops:
# munged with a generated key, slurmctld and slurmd with a generated slurm.conf (NodeName=localhost,
# Gres=npu:8 counted only, no cgroups), everything under the test's scratch directory on ports
# nothing else uses. A trivial job array with --gres=npu:N goes through first, then a collection
# with the stand-in msprof over 2 "nodes" (2 array tasks on the one node) and its final
# write-back job; then recipes/runs.lua. Skips (77) with the reason where the daemons cannot start:
# not root, no slurm-wlm or munge (apt-get install slurm-wlm munge), or a daemon that does not
# come up. Every daemon and job process it started is gone when it ends, however it ends.
source "$(dirname "$0")/lib.sh" || exit 1
export PERFSCRIPT="$PS_BIN" PERFSCRIPT_LUA_DIR="$SRC/lua"

skip() { echo "SKIP: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "the Slurm daemons need root (slurmd starts jobs as their user)"
for b in munged munge slurmctld slurmd sbatch squeue scontrol scancel; do
  command -v "$b" >/dev/null || skip "no $b (apt-get install slurm-wlm munge)"
done

# ---- the cluster ------------------------------------------------------------------------------
# munged wants every directory above its socket searchable by all: the cluster lives in /tmp
C=$(mktemp -d /tmp/cli.slurm.XXXXXX)
[[ -n $C && -d $C && $C == /tmp/cli.slurm.* ]] || { echo "no cluster directory" >&2; exit 1; }
mkdir -p "$C/state" "$C/spool" "$C/munge"
chmod 755 "$C" "$C/munge"
MARK="PS_SLURM_TEST=$C"            # every daemon and job process carries it: the cleanup finds them
export SLURM_CONF="$C/slurm.conf"
pids=()
# a client call never hangs the test (a controller that is not up makes them retry for long)
cl() { timeout 10 "$@"; }

# Processes started here, the jobs' own included (they inherit the marker), killed by id.
marked_pids() {
  local e p
  for e in /proc/[0-9]*/environ; do
    p=${e#/proc/}; p=${p%/environ}
    [[ $p != "$$" ]] && { tr '\0' '\n' < "$e"; } 2>/dev/null | grep -qxF "$MARK" && echo "$p"
  done
}
stop_cluster() {
  local ids p i
  if [[ -n $up ]]; then
    ids=$(timeout 5 squeue -h -o %A 2>/dev/null | sort -u)
    [[ -n $ids ]] && timeout 5 scancel $ids 2>/dev/null
    for ((i = 0; i < 50; i++)); do [[ -z $(timeout 2 squeue -h 2>/dev/null) ]] && break; sleep 0.1; done
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  for p in $(marked_pids); do kill -9 "$p" 2>/dev/null; done
  pids=()
}
up=
trap 'stop_cluster; rm -rf "${C:?}" "${TMP:?}"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM
# a daemon dies with this script even when it is killed outright (setpriv: util-linux)
PDEATH=(); setpriv --pdeathsig KILL true 2>/dev/null && PDEATH=(setpriv --pdeathsig KILL)
# and a watchdog outside its process group (a ctest timeout kills the group) then kills the jobs'
# processes that slurmd left (slurmstepd, the job's own) and removes the scratch directory
SETSID=(); command -v setsid >/dev/null && SETSID=(setsid)
"${SETSID[@]}" bash -c '
  while kill -0 "$1" 2>/dev/null; do sleep 1; done
  for e in /proc/[0-9]*/environ; do
    p=${e#/proc/}; p=${p%/environ}
    { tr "\0" "\n" < "$e"; } 2>/dev/null | grep -qxF "$2" && kill -9 "$p" 2>/dev/null
  done
  for d in "${@:3}"; do [[ $d == */cli.* ]] && rm -rf "$d"; done' watchdog "$$" "$MARK" "$C" "$TMP" </dev/null >/dev/null 2>&1 &

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
base=$((20000 + ($$ * 7) % 30000))
while ! port_free "$base" || ! port_free $((base + 1)); do base=$((base + 2)); done

dd if=/dev/urandom of="$C/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$C/munge/munge.key"
cat > "$C/slurm.conf" <<EOF
ClusterName=perfscripttest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$C/munge/munge.sock
StateSaveLocation=$C/state
SlurmdSpoolDir=$C/spool
SlurmctldPidFile=$C/slurmctld.pid
SlurmdPidFile=$C/slurmd.pid
SlurmctldLogFile=$C/slurmctld.log
SlurmdLogFile=$C/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
ReturnToService=2
MinJobAge=300
MessageTimeout=5
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
GresTypes=npu
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 Gres=npu:8 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
# the NPUs are only counted: no device files, no plugin
echo "NodeName=localhost Name=npu Count=8 Flags=CountOnly" > "$C/gres.conf"

env "$MARK" "${PDEATH[@]}" munged -F --key-file="$C/munge/munge.key" --socket="$C/munge/munge.sock" \
  --pid-file="$C/munge/munged.pid" --log-file="$C/munge/munged.log" --seed-file="$C/munge/munged.seed" >"$C/munged.out" 2>&1 &
pids+=($!)
for ((i = 0; i < 50; i++)); do
  munge -n -S "$C/munge/munge.sock" 2>/dev/null | unmunge -S "$C/munge/munge.sock" >/dev/null 2>&1 && break
  sleep 0.1
done
((i < 50)) || { tail -n 3 "$C/munge/munged.log"; skip "munged did not start (log above)"; }
env "$MARK" "${PDEATH[@]}" slurmctld -D -f "$C/slurm.conf" >"$C/slurmctld.out" 2>&1 &
pids+=($!)
env "$MARK" "${PDEATH[@]}" slurmd -D -f "$C/slurm.conf" -N localhost >"$C/slurmd.out" 2>&1 &
pids+=($!)
for ((i = 0; i < 100; i++)); do
  if [[ $(timeout 2 sinfo -h -N -o '%T %G' 2>/dev/null) == "idle npu:8"* ]]; then up=1; break; fi
  sleep 0.1
done
if [[ -z $up ]]; then
  for f in munge/munged.log slurmctld.log slurmd.log slurmctld.out slurmd.out; do
    [[ -s $C/$f ]] && { echo "== $f"; tail -n 5 "$C/$f"; }
  done
  skip "the one-node Slurm cluster did not come up in 10 s (logs above)"
fi
ok "one-node cluster up: $(cl sinfo -h -N -o '%N %T %G')"

# wait_jobs ID...: until none of them is pending or running (30 s at most)
wait_jobs() {
  local i
  for ((i = 0; i < 300; i++)); do
    [[ -z $(cl squeue -h -j "$(IFS=,; echo "$*")" 2>/dev/null) ]] && return 0
    sleep 0.1
  done
  return 1
}

# ---- 1. a trivial array with generic resources and a dependent job -----------------------------
cat > "$C/trivial.sh" <<'EOF'
#!/bin/bash
#SBATCH --gres=npu:4
echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID"
EOF
arr=$(cl sbatch --parsable --array=0-1 -o "$C/trivial-%a.out" "$C/trivial.sh")
fin=$(cl sbatch --parsable --dependency=afterany:"$arr" -o "$C/trivial-final.out" --wrap 'echo final')
wait_jobs "$arr" "$fin" && ok "trivial array and dependent job ran" || not_ok "trivial jobs did not end in 30 s"
expect_eq "array task 0 output" "$(cat "$C/trivial-0.out" 2>&1)" "task 0 of $arr"
expect_eq "array task 1 output" "$(cat "$C/trivial-1.out" 2>&1)" "task 1 of $arr"
expect_eq "dependent job output" "$(cat "$C/trivial-final.out" 2>&1)" "final"
expect_contains "the array asked for npu:4" "$(cl scontrol show job "${arr}_0" 2>&1)" "npu:4"

# ---- 2. microbench.lua --slurm over 2 "nodes" of 4 NPUs on a small copy of the seed database ----
MSPROF="$SRC/tests/fixtures/microbench/msprof"
MB="$SRC/recipes/microbench.lua"
RUNS="$SRC/recipes/runs.lua"
SEED="$SRC/data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
KERNELS=(MatMulV2 BatchMatMulV2 Add RmsNorm SwiGlu DynamicQuant)
small_db() {  # small_db DIR: the seed's rows of a few kernels
  mkdir -p "$1"; local k
  for k in "${KERNELS[@]}"; do cp "$SEED/$k.csv" "$1/"; done
}
same_db() {  # same_db A B: the CSV files byte for byte (reports and run directories aside)
  local f d=""
  for f in "$1"/*.csv; do cmp -s "$f" "$2/${f##*/}" || d="$d ${f##*/}"; done
  echo "${d:-same}"
}
journal_of() { cat "$1"/.perfscript/runs/"$2"/journal*.jsonl 2>/dev/null; }
done_twice() { journal_of "$@" | grep '"ev":"done"' | grep -o '"case":"[^"]*"' | sort | uniq -d | wc -l; }
# the ids of the last "[SLURM] array job A (tasks ...), final job F (...)" line
jobs_of() { sed -n 's/^\[SLURM\] array job \([0-9]*\) .*final job \([0-9]*\) .*/\1 \2/p' | tail -n 1; }
mkdir -p "$TMP/work"
cd "$TMP" || exit 1
small_db seed; small_db ref; small_db db
# the reference: the same shards run by hand, then written back (the stand-in's durations
# depend on a case's place in its msprof run, so a run without shards would differ)
for k in 1 2; do
  "$PS_BIN" "$MB" --database-path ref --msprof "$MSPROF" --work-dir "$TMP/work" --devices 0,1,2,3 \
    --run-id H --shard "$k/2" --stage-only > "ref$k.out" 2>&1 || not_ok "reference shard $k" "$(cat "ref$k.out")"
done
"$PS_BIN" "$MB" --database-path ref --msprof "$MSPROF" --work-dir "$TMP/work" --resume H --writeback-only > ref.out 2>&1
expect_eq "reference run without Slurm exits 0" "$?" "0"
ncases=$(sed -n 's/^\[PLAN\] \([0-9]*\) case(s).*/\1/p' ref.out)
[[ ${ncases:-0} -ge 4 ]] && ok "the reference plans $ncases cases" || not_ok "reference plan" "$(cat ref.out)"
expect_eq "the reference wrote every file" "$(same_db seed ref)" " Add.csv BatchMatMulV2.csv DynamicQuant.csv MatMulV2.csv RmsNorm.csv SwiGlu.csv"

out=$("$PS_BIN" "$MB" --database-path db --msprof "$MSPROF" --work-dir "$TMP/work" --slurm-dry-run \
  --nodes 2 --npus-per-node 4 --run-id S1 2>&1)
expect_contains "dry run prints the array script" "$out" "#SBATCH --gres=npu:4"
expect_eq "dry run writes nothing" "$(ls -A db | grep -c '^.perfscript$')" "0"

out=$("$PS_BIN" "$MB" --database-path db --msprof "$MSPROF" --work-dir "$TMP/work" --slurm \
  --nodes 2 --npus-per-node 4 --run-id S1 2>&1); rc=$?
expect_eq "--slurm submits (exit 0)" "$rc" "0"
read -r arr fin <<<"$(jobs_of <<<"$out")"
[[ -n $arr && -n $fin ]] && ok "array job $arr and final job $fin submitted" || not_ok "job ids" "$out"
wait_jobs "$arr" "$fin" && ok "the run's jobs ended" || not_ok "the run's jobs did not end in 30 s" "$(cl squeue)"
R=db/.perfscript/runs/S1
expect_eq "the array tasks are told their shard and NPUs" \
  "$(grep -c -- '--devices 0,1,2,3 --run-id S1 --shard "${SLURM_ARRAY_TASK_ID:?}/2" --stage-only' "$R/slurm-array.sbatch")" "1"
expect_contains "the final job depended on the array" "$(cl scontrol show job "$fin")" "JobState=COMPLETED"
expect_eq "one output file per array task" "$(ls "$R"/slurm-"${arr}"_[12].out 2>/dev/null | wc -l)" "2"
expect_eq "the database got the values the run without Slurm wrote" "$(same_db ref db)" "same"
expect_eq "one journal per shard" "$(ls "$R" | grep -c '^journal-shard[12].jsonl$')" "2"
expect_eq "each case planned once over the shards" "$(journal_of db S1 | grep -c '"ev":"plan"')" "$ncases"
expect_eq "each case done once" "$(journal_of db S1 | grep -c '"ev":"done"') $(done_twice db S1)" "$ncases 0"
expect_eq "written back once, by the final job" "$(journal_of db S1 | grep -c '"ev":"written"')" "1"
expect_contains "the final job's summary" "$(cat "$R"/slurm-"$fin"-writeback.out)" \
  "[JOURNAL] run S1: $ncases case(s): $ncases done, 0 failed, 0 timed out, 0 left; written back 1 time(s)"
out=$("$PS_BIN" "$RUNS" --database-path db 2>&1)
echo "$out"
expect_contains "runs.lua lists the run" "$out" "| S1 "
out=$("$PS_BIN" "$RUNS" --database-path db --run S1 2>&1)
echo "$out"
expect_contains "runs.lua --run: the jobs" "$out" "submitted: array $arr (tasks 1-2) + final $fin"
out=$("$PS_BIN" "$RUNS" --database-path db --run S1 --resume 2>&1)
expect_contains "a finished run resubmits nothing" "$out" "every shard is finished and written back; nothing to submit"

# ---- 3. a node lost mid-run: only its shard is resubmitted ----------------------------------------
# the msprof of array task 2 kills its perfscript (a pre-empted node) while $TMP/break exists
printf '#!/bin/bash\nif [[ ${SLURM_ARRAY_TASK_ID:-} == 2 && -e %q ]]; then kill -9 $PPID; exit 1; fi\nexec %q "$@"\n' \
  "$TMP/break" "$MSPROF" > "$TMP/msprof-flaky"
chmod +x "$TMP/msprof-flaky"
small_db db2; touch "$TMP/break"
out=$("$PS_BIN" "$MB" --database-path db2 --msprof "$TMP/msprof-flaky" --work-dir "$TMP/work" --slurm \
  --nodes 2 --npus-per-node 4 --run-id S2 2>&1)
read -r arr fin <<<"$(jobs_of <<<"$out")"
wait_jobs "$arr" "$fin" && ok "the broken run's jobs ended" || not_ok "the broken run's jobs did not end"
out=$("$PS_BIN" "$RUNS" --database-path db2 --run S2 2>&1)
echo "$out"
expect_contains "runs.lua: shard 2 is unfinished" "$out" "| unfinished"
expect_contains "runs.lua: shard 1 is finished" "$out" "| finished"
expect_contains "runs.lua: shard 1's results written back" "$out" "Written back: 1"
rm -f "$TMP/break"
out=$("$PS_BIN" "$RUNS" --database-path db2 --run S2 --resume 2>&1); rc=$?
expect_eq "runs.lua --resume exits 0" "$rc" "0"
expect_contains "only shard 2 is resubmitted" "$out" "resubmitting shard(s) 2 of 2"
read -r arr2 fin2 <<<"$(jobs_of <<<"$out")"
wait_jobs "$arr2" "$fin2" && ok "the resubmitted jobs ended" || not_ok "the resubmitted jobs did not end"
expect_eq "the resubmitted array ran task 2 only" "$(cd db2/.perfscript/runs/S2 && ls slurm-"${arr2}"_*.out)" "slurm-${arr2}_2.out"
expect_eq "the resumed database equals the uninterrupted one" "$(same_db ref db2)" "same"
expect_eq "each case done once over both submissions" "$(journal_of db2 S2 | grep -c '"ev":"done"') $(done_twice db2 S2)" "$ncases 0"
out=$("$PS_BIN" "$RUNS" --database-path db2 --run S2 2>&1)
echo "$out"
expect_contains "runs.lua: every case done" "$out" "| all   | $ncases     | $ncases    | 0      | 0         | 0    |"
expect_contains "runs.lua: written back twice" "$out" "Written back: 2"

finish
