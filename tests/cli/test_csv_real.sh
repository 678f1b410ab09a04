#!/usr/bin/env bash
# perfscript.csv reads every real profiler CSV exactly as Python's csv module does
# (records, fields, quoted newlines, BOMs), file for file.
source "$(dirname "$0")/lib.sh" || exit 1
root=$(real_data .) || exit 77
command -v python3 >/dev/null || { echo "SKIP: python3 absent"; exit 77; }

find "$root" -name '*.csv' -size +0 | sort > "$TMP/files"
# tests/cli/csv_dump.lua prints one JSON line per file: [path, records] (or [path, null, error]).
cat > "$TMP/compare.py" <<'PY'
import csv, json, sys
root, out = sys.argv[1], sys.argv[2]
for line in open(out, encoding="utf-8"):
    path, rows, *err = json.loads(line)
    rel = path[len(root) + 1:]
    if rows is None:
        print(f"not ok - {rel}\n    perfscript: {err[0]}"); continue
    with open(path, newline="", encoding="utf-8-sig") as f:
        want = [r for r in csv.reader(f) if r]   # blank lines are not records
    if rows == want:
        print(f"ok - {rel} ({len(rows)} records, same as Python's csv)")
        continue
    diff = next((i for i, (a, b) in enumerate(zip(rows, want)) if a != b), min(len(rows), len(want)))
    print(f"not ok - {rel}\n    first difference at record {diff + 1}: "
          f"perfscript {rows[diff][:4] if diff < len(rows) else 'end'} "
          f"python {want[diff][:4] if diff < len(want) else 'end'}")
PY
"$PS_BIN" "$(dirname "$0")/csv_dump.lua" "$TMP/files" > "$TMP/ps.jsonl"
while IFS= read -r line; do
  case "$line" in
    "ok - "*) ok "${line#ok - }" ;;
    "not ok - "*) failed=$((failed + 1)); echo "$line" ;;
    *) echo "$line" ;;
  esac
done < <(python3 "$TMP/compare.py" "$root" "$TMP/ps.jsonl")
n=$(wc -l < "$TMP/files")
[[ $n -gt 10 ]] && ok "compared $n real CSV files" || not_ok "expected more than 10 real CSV files, found $n"
finish
