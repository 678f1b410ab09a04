#!/usr/bin/env bash
# --model-config: MoE models from a Hugging Face config.json (Mixtral, DeepSeek-V3 style
# fixtures written here), the GroupedMatmul gate_up and down rows they grow, the model's name
# from the config, warnings on unused fields, and bad field values: one error line, exit
# status 1, every database file unchanged.
source "$(dirname "$0")/lib.sh" || exit 1
cd "$TMP" || exit 1
ver=ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5
db="$TMP/db"
cp -r "$SRC/data/seed_db/$ver" "$db"
grid() { "$PS_BIN" "$SRC/recipes/shape_grid.lua" --database-path "$db" "$@"; }
sums() { (cd "$db" && find . -type f | sort | xargs md5sum); }

# Mixtral-8x7B's field set (a directory named otherwise than the model: the name is the config's)
mkdir -p some-dir
cat > some-dir/config.json <<'JSON'
{"architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
 "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
 "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mixtral",
 "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32,
 "num_key_value_heads": 8, "num_local_experts": 8, "output_router_logits": false,
 "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02,
 "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
 "transformers_version": "4.36.0.dev0", "use_cache": true, "vocab_size": 32000}
JSON
out=$(grid --model-config some-dir/config.json --rows 0 --report mix.csv 2> mix.err)
expect_eq "mixtral: exit status" "$?" 0
err=$(cat mix.err)
expect_contains "mixtral: only the config's model, named by the config" "$out" $'Target models: mixtral\n'
expect_not_contains "mixtral: no preset" "$out" "DeepSeek"
expect_contains "mixtral: vocab_size warned" "$err" "warning: some-dir/config.json: field 'vocab_size' (32000) is not used"
expect_contains "mixtral: num_hidden_layers warned" "$err" "field 'num_hidden_layers' (32) is not used"
expect_eq "mixtral: one line per unused field, one summary line" "$(wc -l < mix.err)" 4
expect_contains "mixtral: shape-free fields summed up" "$err" "13 fields that do not change kernel shapes were skipped (attention_dropout"
expect_not_contains "mixtral: used fields not warned" "$err" "num_local_experts"
# 4 EP (8, 4, 2, 1 local experts) x 5 TP x 17 token counts x (gate_up, down)
gmm=$(grep '^GroupedMatmul.csv,' mix.csv)
expect_contains "mixtral: GroupedMatmul rows appended" "$gmm" ",680,0,0,0,0,0,0,0,680,appended"
rows=$(tail -n +3 "$db/GroupedMatmul.csv")
# gate_up at TP 1, EP 1: x (t, 4096), weight (8 experts, N 28672 = 2 x 14336, K 4096) in FRACTAL_NZ
expect_contains "mixtral: gate_up TP 1" "$rows" '"""16,4096;8,896,256,16,32;;8,28672;;;;8;16""",INT8;INT8;;FLOAT;;;;INT64;FLOAT,ND;FRACTAL_NZ;;ND;;;;ND;ND,"""16,28672"""'
# down at TP 4, EP 2: x (t, 14336 / 4), weight (4 experts, N 4096, K 3584)
expect_contains "mixtral: down TP 4 EP 2" "$rows" '"""16,3584;4,128,224,16,32;;4,4096;;;;4;16""",INT8;INT8;;FLOAT;;;;INT64;FLOAT,ND;FRACTAL_NZ;;ND;;;;ND;ND,"""16,4096"""'
expect_eq "mixtral: the hidden size is never split" "$(grep -c '"""[0-9]*,\(2048\|1024\|512\|256\);' <<< "$rows")" 0
# no dense FFN layer: the MatMul (N, K) pairs are attention only, 13 of them x 37 M values: the
# original's (4096/TP, 4096) and (4096, 4096/TP), and the fused QKV ((32 + 2 * 8) / TP * 128, 4096)
expect_contains "mixtral: attention GEMMs only" "$(grep '^MatMulV2.csv,' mix.csv)" ",481,"
mm=$(tail -n +3 "$db/MatMulV2.csv")
expect_contains "mixtral: fused QKV at TP 1" "$mm" '"""16,4096;6144,4096"""'
expect_contains "mixtral: fused QKV at TP 16 (one KV head per rank)" "$mm" '"""16,4096;512,4096"""'
expect_not_contains "mixtral: no dense gate_up" "$mm" ';28672,4096"""'
expect_not_contains "mixtral: no dense down" "$mm" ';4096,14336"""'

# DeepSeek-V3's field set: MLA + 256 routed experts + one shared expert + 3 dense layers
mkdir -p dsv3
cat > dsv3/config.json <<'JSON'
{"architectures": ["DeepseekV3ForCausalLM"], "attention_bias": false, "ep_size": 1,
 "first_k_dense_replace": 3, "hidden_act": "silu", "hidden_size": 7168, "intermediate_size": 18432,
 "kv_lora_rank": 512, "max_position_embeddings": 163840, "model_type": "deepseek_v3",
 "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256,
 "n_shared_experts": 1, "norm_topk_prob": true, "num_attention_heads": 128,
 "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 128,
 "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
 "quantization_config": {"quant_method": "fp8"}, "topk_group": 4, "torch_dtype": "bfloat16",
 "v_head_dim": 128, "vocab_size": 129280}
JSON
grid --model-config dsv3/config.json --rows 0 --dry-run --report ds.csv > ds.txt 2> ds.err
expect_eq "dsv3 config: exit status" "$?" 0
expect_contains "dsv3 config: named by model_type" "$(cat ds.txt)" $'Target models: deepseek_v3\n'
expect_contains "dsv3 config: ep_size warned" "$(cat ds.err)" "field 'ep_size' (1) is not used"
expect_not_contains "dsv3 config: MLA fields used" "$(cat ds.err)" "lora"
# the same rows as the bundled DeepSeek-V3 preset: MLA GEMMs, dense FFN, shared expert
"$PS_BIN" "$SRC/recipes/dsv3_grid.lua" --database-path "$db" --rows 0 --dry-run --report preset.csv > /dev/null
expect_eq "dsv3 config: the preset's rows" "$(cut -d, -f1-11 ds.csv)" "$(cut -d, -f1-11 preset.csv)"
expect_contains "dsv3 config: MLA + dense + shared-expert GEMM pairs" "$(grep '^MatMulV2.csv,' ds.csv)" ",1591,"
expect_contains "dsv3 config: GroupedMatmul 7 EP x 5 TP x 17 x 2" "$(grep '^GroupedMatmul.csv,' ds.csv)" ",1190,"
expect_contains "dsv3 config: MLA attention scenes" "$(grep '^FusedInferAttentionScore.csv,' ds.csv)" ",102,"

# bad values: one error line naming file and field, exit status 1, nothing written
before=$(sums)
bad() {  # bad NAME FIELD VALUE EXPECTED-MESSAGE: FIELD set to VALUE in a copy of the fixture
  sed -e "s/\"$2\": [^,}]*, *//" -e "s/\"hidden_size\": 7168/\"hidden_size\": 7168, \"$2\": $3/" \
      dsv3/config.json > "bad-$1.json"
  if grid --model-config "bad-$1.json" --rows 0 > "bad-$1.out" 2> "bad-$1.err"; then
    not_ok "bad $1: exit status" "exit 0"
  else
    ok "bad $1: exit status"
  fi
  expect_eq "bad $1: one line" "$(wc -l < "bad-$1.err")" 1
  expect_contains "bad $1: message" "$(cat "bad-$1.err")" "bad-$1.json: field '$2' $4"
}
bad kvstring num_key_value_heads '"8"' 'is the string "8", not a number (write 8 without quotes)'
bad headdim head_dim -128 "is -128; it must be at least 1"
bad topk num_experts_per_tok -8 "is -8; it must be at least 1"
bad kvlora kv_lora_rank -512 "is -512; it must be at least 1"
bad zero moe_intermediate_size 0 "is 0; it must be at least 1"
bad nan qk_rope_head_dim NaN "is NaN, not a finite number"
bad inf num_attention_heads Infinity "is Infinity, not a finite number"
bad huge n_routed_experts 1e300 "is 1e+300, above the limit 2147483647"
bad frac v_head_dim 127.5 "is 127.5, not a whole number"
bad bool n_shared_experts true "is a boolean, not a number"
bad list mlp_only_layers '[1, -2]' "item 2 is -2; it must be 0 or more"
expect_eq "bad values: every database file unchanged" "$(diff <(echo "$before") <(sums))" ""
expect_eq "bad values: no temporary file left" "$(find "$db" -name '*.tmp*' | wc -l)" 0

# config-level faults
echo '{"model_type": "x", "hidden_size": 64, "num_attention_heads": 8, "num_local_experts": 4}' > notopk.json
if grid --model-config notopk.json 2> e1.txt; then not_ok "no top-k: exit status"; else ok "no top-k: exit status"; fi
expect_contains "no top-k: message" "$(cat e1.txt)" "notopk.json: has 4 routed experts but no 'num_experts_per_tok'"
echo '{"hidden_size": 64, "num_attention_heads": 8}' > noname.json
if grid --model-config noname.json 2> e2.txt; then not_ok "no name: exit status"; else ok "no name: exit status"; fi
expect_contains "no name: message" "$(cat e2.txt)" "noname.json: names no model"
cp some-dir/config.json twin.json
if grid --model-config some-dir/config.json --model-config twin.json 2> e3.txt; then
  not_ok "two configs, one name: exit status"
else
  ok "two configs, one name: exit status"
fi
expect_contains "two configs, one name: message" "$(cat e3.txt)" "twin.json: names the model 'mixtral'"
# a preset file of one's own (--lua-dir) is checked the same way, and named in the message
mkdir -p mine/perfscript/models
cat > mine/perfscript/models/my_moe.lua <<'LUA'
return { model_id = "my-org/My-MoE", name = "My-MoE", hidden_size = 4096, intermediate_size = 0,
         num_attention_heads = 32, num_kv_heads = 4, num_experts = 64, topk = -8,
         expert_intermediate_size = 1408, tp_sizes = { 1, 2 }, ep_sizes = { 1, 8 } }
LUA
if "$PS_BIN" --lua-dir mine "$SRC/recipes/shape_grid.lua" --database-path "$db" --target-models my-org/My-MoE \
     2> e4.txt; then
  not_ok "bad preset file: exit status"
else
  ok "bad preset file: exit status"
fi
expect_eq "bad preset file: one line naming file and field" "$(cat e4.txt)" \
  "perfscript: mine/perfscript/models/my_moe.lua: field 'topk' is -8; it must be 0 or more"
expect_eq "config faults: every database file unchanged" "$(diff <(echo "$before") <(sums))" ""

# --help says which parallelism each preset assumes
h=$("$PS_BIN" "$SRC/recipes/dsv3_grid.lua" --help)
expect_contains "help: DeepSeek-V3 parallelism" "$h" "deepseek-ai/DeepSeek-V3: TP 1,2,4,8,16; GroupedMatmul EP 1,2,4,8,16,32,64"
expect_contains "help: DP" "$h" "DP: any"
finish
