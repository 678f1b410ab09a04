# Shared by the CLI tests: the binary, a scratch directory, and assertions that say what failed.
set -u
PS_BIN=${PERFSCRIPT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/perfscript}
SRC=${PERFSCRIPT_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
TMP=$(mktemp -d "${PERFSCRIPT_TEST_TMP:-/tmp}/cli.XXXXXX")
# Every test removes things under $TMP: refuse to go on without a fresh scratch directory
# (a test run with `bash -c 'source ...'` once found no lib.sh, left TMP empty and removed /work/*).
[[ -n $TMP && -d $TMP && $TMP == */cli.* ]] || { echo "lib.sh: no scratch directory" >&2; exit 1; }
trap 'rm -rf "${TMP:?}"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $1"; shift; for l in "$@"; do echo "    $l"; done; }

# expect_eq NAME ACTUAL EXPECTED
expect_eq() {
  if [[ "$2" == "$3" ]]; then ok "$1"; else not_ok "$1" "expected: $(printf %q "$3")" "actual:   $(printf %q "$2")"; fi
}
# expect_contains NAME HAYSTACK NEEDLE
expect_contains() {
  if [[ "$2" == *"$3"* ]]; then ok "$1"; else not_ok "$1" "expected to contain: $3" "actual: $2"; fi
}
expect_not_contains() {
  if [[ "$2" != *"$3"* ]]; then ok "$1"; else not_ok "$1" "expected not to contain: $3" "actual: $2"; fi
}

finish() {
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}

# real_data REL: prints the path of a real export, or returns 1 after saying why it is absent
real_data() {
  local root=${PERFSCRIPT_REAL_DATA:-$SRC/../shared/data/real}
  if [[ -e "$root/$1" ]]; then echo "$root/$1"; else echo "SKIP: $root/$1 is absent (set PERFSCRIPT_REAL_DATA)" >&2; return 1; fi
}

# torch_python: sets PY to the first of python3 on PATH and /usr/bin/python3 that can import
# torch (the executor's own search, as tests need it), or exits 77 saying why
torch_python() {
  PY=
  local p
  for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c "import torch" 2>/dev/null; then PY=$(command -v "$p"); return 0; fi
  done
  echo "SKIP: no python3 with torch (apt-get install python3-torch)"
  exit 77
}

# Headless Chromium for the page tests: CHROMIUM (empty when not installed); browser OUTPUT-FLAG...
# URL runs it with a fresh profile, no network services and no sandbox (CI); expect_png_colours
# NAME PNG MIN RRGGBB... passes when each colour covers more than MIN pixels of the screenshot.
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
browser() {
  local profile
  profile=$(mktemp -d "$TMP/profile.XXXXXX")
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" "$@" 2>/dev/null
}
expect_png_colours() {
  local name=$1 png=$2 min=$3 colours c n
  shift 3
  colours=$(python3 "$SRC/tests/cli/png_colors.py" "$png" "$@")
  for c in "$@"; do
    n=$(awk -v c="$c" '$1 == c { print $2 }' <<<"$colours")
    if ((n > min)); then ok "$name in #$c ($n px)"; else not_ok "$name in #$c" "$colours"; fi
  done
}
