-- Provenance of database values (docs/rules.md, Provenance): an append-only log,
-- <database>/.perfscript/provenance.jsonl, one JSON line per row a run wrote. The CSV files
-- keep exactly the columns the consumer reads; the log says where each value came from:
--   {"run":, "time":, "version":, "kernel": (the CSV's stem), "key": (the row's signature
--    hash, hex: perf.sig.row), "sig": (shapes, for people), "source": "measured" | "simulated"
--    | "imported", "device":, "cann":, "torch":, "torch_npu":, "input": (file), "input_xxh3":,
--    "samples":, "duration_us":}
-- A row's provenance is its latest line: a measured write-back of a row a simulated run wrote
-- replaces the simulated mark; a row no run wrote since the log began has none ("unknown").
-- The lines are appended with the write-back's stage, so they land with the CSVs or not at all.
--
--   provenance.append(dbdir, text, stage)       text, n = provenance.lines(base, results, inputs)
--   provenance.index(dbdir) -> {[kernel] = {[key] = entry}}, n | nil, message
--   provenance.of(index, kernel, row)  -> entry | nil     row: {[column] = cell}
--   provenance.label(entry) -> "measured run R 2026-... (910B3, CANN 8.5, torch 2.9.0; 5 samples)"
local perf = require "perfscript"
local cjson = require "cjson"
local paths = require "perfscript.path"

local M = {}

M.FILE = ".perfscript/provenance.jsonl"
M.SOURCES = { measured = true, simulated = true, imported = true }

function M.path(dbdir) return paths.join(dbdir, M.FILE) end

function M.key_hex(h) return ("%016x"):format(h) end

-- The row's signature key as the log holds it (the write-back's match key).
function M.key(row, kernel)
  local _, h = perf.sig.row(M.sig_row(function(c) return row[c] end), kernel)
  return M.key_hex(h)
end

-- XXH3 of a file's bytes (hex), or nil, message.
function M.file_xxh3(path)
  local h, err = perf.sig.hash_file(path) -- streamed: a 300 MB export is not read into memory
  if not h then return nil, err end
  return M.key_hex(h)
end

-- The columns of a row's signature (what perf.sig.row reads), in one place for every caller.
M.SIG_COLS = { "OP Type", "OP State", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
  "Output Data Types", "Output Formats", "EP Size" }

-- A database row as key() takes it, from get(column) -> cell | nil.
function M.sig_row(get)
  local row = {}
  for _, c in ipairs(M.SIG_COLS) do row[c] = get(c) end
  return row
end

-- What several input files are, for the log: the file itself when there is one (and its
-- XXH3), else where they were found and the XXH3 of their XXH3s, in order. known: the XXH3s
-- (integers) already taken of some files, by their index (the import's, taken while reading).
function M.inputs(files, where, known)
  local hashes = {}
  for i, f in ipairs(files) do
    local h = known and known[i]
    hashes[#hashes + 1] = h and M.key_hex(h) or M.file_xxh3(f) or "unreadable"
  end
  if #files == 1 then return files[1], hashes[1] end
  return where, M.key_hex(perf.sig.hash(table.concat(hashes, ",")))
end

-- The members every line of a run shares, as JSON without braces, in a fixed order (the same
-- run writes the same bytes): base {run =, source =, device =, cann =, torch =, torch_npu =,
-- time = (default: now)}.
local COMMON = { "run", "time", "version", "source", "device", "cann", "torch", "torch_npu" }
function M.common(base)
  if not M.SOURCES[base.source] then error("provenance: source must be measured, simulated or imported", 3) end
  local v = { time = base.time or os.date("!%Y-%m-%dT%H:%M:%SZ"), version = perf.version }
  local parts = {}
  for _, k in ipairs(COMMON) do
    local x = v[k] or base[k]
    if x ~= nil then parts[#parts + 1] = cjson.encode(k) .. ":" .. cjson.encode(x) end
  end
  return table.concat(parts, ",")
end

-- The lines of a write-back, as one text (each line ends in "\n"), and their number: one per
-- row of the merge results (res.stem, res.written_rows = {{key =, row =}}), built in C
-- (perfscript.provenance). inputs: where the values came from: nil, {file, xxh3} for every
-- row, or input_of(kernel, key_hex, row) -> file, xxh3 per row.
function M.lines(base, results, inputs)
  local common = M.common(base)
  if type(inputs) == "function" then return perf.provenance.lines(common, results, nil, nil, inputs) end
  return perf.provenance.lines(common, results, inputs and inputs[1], inputs and inputs[2])
end

-- The lines of the groups an import writes as the new file <stem>.csv (agg:provenance: no Lua
-- table per row), as M.lines returns them (as_text: as a perfscript.text, C buffers that
-- perf.fs.write_atomic writes without a copy into Lua).
function M.group_lines(base, agg, groups, stem, inputs, as_text)
  return agg:provenance(groups, stem, M.common(base), inputs and inputs[1], inputs and inputs[2], as_text)
end

-- The lines of group_lines for every group of specs ({{groups =, stem =}, ...}: the tables an
-- import writes as new files, in order), appended to dbdir's log by a thread of their own
-- (agg:provenance_log) while the run makes the files. Returns job | nil, message; job:finish(stage)
-- waits for it and stages the log (committed with stage), job:abort() drops it.
function M.start_group_log(dbdir, base, agg, specs, inputs)
  local path = M.path(dbdir)
  local ok, err = perf.fs.mkdir_p(paths.dirname(path))
  if not ok then return nil, err end
  return agg:provenance_log(specs, M.common(base), inputs and inputs[1], inputs and inputs[2], path)
end

-- Appends text (lines from M.lines, or a function giving such texts in turn until nil, as
-- perf.fs.write_atomic takes them) to the database's log (staged with stage when given:
-- committed with it).
function M.append(dbdir, text, stage)
  if text == "" then return true end
  local path = M.path(dbdir)
  local ok, err = perf.fs.mkdir_p(paths.dirname(path))
  if not ok then return nil, err end
  return perf.fs.write_atomic(path, text, { append = true, if_changed = false, stage = stage })
end

-- Every entry of the log in order, or nil, "file:line: why". opts.run: only that run's.
function M.read(dbdir, opts)
  local path = M.path(dbdir)
  local f = io.open(path, "rb")
  if not f then return {} end
  local out, n = {}, 0
  for line in f:lines() do
    n = n + 1
    if line:match("%S") then
      local ok, e = pcall(cjson.decode, line)
      if not ok or type(e) ~= "table" or type(e.kernel) ~= "string" or type(e.key) ~= "string" then
        f:close()
        return nil, ("%s:%d: not a provenance record (%s)"):format(path, n, ok and "no kernel or key" or tostring(e))
      end
      if not (opts and opts.run) or e.run == opts.run then out[#out + 1] = e end
    end
  end
  f:close()
  return out
end

-- The latest entry of each row: {[kernel] = {[key] = entry}}, the number of entries; nil,
-- message on a bad log; nil (no message) when the database has no log.
function M.index(dbdir)
  if not paths.isfile(M.path(dbdir)) then return nil end
  local list, err = M.read(dbdir)
  if not list then return nil, err end
  local idx = {}
  for _, e in ipairs(list) do
    idx[e.kernel] = idx[e.kernel] or {}
    idx[e.kernel][e.key] = e
  end
  return idx, #list
end

-- The entry of a database row ({[column] = cell}) of kernel, or nil.
function M.of(idx, kernel, row)
  local k = idx and idx[kernel]
  if not k then return nil end
  return k[M.key(row, kernel)]
end

-- One line for people; a simulated value always says SIMULATED first.
function M.label(e)
  if not e then return "unknown (written before the provenance log)" end
  local parts = {}
  for _, x in ipairs { { "device", "" }, { "cann", "CANN " }, { "torch", "torch " } } do
    local v = e[x[1]]
    if v and v ~= "" and e.source ~= "simulated" then parts[#parts + 1] = x[2] .. tostring(v) end
  end
  local n = tonumber(e.samples)
  if n then parts[#parts + 1] = ("%d sample(s)"):format(math.floor(n)) end
  local what = e.source == "simulated" and "SIMULATED" or e.source
  return ("%s, run %s, %s%s"):format(what, tostring(e.run), tostring(e.time),
    #parts > 0 and (" (" .. table.concat(parts, ", ") .. ")") or "")
end

return M
