#!/usr/bin/env bash
# perfscript --db DIR: a REPL session over a generated database (piped, and on a terminal
# through tmux when it is installed) running every query; the db recipes.
source "$(dirname "$0")/lib.sh" || exit 1

DB="$TMP/db/ATLAS/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
mkdir -p "$DB"
H='Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us),Profiling Average Duration(us)'
{
  echo "$H"
  for m in 100 200 400 136 800; do echo "\"\"\"$m,512;1024,512\"\"\",DT_BF16;DT_BF16,ND;ND,\"\"\"$m,1024\"\"\",DT_BF16,ND,$((m / 10)).5,$((m / 10))"; done
  echo '"100,512;1024,512",DT_BF16;DT_BF16,ND;ND,"100,1024",DT_BF16,ND,14,'
} > "$DB/MatMulV2.csv"
{
  echo "$H"
  echo '"100,64;64",DT_BF16;DT_BF16,ND;ND,"100,64",DT_BF16,ND,10,'
  echo '"",DT_BF16;DT_BF16,ND;ND,"200,64",DT_BF16,ND,0,'
} > "$DB/RmsNorm.csv"
cp -r "$TMP/db" "$TMP/db2"
DB2="$TMP/db2/ATLAS/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"

out=$(printf '%s\n' 'db' 'db:kernels()' \
  'db:lookup("MatMulV2", "144,512;1024,512", "bfloat16")' \
  'db:lookup("MatMulV2", "100,512;512,1024", "DT_BF16", {explain = true})' \
  'db.MatMulV2:rows({M = 100})' \
  'db:nearest("MatMulV2", "150,512;1024,512", 2)' \
  'db:coverage("MatMulV2", "M", {K = 512, N = 1024})' \
  'db:interp("MatMulV2", "300,512;1024,512", "DT_BF16")' \
  'db:dups("MatMulV2")' 'db:outliers("MatMulV2")' 'db:lint()' \
  "db:diff(\"$DB2\")" \
  "r = db:kernels()" "save(r, \"$TMP/kernels.csv\")" 'help()' \
  'db:lookup("NoSuchKernel", "1,2")' '"after the error"' \
  | "$PS_BIN" --db "$DB" 2>"$TMP/err")
rc=$?
expect_eq "piped db session exits 0" "$rc" "0"
expect_contains "db prints what it is" "$out" "database $DB (2 kernel types"
expect_contains "kernels: counts" "$out" "MatMulV2     6      6       0  Average Duration(us)"
expect_contains "lookup: padded row" "$out" "MEASURED 13.5 us from line 5 (Average Duration(us), rule padding, padded)"
expect_contains "lookup explain: chosen row" "$out" "CHOSEN  transpose (identity,transpose)"
expect_contains "lookup explain: summary" "$out" "6 rows tried, 2 match"
expect_contains "rows: axis filter" "$out" "MatMulV2: 2 of 6 rows"
expect_contains "nearest" "$out" "nearest MatMulV2 to (150,512)x(1024,512)"
expect_contains "coverage: gap flagged" "$out" "gap 400 > 256 after 400"
expect_contains "interp: bracket" "$out" "INTERPOLATED 30.5 us on M (M=200 line 3 .. M=400 line 4)"
expect_contains "dups" "$out" "dups MatMulV2: 1 signatures on more than one row"
expect_contains "outliers" "$out" "outliers MatMulV2: 0 monotonicity breaks"
expect_contains "lint" "$out" "error     RmsNorm      1  3      Input Shapes          empty Input Shapes (the consumer crashes on it)"
expect_contains "diff" "$out" "MatMulV2       6       6       5       0       0           1       0       0"
expect_contains "save" "$out" "created $TMP/kernels.csv (2 rows)"
expect_eq "saved CSV" "$(head -1 "$TMP/kernels.csv")" "kernel,rows,valid,theory,latency column,KB"
expect_contains "help lists the queries" "$out" "db:interp(k, query)"
expect_contains "an unknown kernel is an error" "$(cat "$TMP/err")" "no kernel type 'NoSuchKernel'"
expect_contains "session goes on" "$out" '"after the error"'

out=$("$PS_BIN" --db "$TMP/nothing" </dev/null 2>&1)
expect_contains "--db on a missing directory" "$out" "$TMP/nothing: not a directory"
out=$("$PS_BIN" --db "$TMP/db" </dev/null 2>&1)
expect_contains "--db on a database root points at version directories" "$out" "directories in it: ATLAS"

# recipes
out=$("$PS_BIN" "$SRC/recipes/db_lint.lua" "$DB" 2>&1)
rc=$?
expect_eq "db_lint exits 1 on errors" "$rc" "1"
expect_contains "db_lint lists the problem" "$out" "empty Input Shapes"
out=$("$PS_BIN" "$SRC/recipes/db_lint.lua" "$DB" --kernel MatMulV2 2>&1)
expect_eq "db_lint on MatMulV2 exits 1 (line 7 repeats line 2: shadowed)" "$?" "1"
out=$("$PS_BIN" "$SRC/recipes/db_coverage.lua" "$DB" --kernel MatMulV2 --axis M --fixed K=512,N=1024 --html "$TMP/cov.html" 2>&1)
expect_eq "db_coverage exits 0" "$?" "0"
expect_contains "db_coverage prints the values" "$out" "gap 400 > 256 after 400"
expect_contains "db_coverage reports the page" "$out" "$TMP/cov.html"
html=$(cat "$TMP/cov.html" 2>/dev/null)
expect_contains "coverage page is HTML" "$html" "<!DOCTYPE html>"
expect_not_contains "coverage page is self-contained" "$html" "<script src"
expect_contains "coverage page has the heatmap" "$html" "MatMulV2"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [[ -n $CHROMIUM ]]; then
  dom=$(timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$TMP/profile" \
    --dump-dom "file://$TMP/cov.html" 2>/dev/null)
  expect_contains "browser: the heatmap table" "$dom" "MatMulV2 along M"
  expect_contains "browser: the gap cell is outlined" "$dom" 'class="gap" title="M=800: 80.500 us, line 6; gap 400 &gt; 256 after 400"'
else
  echo "SKIP: chromium not installed; coverage page not rendered"
fi
out=$("$PS_BIN" "$SRC/recipes/db_coverage.lua" --help 2>&1)
expect_contains "db_coverage --help" "$out" "--html"

if ! command -v tmux >/dev/null; then
  echo "SKIP: tmux not installed; terminal db session skipped"
  finish
  exit $?
fi
sock="$TMP/tmux.sock"
export HOME="$TMP/home"
mkdir -p "$HOME"
tmux -S "$sock" new-session -d -x 160 -y 40 "$PS_BIN --db $DB 2>$TMP/tty.err"
screen() { tmux -S "$sock" capture-pane -p; }
wait_for() { for _ in $(seq 50); do screen | grep -qF -- "$1" && return 0; sleep 0.1; done; return 1; }
wait_for ">" || not_ok "terminal session starts" "$(screen)"
tmux -S "$sock" send-keys 'db.MatM' Tab
sleep 0.3
tmux -S "$sock" send-keys ':look' Tab
sleep 0.3
tmux -S "$sock" send-keys '("100,512;1024,512", "DT_BF16")' Enter
wait_for "rule identity" && ok "tab completes kernel names and methods" || not_ok "tab completes kernel names and methods" "$(screen)" "$(cat "$TMP/tty.err")"
tmux -S "$sock" send-keys 'db:li' Tab
sleep 0.3
tmux -S "$sock" send-keys '()' Enter
wait_for "lint $DB" && ok "tab completes db methods" || not_ok "tab completes db methods" "$(screen)"
tmux -S "$sock" send-keys C-d
for _ in $(seq 30); do tmux -S "$sock" has-session 2>/dev/null || break; sleep 0.1; done
tmux -S "$sock" kill-server 2>/dev/null
finish
