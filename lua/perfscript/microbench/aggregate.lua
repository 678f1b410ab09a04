-- Aggregation of msprof op_summary rows (spec replay_and_update.md section 8), with the
-- original's defects fixed: a blank or invalid duration never wins the minimum (a group with
-- no valid sample yields no row), and counters are averaged over their valid samples only.
--
--   local agg = aggregate.files(paths, {ep_size = 16})
--   agg.order = {"MatMulV2", "Add", ...}   op types in order of first appearance
--   agg.rows[op] = {row, ...}              rows keyed by database column name
--   agg.no_duration = {{op=, sig=}, ...}   groups whose samples had no valid duration
--   agg.samples                             rows read
local perf = require "perfscript"
local schema = require "perfscript.microbench.schema"

local M = {}

local NEEDED = { "OP Type", "Task Type", "Task Duration(us)" }

-- Adds the rows of one op_summary file into state (see M.new).
function M.add_file(st, path)
  local r, err = perf.csv.open(path, { trim = true, reuse = true })
  if not r then return nil, err end
  local header = r:header()
  local idx = {}
  for _, c in ipairs(NEEDED) do idx[c] = r:column(c) end
  if not idx["OP Type"] or not idx["Task Duration(us)"] then
    r:close()
    return nil, path .. ": not an op_summary file (no OP Type / Task Duration(us) column)"
  end
  local base = {}
  for i, c in ipairs(schema.BASE_COLS) do base[i] = r:column(c) end
  local metric = {}
  for i, m in ipairs(schema.METRICS) do metric[i] = r:column(m) end
  local cols = perf.sig.columns(header)
  local sig = perf.sig
  for f in r:lines() do
    st.samples = st.samples + 1
    local op = f[idx["OP Type"]]
    if op and op ~= "" then
      local text = sig.record(f, cols, op)
      local key = op .. "\0" .. text
      local g = st.groups[key]
      if not g then
        g = { op = op, count = 0, n_valid = 0, sums = {}, counts = {}, template = {} }
        for i, ci in ipairs(base) do g.template[i] = ci and f[ci] or "" end
        g.task_type = idx["Task Type"] and f[idx["Task Type"]] or ""
        st.groups[key] = g
        if not st.rows[op] then
          st.rows[op] = {}
          st.order[#st.order + 1] = op
        end
        local list = st.group_order[op] or {}
        st.group_order[op] = list
        list[#list + 1] = g
      end
      g.count = g.count + 1
      local d = schema.valid_sample(f[idx["Task Duration(us)"]])
      if d then
        g.n_valid = g.n_valid + 1
        if not g.min or d < g.min then g.min = d end
      end
      for i, ci in ipairs(metric) do
        local v = ci and f[ci]
        local x = v and v ~= "" and tonumber(v)
        if x and x == x and x ~= math.huge and x ~= -math.huge then
          g.sums[i] = (g.sums[i] or 0) + x
          g.counts[i] = (g.counts[i] or 0) + 1
        end
      end
    end
  end
  r:close()
  return true
end

function M.new(opts)
  return { groups = {}, rows = {}, order = {}, group_order = {}, samples = 0, opts = opts or {},
           no_duration = {} }
end

-- Turns the groups into database rows.
function M.finish(st)
  local ep = st.opts.ep_size
  for _, op in ipairs(st.order) do
    local out = st.rows[op]
    for _, g in ipairs(st.group_order[op]) do
      local row = {}
      for i, c in ipairs(schema.BASE_COLS) do row[c] = schema.trim(g.template[i]) end
      row["Accelerator Core"] = schema.trim(g.task_type)
      if g.min then
        row[schema.MB_DUR] = schema.fmt(g.min)
        for i, m in ipairs(schema.METRICS) do
          row[schema.mb_col(m)] = g.counts[i] and schema.fmt(g.sums[i] / g.counts[i]) or ""
        end
        row._samples = g.n_valid
        if ep and ep ~= 0 and perf.sig.op_name(op) == schema.DFC then
          row[schema.EP_SIZE] = tostring(ep)
          row._extra = { schema.EP_SIZE }
        end
        out[#out + 1] = row
      else
        st.no_duration[#st.no_duration + 1] = { op = op, sig = perf.sig.display(row), count = g.count }
      end
    end
  end
  return st
end

-- Aggregates a list of op_summary files.
function M.files(paths, opts)
  local st = M.new(opts)
  for _, p in ipairs(paths) do
    local ok, err = M.add_file(st, p)
    if not ok then return nil, err end
  end
  return M.finish(st)
end

return M
