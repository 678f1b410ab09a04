# Shared by the profile-import CLI tests (sourced after lib.sh, inside $TMP).
# cells FILE ROW NAME...: the named cells of data row ROW (1-based), joined by $CELLS_SEP (",")
cat > cells.lua <<'LUA'
local r = assert(require("perfscript").csv.open(arg[2]))
local sep, n, want, out = arg[1], tonumber(arg[3]), {}, {}
for i = 4, #arg do want[#want + 1] = assert(r:column(arg[i]), arg[i]) end
local k = 0
for f in r:lines() do
  k = k + 1
  if k == n then for _, i in ipairs(want) do out[#out + 1] = f[i] or "" end end
end
print(table.concat(out, sep))
LUA
cells() { "$PS_BIN" cells.lua "${CELLS_SEP:-,}" "$@"; }
