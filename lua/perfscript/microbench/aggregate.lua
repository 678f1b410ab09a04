-- Aggregation of msprof op_summary rows (docs/rules.md, Write-back), streamed in C
-- (perfscript.opsum), with the Python original's defects fixed: a blank or invalid duration never
-- wins the minimum (a group with no valid sample yields no row), and counters are averaged
-- over their valid samples only.
--
--   local agg = aggregate.files(paths, {ep_size = 16})
--   agg.order = {"MatMulV2", "Add", ...}   op types in order of first appearance
--   agg.rows[op] = {row, ...}              rows keyed by database column name; row._hash is
--                                          the signature hash under op, row._samples the
--                                          number of valid samples
--   agg.no_duration = {{op=, sig=, count=}} groups whose samples had no valid duration
--   agg.samples                             rows read
local perf = require "perfscript"
local schema = require "perfscript.microbench.schema"

local M = {}

local UNPACK = "=" .. string.rep("d", #schema.METRICS)

-- The counter means of an aggregated row in schema.METRICS order, NaN where a counter had no
-- valid sample; nil when the row has none packed.
function M.means(row)
  local m = row._m
  return m and { string.unpack(UNPACK, m) } or nil
end

-- The counter means of an aggregated row: {["MicroBench <m>"] = number | nil}.
function M.metrics(row)
  local out = {}
  local v = M.means(row)
  if v then
    for i, name in ipairs(schema.METRICS) do
      if v[i] == v[i] then out[schema.mb_col(name)] = v[i] end
    end
  end
  return out
end

function M.files(paths, opts)
  opts = opts or {}
  local res, err = perf.opsum.aggregate(paths)
  if not res then return nil, err end
  local agg = { order = {}, rows = {}, no_duration = {}, samples = res.samples }
  local ep = opts.ep_size
  for _, row in ipairs(res.groups) do
    local op = row._op
    local list = agg.rows[op]
    if not list then
      list = {}
      agg.rows[op] = list
      agg.order[#agg.order + 1] = op
    end
    if row._samples then -- a valid sample: row._hash, row._samples, row._op set by opsum.aggregate
      if ep and ep ~= 0 and perf.sig.op_name(op) == schema.DFC then
        row[schema.EP_SIZE] = tostring(ep)
        row._extra = { schema.EP_SIZE }
        row._hash = nil -- the signature now includes the EP Size
      end
      list[#list + 1] = row
    else
      agg.no_duration[#agg.no_duration + 1] = { op = op, sig = perf.sig.display(row), count = row._count }
    end
  end
  return agg
end

return M
