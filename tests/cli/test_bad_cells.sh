# Bad bytes and damaged cells through every reader (issue 13: item 6 and "Smaller"): a NUL in a
# quoted field, signature cells beyond the limits of src/schema/shape.h, a CR-only file, \v
# around cells and a UTF-16 file read alike by the import (one thread and split), perf.csv,
# the database table (db_lint) and the replay plan; a header without input columns and an
# empty database CSV named by the replay.
source "$(dirname "$0")/lib.sh" || exit 1
cd "$TMP"
import() { "$PS_BIN" "$SRC/recipes/parse_profile.lua" --profiling-path "$1" --database-path "$2" 2>&1; }
lint() { "$PS_BIN" "$SRC/recipes/db_lint.lua" --database-path "$1" 2>&1; }
plan() { "$PS_BIN" "$SRC/recipes/microbench.lua" --simulate --database-path "$1" --work-dir "$TMP" 2>&1; }
HEAD="Type,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Duration(us)"
row() { printf '%s,"""%s""",DT_BF16;DT_BF16,ND;ND,"""16,8""",DT_BF16,ND,%s\n' "$1" "$2" "$3"; }
capture() {  # capture NAME: a capture directory holding NAME/kernel_details.csv (from stdin)
  mkdir -p "$1/ASCEND_PROFILER_OUTPUT"
  cat > "$1/ASCEND_PROFILER_OUTPUT/kernel_details.csv"
}
# rows N: N good MatMulV2 rows (a file to split into halves)
rows() { local i; for ((i = 0; i < $1; i++)); do row MatMulV2 "16,32;32,8" 10; done; }

# --- a NUL inside a quoted field: an error naming file and line, nothing written --------------
{ echo "$HEAD"; row MatMulV2 "16,32;32,8" 10; printf 'MatMulV2,"""8,16\0x""",DT_BF16,ND,"""8,16""",DT_BF16,ND,10\n'; } | capture nul
out=$(import nul db_nul); rc=$?
expect_eq "NUL in a quoted field: exit 1" "$rc" 1
expect_contains "NUL: file and line" "$out" "kernel_details.csv:3: binary data (a NUL byte"
expect_eq "NUL: nothing written" "$(ls db_nul 2>/dev/null | wc -l)" 0
# the same in the second half of a split file (another thread reads it): the same line
{ echo "$HEAD"; rows 400; printf 'MatMulV2,"""8,16\0x""",DT_BF16,ND,"""8,16""",DT_BF16,ND,10\n'; rows 3; } | capture nul2
out=$(PERFSCRIPT_SPLIT_MIN=1000 import nul2 db_nul2)
expect_contains "NUL in the second half: the same message and line" "$out" "kernel_details.csv:402: binary data (a NUL byte"
cat > readall.lua <<'LUA'
local r = assert(require("perfscript").csv.open(arg[1], {trim = arg[2] == "trim"}))
for f in r:lines() do if arg[2] then io.write(f[1], "|", f[8]) end end
LUA
out=$("$PS_BIN" readall.lua nul/ASCEND_PROFILER_OUTPUT/kernel_details.csv 2>&1)
expect_contains "NUL: perf.csv.open says the same" "$out" "kernel_details.csv:3: binary data (a NUL byte"
mkdir -p dbn && printf 'Input Shapes,Input Data Types,Average Duration(us)\n"8,16",DT_BF16,1\n"8,16\0x",DT_BF16,1\n' > dbn/Add.csv
expect_contains "NUL: the database table (lint) says the same" "$(lint dbn)" "Add.csv:3: binary data (a NUL byte"
out=$(plan dbn)
expect_contains "NUL: the replay plan says the same" "$out" "Add.csv:3: binary data (a NUL byte"
expect_not_contains "...in one line, no traceback" "$out" "stack traceback"

# --- signature cells beyond the limits: errors naming file, line and the limit ---------------
slots() { local i s=""; for ((i = 0; i < $1; i++)); do s+="${s:+;}8,16"; done; printf '%s' "$s"; }
{ echo "$HEAD"; row MatMulV2 "16,32;32,8" 10; row MatMulV2 "$(slots 300)" 10; } | capture wide
out=$(import wide db_wide); rc=$?
expect_eq "300 slots: exit 1" "$rc" 1
expect_contains "300 slots: file, line, limit" "$out" "kernel_details.csv:3: Input Shapes cell of 300 slots (the limit is 256)"
expect_eq "300 slots: nothing written" "$(ls db_wide 2>/dev/null | wc -l)" 0
{ echo "$HEAD"; row MatMulV2 "$(slots 256)" 10; } | capture at_limit
out=$(import at_limit db_at)
expect_contains "256 slots (the limit) are imported" "$out" "created  MatMulV2.csv: 1 rows"
long=$(head -c 70000 /dev/zero | tr '\0' '7')
{ echo "$HEAD"; row MatMulV2 "16,$long" 10; } | capture long
expect_contains "a 70000-byte cell: bytes and the limit" "$(import long db_long)" \
  "kernel_details.csv:2: Input Shapes cell of 70005 bytes (the limit is 65536)"
{ echo "$HEAD"; rows 400; row MatMulV2 "$(slots 300)" 10; rows 3; } | capture wide2
expect_contains "300 slots in the second half: the same line" "$(PERFSCRIPT_SPLIT_MIN=1000 import wide2 db_wide2)" \
  "kernel_details.csv:402: Input Shapes cell of 300 slots (the limit is 256)"
mkdir -p dbw && { echo "Input Shapes,Input Data Types,Average Duration(us)"; echo "\"16,8\",DT_BF16,1"; echo "\"$(slots 300)\",DT_BF16,1"; } > dbw/Add.csv
out=$(lint dbw)
expect_contains "lint: a 300-slot cell, with line and limit" "$out" "Input Shapes cell too big: 300 slots (the limit is 256)"
expect_contains "lint: on line 3" "$(grep 'too big' <<<"$out")" " 3 "

# --- one reader, one behaviour: CR-only lines, \v trimming, UTF-16 -------------------------
# CR-only and LF twins, with a quoted newline and a bad latency on line 5: the same line
printf 'Input Shapes,Input Data Types,Average Duration(us)\n"8,16",DT_BF16,1\n"8,\n16",DT_BF16,2\n"4,4",DT_BF16,x\n' > lf.csv
mkdir -p dblf dbcr && cp lf.csv dblf/Add.csv && tr '\n' '\r' < lf.csv > dbcr/Add.csv
expect_eq "CR-only and LF files lint alike (lines included)" "$(lint dbcr | grep 'not a number')" "$(lint dblf | grep 'not a number')"
expect_contains "...on line 5" "$(lint dbcr | grep 'not a number')" " 5 "
{ echo "$HEAD"; row MatMulV2 "16,32;32,8" 10; printf 'MatMulV2,"""8,\n16\0"""\n'; } | tr '\n' '\r' | capture cr
expect_contains "import of a CR-only file: the LF line" "$(import cr db_cr)" "kernel_details.csv:4: binary data"
# \v (and \f) around cells: trimmed by every path of the one engine
{ echo "$HEAD"; printf '\vMatMulV2\f,"""16,32;32,8""",DT_BF16;DT_BF16,ND;ND,"""16,8""",DT_BF16,ND,\v12.5\v\n'; } | capture vt
out=$(import vt db_vt)
expect_contains "import trims \\v around the type" "$out" "created  MatMulV2.csv: 1 rows"
expect_contains "import trims \\v around the duration" "$(cat db_vt/MatMulV2.csv)" "12.500000"
out=$("$PS_BIN" readall.lua vt/ASCEND_PROFILER_OUTPUT/kernel_details.csv trim)
expect_eq "perf.csv.open{trim = true} trims \\v the same" "$out" "MatMulV2|12.5"
mkdir -p dbv && printf 'Input Shapes,Input Data Types,Average Duration(us)\n"8,16",DT_BF16,\v3\v\n' > dbv/Add.csv
expect_not_contains "the database table trims \\v (no 'not a number')" "$(lint dbv)" "not a number"
# UTF-16: one message from every path
printf '\xff\xfeT\0y\0p\0e\0\n\0' > u16.csv
{ cat u16.csv; } | capture u16
mkdir -p dbu && cp u16.csv dbu/Add.csv
for what in "import:$(import u16 db_u16)" "lint:$(lint dbu)" "plan:$(plan dbu)" \
    "perf.csv:$("$PS_BIN" readall.lua u16.csv 2>&1)"; do
  expect_contains "UTF-16 refused by ${what%%:*}" "$what" ":1: a UTF-16 file, not UTF-8 CSV"
  [[ ${what%%:*} == perf.csv ]] || expect_not_contains "...without a traceback (${what%%:*})" "$what" "stack traceback"
done

# --- the replay: a header without input columns, an empty database CSV ----------------------
mkdir -p dbh && printf 'OP State,Accelerator Core,Average Duration(us)\ndynamic,AI_CORE,\n' > dbh/Add.csv
out=$(plan dbh)
expect_contains "no input columns: named" "$out" "1 row(s): the header has no 'Input Shapes' or 'Input Data Types' columns"
expect_not_contains "...not the builder's reason" "$out" "needs at least one input"
mkdir -p dbe && : > dbe/Add.csv && printf 'Input Shapes,Input Data Types,Output Shapes,Output Data Types,Average Duration(us)\n"4,4",DT_BF16,"4,4",DT_BF16,\n' > dbe/SwiGlu.csv
expect_contains "a 0-byte database CSV: a warning naming it" "$(plan dbe)" "[WARN] $TMP/dbe/Add.csv: empty file (no header, no rows): nothing to replay"
finish
