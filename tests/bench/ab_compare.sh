#!/usr/bin/env bash
# Before/after benchmark: two perfscript source trees (each built, with its own recipes) on the
# same generated inputs, alternated, so that a change's cost is read in one run. Prints wall s,
# CPU s and peak MB per run, and with --instructions the callgrind instruction counts (the
# figures to read on a shared machine: they do not move with the load).
#   tests/bench/ab_compare.sh OLD_TREE NEW_TREE [--instructions]
# Sizes: IMPORT_MB (150), MB_ROWS (300000), MB_UPD (30000). Not a ctest test.
set -euo pipefail
OLD=${1:?usage: ab_compare.sh OLD_TREE NEW_TREE [--instructions]}
NEW=${2:?usage: ab_compare.sh OLD_TREE NEW_TREE [--instructions]}
CG=${3:-}
W=$(mktemp -d "${BENCH_TMP:-/tmp}/psab.XXXXXX")
trap 'rm -rf "${W:?}"' EXIT
run() {  # run CMD...: one line "wall cpu MB" (or instructions with --instructions)
  if [[ $CG == --instructions ]]; then
    valgrind --tool=callgrind --callgrind-out-file="$W/cg.out" "$@" >/dev/null 2>"$W/err" || { tail "$W/err"; exit 1; }
    grep -o "Collected : [0-9]*" "$W/err" | awk '{print $3 " instructions"}'
  else
    /usr/bin/time -f "%e %U %S %M" -o "$W/t" "$@" >/dev/null 2>"$W/err" || { tail "$W/err"; exit 1; }
    read -r w u s r < "$W/t"
    awk -v w="$w" -v u="$u" -v s="$s" -v r="$r" 'BEGIN { printf "%.2f s wall %.2f s cpu %d MB\n", w, u + s, r / 1024 }'
  fi
}
reps=3; [[ $CG == --instructions ]] && reps=1
KD=$W/cap/r0/ASCEND_PROFILER_OUTPUT/kernel_details.csv
mkdir -p "$(dirname "$KD")"
python3 "$NEW/tests/bench/gen_kernel_details.py" "$KD" "${IMPORT_MB:-150}" 20000 >/dev/null
echo "import: $(stat -c %s "$KD") bytes of kernel_details"
for _ in $(seq $reps); do for v in OLD NEW; do d=${!v}; rm -rf "$W/db"
  echo "  $v $(PERFSCRIPT_THREADS=1 run "$d/build/perfscript" "$d/recipes/parse_profile.lua" --profiling-path "$W/cap" --database-path "$W/db")"
done; done
python3 "$NEW/tests/bench/gen_microbench.py" "$W/mb0" "$W/prof" "${MB_ROWS:-300000}" "${MB_UPD:-30000}" >/dev/null
echo "write-back: ${MB_ROWS:-300000}-row Add.csv, ${MB_UPD:-30000} op_summary rows"
for _ in $(seq $reps); do for v in OLD NEW; do d=${!v}; rm -rf "$W/mb"; cp -r "$W/mb0" "$W/mb"
  echo "  $v $(run "$d/build/perfscript" "$d/recipes/microbench.lua" --database-path "$W/mb" --prof-path "$W/prof" --ops Add --work-dir "$W")"
done; done
echo "grid: dsv3_grid.lua on the bundled seed (the Quick start's main job)"
for _ in $(seq $reps); do for v in OLD NEW; do d=${!v}; rm -rf "$W/g"; mkdir "$W/g"
  echo "  $v $(cd "$W/g" && run "$d/build/perfscript" "$d/recipes/dsv3_grid.lua")"
done; done
