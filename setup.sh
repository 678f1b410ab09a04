#!/usr/bin/env bash
# perfscript setup: installs the Debian packages it needs (only when one is missing), builds,
# and optionally runs something.
#   ./setup.sh                  install what is missing and build build/perfscript
#   ./setup.sh run ARGS...      ... then run build/perfscript ARGS...
#   ./setup.sh test             ... then run every test (C, Lua, CLI) through ctest
#   ./setup.sh sanitize         build in build-asan with ASan+UBSan and run every test there
#   ./setup.sh tsan             build the tests of the threaded C code (the import's pass, the
#                               writer thread, the staged fsyncs, the fork workers) in build-tsan
#                               with ThreadSanitizer and run them
#   ./setup.sh fuzz [SECONDS]   build the libFuzzer targets (clang) in build-fuzz, run each for
#                               SECONDS (default 60) and the expression differential (fuzz/README.md)
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(
  build-essential cmake pkg-config
  liblua5.4-dev lua-filesystem-dev lua-cjson-dev lua-yaml lua-argparse lua-unit
  libxxhash-dev libyajl-dev libreadline-dev libcmocka-dev
  python3 tmux chromium
  python3-torch  # the replay goldens (executor.py --device cpu|meta, microbench.lua --validate) and their tests
)

# the tests (not the build) start a one-node Slurm cluster: tests/cli/test_slurm_cluster.sh
[[ ${1:-} == test || ${1:-} == sanitize ]] && PACKAGES+=(slurm-wlm munge)
# the fuzz targets need clang and its libFuzzer runtime (only for ./setup.sh fuzz)
[[ ${1:-} == fuzz ]] && PACKAGES+=(clang-14 libclang-rt-14-dev)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

JOBS=$(nproc 2>/dev/null || echo 2)
compile() {  # compile DIR [cmake --build args...]: stops on a failed target (a test's too), so
             # no tests run on an older build left in DIR
  local dir=$1 st=0; shift
  cmake --build "$dir" -j "$JOBS" "$@" > "$dir/build.log" 2>&1 || st=$?
  grep -vE '^\[ *[0-9]+%\]|^-- ' "$dir/build.log" >&2 || true
  (( st == 0 )) || { echo "setup: build failed (see above)" >&2; exit 1; }
}
build() {  # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  compile "$dir"
  [[ -x $dir/perfscript ]] || { echo "setup: build failed (no $dir/perfscript)" >&2; exit 1; }
}

cmd=${1:-build}
[[ $# -gt 0 ]] && shift
case "$cmd" in
  build) build build ;;
  run) build build; exec build/perfscript "$@" ;;
  test)
    build build
    cd build && ctest --output-on-failure -j "$JOBS" "$@" ;;
  sanitize)
    build build-asan -DPERFSCRIPT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
    cd build-asan && ctest --output-on-failure -j "$JOBS" "$@" ;;
  tsan)
    threaded=(test_profile test_csvwrite test_stage test_forkmap test_proc)
    cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPERFSCRIPT_TSAN=ON >/dev/null
    compile build-tsan --target "${threaded[@]}"
    regex=$(IFS='|'; echo "^c/(${threaded[*]})\$")
    cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest --output-on-failure -j "$JOBS" -R "$regex" "$@" ;;
  fuzz) exec fuzz/run.sh "$@" ;;
  *) echo "usage: $0 [build | run ARGS... | test | sanitize | tsan | fuzz [SECONDS]]" >&2; exit 2 ;;
esac
