#!/usr/bin/env bash
# lua/perfscript/replay/executor.py without an NPU: plan validation and the torchrun command of
# DispatchFFNCombine's expert parallelism (the Python original's examples D31, D32).
source "$(dirname "$0")/lib.sh" || exit 1
command -v python3 >/dev/null || { echo "SKIP: python3 absent"; exit 77; }
out=$(cd "$SRC/lua/perfscript/replay" && python3 - <<'PY' 2>&1
import executor as e
cmd, env = e.torchrun_command(["python3", "executor.py", "plan.jsonl", "--worker", "DispatchFFNCombine"],
                              {"ep_size": 2, "nproc_per_node": 2})
assert "torch.distributed.run" in cmd, cmd
assert any(a.startswith("--master_port=") for a in cmd), cmd
assert env["_DFC_AUTO_TORCHRUN"] == "1"
cmd, _ = e.torchrun_command(["python3", "x.py"], {"ep_size": 32, "nproc_per_node": 16, "nnodes": 2,
                                                  "node_rank": 1, "master_addr": "host0", "master_port": 29501})
assert cmd[3:8] == ["--nproc_per_node=16", "--nnodes=2", "--node_rank=1", "--master_addr=host0",
                    "--master_port=29501"], cmd
for bad, msg in [({"ep_size": 32, "nproc_per_node": 16, "nnodes": 2}, "--dispatch-ffn-combine-master-port"),
                 ({"ep_size": 16, "nproc_per_node": 4}, "world size mismatch")]:
    try:
        e.torchrun_command(["python3", "x.py"], bad)
        raise SystemExit("no error for %r" % bad)
    except e.PlanError as err:
        assert msg in str(err), err
print("torchrun OK")
PY
)
expect_contains "torchrun command (D31, D32)" "$out" "torchrun OK"
expect_contains "torchrun announced" "$out" "[Auto EP] Launching torchrun world_size=2"
printf '{"kind":"perfscript-replay-plan","version":1,"cases":1}\n{"id":"X:2","op":"X","api":"os.system","args":[]}\n' > "$TMP/evil.jsonl"
out=$(python3 "$SRC/lua/perfscript/replay/executor.py" "$TMP/evil.jsonl" --check 2>&1); rc=$?
expect_eq "a non-torch API path is refused" "$rc" "2"
expect_contains "refusal names the API" "$out" "unsupported api path 'os.system'"
printf 'not json\n' > "$TMP/junk.jsonl"
out=$(python3 "$SRC/lua/perfscript/replay/executor.py" "$TMP/junk.jsonl" --check 2>&1); rc=$?
expect_eq "junk is refused" "$rc" "2"
expect_contains "junk error names the line" "$out" "junk.jsonl:1:"
finish
