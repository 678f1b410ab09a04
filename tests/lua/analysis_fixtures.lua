-- Small generated inputs for the analysis tests: TensorCast traces and forward-pass CSVs.
local cjson = require "cjson"
local helpers = require "helpers"

local M = {}

local base = helpers.tmpdir()
local n = 0
M.real_data = helpers.real_data
M.read = helpers.read

function M.path(name)
  n = n + 1
  return string.format("%s/%03d_%s", base, n, name)
end

function M.write(name, text)
  return helpers.write(M.path(name), text)
end

-- X event: name, dur, args (table), pid (default 1).
function M.ev(name, dur, args, pid)
  return { name = name, ph = "X", ts = 0, dur = dur, pid = pid or 1, tid = 0, cat = "empirical",
           args = args or {} }
end

function M.meta(pid, pname)
  return { name = "process_name", ph = "M", pid = pid, args = { name = pname } }
end

-- A trace file from events; a process_name "empirical" for pid 1 unless with_meta == false.
function M.trace(events, with_meta)
  local all = {}
  if with_meta ~= false then all[1] = M.meta(1, "empirical (PID: 1)") end
  for _, e in ipairs(events) do all[#all + 1] = e end
  local text = cjson.encode({ traceEvents = all })
  return M.write("tc.json", text)
end

-- Forward-pass CSV: header list, rows of cells.
function M.csv(header, rows, opts)
  opts = opts or {}
  local out = { (opts.bom and "\239\187\191" or "") .. table.concat(header, ",") }
  for _, r in ipairs(rows) do
    local cells = {}
    for i, c in ipairs(r) do
      c = tostring(c)
      if c:find('[,"\n]') then c = '"' .. c:gsub('"', '""') .. '"' end
      cells[i] = c
    end
    out[#out + 1] = table.concat(cells, ",")
  end
  return M.write(opts.name or "prof.csv", table.concat(out, "\n") .. "\n")
end

-- Type,Duration(us),Start Time(us),Input Shapes rows from {type, dur, start, shapes}.
function M.prof(rows, opts)
  local t = {}
  for i, r in ipairs(rows) do t[i] = { r[1], r[2], r[3] or (i * 100), r[4] or "" } end
  return M.csv({ "Type", "Duration(us)", "Start Time(us)", "Input Shapes" }, t, opts)
end

return M
