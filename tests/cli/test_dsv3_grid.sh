#!/usr/bin/env bash
# recipes/dsv3_grid.lua with no arguments: copies the seed database to ./perfdb, appends,
# and a second run changes nothing (same bytes, nothing appended).
set -euo pipefail
: "${PERFSCRIPT:?}" "${PERFSCRIPT_SOURCE_DIR:?}" "${PERFSCRIPT_TEST_TMP:?}"
work="$PERFSCRIPT_TEST_TMP/dsv3_grid"
rm -rf "$work" && mkdir -p "$work" && cd "$work"
recipe="$PERFSCRIPT_SOURCE_DIR/recipes/dsv3_grid.lua"
db=perfdb/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5

# captured first: grep -q stops reading at its match, and under pipefail the writer's SIGPIPE
# (a write after grep has gone) would fail the test at random
help=$("$PERFSCRIPT" "$recipe" --help)
grep -q -- "--max-hbm-gb" <<<"$help"
"$PERFSCRIPT" "$recipe" --rows 50 > run1.txt
grep -q "Created the working database $db" run1.txt
grep -q "^Appended [1-9][0-9]* rows to .* under $db" run1.txt
grep -q "^FusedInferAttentionScore " run1.txt
# the template row stays first and untouched
seed="$PERFSCRIPT_SOURCE_DIR/data/seed_db/${db#perfdb/}"
for f in MatMulV2 FusedInferAttentionScore DispatchFFNCombine; do
  cmp <(head -2 "$seed/$f.csv") <(head -2 "$db/$f.csv")
done
[[ $(wc -l < "$db/MatMulV2.csv") -eq 52 ]]   # header + template + 50
sum1=$(cat "$db"/*.csv | md5sum)
"$PERFSCRIPT" "$recipe" --rows 50 > run2.txt
grep -q "^Appended 0 rows" run2.txt
! grep -q "Created the working database" run2.txt
[[ $(cat "$db"/*.csv | md5sum) == "$sum1" ]]
# dry run writes nothing
"$PERFSCRIPT" "$recipe" --rows 60 --dry-run > run3.txt
grep -q "^Dry run: would append" run3.txt
[[ $(cat "$db"/*.csv | md5sum) == "$sum1" ]]
# no temp files left, no new files
[[ -z $(find perfdb -name '*.tmp*') ]]
[[ $(ls "$db" | wc -l) -eq $(ls "$seed" | wc -l) ]]
# bad input: a clean error
if "$PERFSCRIPT" "$recipe" --target-models dsv3 2> err.txt; then exit 1; fi
grep -q "Use 'deepseek-ai/DeepSeek-V3'" err.txt
echo ok
