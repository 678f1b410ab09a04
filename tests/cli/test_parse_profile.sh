# recipes/parse_profile.lua end to end (docs/rules.md, Import): the Python original's worked
# examples, generated fixtures for the quirks of real exports, merges into an existing
# database, and every real export in PERFSCRIPT_REAL_DATA.
source "$(dirname "$0")/lib.sh" || exit 1
cd "$TMP"
run() { "$PS_BIN" "$SRC/recipes/parse_profile.lua" "$@"; }
# cells FILE ROW NAME...: the named cells of data row ROW (1-based), comma-joined
source "$(dirname "$0")/profile_lib.sh" || exit 1
STATS=("Profiling Average Duration(us)" "Profiling Median Duration(us)" "Profiling Std Duration(us)")

METRICS="aicore_time(us),aic_total_cycles,aic_mac_time(us),aic_mac_ratio,aic_scalar_time(us),aic_scalar_ratio,aic_mte1_time(us),aic_mte1_ratio,aic_mte2_time(us),aic_mte2_ratio,aic_fixpipe_time(us),aic_fixpipe_ratio,aic_icache_miss_rate,aiv_time(us),aiv_total_cycles,aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),aiv_scalar_ratio,aiv_mte2_time(us),aiv_mte2_ratio,aiv_mte3_time(us),aiv_mte3_ratio,aiv_icache_miss_rate,cube_utilization(%)"
HEAD="Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Context ID,$METRICS"
# m V: 25 counter cells, all V
m() { local s="" i; for i in $(seq 25); do s+="${s:+,}$1"; done; echo "$s"; }
# row TASK START DUR TYPE IN OUT [METRIC]
row() { echo "1,4294967295,$1,2,n,$4,dynamic,AI_CORE,\"$2	\",$3,0.1,8,0,NO,\"\"\"$5\"\"\",DT_BF16;DT_BF16,ND;ND,\"\"\"$6\"\"\",DT_BF16,ND,N/A,$(m "${7:-1}")"; }

# --- statistics vector: durations 10, 20, 40; counters 1, 3, N/A -----------------------------
mkdir -p cap/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT
KD=cap/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv
{
  printf '\xef\xbb\xbf%s\r\n' "$HEAD"
  row 1 1736413971558972.912 10 MatMulV2 "16,32;32,8" "16,8" 1; printf '\r\n'
  row 2 1736413971558973.000 20 MatMulV2 "16,32;32,8" "16,8" 3; printf '\r\n'
  row 3 1736413971558974.000 40 MatMulV2 "16,32;32,8" "16,8" N/A; printf '\r\n'
  row 3 1736413971558974.000 40 MatMulV2 "16,32;32,8" "16,8" N/A; printf '\r\n'   # exact duplicate
  row 4 1736413971558975.000 7 muls_add_kernel_1 "4,4;4,4" "4,4"; printf '\r\n'
  row 5 1736413971558976.000 9 hcom_allReduce_ "N/A" "N/A"; printf '\r\n'
  printf '1,4294967295,6,2,n,Cast,dynamic,AI_CORE,7.0,3.5,0.1,8,0,NO,"""2,2""",FLOAT,ND,"""2,2""",FLOAT'  # ragged, no EOL
} > "$KD"
out=$(run --profiling-path cap --database-path db 2>&1); rc=$?
expect_eq "import exit status" "$rc" 0
expect_contains "summary counts rows" "$out" "Read 1 file(s), 7 rows; 5 aggregated into 3 database row(s) of 3 kernel type(s)"
expect_contains "summary counts duplicates" "$out" "1 exact duplicate rows"
expect_contains "summary counts N/A shapes" "$out" "1 with N/A shapes"
expect_contains "summary lists created files" "$out" "created  MatMulV2.csv: 1 rows"
expect_eq "files written" "$(ls db | tr '\n' ' ')" "Cast.csv MatMulV2.csv muls_add_kernel.csv "
line=$(sed -n 2p db/MatMulV2.csv)
expect_eq "mean, median, std, counter mean (N/A not counted)" \
  "$(cells db/MatMulV2.csv 1 "${STATS[@]}" "Profiling Average aicore_time(us)")" "23.333333,20.000000,12.472191,2.000000"
expect_contains "literal quotes kept in shapes" "$line" '"""16,32;32,8"""'
expect_eq "header: 36 columns in the original's order" "$(head -1 db/MatMulV2.csv | tr -d '\r' | cut -d, -f1-12)" \
  "OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Profiling Average Duration(us),Profiling Median Duration(us),Profiling Std Duration(us),Profiling Average aicore_time(us)"
expect_eq "header width" "$(head -1 db/MatMulV2.csv | tr -d '\r' | awk -F, '{print NF}')" 36
expect_eq "no BOM" "$(head -c 3 db/MatMulV2.csv)" "OP "
expect_contains "CRLF line ends" "$(od -c db/MatMulV2.csv | head -200)" '\r  \n'
expect_eq "ragged row without counters: empty counter cells" \
  "$(cells db/Cast.csv 1 "${STATS[@]}" "Profiling Average aicore_time(us)" "Profiling Average cube_utilization(%)")" "3.500000,3.500000,0.000000,,"

# --- merge into the existing database ---------------------------------------------------------
printf 'OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us),Profiling Average Duration(us)\r\nstatic,AI_CORE,"""9,9""",DT_BF16,ND,"""9,9""",DT_BF16,ND,1.5,2.5\r\ndynamic,AI_CORE,"4,4;4,4",DT_BF16;DT_BF16,ND;ND,"4,4",DT_BF16,ND,3.25,\r\n' > db/muls_add_kernel.csv
out=$(run --profiling-path "$KD" --database-path db 2>&1)
expect_contains "new-only keeps matched rows" "$out" "unchanged muls_add_kernel.csv: 1 kept"
expect_eq "new-only leaves the file alone" "$(sed -n 3p db/muls_add_kernel.csv | tr -d '\r')" 'dynamic,AI_CORE,"4,4;4,4",DT_BF16;DT_BF16,ND;ND,"4,4",DT_BF16,ND,3.25,'
out=$(run --profiling-path "$KD" --database-path db --update-mode missing-only 2>&1)
expect_contains "missing-only fills a row without profiling duration" "$out" "updated  muls_add_kernel.csv: 0 added, 1 replaced, 0 kept, 27 column(s) added"
expect_eq "rows keep their order, microbench column kept" "$(cut -d, -f1 db/muls_add_kernel.csv | tr -d '\r' | tr '\n' ' ')" "OP State static dynamic "
expect_eq "statistics filled, Average Duration kept" \
  "$(cells db/muls_add_kernel.csv 2 "Average Duration(us)" "${STATS[@]}")" "3.25,7.000000,7.000000,0.000000"
expect_eq "header: old columns first, new ones appended" "$(head -1 db/muls_add_kernel.csv | tr -d '\r' | cut -d, -f9-12)" \
  "Average Duration(us),Profiling Average Duration(us),Profiling Median Duration(us),Profiling Std Duration(us)"
cp db/MatMulV2.csv before.csv
sed -i 's/,10,0.1,8/,12,0.1,8/' "$KD"
out=$(run --profiling-path "$KD" --database-path db 2>&1)
expect_contains "new-only: changed statistics are not taken" "$out" "unchanged MatMulV2.csv: 1 kept"
out=$(run --profiling-path "$KD" --database-path db --update-mode all 2>&1)
expect_contains "all: statistics replaced" "$out" "updated  MatMulV2.csv: 0 added, 1 replaced, 0 kept"
expect_eq "all: new mean" "$(cells db/MatMulV2.csv 1 "Profiling Average Duration(us)")" "24.000000"
out=$(run --profiling-path "$KD" --database-path db --update-mode all --dry-run 2>&1)
expect_contains "dry run reports" "$out" "unchanged MatMulV2.csv"

# --- one row per kernel as the export wrote it (issue 10 item 1) ---------------------------------
# A MatMulV2 with a bias and one without (the write-back signature ignores the third input),
# and one Cast shape with two dtype pairs: four kernels, four rows.
mkdir -p kern
KH="Task ID,Stream ID,Type,Start Time(us),Duration(us),Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats"
{
  echo "$KH"
  echo '1,2,MatMulV2,1.0,114.922,"""32,4096;4096,4096;4096""",FLOAT;FLOAT;FLOAT,ND;ND;ND,"""32,4096""",FLOAT,ND'
  echo '2,2,MatMulV2,2.0,45.921,"""32,4096;4096,4096""",FLOAT;FLOAT,ND;ND,"""32,4096""",FLOAT,ND'
  echo '3,2,MatMulV2,3.0,46.079,"""32,4096;4096,4096""",FLOAT;FLOAT,ND;ND,"""32,4096""",FLOAT,ND'
  echo '4,2,Cast,4.0,2.0,"""8,8""",BOOL,ND,"""8,8""",FLOAT,ND'
  echo '5,2,Cast,5.0,3.0,"""8,8""",INT64,ND,"""8,8""",INT32,ND'
} > kern/kernel_details.csv
out=$(run --profiling-path kern --database-path kdb 2>&1)
expect_contains "distinct kernels: one row each" "$out" "5 aggregated into 4 database row(s) of 2 kernel type(s)"
expect_eq "MatMulV2 with and without bias: two rows" \
  "$(for r in 1 2; do cells kdb/MatMulV2.csv $r "Input Shapes" "Profiling Average Duration(us)"; done | tr '\n' ' ')" \
  '"32,4096;4096,4096;4096",114.922000 "32,4096;4096,4096",46.000000 '
expect_eq "Cast split by dtypes" \
  "$(for r in 1 2; do cells kdb/Cast.csv $r "Input Data Types" "Output Data Types" "Profiling Average Duration(us)"; done | tr '\n' ' ')" \
  'BOOL,FLOAT,2.000000 INT64,INT32,3.000000 '
# merging: a database row of the kernel without bias (no profiling duration yet) is filled by
# that kernel only, and the kernel with the bias becomes a row of its own
mkdir -p kdb2
printf 'OP State,Accelerator Core,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Average Duration(us),Profiling Average Duration(us)\r\ndynamic,AI_CORE,"""32,4096;4096,4096""",FLOAT;FLOAT,ND;ND,"""32,4096""",FLOAT,ND,40.5,\r\n' > kdb2/MatMulV2.csv
out=$(run --profiling-path kern --database-path kdb2 --update-mode missing-only 2>&1)
expect_contains "merge: no-bias row filled, bias kernel added" "$out" "updated  MatMulV2.csv: 1 added, 1 replaced, 0 kept"
expect_eq "merge: each row its own kernel's statistics" \
  "$(for r in 1 2; do cells kdb2/MatMulV2.csv $r "Input Shapes" "Average Duration(us)" "Profiling Average Duration(us)"; done | tr '\n' ' ')" \
  '"32,4096;4096,4096",40.5,46.000000 "32,4096;4096,4096;4096",,114.922000 '

# --- errors: missing columns, nothing written ---------------------------------------------------
mkdir -p bad/a bad/b
cp "$KD" bad/a/kernel_details.csv
printf 'Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim\n1,a,N/A,N/A,1.0,2.0,0,1\n' > bad/b/kernel_details.csv
out=$(run --profiling-path bad --database-path dbbad 2>&1); rc=$?
expect_eq "missing columns: exit 1" "$rc" 1
expect_contains "missing columns named with the file" "$out" "bad/b/kernel_details.csv: missing columns: Input Shapes"
expect_contains "Level0 said clearly" "$out" "Level0 export"
expect_eq "nothing written" "$(ls dbbad 2>/dev/null | wc -l)" 0
# empty input files: the message names them (issue 10 item 3)
mkdir -p empty/a empty/b
: > empty/a/kernel_details.csv
: > empty/b/kernel_details.csv
out=$(run --profiling-path empty --database-path dbempty 2>&1); rc=$?
expect_eq "empty files: exit 1" "$rc" 1
expect_contains "empty files named" "$out" "no data: every input file is empty (no header): empty/a/kernel_details.csv, empty/b/kernel_details.csv"
out=$(run --profiling-path empty/b/kernel_details.csv --database-path dbempty 2>&1); rc=$?
expect_eq "one empty file: exit 1" "$rc" 1
expect_contains "one empty file named" "$out" "no data: every input file is empty (no header): empty/b/kernel_details.csv"
expect_eq "empty files: nothing written" "$(ls dbempty 2>/dev/null | wc -l)" 0
out=$(run --profiling-path nowhere --database-path dbbad 2>&1); rc=$?
expect_eq "absent path: exit 1" "$rc" 1
expect_contains "absent path named" "$out" "profiling path not found: nowhere"
# no database flag: the default database (the grown ./perfdb, made from the bundled seed)
out=$(run --profiling-path cap 2>&1); rc=$?
expect_eq "no database: the default, exit 0" "$rc" 0
expect_contains "no database: says which database" "$out" \
  "Created the working database perfdb/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
expect_eq "the bundled seed is untouched" "$(cd "$SRC" && git status --porcelain data/ | wc -l)" 0
out=$(run --profiling-path cap --dry-run 2>&1); rc=$?
expect_contains "the grown database is the default from now on" "$out" \
  "Database: perfdb/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5 (default: the grown database"
rm -rf "${TMP:?}/perfdb"
out=$(run --help 2>&1)
expect_contains "help names the flags" "$out" "--update-mode"
out=$(PERFSCRIPT_DB_ROOT=$TMP/root run --profiling-path "$KD" --vllm-version 0.18.0 --torch-version 2.9.0 --cann-version 8.5 2>&1)
expect_eq "versions derive the directory" "$(ls root/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5 | wc -l)" 3

# --- op_summary twins of a kernel_details are left out -------------------------------------------
mkdir -p cap/rank0_ascend_pt/PROF_0001/mindstudio_profiler_output
sed 's/Type,OP State,Accelerator Core,Start Time(us),Duration(us)/OP Type,OP State,Task Type,Task Start Time(us),Task Duration(us)/' "$KD" \
  > cap/rank0_ascend_pt/PROF_0001/mindstudio_profiler_output/op_summary_0_1.csv
out=$(run --profiling-path cap --database-path db3 2>&1)
expect_contains "op_summary of the same capture left out" "$out" "Left out (its capture's kernel_details holds the same kernels)"
expect_contains "only the kernel_details rows" "$out" "Read 1 file(s), 7 rows"
out=$(run --profiling-path cap/rank0_ascend_pt/PROF_0001 --database-path db4 2>&1)
expect_contains "op_summary alone imports" "$out" "Read 1 file(s), 7 rows; 5 aggregated"

# --- a file read by two threads gives what one thread gives -------------------------------------
mkdir -p two
python3 "$SRC/tests/bench/gen_kernel_details.py" two/kernel_details.csv 3 2000
PERFSCRIPT_THREADS=1 run --profiling-path two --database-path one_t > /dev/null 2>&1
PERFSCRIPT_SPLIT_MIN=1 run --profiling-path two --database-path two_t > /dev/null 2>&1
expect_eq "two threads: same files" "$(ls two_t | wc -l)" "$(ls one_t | wc -l)"
expect_eq "two threads: same rows and statistics" "$(cat two_t/*.csv | md5sum)" "$(cat one_t/*.csv | md5sum)"
# --threads N: N chunks, N threads, the same rows; a count outside 1..64 is refused
for t in 1 3 4; do
  PERFSCRIPT_SPLIT_MIN=1 run --profiling-path two --database-path "t$t" --threads "$t" > /dev/null 2>&1
  expect_eq "--threads $t: same rows and statistics" "$(cat "t$t"/*.csv | md5sum)" "$(cat one_t/*.csv | md5sum)"
done
out=$(run --profiling-path two --database-path t0 --threads 0 2>&1); rc=$?
expect_eq "--threads 0: refused" "$rc" 1
expect_contains "--threads 0: says why" "$out" "--threads: a whole number from 1 to 64, not 0"
# the middle of this file falls inside a quoted multi-line cell: the split is refused
mkdir -p mid
{
  printf '%s\n' "$HEAD"
  row 1 100.0 5 Add "2,2" "2,2"; echo
  printf '1,4294967295,2,2,"%s",Mul,dynamic,AI_CORE,200.0,6,0.1,8,0,NO,"""3,3""",F,ND,"""3,3""",F,ND,N/A,%s\n' \
    "$(for i in $(seq 400); do printf 'frame %d\n' "$i"; done)" "$(m 1)"
  row 3 300.0 7 Add "2,2" "2,2"; echo
} > mid/kernel_details.csv
out=$(PERFSCRIPT_SPLIT_MIN=1 run --profiling-path mid --database-path mid_db 2>&1)
expect_contains "split inside a quoted cell: all rows read" "$out" "Read 1 file(s), 3 rows; 3 aggregated into 2 database row(s)"
expect_eq "split inside a quoted cell: statistics" "$(cells mid_db/Add.csv 1 "Profiling Average Duration(us)")" "6.000000"
{ head -c 1500000 two/kernel_details.csv; printf '\n7,1,1,2,"open\n'; } > two/bad.csv
mv two/bad.csv two/kernel_details.csv
out=$(PERFSCRIPT_SPLIT_MIN=1 run --profiling-path two --database-path bad_t 2>&1); rc=$?
expect_eq "two threads: a data error still fails" "$rc" 1
expect_contains "two threads: error with its line" "$out" "unterminated quoted field"

# --- every real export imports, or fails with the missing-columns error ---------------------------
if root=$(real_data .); then
  while IFS= read -r f; do
    rel=${f#$root/}
    out=$(run --profiling-path "$f" --database-path "real/$(echo "$rel" | tr / _)" 2>&1); rc=$?
    case "$rel" in
      */level0/*|*/resource/test.csv)
        expect_eq "real $rel: rejected" "$rc" 1
        expect_contains "real $rel: missing columns said" "$out" "missing columns: Input Shapes" ;;
      *)
        expect_eq "real $rel: imports" "$rc" 0
        expect_contains "real $rel: summary" "$out" "Generated" ;;
    esac
  done < <(find "$root" \( -name '*kernel_details*.csv' -o -name 'op_summary*.csv' -o -name test.csv \) | sort)
  f=$root/Ascend-mstt/profiler/msprof_analyze/test/ut/advisor/compute_advice/data/kernel_details.csv
  out=$(run --profiling-path "$f" --database-path mstt 2>&1)
  expect_contains "real duplicates counted once" "$out" "4 exact duplicate rows"
  # the real level1 export's MatMulV2 with and without a bias: two rows (one of 80.4215 before)
  run --profiling-path "$root/Ascend-msinsight/test/data/pytorch/text/level1" --database-path l1 > /dev/null 2>&1
  expect_eq "real level1: MatMulV2 with a bias" \
    "$(grep -c '"""32,4096;4096,4096;4096""",FLOAT;FLOAT;FLOAT,FORMAT_ND;FORMAT_ND;FORMAT_ND,"""32,4096""",FLOAT,FORMAT_ND,114.922000,' l1/MatMulV2.csv)" 1
  expect_eq "real level1: MatMulV2 without a bias" \
    "$(grep -c '"""32,4096;4096,4096""",FLOAT;FLOAT,FORMAT_ND;FORMAT_ND,"""32,4096""",FLOAT,FORMAT_ND,45.921000,' l1/MatMulV2.csv)" 1
  out=$(run --profiling-path "$root/Ascend-msinsight/test/data/pytorch/text/level2" --database-path l2 2>&1); rc=$?
  expect_eq "multi-rank directory imports" "$rc" 0
  expect_contains "multi-rank: both ranks read" "$out" "Read 2 file(s)"
fi
finish
