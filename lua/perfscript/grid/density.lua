-- Audits the grid engine's axes against the axis-density standard (its rules live in
-- perfscript.db.density): required anchors present, the range covered at both ends, and every
-- step within its segment's maximum gap or ratio (the segment that contains the larger value
-- decides, as in the database's coverage check).
local standard = require "perfscript.db.density"

local M = {}

-- check(values, rule) -> list of problems (strings); empty when the axis complies. rule is one
-- of the standard's ({range, segments, anchors}; `required` is accepted for anchors).
function M.check(values, rule)
  local bad, have = {}, {}
  local v = {}
  for i, x in ipairs(values) do v[i] = x; have[x] = true end
  table.sort(v)
  for _, r in ipairs(rule.anchors or rule.required or {}) do
    if not have[r] then bad[#bad + 1] = "missing required value " .. r end
  end
  if rule.range and #v > 0 then
    if v[1] > rule.range[1] then bad[#bad + 1] = ("starts at %d, above the range start %d"):format(v[1], rule.range[1]) end
    if v[#v] < rule.range[2] then bad[#bad + 1] = ("ends at %d, below the range end %d"):format(v[#v], rule.range[2]) end
  end
  for i = 2, #v do
    local a, b = v[i - 1], v[i]
    local kind, limit = standard.step(rule, a, b)
    if kind == "gap" then
      bad[#bad + 1] = ("step %d -> %d is wider than %d"):format(a, b, limit)
    elseif kind == "ratio" then
      bad[#bad + 1] = ("step %d -> %d exceeds ratio %g"):format(a, b, limit)
    end
  end
  return bad
end

-- audit(registry, patterns[, std]) -> { {axis = name, problems = {...}}, ... } for every shape
-- axis the standard names (public grids, then the patterns' inline axes); std defaults to
-- perfscript.db.density.
function M.audit(registry, patterns, std)
  std = std or standard
  local out, names = {}, {}
  for name, rule in pairs(std.grids) do
    if not rule.comm then names[#names + 1] = name end
  end
  table.sort(names)
  for _, name in ipairs(names) do
    local values = registry[name]
    out[#out + 1] = { axis = name, problems = values and M.check(values, std.grids[name])
                                              or { "no such grid in the registry" } }
  end
  for _, t in ipairs(std.templates) do
    local pname, var, rule = t[1], t[2], t[3]
    local values
    for _, it in ipairs((patterns[pname] or {}).iterators or {}) do
      if it[1] == var then values = type(it[2]) == "string" and registry[it[2]] or it[2] end
    end
    out[#out + 1] = { axis = pname .. "." .. var, problems = values and M.check(values, rule)
                                                            or { "no such iterator" } }
  end
  return out
end

-- The audit's command line (recipes/grid_density.lua): one line per axis, a count; fails when
-- an axis falls short.
function M.main(argv)
  local perf = require "perfscript"
  require("argparse")("grid_density.lua", "Check the grid axes against the axis-density standard.")
    :parse(argv)
  local results = M.audit(require "perfscript.grids.registry", (require "perfscript.grids.patterns"))
  local failed = 0
  for _, r in ipairs(results) do
    if #r.problems == 0 then
      print(("ok    %s"):format(r.axis))
    else
      failed = failed + 1
      for _, p in ipairs(r.problems) do print(("FAIL  %s: %s"):format(r.axis, p)) end
    end
  end
  print(("%d of %d axes comply."):format(#results - failed, #results))
  if failed > 0 then perf.fail("%d axes fall short of the density standard", failed) end
end

return M
