#!/usr/bin/env bash
# All-or-nothing writes (docs/rules.md, All-or-nothing writes): a grid, a microbench write-back
# or a profile import that fails part-way (a full disk, a file size limit, a read-only file, a
# failing rename) leaves every database file wholly old, or says exactly which files are new.
# Failures are made with the documented test hook perf.fs.inject_failure (through
# PERFSCRIPT_INIT) and with a real file size limit (ulimit -f: writes fail with EFBIG).
source "$(dirname "$0")/lib.sh" || exit 1
ver=ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5
seed="$SRC/data/seed_db/$ver"
cd "$TMP"

# the content of every file of a directory (reports, run journals and temporary files aside), as checksums
snap() { (cd "$1" && find . -type f ! -path './reports/*' ! -path './.perfscript/*' ! -name '.*' -print0 | sort -z | xargs -0 sha256sum); }
temps() { find "$1" -name '.*.tmp.*' | wc -l; }
grid() { "$PS_BIN" "$SRC/recipes/qwen3_grid.lua" --database-path "$1" --rows 4 "${@:2}" 2>&1; }
fresh() { rm -rf "${1:?}"; cp -r "$seed" "$1"; }

# 1. A full disk at the 5th file of a grid: nothing is replaced, the cause is said, no traceback.
fresh db1; before=$(snap db1)
out=$(PERFSCRIPT_INIT='require("perfscript").fs.inject_failure{write = 5}' grid db1); rc=$?
expect_eq "grid: a full disk fails the run" "$rc" "1"
expect_contains "grid: the cause is said" "$out" "write failed: No space left on device (the original is untouched)"
expect_not_contains "grid: no traceback" "$out" "stack traceback"
expect_eq "grid: every database file is old" "$(snap db1)" "$before"
expect_eq "grid: no temporary file is left" "$(temps db1)" "0"

# the same grid without a failure changes several files (what the failure above would have done)
fresh ok1; grid ok1 > ok1.txt
changed=$(diff <(snap ok1) <(snap db1) | grep -c '^<')
[[ $changed -ge 6 ]] && ok "grid: a whole run changes $changed files" || not_ok "grid: a whole run changes files" "$changed"

# 2. The summary report fails (staged last): the database stays old too.
fresh db2; before=$(snap db2)
out=$(PERFSCRIPT_INIT="require('perfscript').fs.inject_failure{write = $((changed + 1))}" \
      grid db2 --report "$TMP/summary.csv" --threads 1); rc=$?  # the hook counts per process
expect_eq "grid: a failing report fails the run" "$rc" "1"
expect_contains "grid: the report is the file that failed" "$out" "summary.csv: write failed: No space left on device"
expect_eq "grid: with the report failing, every database file is old" "$(snap db2)" "$before"
[[ ! -e summary.csv ]] && ok "grid: no report" || not_ok "grid: no report"

# 3. A real file size limit (1 KiB blocks): the files that grow past it cannot be written.
fresh db3; before=$(snap db3)
out=$(ulimit -f 2; grid db3); rc=$?
expect_eq "grid: a file size limit fails the run" "$rc" "1"
expect_contains "grid: EFBIG is said" "$out" "write failed: File too large (the original is untouched)"
expect_eq "grid: under a file size limit every database file is old" "$(snap db3)" "$before"
expect_eq "grid: no temporary file after EFBIG" "$(temps db3)" "0"

# 4. A rename failing in the commit: the files before it are new, the others old, all named.
fresh db4; before=$(snap db4)
out=$(PERFSCRIPT_INIT='require("perfscript").fs.inject_failure{rename = 3}' grid db4); rc=$?
expect_eq "grid: a failing rename fails the run" "$rc" "1"
expect_contains "grid: the interrupted commit is said" "$out" "the commit stopped after 2 of $changed file(s): new content in "
line=$(grep -o 'new content in .*' <<<"$out")
new_list=${line#new content in }; new_list=${new_list%%; old content still in*}
old_list=${line#*old content still in }
good=1
for f in ${new_list//,/ }; do cmp -s "$f" "ok1/${f#db4/}" || { good=0; echo "    not new: $f"; }; done
for f in ${old_list//,/ }; do cmp -s "$f" "$seed/${f#db4/}" || { good=0; echo "    not old: $f"; }; done
n_new=$(wc -w <<<"${new_list//,/ }"); n_old=$(wc -w <<<"${old_list//,/ }")
expect_eq "grid: the files said new are new, the files said old are old" "$good/$n_new/$n_old" "1/2/$((changed - 2))"
expect_eq "grid: no temporary file after a failed rename" "$(temps db4)" "0"

# 5. A file marked read-only is refused before anything is written, and named.
fresh db5; chmod 444 db5/MatMulV2.csv; before=$(snap db5)
out=$(grid db5); rc=$?
expect_eq "grid: a read-only file fails the run" "$rc" "1"
expect_contains "grid: the read-only file is named" "$out" \
  "db5/MatMulV2.csv: the file is marked read-only (mode 0444); perfscript does not replace it"
expect_eq "grid: with a read-only file every database file is old" "$(snap db5)" "$before"
expect_eq "grid: the mode is kept" "$(stat -c %a db5/MatMulV2.csv)" "444"

# 6. The microbench write-back (simulated): a full disk at the report leaves the files old.
H='OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us),Profiling Average Duration(us)'
mkdir -p mb
printf '%s\ndynamic,AI_CORE,"""1024,1024;1024,1024""",FLOAT16;FLOAT16,ND;ND,"""1024,1024""",FLOAT16,ND,,\n' "$H" > mb/MatMulV2.csv
printf '%s\ndynamic,AI_VECTOR_CORE,"""8,8;8,8""",DT_BF16;DT_BF16,ND;ND,"""8,8""",DT_BF16,ND,,\n' "$H" > mb/Add.csv
mbrun() { "$PS_BIN" "$SRC/recipes/microbench.lua" --simulate --database-path mb --work-dir "$TMP" 2>&1; }
for n in 1 3; do  # 1: the first database file; 3: the report's CSV, after both database files
  rm -rf mb_simulated
  out=$(PERFSCRIPT_INIT="require('perfscript').fs.inject_failure{write = $n}" mbrun); rc=$?
  expect_eq "microbench: a full disk at staged file $n fails the run" "$rc" "1"
  expect_contains "microbench: the cause is said ($n)" "$out" "write failed: No space left on device"
  expect_not_contains "microbench: no traceback ($n)" "$out" "stack traceback"
  expect_eq "microbench: every database file is old ($n)" "$(snap mb_simulated)" "$(snap mb)"
  expect_eq "microbench: no report ($n)" "$(ls mb_simulated/reports 2>/dev/null | wc -l)" "0"
done
rm -rf mb_simulated
out=$(mbrun); rc=$?
expect_eq "microbench: without a failure the run writes" "$rc/$(ls mb_simulated/reports | wc -l)" "0/3"
expect_contains "microbench: the writes are said" "$out" "mb_simulated/Add.csv (updated 1, added 0, deleted 0)"

# 7. parse_profile: a full disk at the second file of an import creates none of them.
mkdir -p imp cap
{
  echo 'Step Id,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats'
  echo '1,a,MatMulV2,dynamic,AI_CORE,1.0,2.0,0,1,"""4,4;4,4""",DT_BF16;DT_BF16,ND;ND,"""4,4""",DT_BF16,ND'
  echo '1,b,Add,dynamic,AI_VECTOR_CORE,2.0,3.0,0,1,"""8,8;8,8""",DT_BF16;DT_BF16,ND;ND,"""8,8""",DT_BF16,ND'
  echo '1,c,Cast,dynamic,AI_VECTOR_CORE,3.0,4.0,0,1,"""2,2""",FLOAT,ND,"""2,2""",DT_BF16,ND'
} > cap/kernel_details.csv
out=$(PERFSCRIPT_INIT='require("perfscript").fs.inject_failure{write = 2}' \
      "$PS_BIN" "$SRC/recipes/parse_profile.lua" --profiling-path cap --database-path imp 2>&1); rc=$?
expect_eq "parse_profile: a full disk fails the import" "$rc" "1"
expect_contains "parse_profile: the cause is said" "$out" "write failed: No space left on device"
expect_eq "parse_profile: no file is created" "$(ls imp | wc -l)" "0"
# the log is made by a thread while the files are made: it is dropped with them
expect_eq "parse_profile: no log and no temporary file left" "$(find imp -type f ! -name .perfscript.lock | wc -l)" "0"
out=$("$PS_BIN" "$SRC/recipes/parse_profile.lua" --profiling-path cap --database-path imp 2>&1); rc=$?
expect_eq "parse_profile: without a failure, three files" "$rc/$(ls imp | wc -l)" "0/3"
expect_eq "parse_profile: and the log of their three rows" "$(wc -l < imp/.perfscript/provenance.jsonl)" "3"

finish
