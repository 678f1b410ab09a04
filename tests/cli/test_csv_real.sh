#!/usr/bin/env bash
# perfscript.csv reads every real profiler CSV exactly as Python's csv module does
# (records, fields, quoted newlines), and fails clearly on the ones that are not CSV.
source "$(dirname "$0")/lib.sh"
root=$(real_data .) || exit 77
command -v python3 >/dev/null || { echo "SKIP: python3 absent"; exit 77; }

cat > "$TMP/dump.lua" <<'LUA'
local csv, cjson = require "perfscript.csv", require "cjson"
local r = assert(csv.open(arg[1], {header = false}))
local rows = {}
for f in r:lines() do rows[#rows + 1] = f end
setmetatable(rows, cjson.array_mt)
io.write(cjson.encode(rows))
LUA
cat > "$TMP/dump.py" <<'PY'
import csv, json, sys
with open(sys.argv[1], newline="", encoding="utf-8-sig") as f:
    rows = [r for r in csv.reader(f) if r]   # blank lines are not records
json.dump(rows, sys.stdout, ensure_ascii=False)
PY
cat > "$TMP/cmp.py" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
if a == b:
    print(len(a)); sys.exit(0)
for i, (x, y) in enumerate(zip(a, b)):
    if x != y:
        print(f"record {i + 1}: perfscript {x[:6]}... python {y[:6]}..."); sys.exit(1)
print(f"perfscript {len(a)} records, python {len(b)}"); sys.exit(1)
PY
n=0
while IFS= read -r -d '' f; do
  [[ -s "$f" ]] || continue
  rel=${f#"$root"/}
  if ! "$PS_BIN" "$TMP/dump.lua" "$f" > "$TMP/ps.json" 2> "$TMP/ps.err"; then
    not_ok "$rel" "$(cat "$TMP/ps.err")"
    continue
  fi
  python3 "$TMP/dump.py" "$f" > "$TMP/py.json"
  if res=$(python3 "$TMP/cmp.py" "$TMP/ps.json" "$TMP/py.json"); then
    ok "$rel ($res records, same as Python's csv)"
  else
    not_ok "$rel" "$res"
  fi
  n=$((n + 1))
done < <(find "$root" -name '*.csv' -print0 | sort -z)
[[ $n -gt 10 ]] && ok "compared $n real CSV files" || not_ok "expected more than 10 real CSV files, found $n"
finish
