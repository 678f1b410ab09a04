#!/usr/bin/env bash
# The Insight trace summary page rendered by a real browser (headless Chromium), as the other
# report pages are checked (test_analysis_html.sh): the DOM has the pipeline bars and tables,
# the page loads nothing, and the screenshot shows the pipelines' colours (cube red, vector
# blue, MTE2 orange, MTE1 purple).
# Skipped (exit 77) when chromium, g++ or cmake is not installed.
source "$(dirname "$0")/lib.sh" || exit 1
if [[ -z $CHROMIUM ]]; then echo "SKIP: chromium is not installed (apt-get install chromium)"; exit 77; fi
for tool in g++ cmake python3; do
  if ! command -v "$tool" >/dev/null; then echo "SKIP: $tool is not installed"; exit 77; fi
done
FX=$SRC/tests/fixtures/insight
SEED=$SRC/data/seed_db/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5
cd "$TMP"
g++ -shared -fPIC -o libkernel.so "$FX/kernel_standin.cpp"
# MatMulV2: the stand-in simulates a cube pipeline too, so every colour is on the page
"$PS_BIN" "$SRC/recipes/insight_trace.lua" --kernel MatMulV2 --from-db "$SEED" --row 1 --kernel-lib libkernel.so \
  --msprof "$FX/msprof" --runtime-include "$FX" --runtime-libs "" --output ws --html page.html -q >out 2>err \
  || not_ok "insight_trace --html" "$(cat err)"
html=$(cat page.html)
for needle in "<script" "src=" "href=" "url("; do
  expect_not_contains "page loads nothing ($needle)" "$html" "$needle"
done

count() { grep -o "$2" <<<"$1" | wc -l | tr -d ' '; }
dom=$(browser --dump-dom "file://$TMP/page.html")
expect_contains "browser: page parsed" "$dom" "<h1>Insight trace: MatMulV2</h1>"
expect_eq "browser: one chart" "$(count "$dom" '<svg ')" 1
expect_eq "browser: a bar per pipeline (six named, fixp, flowctrl)" "$(count "$dom" 'class="bar pipe-bar"')" 8
for p in cube vector mte1 mte2 mte3 scalar; do
  expect_contains "browser: bar of $p" "$dom" "class=\"bar pipe-bar\" data-pipe=\"$p\""
done
expect_contains "browser: pipeline table row" "$dom" "<tr><td>cube</td>"
expect_contains "browser: top instructions table" "$dom" "<td>MMAD</td><td>cube</td>"
expect_contains "browser: the row it came from" "$dom" "MatMulV2.csv row 1"

browser --window-size=1000,900 --screenshot="$TMP/page.png" "file://$TMP/page.html" >/dev/null
if [[ -s $TMP/page.png ]]; then
  ok "browser: screenshot written"
  expect_png_colours "screenshot shows bars" "$TMP/page.png" 100 d62728 1f77b4 ff7f0e 9467bd
else
  not_ok "browser: screenshot written"
fi
finish
