#!/usr/bin/env bash
# The trace reader on one growing token (a number and a string of MB bytes each, in one event),
# old against new: tests/bench/bench_trace_token.c compiled against each tree's src/io/trace.c,
# the two alternated per size. Linear: the s/MB column stays flat as the token doubles.
#   tests/bench/trace_token_bench.sh OLD_TREE [NEW_TREE (this one)] [MB... (default 1 2 4 8 16)]
# OLD_TREE: e.g. `git worktree add /tmp/old <commit>`. Not a ctest test.
set -euo pipefail
OLD=${1:?usage: trace_token_bench.sh OLD_TREE [NEW_TREE] [MB...]}
NEW=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
shift $(( $# >= 2 ? 2 : 1 ))
SIZES=("$@")
((${#SIZES[@]})) || SIZES=(1 2 4 8 16)
W=$(mktemp -d "${BENCH_TMP:-/tmp}/pstrace.XXXXXX")
trap 'rm -rf "${W:?}"' EXIT
for v in OLD NEW; do
  d=${!v}
  cc -O2 -std=c11 -D_GNU_SOURCE -I"$d/src/io" -I"$d/src/base" -o "$W/bench_$v" \
     "$NEW/tests/bench/bench_trace_token.c" "$d/src/io/trace.c" -lyajl
done
for mb in "${SIZES[@]}"; do
  for v in OLD NEW; do echo "$v $("$W/bench_$v" "$W" "$mb")"; done
done
