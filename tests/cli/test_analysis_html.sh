#!/usr/bin/env bash
# The HTML pages of op_comparison and m6, rendered by a real browser (headless Chromium):
# the DOM it builds has the kernel names and the bars, and the screenshot shows the bars' colours.
# Skipped (exit 77) when chromium is not installed.
source "$(dirname "$0")/lib.sh" || exit 1
if [[ -z $CHROMIUM ]]; then
  echo "SKIP: chromium is not installed (apt-get install chromium)"
  exit 77
fi
R=$SRC/recipes
FX=$SRC/tests/fixtures/analysis
cd "$TMP"
mkdir -p db && cp "$FX/op_mapping.yaml" db/

count() { grep -o "$2" <<<"$1" | wc -l | tr -d ' '; }

"$PS_BIN" "$R/op_comparison.lua" --tc-trace "$FX/tc_trace.json" --prof-trace "$FX/prof_forward.csv" \
  --data-dir db --name "Qwen3 DC" --html cmp.html >/dev/null 2>err || not_ok "op_comparison --html" "$(cat err)"
"$PS_BIN" "$R/m6.lua" --tc-trace "$FX/tc_trace.json" --prof-trace "$FX/prof_forward.csv" \
  --html m6.html >/dev/null 2>err || not_ok "m6 --html" "$(cat err)"

for page in cmp.html m6.html; do
  html=$(cat "$page")
  expect_not_contains "$page loads nothing (no script)" "$html" "<script"
  expect_not_contains "$page loads nothing (no src)" "$html" "src="
  expect_not_contains "$page loads nothing (no href)" "$html" "href="
  expect_not_contains "$page loads nothing (no url())" "$html" "url("
done

dom=$(browser --dump-dom "file://$TMP/cmp.html")
expect_contains "browser: op comparison page parsed" "$dom" "Qwen3 DC — TC vs Profiling per-forward"
expect_eq "browser: two charts" "$(count "$dom" '<svg ')" 2
for k in MatMulV2 hcom_allReduce_ Add; do
  expect_contains "browser: kernel label $k" "$dom" "text-anchor=\"end\">$k</text>"
  expect_contains "browser: error bar of $k" "$dom" "class=\"bar error-bar\" data-kernel=\"$k\""
  expect_contains "browser: TC share bar of $k" "$dom" "class=\"bar share-bar tc\" data-kernel=\"$k\""
  expect_contains "browser: Prof share bar of $k" "$dom" "class=\"bar share-bar prof\" data-kernel=\"$k\""
done
expect_contains "browser: MatMulV2 error value" "$dom" 'data-kernel="MatMulV2" data-value="-8.0"'
expect_contains "browser: Add error value" "$dom" 'data-kernel="Add" data-value="50.0"'
expect_contains "browser: MatMulV2 profiled share" "$dom" 'data-kernel="MatMulV2" data-value="76.9"'
expect_eq "browser: error bars (kernels with profiled time)" "$(count "$dom" 'class="bar error-bar"')" 3
expect_eq "browser: share bars (two per kernel)" "$(count "$dom" 'class="bar share-bar')" 6
expect_contains "browser: table row" "$dom" "<td>MatMulV2</td><td>42.8</td><td>46.5</td><td>-8.0%</td>"

dom=$(browser --dump-dom "file://$TMP/m6.html")
expect_contains "browser: m6 page parsed" "$dom" "M6 = 0.843 (Empirical / Real)"
expect_contains "browser: m6 error bar" "$dom" 'class="bar error-bar" data-kernel="MatMulV2"'

# The pixels: TC blue, profiling orange, under-prediction blue-grey, over-prediction red.
browser --window-size=1000,900 --screenshot="$TMP/cmp.png" "file://$TMP/cmp.html" >/dev/null
if [[ -s $TMP/cmp.png ]]; then
  ok "browser: screenshot written"
  expect_png_colours "screenshot shows bars" "$TMP/cmp.png" 200 1f77b4 ff7f0e 4c72b0 d62728
else
  not_ok "browser: screenshot written"
fi
finish
