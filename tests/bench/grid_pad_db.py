#!/usr/bin/env python3
"""Pads every CSV of a database directory to N data rows (benchmark input).

The added rows are copies of the template row whose first input dimension is made unique
(900001, 900002, ...), so they are distinct signatures that no grid rule generates."""
import csv, os, re, sys

def main():
    d, n = sys.argv[1], int(sys.argv[2])
    for name in sorted(os.listdir(d)):
        if not name.endswith(".csv"):
            continue
        path = os.path.join(d, name)
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        header, body = rows[0], rows[1:]
        if not body or "Input Shapes" not in header:
            continue
        col = header.index("Input Shapes")
        tmpl = body[0]
        with open(path, "a", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            for i in range(len(body), n):
                r = list(tmpl)
                r[col] = re.sub(r"^(\"?)(\d+)", lambda m: m.group(1) + str(900001 + i), r[col], count=1)
                w.writerow(r)

main()
