#!/usr/bin/env bash
# recipes/insight_trace.lua end to end with the stand-ins of tests/fixtures/insight: the
# generated host runner compiled with g++ against the stand-in ACL header and its 50-slot args
# array checked byte for byte (expected bytes computed here with Python's struct); the ptoas
# symbol found with nm -D and c++filt; a seed-database row through build, msprof op simulator
# (stand-in) collect and export, the package check and the summary; the failures (spec errors,
# a failed collect, an incomplete package, a timeout) with the workspace kept.
# Skipped (exit 77) without g++, cmake, nm, c++filt or python3.
source "$(dirname "$0")/lib.sh" || exit 1
for tool in g++ cmake nm c++filt python3; do
  if ! command -v "$tool" >/dev/null; then echo "SKIP: $tool is not installed"; exit 77; fi
done
R=$SRC/recipes/insight_trace.lua
FX=$SRC/tests/fixtures/insight
SEED=$SRC/data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5
cd "$TMP"
g++ -shared -fPIC -o libkernel.so "$FX/kernel_standin.cpp" || { not_ok "stand-in kernel library builds"; finish; exit 1; }

out=$("$PS_BIN" "$R" --help 2>&1)
for flag in --kernel --arg-spec --from-db --row --output --backend --kernel-lib --entry --msprof --timeout --generate-only; do
  expect_contains "--help lists $flag" "$out" "$flag"
done

# --- the args array, byte for byte --------------------------------------------------------
cat > spec.json <<'EOF'
{"kernel": "demo", "block_dim": 3, "args": [
  {"kind": "tensor", "index": 4, "name": "q", "dtype": "DT_BF16", "shape": [3, 5], "role": "input"},
  {"kind": "scalar", "index": 0, "name": "scale", "dtype": "FLOAT32", "value": 0.088388, "pack_mode": "bits"},
  {"kind": "scalar", "index": 1, "name": "neg", "dtype": "INT32", "value": -7},
  {"kind": "scalar", "index": 2, "name": "eps", "dtype": "FLOAT32_BITS", "value": -1e-6},
  {"kind": "tensor", "index": 9, "name": "k", "dtype": "INT8", "shape": [1000], "role": "input"},
  {"kind": "scalar", "index": 10, "name": "flag", "dtype": "BOOL", "value": true},
  {"kind": "scalar", "index": 11, "name": "big", "dtype": "INT64", "value": 1099511627776},
  {"kind": "tensor", "index": 49, "name": "out", "dtype": "FLOAT", "shape": [2, 64], "role": "output"}
]}
EOF
"$PS_BIN" "$R" --kernel demo --arg-spec spec.json --output ws_bytes --generate-only >gen.out 2>gen.err
expect_eq "generate-only exits 0" "$?" 0
expect_contains "writes are reported" "$(cat gen.err)" "created ws_bytes/host_runner.cpp"
expect_contains "the next steps are printed" "$(cat gen.out)" "op simulator --output=ws_bytes/collect"
if g++ -std=c++17 -Wall -Wextra -Werror -I "$FX" -o runner ws_bytes/host_runner.cpp -ldl 2>cc.err; then
  ok "generated host runner compiles with g++ (-Wall -Wextra -Werror) against the stand-in runtime"
else
  not_ok "generated host runner compiles" "$(cat cc.err)"
fi
INSIGHT_STANDIN_DUMP=$TMP/args.bin ./runner "$TMP/libkernel.so" replay_entry >run.out 2>&1
expect_eq "runner exits 0" "$?" 0
expect_contains "runner says it launched" "$(cat run.out)" "replay_entry launched on 3 block(s)"
python3 - >expected.bin <<'EOF'
import struct, sys
# independent of the Lua packer: struct's IEEE-754 single, two's complement int64, and the
# stand-in runtime's allocation rule (each buffer at the next multiple of 512 bytes, in slot order)
slots = [0] * 50
slots[0] = struct.unpack("<I", struct.pack("<f", 0.088388))[0]
slots[1] = -7
slots[2] = struct.unpack("<I", struct.pack("<f", -1e-6))[0]
slots[10] = 1
slots[11] = 1 << 40
offset, tag = 0, 1 << 62
for index, nbytes in ((4, 3 * 5 * 2), (9, 1000), (49, 2 * 64 * 4)):
    slots[index] = tag | offset
    offset += (nbytes + 511) // 512 * 512
sys.stdout.buffer.write(struct.pack("<I", 3) + b"".join(struct.pack("<q", v) for v in slots))
EOF
if cmp -s expected.bin args.bin; then
  ok "the packed 50-slot args array matches byte for byte ($(stat -c %s args.bin) bytes)"
else
  not_ok "the packed args array matches" "expected: $(od -An -tx1 expected.bin | head -c 600)" "actual:   $(od -An -tx1 args.bin 2>&1 | head -c 600)"
fi

# --- spec errors: the message names the argument, nothing is written ----------------------
bad() {  # NAME JSON-ARGS EXPECTED-MESSAGE
  printf '{"args": [%s]}\n' "$2" > bad.json
  "$PS_BIN" "$R" --kernel demo --arg-spec bad.json --output ws_bad --generate-only >/dev/null 2>bad.err
  local rc=$?
  expect_eq "$1: exit 1" "$rc" 1
  expect_contains "$1: message" "$(cat bad.err)" "$3"
}
T='{"kind": "tensor", "index": 0, "name": "x", "dtype": "DT_BF16", "shape": [2, 2]}'
bad "negative index" '{"kind": "tensor", "index": -2, "name": "x", "dtype": "DT_BF16", "shape": [2]}' \
  'bad.json: argument "x" (index -2): index -2 is negative (slots are 0..49)'
bad "index outside the args array" '{"kind": "scalar", "index": 50, "name": "n", "dtype": "INT32", "value": 1}' \
  'bad.json: argument "n" (index 50): index 50 is outside the 50-slot args array (0..49)'
bad "duplicate index" "$T"', {"kind": "scalar", "index": 0, "name": "s", "dtype": "INT32", "value": 1}' \
  'bad.json: argument "s" (index 0): duplicate index 0 (also argument "x")'
bad "shape/dtype mismatch" '{"kind": "tensor", "index": 0, "name": "x", "dtype": "DT_BF16", "shape": [2, 2], "nbytes": 16}' \
  'bad.json: argument "x" (index 0): shape/dtype mismatch: shape [2,2] of DT_BF16 is 8 bytes, the spec says nbytes = 16'
bad "float packed as value" '{"kind": "scalar", "index": 1, "name": "scale", "dtype": "FLOAT32", "value": 0.5, "pack_mode": "value"}' \
  'bad.json: argument "scale" (index 1): a FLOAT32 scalar with pack_mode "value" would be truncated'
if [[ -e ws_bad ]]; then not_ok "a rejected spec writes no workspace"; else ok "a rejected spec writes no workspace"; fi
"$PS_BIN" "$R" --kernel Add --from-db "$SEED" --arg-spec spec.json >/dev/null 2>err
expect_contains "--arg-spec and --from-db are exclusive" "$(cat err)" "--arg-spec and --from-db are exclusive"
"$PS_BIN" "$R" --kernel Add --from-db "$SEED" --row 7 >/dev/null 2>err
expect_contains "a missing row is named" "$(cat err)" "Add.csv: no data row 7 (it has 1)"

# --- ptoas: the kernel's exported C++ symbol ----------------------------------------------
"$PS_BIN" "$R" --kernel paged_attention_incore --backend ptoas --arg-spec spec.json --kernel-lib libkernel.so \
  --output ws_ptoas --generate-only >/dev/null 2>err
expect_contains "ptoas: the mangled symbol is found" "$(cat err)" \
  "entry: _ZN4demo22paged_attention_incoreEjPvPl (demo::paged_attention_incore(unsigned int, void*, long*))"
expect_contains "ptoas: the runner launches that symbol" "$(cat ws_ptoas/host_runner.cpp)" \
  'kEntrySymbol = "_ZN4demo22paged_attention_incoreEjPvPl"'
g++ -std=c++17 -I "$FX" -o runner_ptoas ws_ptoas/host_runner.cpp -ldl 2>cc.err || not_ok "ptoas runner compiles" "$(cat cc.err)"
rm -f args.bin
INSIGHT_STANDIN_DUMP=$TMP/args.bin ./runner_ptoas >/dev/null 2>&1
if cmp -s expected.bin args.bin; then ok "ptoas runner (library and symbol built in) packs the same bytes"; else not_ok "ptoas runner packs the same bytes"; fi
"$PS_BIN" "$R" --kernel no_such_kernel --backend ptoas --arg-spec spec.json --kernel-lib libkernel.so \
  --output ws_ptoas2 --generate-only >/dev/null 2>err
expect_contains "ptoas: no match is a clear error" "$(cat err)" "libkernel.so: no exported function named no_such_kernel among its"
"$PS_BIN" "$R" --kernel k --backend ptoas --arg-spec spec.json --kernel-lib spec.json --output ws_ptoas3 \
  --generate-only >/dev/null 2>err
expect_contains "ptoas: not a library is a clear error" "$(cat err)" "nm -D --defined-only spec.json failed (exit 1)"

# --- a seed-database row through the stand-in msprof op simulator --------------------------
trace() {  # OUTPUT-DIR [FLAGS...]
  local ws=$1; shift
  "$PS_BIN" "$R" --kernel Add --from-db "$SEED" --row '"16,7168;16,7168" -> "16,7168"' --kernel-lib libkernel.so \
    --msprof "$FX/msprof" --runtime-include "$FX" --runtime-libs "" --output "$ws" "$@"
}
trace ws_add >add.out 2>add.err
expect_eq "seed row Add: exit 0" "$?" 0
out=$(cat add.out)
expect_contains "summary: pipeline table" "$out" "Time per pipeline (1 core directory, 24758 cycles in all)"
expect_contains "summary: MTE2 row" "$out" "mte2       14376  7.987      7.987               1793  58.1%"
expect_contains "summary: top instruction" "$out" "MOV_OUT_TO_UB  mte2       1793   14376  7.987      58.1%"
expect_contains "summary: where to open it" "$out" "MindStudio Insight: open ws_add/insight_export/OPPROF_"
expect_contains "summary page written" "$(cat add.err)" "created ws_add/insight_summary.html (summary page)"
expect_contains "the spec says its row" "$(cat ws_add/insight_spec.json)" 'Add.csv row 1 (\"16,7168;16,7168\" -> \"16,7168\"), replayed as torch.add'
sim=$(ls -d ws_add/insight_export/OPPROF_*/simulator)
for f in trace.json visualize_data.bin core0.veccore0/trace.json core0.veccore0/core0.veccore0_instr_exe.csv; do
  if [[ -s $sim/$f ]]; then ok "package has $f"; else not_ok "package has $f"; fi
done
expect_contains "the page has the pipeline bars" "$(cat ws_add/insight_summary.html)" 'class="bar pipe-bar" data-pipe="mte2" data-value="58.1"'

"$PS_BIN" "$R" --package ws_add/insight_export --top 3 >pkg.out 2>pkg.err
expect_eq "--package: exit 0" "$?" 0
expect_contains "--package: the same pipeline table" "$(cat pkg.out)" "mte2       14376  7.987      7.987               1793  58.1%"
expect_contains "--package: top 3" "$(cat pkg.out)" "Top 3 instructions by cycles (of 8)"
expect_contains "--package: its page beside simulator/" "$(cat pkg.err)" "ws_add/insight_export/OPPROF_"
expect_contains "--package: its page is reported" "$(cat pkg.err)" "/insight_summary.html (summary page)"
if ls ws_add/insight_export/OPPROF_*/insight_summary.html >/dev/null 2>&1; then ok "--package: page beside simulator/"; else not_ok "--package: page beside simulator/"; fi
"$PS_BIN" "$R" --package ws_add >/dev/null 2>err
expect_contains "--package: no package is a clear error" "$(cat err)" "ws_add: no simulator/ package (looked for simulator/ and OPPROF_*/simulator/)"
"$PS_BIN" "$R" --arg-spec spec.json >/dev/null 2>err
expect_contains "--kernel is required without --package" "$(cat err)" "--kernel is required (unless --package)"

MSPROF_STANDIN_FAIL=collect trace ws_add >/dev/null 2>err
expect_eq "failed collect: exit 1" "$?" 1
expect_contains "failed collect: the step and its log" "$(cat err)" "collect failed (exit 1): msprof op simulator (stand-in): simulated collect failure; log ws_add/logs/collect.log"
expect_contains "failed collect: the workspace is kept" "$(cat err)" "(the workspace is kept: ws_add)"
if [[ -f ws_add/host_runner.cpp && -x ws_add/build/insight_runner ]]; then ok "failed collect: workspace and build still there"; else not_ok "failed collect: workspace kept"; fi
MSPROF_STANDIN_FAIL=incomplete trace ws_add >/dev/null 2>err
expect_contains "incomplete package is refused" "$(cat err)" "incomplete simulator package, missing ws_add/insight_export/OPPROF_"
expect_contains "incomplete package names the missing file" "$(cat err)" "/simulator/visualize_data.bin"
start=$SECONDS
MSPROF_STANDIN_SLEEP=30 trace ws_add --timeout 2 >/dev/null 2>err
expect_contains "a hung msprof is stopped" "$(cat err)" "collect: timed out after 2s and was stopped (its process group killed)"
if ((SECONDS - start < 20)); then ok "the timeout does not wait for the hung process"; else not_ok "timeout took $((SECONDS - start)) s"; fi
finish
