# FusedInferAttentionScore metadata: the parser's Runtime columns (operator_details pairing,
# docs/rules.md, Import: FIA pairing, and the Python original's end-to-end example) and
# recipes/fill_fia_metadata.lua (docs/rules.md, Import: FIA back-fill, and the deleted tool's
# worked examples).
source "$(dirname "$0")/lib.sh" || exit 1
cd "$TMP"
source "$(dirname "$0")/profile_lib.sh" || exit 1
CELLS_SEP="|"
slots() {  # slots N i=v ...: a 31-slot shape text with the given slots set
  local -a s; local i
  for ((i = 0; i < 31; i++)); do s[i]=""; done
  shift
  for kv in "$@"; do s[${kv%%=*}]=${kv#*=}; done
  (IFS=';'; echo "${s[*]}")
}
M=$(for i in $(seq 25); do printf ',0'; done)
MH=$(for m in aicore_time'(us)' aic_total_cycles aic_mac_time'(us)' aic_mac_ratio aic_scalar_time'(us)' aic_scalar_ratio aic_mte1_time'(us)' aic_mte1_ratio aic_mte2_time'(us)' aic_mte2_ratio aic_fixpipe_time'(us)' aic_fixpipe_ratio aic_icache_miss_rate aiv_time'(us)' aiv_total_cycles aiv_vec_time'(us)' aiv_vec_ratio aiv_scalar_time'(us)' aiv_scalar_ratio aiv_mte2_time'(us)' aiv_mte2_ratio aiv_mte3_time'(us)' aiv_mte3_ratio aiv_icache_miss_rate 'cube_utilization(%)'; do printf ',%s' "$m"; done)

# --- parse_profile: the Python original's end-to-end example ------------------------------
mkdir -p prof/profile_a
KIN=$(slots 31 0=8192,16,128 1=8192,16,128 2=8192,16,128 5=2 6=2)
OIN=$(slots 31 0=5,16,1,512 1=5,16,1,512 2=5,16,1,512 5=5 6=5 14=5,512)
{
  echo "Type,OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Duration(us)$MH"
  echo "FusedInferAttentionScore,dynamic,MIX_AIC,\"\"\"$KIN\"\"\",DT_BF16,ND,\"\"\"8192,16,128;8192,16,1\"\"\",DT_BF16;FLOAT,ND;ND,1.0$M"
} > prof/profile_a/kernel_details.csv
{
  echo "Type,Name,Input Shapes,Output Shapes"
  echo "aclnnFusedInferAttentionScoreV2,npu_fused_infer_attention_score_v2,\"$OIN\",\"5,16,1,512;5,16,1,1\""
} > prof/profile_a/operator_details.csv
out=$("$PS_BIN" "$SRC/recipes/parse_profile.lua" --profiling-path prof --database-path db 2>&1)
expect_contains "FIA file created" "$out" "created  FusedInferAttentionScore.csv: 1 rows"
F=db/FusedInferAttentionScore.csv
expect_eq "header: 52 columns" "$(head -1 $F | tr -d '\r' | awk -F, '{print NF}')" 52
expect_eq "runtime columns from the paired operator row" \
  "$(cells $F 1 'Runtime source_profile' 'Runtime actual_seq_lengths_shape' 'Runtime actual_seq_lengths_kv_shape' 'Runtime block_table_shape' 'Runtime metadata_completeness' 'Runtime avg_seq_len')" \
  "profile_a|5|5|5,512|profile_shapes_only|"
# real operator_details have no Output Shapes column; an ASCEND_PROFILER_OUTPUT directory
# names its *_ascend_pt capture; without operator rows the kernel's own shapes are used
mkdir -p prof2/rank3_ascend_pt/ASCEND_PROFILER_OUTPUT
cp prof/profile_a/kernel_details.csv prof2/rank3_ascend_pt/ASCEND_PROFILER_OUTPUT/
{
  echo "Name,Input Shapes,Call Stack"
  echo "aclnnFusedInferAttentionScoreV2,\"$OIN\",\"a.py:1
b.py:2\""
  echo "aclnnFusedInferAttentionScoreV2,\"$OIN\",x"
} > prof2/rank3_ascend_pt/ASCEND_PROFILER_OUTPUT/operator_details.csv
out=$("$PS_BIN" "$SRC/recipes/parse_profile.lua" --profiling-path prof2 --database-path db2 2>&1)
expect_contains "count mismatch warned" "$out" "kernel_rows=1, operator_rows=2"
expect_eq "pairing without Output Shapes; capture name as source" \
  "$(cells db2/FusedInferAttentionScore.csv 1 'Runtime source_profile' 'Runtime block_table_shape')" "rank3_ascend_pt|5,512"
rm prof2/rank3_ascend_pt/ASCEND_PROFILER_OUTPUT/operator_details.csv
"$PS_BIN" "$SRC/recipes/parse_profile.lua" --profiling-path prof2 --database-path db3 > /dev/null 2>&1
expect_eq "no operator rows: the kernel's own slots" \
  "$(cells db3/FusedInferAttentionScore.csv 1 'Runtime actual_seq_lengths_shape' 'Runtime actual_seq_lengths_kv_shape' 'Runtime block_table_shape')" "2|2|"

# --- pairing per directory (issue 10 item 2) ----------------------------------------------------
# Kernel rows (batch 4) and operator rows (batch 128) differ; operator row j of directory d
# has slots 5, 6, 14 = dj, djj, 128,dj so each cell says which operator row it came from.
# d1 has two kernel files (counting goes on across them), an N/A kernel row and an exact
# duplicate, a repeated kernel, and an operator row without Input Shapes; in d2 two kernels
# differ only in trailing empty slots, and there is one operator row too many.
KH="Task ID,Stream ID,Type,Start Time(us),Duration(us),Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats"
kin() { slots 31 0=4,16,1,512 "1=$1,1,128,512" 2=4,16,1,512 5=4 6=4 "14=4,$1"; }
krow() { echo "$1,2,FusedInferAttentionScore,$1.0,$3,\"\"\"$2\"\"\",DT_BF16;DT_BF16;DT_BF16,ND;ND;ND,\"\"\"4,16,1,512\"\"\",DT_BF16,ND"; }
orow() { echo "aclnnFusedInferAttentionScoreV2,\"$(slots 31 0=128,16,1,512 "5=$1" "6=$1${1: -1}" "14=128,$1")\",x"; }
mkdir -p pair/d1 pair/d2
{
  echo "$KH"
  krow 1 "$(kin 1)" 10
  echo '2,2,Add,2.0,1.0,"""4,4""",FLOAT,ND,"""4,4""",FLOAT,ND'
  krow 3 "$(kin 2)" 20
  krow 3 "$(kin 2)" 20                        # exact duplicate: not a launch of its own
  krow 4 "N/A" 5                              # skipped, but a launch: pairs with o3
  krow 5 "$(kin 3)" 30                        # o4 has no Input Shapes: its own slots
  krow 6 "$(kin 4)" 40
} > pair/d1/kernel_details_0.csv
{
  echo "$KH"
  krow 7 "$(kin 5)" 50
  krow 8 "$(kin 2)" 24                        # the kernel of row 3 again: keeps o2
  krow 9 "$(kin 6)" 60
} > pair/d1/kernel_details_1.csv
{
  echo "Name,Input Shapes,Call Stack"
  for j in 1 2 3; do orow "1$j"; done
  echo "aclnnFusedInferAttentionScoreV2,,x"
  for j in 5 6 7 8; do orow "1$j"; done
} > pair/d1/operator_details.csv
{
  echo "$KH"
  krow 1 "$(kin 7)" 70
  krow 2 "$(kin 8)" 80
  krow 3 "$(kin 8 | cut -d';' -f1-15)" 90       # the same with fewer (trailing empty) slots
} > pair/d2/kernel_details.csv
{
  echo "Name,Input Shapes,Call Stack"
  for j in 1 2 3 4; do orow "2$j"; done
} > pair/d2/operator_details.csv
out=$("$PS_BIN" "$SRC/recipes/parse_profile.lua" --profiling-path pair --database-path pdb 2>&1)
expect_contains "pairing: one row per FIA kernel" "$out" "created  FusedInferAttentionScore.csv: 9 rows"
got=$(for r in $(seq 9); do cells pdb/FusedInferAttentionScore.csv $r 'Runtime source_profile' 'Runtime actual_seq_lengths_shape' 'Runtime actual_seq_lengths_kv_shape' 'Runtime block_table_shape' 'Profiling Average Duration(us)'; done)
expect_eq "pairing: the i-th kernel row of a directory with its i-th operator row" "$got" \
"d1|11|111|128,11|10.000000
d1|12|122|128,12|22.000000
d1|4|4|4,3|30.000000
d1|15|155|128,15|40.000000
d1|16|166|128,16|50.000000
d1|18|188|128,18|60.000000
d2|21|211|128,21|70.000000
d2|22|222|128,22|80.000000
d2|23|233|128,23|90.000000"
expect_contains "pairing: a count mismatch warned per directory" "$out" "under pair/d2: kernel_rows=3, operator_rows=4"
expect_not_contains "pairing: no warning where the counts agree" "$out" "under pair/d1:"

# --- fill_fia_metadata -------------------------------------------------------------------------
A=$(slots 31 0=8192,16,128 1=8192,16,128 2=8192,16,128 4=2048,2048 5=2 6=2 24=8192,16,64)
B=$(slots 31 0=1,16,1,512 1=1170,1,128,512 2=1170,1,128,512 6=1 14=1,512)
C=$(slots 31 0=4,4 1=4,4 2=4,4 6=1)
printf '\xef\xbb\xbfInput Shapes,Average Duration(us)\n"""%s""",10.0\n"""%s""",5.0\n"""%s""",7.0\n"""1,2;abc;x""",3.0\n' "$A" "$B" "$C" > FIA.csv
cat > fia.jsonl <<'EOF'
{"query_shape":[8192,16,128],"key_shape":[8192,16,128],"value_shape":[8192,16,128],"actual_seq_lengths":[4099,8192],"actual_seq_lengths_kv":[4099,8192],"atten_mask_shape":[2048,2048],"block_table_shape":null,"num_heads":16,"num_key_value_heads":2,"sparse_mode":3,"input_layout":"TND","block_size":null}

{"query_shape":[8192,16,128],"key_shape":[8192,16,128],"value_shape":[8192,16,128],"actual_seq_lengths":[6,4105],"actual_seq_lengths_kv":[6,4105],"atten_mask_shape":[2048,2048],"block_table_shape":[],"num_heads":16,"num_key_value_heads":2,"sparse_mode":0,"input_layout":"TND"}
{"query_shape":[1,16,1,512],"key_shape":[1170,1,128,512],"value_shape":[1170,1,128,512],"actual_seq_lengths":null,"actual_seq_lengths_kv":[4500],"atten_mask_shape":null,"block_table_shape":[1,512],"block_table_valid_blocks":[36],"num_heads":16,"num_key_value_heads":1,"sparse_mode":0,"input_layout":"BNSD_NBSD","block_size":128}
{"query_shape":[8192,16,128],"key_shape":[8192,16,128],"value_shape":[8192,16,128],"actual_seq_lengths":[4099,8192],"actual_seq_lengths_kv":[4099,8192],"atten_mask_shape":[2048,2048],"block_table_shape":null,"num_heads":32,"num_key_value_heads":2,"sparse_mode":3,"input_layout":"TND","block_size":null}
EOF
run() { "$PS_BIN" "$SRC/recipes/fill_fia_metadata.lua" "$@"; }
out=$(run --csv-path FIA.csv --jsonl-path fia.jsonl 2>&1); rc=$?
expect_eq "back-fill exit status" "$rc" 0
expect_contains "summary as the original's" "$out" "Backfilled 2/4 CSV rows matched, 5 output rows (+1 from 1:N expansion) from fia.jsonl into FIA.csv"
expect_eq "1:N prefill rows, duplicate record keeps the first" \
  "$(cells FIA.csv 1 'Runtime actual_seq_lengths_values' 'Runtime avg_seq_len' 'Runtime num_heads' 'Runtime sparse_mode' 'Runtime metadata_completeness')" \
  "4099,8192|6145.500000|16|3|runtime_values_dumped"
expect_eq "second payload ([] block table means absent)" \
  "$(cells FIA.csv 2 'Runtime actual_seq_lengths_kv_values' 'Runtime avg_seq_len' 'Runtime sparse_mode' 'Average Duration(us)')" "6,4105|2055.500000|0|10.0"
expect_eq "decode row" \
  "$(cells FIA.csv 3 'Runtime actual_seq_lengths_values' 'Runtime actual_seq_lengths_kv_shape' 'Runtime actual_seq_lengths_kv_values' 'Runtime avg_seq_len' 'Runtime num_key_value_heads' 'Runtime block_table_valid_blocks' 'Runtime block_size')" \
  "|1|4500|4500.000000|1|36|128"
expect_eq "unmatched row unchanged" "$(cells FIA.csv 4 'Average Duration(us)' 'Runtime metadata_completeness')" "7.0|"
expect_eq "unparsable slots do not abort" "$(cells FIA.csv 5 'Average Duration(us)')" "3.0"
expect_eq "input BOM kept" "$(head -c 3 FIA.csv | od -An -tx1 | tr -d ' ')" "efbbbf"
expect_eq "header: the 16 runtime columns appended once" "$(head -1 FIA.csv | tr ',' '\n' | grep -c '^Runtime ')" 16
run --csv-path FIA.csv --jsonl-path fia.jsonl --output-path again.csv --metadata-tag t2 > /dev/null 2>&1
expect_eq "re-run: no duplicate columns, tag option" "$(head -1 again.csv | tr ',' '\n' | grep -c '^Runtime ')|$(cells again.csv 1 'Runtime metadata_completeness')" "16|t2"
printf '{"query_shape":[1]}\nnot json\n{"a":\n' > bad.jsonl
cp FIA.csv keep.csv
out=$(run --csv-path keep.csv --jsonl-path bad.jsonl 2>&1); rc=$?
expect_eq "malformed JSON: exit 1" "$rc" 1
expect_contains "malformed lines numbered" "$out" "bad.jsonl:2:"
expect_contains "every malformed line" "$out" "bad.jsonl:3:"
expect_eq "malformed JSON: nothing written" "$(cmp -s keep.csv FIA.csv && echo same)" "same"
out=$(run --csv-path nope.csv --jsonl-path fia.jsonl 2>&1); rc=$?
expect_eq "missing CSV: exit 1" "$rc" 1
expect_contains "missing CSV named" "$out" "CSV not found: nope.csv"
out=$(run --csv-path FIA.csv --jsonl-path nope.jsonl 2>&1)
expect_contains "missing JSONL named" "$out" "JSONL not found: nope.jsonl"
: > empty.csv
out=$(run --csv-path empty.csv --jsonl-path fia.jsonl 2>&1)
expect_contains "empty CSV header" "$out" "CSV header is empty: empty.csv"
# a read-only target is refused and named (exit 1), not reported as written
cp again.csv ro.csv && chmod 444 ro.csv && sum=$(sha256sum < ro.csv)
out=$(run --csv-path again.csv --jsonl-path fia.jsonl --output-path ro.csv 2>&1); rc=$?
expect_eq "back-fill into a read-only file: exit 1" "$rc" 1
expect_contains "back-fill names the read-only file" "$out" "ro.csv: the file is marked read-only (mode 0444)"
expect_eq "back-fill leaves the read-only file alone" "$(sha256sum < ro.csv)" "$sum"
finish
