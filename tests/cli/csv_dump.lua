-- For the tests that compare perfscript.csv with Python's csv (test_csv_real.sh,
-- test_csv_python_random.sh): reads each path listed in the file arg[1] and prints one JSON
-- line per file, [path, records] or [path, null, error].
local csv, cjson = require "perfscript.csv", require "cjson"
for path in io.lines(arg[1]) do
  local r, err = csv.open(path, {header = false, reuse = false})
  local rows = setmetatable({}, cjson.array_mt)
  local ok = r ~= nil
  if r then
    ok, err = pcall(function() for f in r:lines() do rows[#rows + 1] = f end end)
  end
  print(cjson.encode(ok and {path, rows} or {path, cjson.null, err}))
end
