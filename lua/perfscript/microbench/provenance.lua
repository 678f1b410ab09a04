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
--   provenance.append(dbdir, lines, stage)      lines: provenance.lines(base, results, inputs)
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
-- XXH3), else where they were found and the XXH3 of their XXH3s, in order.
function M.inputs(files, where)
  local hashes = {}
  for _, f in ipairs(files) do hashes[#hashes + 1] = M.file_xxh3(f) or "unreadable" end
  if #files == 1 then return files[1], hashes[1] end
  return where, M.key_hex(perf.sig.hash(table.concat(hashes, ",")))
end

-- The lines of a write-back: base {run =, source =, device =, cann =, torch =, torch_npu =}
-- and the merge results (res.written_rows); input_of(kernel, key, row) -> file, xxh3 (or nil).
function M.lines(base, results, input_of)
  if not M.SOURCES[base.source] then error("provenance: source must be measured, simulated or imported", 2) end
  local out = {}
  local enc = cjson.encode
  -- the members every line shares are encoded once (a write-back can log 100k rows)
  local common = enc { run = base.run, time = os.date("!%Y-%m-%dT%H:%M:%SZ"), version = perf.version,
    source = base.source, device = base.device, cann = base.cann, torch = base.torch, torch_npu = base.torch_npu }
  common = common:sub(2, -2)
  local display, key_hex, tonumber = perf.sig.display, M.key_hex, tonumber
  for _, res in ipairs(results) do
    local kernel = enc(res.stem)
    for _, w in ipairs(res.written_rows or {}) do
      local key = key_hex(w.key)
      local file, xxh3
      if input_of then file, xxh3 = input_of(res.stem, key, w.row) end
      local samples, d = w.row._samples, tonumber(w.row["Average Duration(us)"])
      out[#out + 1] = ('{%s,"kernel":%s,"key":"%s","sig":%s%s%s%s%s}'):format(common, kernel, key, enc(display(w.row)),
        file and (',"input":' .. enc(file)) or "", xxh3 and (',"input_xxh3":' .. enc(xxh3)) or "",
        samples and (',"samples":' .. enc(samples)) or "", d and (',"duration_us":' .. enc(d)) or "")
    end
  end
  return out
end

-- Appends lines to the database's log (staged with stage when given: committed with it).
function M.append(dbdir, lines, stage)
  if #lines == 0 then return true end
  local path = M.path(dbdir)
  local ok, err = perf.fs.mkdir_p(paths.dirname(path))
  if not ok then return nil, err end
  return perf.fs.write_atomic(path, table.concat(lines, "\n") .. "\n",
    { append = true, if_changed = false, stage = stage })
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
