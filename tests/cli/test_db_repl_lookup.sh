#!/usr/bin/env bash
# The REPL on MoE and attention (issue 12), driven through `perfscript --db` with piped lines
# on the bundled seed database and on a DeepSeek-V3 grid grown into a scratch copy: a row finds
# itself, misses name their reason, help(topic), the banner, save(_) and tab completion.
source "$(dirname "$0")/lib.sh" || exit 1

SEED="$SRC/data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
DB="$TMP/root/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
mkdir -p "$(dirname "$DB")"
cp -r "$SEED" "$DB"

repl() { "$PS_BIN" --db "$1" 2>&1; }

# ---- a row finds itself: every row of every kernel by its own record, in the REPL
SWEEP='bad, n = {}, 0
for _, k in ipairs(db:names()) do local K = db:kernel(k); if K:table():column("Input Shapes") then for _, r in ipairs(K:rows()) do n = n + 1; local res = db:lookup(k, r); if not res.latency then bad[#bad + 1] = k .. ":" .. r.line .. " " .. res.title end end end end
print("self lookups: " .. n .. " rows, " .. #bad .. " misses"); for i = 1, math.min(#bad, 5) do print(bad[i]) end'
out=$(printf '%s\n' "$SWEEP" | repl "$DB")
expect_contains "every seed row finds itself (REPL)" "$out" "self lookups: 85 rows, 0 misses"

out=$(printf '%s\n' 'r = db:rows("GroupedMatmul")[1]' 'db:lookup("GroupedMatmul", r)' \
  'db:lookup("GroupedMatmul", {shapes = r["Input Shapes"], dtypes = r["Input Data Types"], formats = r["Input Formats"]})' \
  'db:lookup("GroupedMatmul", r["Input Shapes"], r["Input Data Types"])' | repl "$DB")
expect_contains "GroupedMatmul: its record finds it" "$out" \
  "lookup GroupedMatmul (16,7168)x(32,4096,7168)x(32,4096)x(32)x(16) INT8;INT8;FLOAT;INT64;FLOAT: MEASURED 28.4 us from line 2"
expect_eq "GroupedMatmul: the cells with their formats find it too" \
  "$(grep -c 'GroupedMatmul .*: MEASURED 28.4 us from line 2' <<<"$out")" "2"
expect_contains "GroupedMatmul: the NZ cells without formats say why they miss" "$out" \
  "MISS shape_mismatch: the query gives a FRACTAL_NZ tile layout (line 2's Input Formats ND;FRACTAL_NZ;;ND;;;;ND;ND); the consumer compares the restored ND shapes 16,7168;32,4096,7168;32,4096;32;16"

out=$(printf '%s\n' 'r = db:rows("GroupedMatmul")[1]' \
  'db:lookup("GroupedMatmul", r["Input Shapes"], r["Input Data Types"], {explain = true})' | repl "$DB")
expect_contains "explain shows how the row writes its FRACTAL_NZ weight" "$out" \
  "input 2: shape (32,128,448,16,32) vs row (32,4096,7168): no rule (the row writes (32,128,448,16,32) FRACTAL_NZ, restored as the consumer does"

# ---- attention: the default sparse_mode is named, explain inside the query, a hit has no "(no rows)"
out=$(printf '%s\n' 'db:lookup("FusedInferAttentionScore", {q = "2,128,1,512", seq = 2048})' \
  'db:lookup("FusedInferAttentionScore", {q = "2,128,1,512", seq = 2048, explain = true})' \
  'db:lookup("FusedInferAttentionScore", {q = "2,128,1,512", seq = 2048, sparse_mode = 0})' '"end"' | repl "$DB")
expect_contains "attention miss names the default sparse_mode" "$out" \
  "MISS sparse_mode 3 (default) excludes the 1 row with this dtype and N,D 128,512; they have sparse_mode 0 (1) (pass sparse_mode = ...)"
expect_contains "explain inside the query table lists the rows" "$out" $'  line  result\n  ----  ---------------------\n     2  Runtime sparse_mode 0'
expect_contains "attention hit" "$out" "MEASURED 38.6 us from line 2 (Average Duration(us), rule attention, seq distance 0)"
hit=$(sed -n '/sparse_mode = 0/,$p' <<<"$out"; printf '%s\n' 'db:lookup("FusedInferAttentionScore", {q = "2,128,1,512", seq = 2048, sparse_mode = 0})' | repl "$DB")
expect_not_contains "an attention hit does not end with (no rows)" "$hit" "(no rows)"

# ---- banner, help(topic)
out=$(printf '%s\n' 'help("lookup")' 'help("coverage")' 'help("lint")' 'help(db)' 'help(db.MatMulV2)' 'help("MatMulV2")' \
  'help("nope")' 'help()' | repl "$DB")
expect_contains "banner: kernel files and rows" "$out" "85 kernel files, 85 rows (85 with a valid latency, 0 without)"
expect_contains "banner: stack of the path" "$out" "stack: device ATLAS_800_A3_752T_128G_DIE, vLLM 0.18.0, torch 2.9.0, CANN 8.5"
expect_contains "help(\"lookup\") explains the options" "$out" 'formats = "ND;FRACTAL_NZ"'
expect_contains "help(\"coverage\")" "$out" 'db:coverage("MatMulV2", "M", {K = 7168, N = 2048})'
expect_contains "help(\"lint\")" "$out" 'save(r, "lint.csv")'
expect_contains "help(db) is the summary" "$out" $'help() lists the queries; help("lookup") shows examples'
expect_contains "help(db.MatMulV2)" "$out" "kernel MatMulV2: 1 rows (1 with a valid latency)"
expect_eq "help(\"MatMulV2\") is the same" "$(grep -c '^kernel MatMulV2: 1 rows' <<<"$out")" "2"
expect_contains "an unknown topic lists the topics" "$out" 'no help on "nope"; topics: "save", "lookup", "coverage", "lint"'
expect_contains "help() names the topics" "$out" 'more: help("save"), help("lookup")'

# every example help("lookup") shows, run in a new session, hits; one per family
for dir in "$DB" "$TMP/grid"; do
  if [[ $dir == "$TMP/grid" ]]; then
    mkdir -p "$TMP/grid" && cp -r "$SEED/." "$TMP/grid/"
    "$PS_BIN" "$SRC/recipes/dsv3_grid.lua" --database-path "$TMP/grid" >/dev/null 2>&1 || not_ok "grid grows" "$?"
  fi
  ex=$(printf '%s\n' 'help("lookup")' | repl "$dir" | grep '^  db:lookup(')
  n=$(grep -c . <<<"$ex")
  [[ $n -ge 7 ]] && ok "help(\"lookup\") has an example per family ($n, $(basename "$dir"))" || not_ok "examples per family" "$ex"
  res=$(repl "$dir" <<<"$ex")
  expect_eq "every example hits ($(basename "$dir"))" "$(grep -c ': MEASURED ' <<<"$res")" "$n"
done

# grid rows find themselves too (REPL), and a theory row's miss says it has no latency
out=$(printf '%s\n' 'K = db.GroupedMatmul' 'db:lookup("GroupedMatmul", K:rows()[#K:table()])' | repl "$TMP/grid")
expect_contains "a grid theory row misses for its latency" "$out" "no valid latency (theory rows: microbench measures them)"

# ---- save(_, ...) after a cut result, as the hint says
out=$(printf '%s\n' 'require("perfscript.db.result").max_rows = 3' 'db:kernels()' "save(_, \"$TMP/k.csv\")" | repl "$DB")
expect_contains "a cut result's hint is code that works" "$out" 'save(_, "out.csv") writes them: _ is the last result'
expect_contains "save(_, ...) saves the last result" "$out" "created $TMP/k.csv (85 rows)"

# ---- tab completion keeps kernel types (db.) and methods (db:) apart
if command -v tmux >/dev/null; then
  sock="$TMP/tmux.sock"
  export HOME="$TMP/home"
  mkdir -p "$HOME"
  tmux -S "$sock" new-session -d -x 200 -y 40 "$PS_BIN --db $DB 2>$TMP/tty.err"
  screen() { tmux -S "$sock" capture-pane -p -S -100; }
  wait_for() { for _ in $(seq 50); do screen | grep -qE -- "$1" && return 0; sleep 0.1; done; return 1; }
  wait_for "85 kernel files" || not_ok "terminal banner" "$(screen)"
  tmux -S "$sock" send-keys 'x4 = db:MatMulV' Tab Tab
  sleep 0.5
  scr=$(screen)
  expect_not_contains "db:<Tab> does not offer kernel types" "$scr" "MatMulV2"
  tmux -S "$sock" send-keys C-u
  tmux -S "$sock" send-keys 'x1 = db.kern' Tab Tab
  sleep 0.3
  tmux -S "$sock" send-keys ' ; print("x1", x1)' Enter
  wait_for '^x1 +nil' && ok "db.<Tab> does not offer the method kernels" || not_ok "db.kern<Tab>" "$(screen)"
  tmux -S "$sock" send-keys 'print("x2", db.GroupedMatmulS' Tab
  sleep 0.3
  tmux -S "$sock" send-keys ')' Enter
  wait_for '^x2 +kernel GroupedMatmulSwigluQuant' && ok "db.<Tab> completes kernel types" || not_ok "db.GroupedMatmulS<Tab>" "$(screen)"
  tmux -S "$sock" send-keys 'print("x3", db:dup' Tab
  sleep 0.3
  tmux -S "$sock" send-keys '("MatMulV2") ~= nil)' Enter
  wait_for '^x3 +true' && ok "db:<Tab> completes methods" || not_ok "db:dup<Tab>" "$(screen)"
  tmux -S "$sock" send-keys C-d
  for _ in $(seq 30); do tmux -S "$sock" has-session 2>/dev/null || break; sleep 0.1; done
  tmux -S "$sock" kill-server 2>/dev/null
else
  echo "SKIP: tmux not installed; completion not tested"
fi
# ---- db_lint: one line per kind with its count; --verbose prints each finding
L="$TMP/lintdb"
mkdir -p "$L"
{ echo 'Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Average Duration(us)'
  for m in $(seq 1 60); do echo "\"$m,64;64,64\",DT_BF16;DT_BF16,ND;ND,\"$m,64\",DT_BF16,0"; done; } > "$L/MatMulV2.csv"
out=$("$PS_BIN" "$SRC/recipes/db_lint.lua" --database-path "$L" 2>&1)
expect_eq "db_lint: 60 zero latencies are one line" "$(grep -c '0 (leave it blank' <<<"$out")" "1"
expect_contains "db_lint: the line has the count" "$out" "warning   MatMulV2    60  2,3,4,5,..."
expect_contains "db_lint: how to see each" "$out" "--verbose prints each, --output FILE writes them"
out=$("$PS_BIN" "$SRC/recipes/db_lint.lua" --database-path "$L" --verbose 2>&1)
expect_eq "db_lint --verbose: every finding" "$(grep -c '0 (leave it blank' <<<"$out")" "60"

finish
