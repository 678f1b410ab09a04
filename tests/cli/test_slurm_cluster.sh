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
C="$TMP/cluster"                   # munged checks that every directory above its socket is searchable
mkdir -p "$C/state" "$C/spool" "$C/munge"
chmod 755 "$TMP" "$C" "$C/munge"
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
trap 'stop_cluster; rm -rf "${TMP:?}"' EXIT

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
GresTypes=npu
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 Gres=npu:8 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
# the NPUs are only counted: no device files, no plugin
echo "NodeName=localhost Name=npu Count=8 Flags=CountOnly" > "$C/gres.conf"

env "$MARK" munged -F --key-file="$C/munge/munge.key" --socket="$C/munge/munge.sock" \
  --pid-file="$C/munge/munged.pid" --log-file="$C/munge/munged.log" --seed-file="$C/munge/munged.seed" >"$C/munged.out" 2>&1 &
pids+=($!)
for ((i = 0; i < 50; i++)); do
  munge -n -S "$C/munge/munge.sock" 2>/dev/null | unmunge -S "$C/munge/munge.sock" >/dev/null 2>&1 && break
  sleep 0.1
done
((i < 50)) || { tail -n 3 "$C/munge/munged.log"; skip "munged did not start (log above)"; }
env "$MARK" slurmctld -D -f "$C/slurm.conf" >"$C/slurmctld.out" 2>&1 &
pids+=($!)
env "$MARK" slurmd -D -f "$C/slurm.conf" -N localhost >"$C/slurmd.out" 2>&1 &
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

finish
