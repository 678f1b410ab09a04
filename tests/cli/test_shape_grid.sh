#!/usr/bin/env bash
# recipes/shape_grid.lua and qwen3_grid.lua: database flags (--database-path, --data-dir,
# version flags under --database-root), --model-config, --target-models, errors.
set -euo pipefail
: "${PERFSCRIPT:?}" "${PERFSCRIPT_SOURCE_DIR:?}" "${PERFSCRIPT_TEST_TMP:?}"
work="$PERFSCRIPT_TEST_TMP/shape_grid"
rm -rf "$work" && mkdir -p "$work" && cd "$work"
src="$PERFSCRIPT_SOURCE_DIR"
ver=ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5
mkdir -p root/$(dirname $ver)
cp -r "$src/data/seed_db/$ver" root/$ver
db=root/$ver
grid() { "$PERFSCRIPT" "$src/recipes/shape_grid.lua" "$@"; }

# version flags under --database-root resolve to the same directory as --database-path
grid --database-root root --vllm-version 0.18.0 --torch-version 2.9.0+cpu --cann-version 8.5 \
     --target-models Qwen/Qwen3-32B --rows 3 --dry-run > a.txt
grep -q "under $db (nothing written)" a.txt
grep -q "^Target models: Qwen/Qwen3-32B$" a.txt
grid --data-dir "$db" --target-models Qwen/Qwen3-32B --rows 3 --dry-run > b.txt
grep -q "^Dry run: would append" b.txt
grep -q "^split_qkv_rmsnorm_rope_kernel .* 3 *would append" b.txt

# qwen3_grid.lua: its preset; appends, then a rerun appends nothing
"$PERFSCRIPT" "$src/recipes/qwen3_grid.lua" --database-path "$db" --rows 4 > q1.txt
grep -q "^Target models: Qwen/Qwen3-32B$" q1.txt
grep -q "^Appended [1-9][0-9]* rows" q1.txt
grep -q "^DispatchFFNCombine .* 0 *unchanged" q1.txt     # no MoE in Qwen3
"$PERFSCRIPT" "$src/recipes/qwen3_grid.lua" --database-path "$db" --rows 4 > q2.txt
grep -q "^Appended 0 rows" q2.txt

# a model from a local HuggingFace config.json
cat > config.json <<'JSON'
{"_name_or_path": "my-org/Tiny-MoE", "hidden_size": 2048, "intermediate_size": 5632,
 "num_attention_heads": 16, "num_key_value_heads": 4, "n_routed_experts": 64,
 "num_experts_per_tok": 6, "moe_intermediate_size": 1408}
JSON
grid --database-path "$db" --model-config config.json --target-models my-org/Tiny-MoE --rows 0 --dry-run > c.txt
grep -q "^Target models: my-org/Tiny-MoE$" c.txt
# 7 EP x 17 token counts x (4 gate_up + 4 down): at TP 16, N = 176 and K = 88 leave the INT8
# FRACTAL_NZ blocks (N a multiple of 32, K of 16)
grep -q "^GroupedMatmul  *952 " c.txt
grep -q "^MatMulV2  *[1-9]" c.txt

# --out-dir grows a copy and leaves the original alone; --report writes the summary
before=$(cat "$db"/*.csv | md5sum)
grid --database-path "$db" --target-models Qwen/Qwen3-32B --rows 6 --out-dir copy --report r.csv > o.txt
grep -q "^Copied 88 files of $db to copy" o.txt   # 85 CSVs, op_mapping.yaml, its licence and notice
[[ $(cat "$db"/*.csv | md5sum) == "$before" ]]
[[ $(ls copy | wc -l) -eq 88 ]]
head -1 r.csv | grep -q "^file,kernel,pattern,candidates,rejected,memory,duplicates,unreplayable,sampled_out,present,shadowed,appended,status$"
# the first 4 of 6 picks are the 4 that qwen3_grid --rows 4 appended: a top-up
grep -q "^MatMulV2.csv,MatMulV2,matmul,999,0,0,0,0,993,4,0,2,appended$" r.csv
grid --database-path copy --target-models Qwen/Qwen3-32B --rows 6 --report r.json > /dev/null
grep -q '"status":"unchanged: nothing new"' r.json
if grid --database-path "$db" --out-dir copy 2> e0.txt; then exit 1; fi
grep -q "exists and is not empty" e0.txt

# errors: clean messages, exit status 1, nothing written
sum=$(cat "$db"/*.csv | md5sum)
if grid --database-path "$db" --target-models ", ," 2> e1.txt; then exit 1; fi
grep -q "lists no model" e1.txt
if grid --database-path "$db" --target-models nope/none 2> e2.txt; then exit 1; fi
grep -q "unknown model 'nope/none'" e2.txt
if grid --torch-version 2.9.0 2> e3.txt; then exit 1; fi
grep -q "Could not determine runtime stack version" e3.txt
if grid --database-path "$work/missing" 2> e4.txt; then exit 1; fi
grep -q "Data directory does not exist" e4.txt
if grid --database-path "$db" --model-config "$work/none.json" 2> e5.txt; then exit 1; fi
grep -q "model-config" e5.txt
[[ $(cat "$db"/*.csv | md5sum) == "$sum" ]]

# --threads: workers grow the same files, print the same summary and report; so does
# $PERFSCRIPT_THREADS; a bad count is refused
for t in 1 3 env; do
  cp -r "$src/data/seed_db/$ver" "grow_$t"
  args=(--database-path "grow_$t" --target-models Qwen/Qwen3-32B --rows 5 --report "grow_$t.csv")
  if [[ $t == env ]]; then PERFSCRIPT_THREADS=2 grid "${args[@]}" > "grow_$t.txt"
  else grid "${args[@]}" --threads $t > "grow_$t.txt"; fi
  sed -i "s#grow_$t#DB#g" "grow_$t.txt"
done
grep -q "^Appended [1-9][0-9]* rows" grow_1.txt
for t in 3 env; do
  cmp grow_1.txt "grow_$t.txt"
  cmp grow_1.csv "grow_$t.csv"
  diff -r -x .perfscript.lock grow_1 "grow_$t"
done
if grid --database-path "$db" --threads 0 2> e6.txt; then exit 1; fi
grep -q -- "--threads: a whole number from 1 to 64, not 0" e6.txt
echo ok
