#!/usr/bin/env bash
# The REPL's db:lookup and the real consumer (TensorCast's reader, ../shared/consumer) agree
# (issue 19): the consumer is asked for sampled rows of a database (tests/consumer/
# consumer_ask.py, each row's own query on the route op_mapping.yaml gives its kernel), and
# db:lookup answers the same queries (tests/consumer/lookup_diff.lua): the same row, or a miss
# where the consumer's exact path misses. Databases: a generated one with the cases where the
# consumer's choice is subtle (padding then transpose, shadowed elementwise rows, rope and
# reshape-and-cache layouts, an unconvertible attention query), the bundled seed database grown
# by the DeepSeek-V3 grid and filled by microbench --simulate, and one imported from a real
# profiler export. Skips (77) with the reason when the consumer or its Python packages are absent.
source "$(dirname "$0")/lib.sh"

PY=${PERFSCRIPT_CONSUMER_PYTHON:-/usr/bin/python3}
ASK="$SRC/tests/consumer/consumer_ask.py"
CONSUMER=${PERFSCRIPT_CONSUMER:-$SRC/../shared/consumer}
if [[ ! -x $PY ]]; then echo "SKIP: no $PY (the consumer needs Debian's python3 with torch and pandas)"; exit 77; fi
if ! why=$("$PY" -c 'import torch, pandas, numpy, yaml' 2>&1); then
  echo "SKIP: the consumer's Python packages are missing: ${why##*$'\n'} (apt-get install python3-torch python3-pandas python3-numpy python3-yaml)"
  exit 77
fi
if [[ ! -f $CONSUMER/load_consumer.py ]]; then echo "SKIP: the consumer is not at $CONSUMER (set PERFSCRIPT_CONSUMER)"; exit 77; fi

# compare NAME DIR SAMPLE: the consumer's answers, then db:lookup's
compare() {
  local name=$1 dir=$2 sample=$3
  "$PY" "$ASK" "$dir" --json --sample "$sample" --consumer "$CONSUMER" >"$TMP/$name.json" 2>"$TMP/$name.err"
  local rc=$?
  if [[ $rc -eq 77 ]]; then echo "SKIP: $(cat "$TMP/$name.json")"; exit 77; fi
  expect_eq "$name: the consumer answers (consumer_ask.py exit status)" "$rc" "0"
  "$PY" - "$TMP/$name.json" >"$TMP/$name.tsv" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    f = r.get("found") or {}
    print("\t".join(str(x) for x in (r["kernel"], r["row"], r["status"], f.get("kernel", ""), f.get("row", ""),
                                      r.get("op") or "", r.get("route") or "")))
EOF
  out=$("$PS_BIN" "$SRC/tests/consumer/lookup_diff.lua" "$dir" "$TMP/$name.tsv" 2>&1)
  rc=$?
  echo "${out##*$'\n'}"
  expect_eq "$name: db:lookup answers every compared row as the consumer does" "$rc" "0"
  [[ $rc -eq 0 ]] || echo "$out" | head -20
  expect_contains "$name: rows were compared" "$out" "lookup_diff $dir: "
  expect_not_contains "$name: none compared is not a pass" "$out" ": 0 rows agree"
  # db_lint names every asked row the consumer does not answer exactly, and no other
  "$PS_BIN" "$SRC/recipes/db_lint.lua" "$dir" --quiet --csv "$TMP/$name.lint.csv" >/dev/null 2>&1
  out=$("$PY" - "$TMP/$name.json" "$TMP/$name.lint.csv" <<'EOF'
import csv, json, sys
flagged = {}
for r in csv.DictReader(open(sys.argv[2])):
    if r["line"] and r["problem"].startswith("unreachable"):
        flagged.setdefault((r["kernel"], int(r["line"])), r["problem"])
bad = n = 0
for r in json.load(open(sys.argv[1]))["rows"]:
    if r["status"] in ("unasked", "error"):
        continue
    n += 1
    why = flagged.get((r["kernel"], r["row"] + 1))  # data row n is CSV line n + 1
    if (r["status"] == "exact") == (why is not None):
        bad += 1
        print("LINT %s line %d: the consumer says %s (%s); lint: %s" % (r["kernel"], r["row"] + 1, r["status"],
              r.get("found") or r.get("reason") or "", why or "no finding"))
print("lint agrees with the consumer on %d of %d asked rows" % (n - bad, n))
sys.exit(1 if bad else 0)
EOF
)
  rc=$?
  echo "${out##*$'\n'}"
  [[ $rc -eq 0 ]] || echo "$out" | head -20
  expect_eq "$name: db_lint flags exactly the rows the consumer does not answer exactly" "$rc" "0"
}

# ---- a generated database with the subtle cases --------------------------------------------
FIX="$TMP/fixture"
mkdir -p "$FIX"
H="Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us)"
cat >"$FIX/op_mapping.yaml" <<'EOF'
operator_mappings:
  aten.mm.default: {kernel_type: MatMulV2}
  aten.add.Tensor: {kernel_type: Add, query_mode: elementwise}
  aten.mul.Tensor: {kernel_type: Mul, query_mode: elementwise}
  tensor_cast.rms_norm.default: {kernel_type: RmsNorm}
  tensor_cast.rope.default: {kernel_type: ApplyRotaryPosEmb}
  tensor_cast.reshape_and_cache.default: {kernel_type: ReshapeAndCacheNdKernel}
  tensor_cast.index.default: {kernel_type: Index}
  tensor_cast.attention.default: {kernel_type: FusedInferAttentionScore, query_mode: attention_special}
EOF
cat >"$FIX/MatMulV2.csv" <<EOF
$H
"128,512;1024,512",DT_BF16;DT_BF16,ND;ND,"128,1024",DT_BF16,ND,10
"128,512;1024,512",DT_BF16;DT_BF16,ND;ND,"128,1024",DT_BF16,ND,11
"100,256;2048,256",DT_BF16;DT_BF16,ND;ND,"100,2048",DT_BF16,ND,12
"112,256;256,2048",DT_BF16;DT_BF16,ND;ND,"112,2048",DT_BF16,ND,13
"1,112,256;2048,256",DT_BF16;DT_BF16,ND;ND,"112,2048",DT_BF16,ND,14
"136,5120;320,48,16,16",DT_BF16;DT_BF16,ND;FRACTAL_NZ,"136,768",DT_BF16,ND,45.3
"144,5120;768,5120",DT_BF16;FLOAT,ND;ND,"144,768",DT_BF16,ND,47
EOF
cat >"$FIX/Add.csv" <<EOF
$H
"1,7168;1,7168",DT_BF16;DT_BF16,ND;ND,"1,7168",DT_BF16,ND,1.9
"16,7168;16,7168",DT_BF16;DT_BF16,ND;ND,"16,7168",DT_BF16,ND,2.4
"8,7168;8,7168",DT_BF16;DT_BF16,ND;ND,"8,7168",DT_BF16,ND,2.2
"4,16,7168;4,16,7168",DT_BF16;DT_BF16,ND;ND,"4,16,7168",DT_BF16,ND,3.1
"64,7168;64,7168",DT_BF16;DT_BF16,ND;ND,"64,7168",DT_BF16,ND,3.5
EOF
cat >"$FIX/Mul.csv" <<EOF
$H
"256,7168;256,7168",FLOAT;FLOAT,ND;ND,"256,7168",FLOAT,ND,21
"256,7168;256,7168",DT_BF16;DT_BF16,ND;ND,"256,7168",DT_BF16,ND,10.5
"512,7168;512,7168",INT8;INT8,ND;ND,"512,7168",DT_INT8,ND,9
"512,7168;512,7168",DT_BF16;DT_BF16,ND;ND,"512,7168",DT_BF16,ND,20
EOF
cat >"$FIX/RmsNorm.csv" <<EOF
$H
"136,5120;5120",DT_BF16;DT_BF16,ND;ND,"136,5120",DT_BF16,ND,21.66
"128,5120;5120",DT_BF16;DT_BF16,ND;ND,"128,5120",DT_BF16,ND,20
"1,144,5120;5120",DT_BF16;DT_BF16,ND;ND,"144,5120",DT_BF16,ND,22
EOF
cat >"$FIX/ApplyRotaryPosEmb.csv" <<EOF
$H
"1,136,4,128;1,136,1,128;1,136,1,128;1,136,1,128",DT_BF16;DT_BF16;DT_BF16;DT_BF16,ND;ND;ND;ND,"1,136,4,128",DT_BF16,ND,12.5
"1,144,4,128;1,144,1,128;1,144,1,128;1,144,1,128",DT_BF16;FLOAT;DT_BF16;DT_BF16,ND;ND;ND;ND,"1,144,4,128",DT_BF16,ND,13
EOF
cat >"$FIX/ReshapeAndCacheNdKernel.csv" <<EOF
$H
"128,1,512;128,1,512;1024,128,1,512;1024,128,1,512;128",DT_BF16;DT_BF16;DT_BF16;DT_BF16;INT32,ND;ND;ND;ND;ND,"1024,128,1,512",DT_BF16,ND,7
EOF
cat >"$FIX/Index.csv" <<EOF
$H
"4096,1;128",INT64;INT32,ND;ND,"128,1",INT64,ND,3
"1,4096;128",INT64;INT32,ND;ND,"128,1",INT64,ND,4
EOF
cat >"$FIX/FusedInferAttentionScore.csv" <<EOF
Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Runtime avg_seq_len,Runtime sparse_mode,Runtime num_key_value_heads,Runtime input_layout,Average Duration(us)
"1,128,4096,192;1,128,4096,192",DT_BF16;DT_BF16,ND;ND,"1,128,4096,128",DT_BF16,4096,3,128,BNSD_NBSD,900
"4096,128,192;1,128,4096,192",DT_BF16;DT_BF16,ND;ND,"4096,128,128",DT_BF16,4096,3,128,TND,880
"4096,128,192;1,128,4096,192",DT_BF16;DT_BF16,ND;ND,"4096,128,128",DT_BF16,4100,3,128,TND,890
EOF
compare fixture "$FIX" 0

# ---- the bundled seed database grown by the grid, filled by the simulated microbench ------
SEED="$SRC/data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
if [[ -d $SEED ]]; then
  cp -r "$SEED" "$TMP/grown"
  "$PS_BIN" "$SRC/recipes/dsv3_grid.lua" --database-path "$TMP/grown" >"$TMP/grid.log" 2>&1
  expect_eq "the grid grows the seed database" "$?" "0"
  "$PS_BIN" "$SRC/recipes/microbench.lua" --database-path "$TMP/grown" --simulate \
    --output-database "$TMP/filled" >"$TMP/mb.log" 2>&1
  expect_eq "microbench --simulate fills it" "$?" "0"
  compare grown "$TMP/filled" 6
else
  echo "SKIP: no seed database at $SEED"
fi

# ---- a database imported from a real profiler export ----------------------------------------
if export_dir=$(real_data "Ascend-msinsight/test/data/pytorch/text/level1"); then
  "$PS_BIN" "$SRC/recipes/parse_profile.lua" --profiling-path "$export_dir" --database-path "$TMP/real" >/dev/null 2>"$TMP/pp.err"
  expect_eq "parse_profile imports the real export" "$?" "0"
  # the seed's routes, and a compute route for each kernel they do not name
  "$PY" - "$SEED/op_mapping.yaml" "$TMP/real" <<'EOF'
import os, sys, yaml
seed, db = sys.argv[1], sys.argv[2]
doc = yaml.safe_load(open(seed)) if os.path.exists(seed) else {}
ops = doc.setdefault("operator_mappings", {})
routed = set()
for e in ops.values():
    if isinstance(e, dict):
        routed.update([e.get("kernel_type")] + list(e.get("alternate_kernel_types") or []))
for f in sorted(os.listdir(db)):
    if f.endswith(".csv") and f[:-4] not in routed:
        ops["perfscript_test.%s.default" % f[:-4]] = {"kernel_type": f[:-4]}
yaml.safe_dump(doc, open(os.path.join(db, "op_mapping.yaml"), "w"), sort_keys=False)
EOF
  compare real "$TMP/real" 0
fi

finish
