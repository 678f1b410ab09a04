# One command line across the recipes (docs/rules.md, Command line; Database paths): every
# recipe answers --help; the database recipes run with --database-path and with their old
# spellings; with no database flag each takes the same default (the grown ./perfdb database,
# else the bundled seed) and says so in one line; printed paths carry no "recipes/../".
source "$(dirname "$0")/lib.sh" || exit 1
cd "$TMP"
R="$SRC/recipes"
SEED_VERSION=ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5
SEED="$SRC/data/seed_db/$SEED_VERSION"
run() { "$PS_BIN" "$@" 2>&1; }

# --- --help: every recipe; the database recipes state the default -------------------------------
for f in "$R"/*.lua; do
  name=$(basename "$f")
  out=$(run "$f" --help); rc=$?
  expect_eq "$name --help exits 0" "$rc" 0
  case $name in
    db_lint.lua|db_coverage.lua|dsv3_grid.lua|qwen3_grid.lua|shape_grid.lua|microbench.lua|parse_profile.lua|fill_fia_metadata.lua)
      expect_contains "$name --help: --database-path" "$out" "--database-path"
      expect_contains "$name --help: the default database" "$out" "the grown database ./perfdb/$SEED_VERSION" ;;
  esac
done

# --- the same database, named with --database-path and the old spellings -----------------------
cp -r "$SEED" db
out=$(run "$R/db_lint.lua" --database-path db -q); rc=$?
expect_contains "db_lint --database-path" "$out" "db_lint db:"
out=$(run "$R/db_lint.lua" db -q)
expect_contains "db_lint DIR (old positional)" "$out" "db_lint db:"
out=$(run "$R/db_lint.lua" --database-path db --kernel Add,Cast --kernel MatMulV2 --output lint.csv -q)
expect_contains "db_lint --kernel list, --output" "$out" "db_lint db:"
[[ -f lint.csv ]] && ok "db_lint --output writes the CSV" || not_ok "db_lint --output writes the CSV"
run "$R/db_lint.lua" db --csv lint2.csv -q >/dev/null
[[ -f lint2.csv ]] && ok "db_lint --csv (old spelling)" || not_ok "db_lint --csv (old spelling)"
out=$(run "$R/db_coverage.lua" --database-path db --kernel Add --output cov.csv)
expect_contains "db_coverage --database-path" "$out" "coverage Add along"
out=$(run "$R/db_coverage.lua" db --kernel Add --csv cov2.csv)
expect_contains "db_coverage DIR --csv (old spellings)" "$out" "coverage Add along"
[[ -f cov.csv && -f cov2.csv ]] && ok "db_coverage CSV written" || not_ok "db_coverage CSV written"
out=$(run "$R/db_lint.lua" --database-path db other -q); rc=$?
expect_eq "two different databases: exit 1" "$rc" 1
expect_contains "two different databases: named" "$out" "two databases named"

for g in qwen3_grid shape_grid; do
  out=$(run "$R/$g.lua" --database-path db --target-models Qwen/Qwen3-32B --rows 2 --dry-run)
  expect_contains "$g --database-path" "$out" "Dry run: would append"
  out=$(run "$R/$g.lua" --data-dir db --target-models Qwen/Qwen3-32B --rows 2 --dry-run)
  expect_contains "$g --data-dir (old spelling)" "$out" "Dry run: would append"
done
out=$(run "$R/qwen3_grid.lua" --database-path db --rows 1 --output grown)
expect_contains "grid --output grows a copy" "$out" "under grown"
out=$(run "$R/qwen3_grid.lua" --database-path db --rows 1 --out-dir grown2)
expect_contains "grid --out-dir (old spelling)" "$out" "under grown2"

out=$(run "$R/microbench.lua" --database-path db --simulate --plan-only --ops Add,RmsNorm --ops SwiGlu --work-dir "$TMP/w")
expect_contains "microbench --database-path, --ops list" "$out" "[PLAN]"
expect_contains "microbench plans every listed operator" "$out" "for 3 operator(s)"
out=$(run "$R/microbench.lua" --database-path db --simulate --plan-only --ops Add RmsNorm --output-database sim2 --work-dir "$TMP/w")
expect_contains "microbench --ops A B and --output-database (old spellings)" "$out" "results into $TMP/sim2"

mkdir -p prof
{
  echo "Type,OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Duration(us)"
  echo "Add,dynamic,AI_VECTOR_CORE,\"8,16;8,16\",DT_BF16;DT_BF16,ND;ND,\"8,16\",DT_BF16,ND,2.5"
} > prof/kernel_details.csv
out=$(run "$R/parse_profile.lua" --profiling-path prof --database-path db --dry-run); rc=$?
expect_eq "parse_profile --database-path" "$rc" 0

printf '%s\n' '{"query_shape":[1]}' > fia.jsonl
out=$(run "$R/fill_fia_metadata.lua" --database-path db --jsonl-path fia.jsonl --output fia.csv); rc=$?
expect_eq "fill_fia_metadata --database-path --output" "$rc" 0
[[ -f fia.csv ]] && ok "fill_fia_metadata --output written" || not_ok "fill_fia_metadata --output written" "$out"
out=$(run "$R/fill_fia_metadata.lua" --csv-path db/FusedInferAttentionScore.csv --jsonl-path fia.jsonl --output-path fia2.csv); rc=$?
expect_eq "fill_fia_metadata --csv-path --output-path (old spellings)" "$rc" 0
out=$(run "$R/fill_fia_metadata.lua" --csv-path db/FusedInferAttentionScore.csv --database-path db --jsonl-path fia.jsonl); rc=$?
expect_eq "fill_fia_metadata: --csv-path and --database-path are alternatives" "$rc" 1

mkdir -p hccl
printf '%s\n65536,16,DT_BF16,1,5.50,11.9\n' "message_bytes,num_devices,dtype,topology_tier,Duration(us),bandwidth_gbps" >hccl/hcom_allReduce_.csv
out=$(run "$R/comm_validate.lua" --database-path hccl); rc=$?
expect_eq "comm_validate --database-path" "$rc" 0
out=$(run "$R/comm_validate.lua" --csv-dir hccl); rc=$?
expect_eq "comm_validate --csv-dir (old spelling)" "$rc" 0
out=$(run "$R/comm_validate.lua"); rc=$?
expect_contains "comm_validate: the directory is required" "$out" "missing option '--database-path'"
out=$(run "$R/comm_bench.lua" --database-path hb --ops all_reduce --ops all_gather --num-devices 8,4)
expect_contains "comm_bench --database-path" "$out" "results in hb"
expect_contains "comm_bench: repeated --ops add up" "$out" "Comm microbench plan: 4 sessions"

cp "$SRC/tests/fixtures/analysis/op_mapping.yaml" db/
out=$(run "$R/op_comparison.lua" --tc-trace "$SRC/tests/fixtures/analysis/tc_trace.json" \
  --prof-trace "$SRC/tests/fixtures/analysis/prof_forward.csv" --database-path db --output cmp.json); rc=$?
expect_eq "op_comparison --database-path --output" "$rc" 0
out=$(run "$R/op_comparison.lua" --tc-trace "$SRC/tests/fixtures/analysis/tc_trace.json" \
  --prof-trace "$SRC/tests/fixtures/analysis/prof_forward.csv" --data-dir db --output cmp2.json); rc=$?
expect_eq "op_comparison --data-dir (old spelling)" "$rc" 0
cmp -s cmp.json cmp2.json && ok "op_comparison: both spellings give the same result" || not_ok "op_comparison: both spellings give the same result"

# --- the default database: the bundled seed until a grid grows ./perfdb, then that ------------
mkdir -p fresh && cd fresh
out=$(run "$R/db_lint.lua" -q)
expect_contains "db_lint: no grown database -> the seed, said in one line" "$out" \
  "Database: $SEED (default: the bundled seed database"
expect_not_contains "db_lint: no 'Could not determine'" "$out" "Could not determine"
expect_not_contains "no recipes/../ in paths" "$out" "recipes/../"
[[ ! -e perfdb ]] && ok "a reader creates no database" || not_ok "a reader creates no database"
out=$(run "$R/microbench.lua" --simulate --plan-only --ops Add --work-dir "$TMP/w")
expect_contains "microbench --simulate: the seed when nothing is grown" "$out" "Database: $SEED (default: the bundled seed"
out=$(run "$R/qwen3_grid.lua" --rows 1)
expect_contains "the grid creates the grown database" "$out" "Created the working database perfdb/$SEED_VERSION"
for r in db_lint db_coverage; do
  out=$(run "$R/$r.lua" --kernel Add)
  expect_contains "$r: the grown database is the default" "$out" \
    "Database: perfdb/$SEED_VERSION (default: the grown database"
done
out=$(run "$R/microbench.lua" --simulate --plan-only --ops Add --work-dir "$TMP/w")
expect_contains "microbench --simulate measures the grown database" "$out" \
  "Database: perfdb/$SEED_VERSION (default: the grown database"
expect_contains "microbench --simulate writes a separate copy" "$out" "perfdb/${SEED_VERSION}_simulated"
out=$(run "$R/parse_profile.lua" --profiling-path ../prof --dry-run)
expect_contains "parse_profile: the grown database is the default" "$out" \
  "Database: perfdb/$SEED_VERSION (default: the grown database"
cd ..
expect_eq "the bundled seed is untouched" "$(cd "$SRC" && git status --porcelain data/ | wc -l)" 0

finish
