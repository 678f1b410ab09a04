#!/usr/bin/env bash
# The command line behaves as Lua's own lua program does.
source "$(dirname "$0")/lib.sh" || exit 1

out=$("$PS_BIN" -v)
expect_contains "-v names perfscript" "$out" "perfscript 0.1.0"
expect_contains "-v names Lua 5.4" "$out" "Lua 5.4"

cat > "$TMP/args.lua" <<'LUA'
print(arg[0], #arg, arg[1], arg[2], select("#", ...), ...)
LUA
out=$("$PS_BIN" "$TMP/args.lua" one "two words")
expect_eq "script gets arg and ..." "$out" "$TMP/args.lua	2	one	two words	2	one	two words"

out=$(echo 'print("stdin", ...)' | "$PS_BIN" - x y)
expect_eq "- reads the script from stdin" "$out" "stdin	x	y"
out=$(echo 'print(1 + 1)' | "$PS_BIN")
expect_eq "no script and piped stdin runs stdin" "$out" "2"
out=$("$PS_BIN" -e 'x = 20' -e 'print(x + 1)')
expect_eq "-e runs in order" "$out" "21"
out=$("$PS_BIN" -l perfscript.csv -e 'print(type(csv.open))')
expect_eq "-l requires into a global" "$out" "function"
out=$("$PS_BIN" -- "$TMP/args.lua" -x 2>&1)
expect_eq "-- ends options" "$out" "$TMP/args.lua	1	-x	nil	1	-x"

out=$("$PS_BIN" -e 'error("boom")' 2>&1); rc=$?
expect_eq "runtime error exits 1" "$rc" "1"
expect_contains "runtime error is reported with position" "$out" "perfscript: (command line):1: boom"
expect_contains "runtime error has a traceback" "$out" "stack traceback"

printf 'local x = 1\nlocal y = nil + x\n' > "$TMP/bad.lua"
out=$("$PS_BIN" "$TMP/bad.lua" 2>&1); rc=$?
expect_eq "script error exits 1" "$rc" "1"
expect_contains "script error names file and line" "$out" "perfscript: $TMP/bad.lua:2: attempt to perform arithmetic on a nil value"

printf 'if then\n' > "$TMP/syntax.lua"
out=$("$PS_BIN" "$TMP/syntax.lua" 2>&1); rc=$?
expect_eq "syntax error exits 1" "$rc" "1"
expect_contains "syntax error names file and line" "$out" "perfscript: $TMP/syntax.lua:1:"

out=$("$PS_BIN" -e 'require("perfscript").fail("%s: missing columns: %s", "k.csv", "Type")' 2>&1); rc=$?
expect_eq "user error exits 1" "$rc" "1"
expect_eq "user error is one clean line" "$out" "perfscript: k.csv: missing columns: Type"

out=$("$PS_BIN" "$TMP/nonexistent.lua" 2>&1); rc=$?
expect_eq "missing script exits 1" "$rc" "1"
expect_contains "missing script is named" "$out" "cannot open $TMP/nonexistent.lua"

out=$("$PS_BIN" --bogus 2>&1); rc=$?
expect_eq "unknown option exits 1" "$rc" "1"
expect_contains "unknown option is named" "$out" "unrecognized option '--bogus'"
out=$("$PS_BIN" -e 2>&1); rc=$?
expect_contains "-e without argument" "$out" "'-e' needs an argument"
out=$("$PS_BIN" --help); rc=$?
expect_eq "--help exits 0" "$rc" "0"
expect_contains "--help shows usage" "$out" "usage: perfscript [options] [script [args]]"

# Ctrl-C interrupts a running script cleanly, as lua.c does.
"$PS_BIN" -e 'io.stderr:write("ready\n") while true do end' 2> "$TMP/int.err" &
pid=$!
for _ in $(seq 50); do grep -q ready "$TMP/int.err" 2>/dev/null && break; sleep 0.1; done
kill -INT $pid
wait $pid; rc=$?
expect_eq "SIGINT exits 1" "$rc" "1"
expect_contains "SIGINT says interrupted" "$(cat "$TMP/int.err")" "interrupted!"

# A recipe can require its neighbours and modules beside its parent directory.
mkdir -p "$TMP/proj/recipes/models" "$TMP/proj/grids"
echo 'return {name = "m"}' > "$TMP/proj/recipes/models/m.lua"
echo 'return {n = 38}' > "$TMP/proj/grids/patterns.lua"
echo 'print(require("models.m").name, require("grids.patterns").n)' > "$TMP/proj/recipes/r.lua"
out=$(cd / && "$PS_BIN" "$TMP/proj/recipes/r.lua")
expect_eq "recipes require neighbours and ../grids" "$out" "m	38"

# The Lua library is embedded: an installed binary works with no source tree around.
cmake --install "$(dirname "$PS_BIN")" --prefix "$TMP/inst" >/dev/null 2>&1
out=$(cd / && env -u PERFSCRIPT_LUA_DIR "$TMP/inst/bin/perfscript" -e 'print(require("perfscript.pretty").format({1, a = 2}))' 2>&1)
expect_eq "installed binary uses the embedded library" "$out" "{ 1, a = 2 }"
# ... and PERFSCRIPT_LUA_DIR / --lua-dir load a live tree instead.
mkdir -p "$TMP/live/perfscript"
echo 'return {format = function() return "live" end}' > "$TMP/live/perfscript/pretty.lua"
out=$(PERFSCRIPT_LUA_DIR="$TMP/live" "$PS_BIN" -e 'print(require("perfscript.pretty").format({}))')
expect_eq "PERFSCRIPT_LUA_DIR loads the live tree" "$out" "live"
out=$(env -u PERFSCRIPT_LUA_DIR "$PS_BIN" --lua-dir "$TMP/live" -e 'print(require("perfscript.pretty").format({}))')
expect_eq "--lua-dir loads the live tree" "$out" "live"
out=$(PERFSCRIPT_LUA_DIR="$TMP/live" "$PS_BIN" -E -e 'print(require("perfscript.pretty").format({}))')
expect_eq "-E ignores PERFSCRIPT_LUA_DIR" "$out" "{}"
out=$(PERFSCRIPT_INIT='init_ran = 42' "$PS_BIN" -e 'print(init_ran)')
expect_eq "PERFSCRIPT_INIT runs first" "$out" "42"

# Bundled Debian modules are there.
out=$("$PS_BIN" -e 'print(require("cjson").encode({1}), type(require("lfs").dir), require("lyaml").load("a: 1").a, type(require("argparse")))')
expect_eq "cjson, lfs, lyaml and argparse load" "$out" "[1]	function	1	table"

finish
