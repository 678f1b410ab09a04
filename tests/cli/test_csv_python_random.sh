#!/usr/bin/env bash
# perfscript.csv reads generated CSV files exactly as Python's csv module does: fields short
# and long (past the scanner's 64-byte masks), quoted with commas, doubled quotes and LF, CRLF
# or lone-CR newlines inside, text after a closing quote, stray quotes in unquoted fields, and
# records ending in LF, CRLF or CR. Python is the independent reference: the scanner's SSE2
# and portable paths share their long-run and mask logic, so only this catches a fault there
# (a stale mask after a long quoted first field once merged two records).
source "$(dirname "$0")/lib.sh" || exit 1
command -v python3 >/dev/null || { echo "SKIP: python3 absent"; exit 77; }

cat > "$TMP/gen.py" <<'PY'
import random, sys
out, nfiles = sys.argv[1], int(sys.argv[2])
r = random.Random(14)
plain = "abcxyz019 ;:._-"
inner = plain + ',,\n\r'

def text(alphabet, n):
    return "".join(r.choice(alphabet) for _ in range(n))

def length():
    return r.choice([0, 1, 3, 7, 15, 16, 17, 31, 47, 63, 64, 65, 66, 90, 127, 128, 129, 200])

def field():
    k = r.random()
    if k < 0.4:
        return text(plain, length())
    if k < 0.5:   # a stray quote, not first: literal
        return text(plain, r.randint(1, 70)) + '"' + text(plain, length())
    body = text(inner, length())
    if r.random() < 0.4:   # doubled quotes
        i = r.randint(0, len(body))
        body = body[:i] + '""' + body[i:]
    f = '"' + body + '"'
    if k > 0.9:   # text after the closing quote
        f += text(plain.replace(" ", ""), r.randint(1, 80))
    return f

for n in range(nfiles):
    recs = []
    for _ in range(r.randint(1, 40)):
        recs.append(",".join(field() for _ in range(r.randint(1, 8))) + r.choice(["\n", "\r\n", "\r"]))
    if r.random() < 0.3:
        recs[-1] = recs[-1].rstrip("\r\n")
    with open(f"{out}/f{n}.csv", "w", newline="") as f:
        f.write("".join(recs))
PY
mkdir -p "$TMP/gen"
python3 "$TMP/gen.py" "$TMP/gen" 300
find "$TMP/gen" -name '*.csv' -size +0 | sort > "$TMP/files"

cat > "$TMP/compare.py" <<'PY'
import csv, json, sys
bad = 0
n = 0
for line in open(sys.argv[1], encoding="utf-8"):
    path, rows, *err = json.loads(line)
    n += 1
    with open(path, newline="", encoding="utf-8") as f:
        want = [r for r in csv.reader(f) if r]   # blank lines are not records
    if rows != want:
        bad += 1
        if rows is None:
            print(f"{path}: perfscript: {err[0]}")
            continue
        i = next((i for i, (a, b) in enumerate(zip(rows, want)) if a != b), min(len(rows), len(want)))
        print(f"{path}: first difference at record {i + 1}:\n"
              f"  perfscript {rows[i] if i < len(rows) else 'end'}\n  python     {want[i] if i < len(want) else 'end'}")
print(f"{n} files, {bad} differ")
PY
"$PS_BIN" "$(dirname "$0")/csv_dump.lua" "$TMP/files" > "$TMP/ps.jsonl"
res=$(python3 "$TMP/compare.py" "$TMP/ps.jsonl")
expect_eq "generated files read as Python's csv reads them" "$(tail -1 <<< "$res")" "300 files, 0 differ"
[[ $(tail -1 <<< "$res") == "300 files, 0 differ" ]] || head -20 <<< "$res"
finish
