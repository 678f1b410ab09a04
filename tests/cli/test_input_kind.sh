#!/usr/bin/env bash
# Only regular files are read (docs/rules.md, Input files): a FIFO given to parse_profile or
# trace_to_csv is refused at once, named as such (it used to block forever, and a fed FIFO was
# read as a file of unknown size), and nothing is written.
source "$(dirname "$0")/lib.sh" || exit 1
cd "$TMP"
mkfifo kernel_details.csv trace.json
out=$(timeout 20 "$PS_BIN" "$SRC/recipes/parse_profile.lua" --profiling-path kernel_details.csv \
      --database-path db 2>&1); rc=$?
expect_eq "parse_profile: a FIFO is refused at once (exit 1, no hang)" "$rc" "1"
expect_contains "parse_profile: the FIFO is named" "$out" \
  "kernel_details.csv: is a named pipe (FIFO), not a regular file; perfscript reads only regular files"
expect_eq "parse_profile: nothing written" "$(ls db 2>/dev/null | wc -l)" "0"

# a fed FIFO: refused too, not read as a stream (the feeder is stopped afterwards)
HEAD='Step Id,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats'
{ echo "$HEAD"; echo '1,a,Add,dynamic,AI_VECTOR_CORE,2.0,3.0,0,1,"""8,8;8,8""",DT_BF16;DT_BF16,ND;ND,"""8,8""",DT_BF16,ND'; } > kd.txt
timeout 20 sh -c 'cat kd.txt > kernel_details.csv' 2>/dev/null & feeder=$!
out=$(timeout 20 "$PS_BIN" "$SRC/recipes/parse_profile.lua" --profiling-path kernel_details.csv \
      --database-path db 2>&1); rc=$?
kill "$feeder" 2>/dev/null; wait "$feeder" 2>/dev/null
expect_eq "parse_profile: a fed FIFO is refused" "$rc" "1"
expect_contains "parse_profile: the fed FIFO is named" "$out" "is a named pipe (FIFO), not a regular file"
expect_eq "parse_profile: nothing written from a fed FIFO" "$(ls db 2>/dev/null | wc -l)" "0"

out=$(timeout 20 "$PS_BIN" "$SRC/recipes/trace_to_csv.lua" --trace trace.json --output o.csv 2>&1); rc=$?
expect_eq "trace_to_csv: a FIFO is refused at once" "$rc" "1"
expect_contains "trace_to_csv: the FIFO is named" "$out" "trace.json: is a named pipe (FIFO), not a regular file"
[[ ! -e o.csv ]] && ok "trace_to_csv: no output" || not_ok "trace_to_csv: no output"

# a character device is no export either
out=$(timeout 20 "$PS_BIN" "$SRC/recipes/parse_profile.lua" --profiling-path /dev/null --database-path db 2>&1); rc=$?
expect_eq "parse_profile: /dev/null is refused" "$rc" "1"
expect_contains "parse_profile: the device is named" "$out" "/dev/null: is a character device, not a regular file"
finish
