#!/usr/bin/env bash
# The provenance log (<db>/.perfscript/provenance.jsonl): one line per row a run wrote, simulated
# rows marked as such in the log and in the REPL (db:lookup's title and note, db:rows), a
# measured write-back of the same rows replacing the mark, db:rows filtered by run and source,
# parse_profile imports logged with their input file's XXH3, and the CSV columns unchanged.
source "$(dirname "$0")/lib.sh" || exit 1
export PERFSCRIPT="$PS_BIN" PERFSCRIPT_LUA_DIR="$SRC/lua"
MSPROF="$SRC/tests/fixtures/microbench/msprof"
MB="$SRC/recipes/microbench.lua"
HEADER='OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us),Profiling Average Duration(us)'
mkdir -p "$TMP/work" "$TMP/src"
cat > "$TMP/src/MatMulV2.csv" <<EOF
$HEADER
dynamic,AI_CORE,"""1024,1024;1024,1024""",FLOAT16;FLOAT16,ND;ND,"""1024,1024""",FLOAT16,ND,,
dynamic,AI_CORE,"""24,512;4096,512""",DT_BF16;DT_BF16,ND;ND,"""24,4096""",DT_BF16,ND,,10.0
EOF
cat > "$TMP/src/Add.csv" <<EOF
$HEADER
dynamic,AI_VECTOR_CORE,"""1024,1024;1024,1024""",FLOAT16;FLOAT16,ND;ND,"""1024,1024""",FLOAT16,ND,5.0,
dynamic,AI_VECTOR_CORE,"""8,8;8,8""",DT_BF16;DT_BF16,ND;ND,"""8,8""",DT_BF16,ND,,
EOF
DB="$TMP/db"
LOG="$DB/.perfscript/provenance.jsonl"
field() { "$PS_BIN" -e "local n = 0; for l in io.lines('$1') do n = n + 1; if n == $2 then
  io.write(tostring(require('cjson').decode(l)['$3'])) end end"; }
repl() { "$PS_BIN" -e "local db = assert(require('perfscript.db').open('$DB')); $1"; }

# 1. A simulated run: every written row logged as simulated; the REPL says SIMULATED.
out=$("$PS_BIN" "$MB" --simulate --database-path "$TMP/src" --output "$DB" --work-dir "$TMP/work" 2>&1); rc=$?
expect_eq "simulated run exits 0" "$rc" "0"
expect_contains "the write of the log is reported" "$out" "[WRITE] provenance of 4 row(s) (SIMULATED)"
expect_eq "one line per written row" "$(wc -l < "$LOG")" "4"
expect_eq "all of them simulated" "$(grep -c '"source":"simulated"' "$LOG")" "4"
sim_run=$(field "$LOG" 1 run)
for k in run time version kernel key sig source device cann torch input input_xxh3 samples; do
  v=$(field "$LOG" 1 "$k")
  [[ -n $v && $v != nil ]] && ok "a line has $k ($v)" || not_ok "a line has $k"
done
input=$DB/$(field "$LOG" 1 input)
expect_contains "the input is named relative to the database" "$(field "$LOG" 1 input)" ".perfscript/runs/$sim_run/staged/"
expect_eq "input_xxh3 is the XXH3 of the staged input" "$(field "$LOG" 1 input_xxh3)" \
  "$("$PS_BIN" -e "io.write(require('perfscript.microbench.provenance').file_xxh3('$input'))")"
out=$(repl 'print(db:lookup("MatMulV2", {{1024,1024},{1024,1024}}, {"FLOAT16","FLOAT16"}))' 2>&1)
expect_contains "lookup: the title says SIMULATED" "$out" "SIMULATED"
expect_not_contains "lookup: never MEASURED for a simulated value" "$out" "MEASURED"
expect_contains "lookup: the provenance column" "$out" "SIMULATED, run $sim_run"
out=$(repl 'print(#db:rows("Add", {source = "simulated"}), #db:rows("Add", {run = "'"$sim_run"'"}), #db:rows("Add", {run = "other"}))')
expect_eq "db:rows filters by source and run" "$out" "2	2	0"
expect_eq "the CSV header is unchanged (no provenance column)" "$(head -1 "$DB/Add.csv")" "$HEADER"

# 2. A measured write-back (the stand-in msprof) of the same rows replaces the simulated mark.
out=$("$PS_BIN" "$MB" --database-path "$DB" --msprof "$MSPROF" --work-dir "$TMP/work" --ops Add 2>&1); rc=$?
expect_eq "measured run exits 0" "$rc" "0"
expect_eq "the log only grows" "$(wc -l < "$LOG")" "6"
out=$(repl 'print(db:lookup("Add", {{8,8},{8,8}}, {"DT_BF16","DT_BF16"}))' 2>&1)
expect_contains "lookup: a re-measured row is measured" "$out" "measured, run "
expect_not_contains "lookup: no SIMULATED mark left on it" "$out" "SIMULATED"
out=$(repl 'print(#db:rows("Add", {source = "simulated"}), #db:rows("Add", {source = "measured"}), #db:rows("MatMulV2", {source = "simulated"}))')
expect_eq "the MatMulV2 rows stay simulated, the Add rows are measured" "$out" "0	2	2"

# 3. parse_profile: the imported rows are logged with their input file and its XXH3.
prof="$TMP/work/prof"
"$PS_BIN" -e "local s = require('perfscript.microbench.simulate')
  local c = {{op = 'Add', record = {['Input Shapes'] = '\"4,4;4,4\"', ['Input Data Types'] = 'FLOAT16;FLOAT16',
    ['Input Formats'] = 'ND;ND', ['Output Shapes'] = '\"4,4\"', ['Output Data Types'] = 'FLOAT16', ['Output Formats'] = 'ND'}}}
  print((s.write_op_summary('$prof', c)))" > "$TMP/opsum.txt"
opsum=$(cat "$TMP/opsum.txt")
out=$("$PS_BIN" "$SRC/recipes/parse_profile.lua" --profiling-path "$opsum" --database-path "$TMP/imp" 2>&1); rc=$?
expect_eq "parse_profile exits 0" "$rc" "0"
expect_contains "parse_profile reports the log" "$out" "Provenance of 1 row(s) (imported"
ILOG="$TMP/imp/.perfscript/provenance.jsonl"
expect_eq "imported line" "$(field "$ILOG" 1 source) $(field "$ILOG" 1 input)" "imported $opsum"
expect_eq "imported input XXH3" "$(field "$ILOG" 1 input_xxh3)" \
  "$("$PS_BIN" -e "io.write(require('perfscript.microbench.provenance').file_xxh3('$opsum'))")"
out=$("$PS_BIN" -e "local db = assert(require('perfscript.db').open('$TMP/imp')); print(#db:rows('Add', {source = 'imported'}))")
expect_eq "the REPL finds the imported row by its provenance" "$out" "1"
out=$("$PS_BIN" "$SRC/recipes/parse_profile.lua" --profiling-path "$opsum" --database-path "$TMP/imp" 2>&1)
expect_eq "an import that changes nothing logs nothing" "$(wc -l < "$ILOG")" "1"

# 4. A bad log is named with its line.
echo '{broken' >> "$LOG"
out=$(repl 'print(db:rows("Add", {source = "measured"}))' 2>&1)
expect_contains "a broken log line is named" "$out" "provenance.jsonl:7:"

finish
