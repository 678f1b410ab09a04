# recipes/trace_to_csv.lua and perfscript.trace (docs/rules.md, Trace to CSV): worked examples,
# both trace roots, exact timestamps, interrupted and broken files, real traces.
source "$(dirname "$0")/lib.sh" || exit 1
cd "$TMP"
run() { "$PS_BIN" "$SRC/recipes/trace_to_csv.lua" "$@"; }
HEADER="op_name,kernel_type,simulation_shapes,dur_us,source,confidence,composite,sub_kernel_durations,kernel_shapes,shape_match_rule,sub_kernel_shapes"

cat > t1.json <<'EOF'
{"traceEvents": [
 {"name":"process_name","ph":"M","pid":1,"args":{"name":"empirical (PID: 1)"}},
 {"name":"aten.relu.default","cat":"empirical","ph":"X","ts":5,"dur":11,"pid":1,"tid":0,
  "args":{"kernel_type":"Unary","simulation_shapes":"[[4, 8]]","source":"MEASURED"}},
 {"name":"aten.native_layer_norm.default","ph":"X","ts":20,"dur":321,"args":{"kernel_type":"LayerNormFusion",
  "simulation_shapes":"[[2, 128, 4096], [4096], [4096]]","source":"PARTIAL","confidence":"0.75","composite":"True",
  "sub_kernel_durations":"[100, 221]","kernel_shapes":"[[2, 128, 4096], [4096], [4096]]","shape_match_rule":"broadcast_rhs",
  "sub_kernel_shapes":"[{\"kernel_type\": \"A\", \"kernel_shapes\": [[1, 2]]}]"}},
 {"name":"c","ph":"X","dur":3,"args":{"confidence":0.9,"composite":true,"sub_kernel_durations":[1, 2.5],"kernel_shapes":{"a":[1,"it's"]},"source":null}},
 {"ph":"X"},
 {"name":"b","ph":"B"},{"name":"e","ph":"E"},{"name":"nothing"},
 {"name":"n","ph":"X","args":null}
], "displayTimeUnit": "us"}
EOF
out=$(run --trace t1.json | tr -d '\r')
expect_eq "header" "$(echo "$out" | sed -n 1p)" "$HEADER"
expect_eq "vector 1: one X event" "$(echo "$out" | sed -n 2p)" 'aten.relu.default,Unary,"[[4, 8]]",11,MEASURED,,,,,,'
expect_eq "vector 2: every value copied" "$(echo "$out" | sed -n 3p)" \
  'aten.native_layer_norm.default,LayerNormFusion,"[[2, 128, 4096], [4096], [4096]]",321,PARTIAL,0.75,True,"[100, 221]","[[2, 128, 4096], [4096], [4096]]",broadcast_rhs,"[{""kernel_type"": ""A"", ""kernel_shapes"": [[1, 2]]}]"'
expect_eq "non-string args in Python form" "$(echo "$out" | sed -n 4p)" \
  "c,,,3,,0.9,True,\"[1, 2.5]\",\"{'a': [1, \"\"it's\"\"]}\",,"
expect_eq "vector 5: bare X event" "$(echo "$out" | sed -n 5p)" ",,,0,,,,,,,"
expect_eq "null args: defaults" "$(echo "$out" | sed -n 6p)" "n,,,0,,,,,,,"
expect_eq "vector 7: M, B, E and ph-less events skipped" "$(echo "$out" | wc -l)" 6
run --trace t1.json --output o.csv 2>err.txt
expect_eq "vector 6: --output writes what stdout shows" "$(tr -d '\r' < o.csv)" "$out"
expect_eq "CRLF line ends" "$(grep -c $'\r$' o.csv)" 6
expect_contains "output reported" "$(cat err.txt)" "created o.csv: 5 row(s) from 9 event(s)"
echo '{}' > empty.json
expect_eq "vector 4: {} gives the header only" "$(run --trace empty.json | tr -d '\r')" "$HEADER"

# bare array (Ascend trace_view.json), ts as a string with ns digits, no closing bracket
printf '[{"name":"k1","ph":"X","ts":"1736412474714258.990","dur":2.5,"pid":1,"tid":2,"args":{"Task Id":"7"}},\n{"name":"k2","ph":"X","ts":1736412474714259.125,"dur":1},\n' > cut.json
out=$(run --trace cut.json 2>&1 | tr -d '\r')
expect_contains "bare array read" "$out" "k1,,,2.5,,,,,,,"
expect_contains "interrupted export read up to the cut" "$out" "k2,,,1,,,,,,,"
expect_contains "interrupted export said" "$out" "without its closing ']'"
cat > ts.lua <<'EOF'
local r = assert(require("perfscript.trace").open(arg[1]))
for ev in r:events() do print(ev.ts_ns .. " " .. ev.ts) end
EOF
expect_eq "timestamps exact, string or number" "$("$PS_BIN" ts.lua cut.json | tr '\n' ' ')" \
  "1736412474714258990 1736412474714258.990 1736412474714259125 1736412474714259.125 "
printf '[{"name":"k1","ph":"X","dur":2},{"name":"k2","ph":' > broken.json
out=$(run --trace broken.json 2>&1); rc=$?
expect_eq "cut inside an event: exit 1" "$rc" 1
expect_contains "cut inside an event: said" "$out" "broken.json: unexpected end of file inside an event"
printf '[{"name":"k1","ph":"X","dur":2},{"name" "x"}]' > bad.json
run --trace bad.json --output bad.csv > /dev/null 2>err.txt; rc=$?
expect_eq "bad JSON: exit 1" "$rc" 1
expect_contains "bad JSON: file and byte" "$(cat err.txt)" "bad.json: invalid JSON near byte"
expect_eq "bad JSON: no output file" "$(ls bad.csv 2>/dev/null)" ""
out=$(run --trace nowhere.json 2>&1); rc=$?
expect_eq "absent trace: exit 1" "$rc" 1

if f=$(real_data Ascend-msinsight/test/data/pytorch/text/level2/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json); then
  run --trace "$f" --output real.csv 2>err.txt
  expect_contains "real trace_view: every X event" "$(cat err.txt)" "4811 row(s) from 10476 event(s)"
fi
if f=$(real_data Ascend-mstt/profiler/msprof_analyze/test/ut/advisor/timeline_advice/trace_view.json); then
  run --trace "$f" --output real2.csv 2>err.txt
  expect_contains "real mstt trace_view" "$(cat err.txt)" "2212 row(s) from 3670 event(s)"
fi
# Not a trace: an empty file, other JSON or a Git LFS pointer fails before the output is touched.
printf 'a,b\n1,2\n' > keep.csv
: > empty.json
echo '{"foo":1}' > other.json
echo '{"traceEvents": 5}' > notarray.json
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 947024\n' > lfs.json
for t in empty other notarray lfs; do
  out=$(run --trace $t.json --output keep.csv 2>&1); rc=$?
  expect_eq "$t.json: exit 1" "$rc" 1
  expect_eq "$t.json: the output is untouched" "$(cat keep.csv)" "$(printf 'a,b\n1,2')"
  case $t in
    empty) expect_contains "$t.json: said" "$out" "empty.json: an empty file, not a Chrome trace" ;;
    lfs) expect_contains "$t.json: named an LFS pointer" "$out" "lfs.json: a Git LFS pointer, not the trace" ;;
    *) expect_contains "$t.json: said" "$out" "$t.json: not a Chrome trace: neither a top-level array of events nor an object with \"traceEvents\"" ;;
  esac
done
expect_eq "no temporary file beside the output" "$(ls -a | grep -c '\.tmp\.')" 0
echo '{"traceEvents": []}' > none.json
run --trace none.json --output keep.csv 2>/dev/null
expect_eq "a trace without events is a trace: header only" "$(tr -d '\r' < keep.csv)" "$HEADER"
finish
