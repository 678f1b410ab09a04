-- fill_fia_metadata: back-fill FusedInferAttentionScore rows with runtime values dumped during
-- serving (one JSON object per line: query/key/value shapes, actual_seq_lengths[_kv], block
-- table, heads, sparse mode, layout, block size), replacing fill_fia_runtime_metadata.py.
-- A row matches a record on (query, key, value shapes, number of kv sequences, mask shape,
-- block-table shape); every matching record gives one output row (1:N), tagged.
--   perfscript recipes/fill_fia_metadata.lua (its entry point; the run is this module) --csv-path FusedInferAttentionScore.csv \
--     --jsonl-path fia_runtime_metadata.jsonl [--output OUT] [--metadata-tag TAG]
-- Fixed against the Python original (docs/rules.md, Import: FIA back-fill): `[]` and an empty
-- CSV slot both mean "absent"; duplicate records (same seq and kv values) keep the first;
-- unparsable slots do not abort; the output keeps the input's BOM and line ends and is written
-- atomically under the database directory's lock; malformed JSON lines are all reported with
-- their line numbers and nothing is written.
local perf = require "perfscript"
local argparse = require "argparse"
local cjson = require "cjson"
local shape = require "perfscript.shape"
local fia = require "perfscript.fia"
local paths = require "perfscript.path"
local options = require "perfscript.options"

local M = {}

function M.parser()
  local parser = argparse("fill_fia_metadata",
    "Back-fill FusedInferAttentionScore database rows with runtime metadata from a JSONL dump.")
  parser:option("--csv-path", "FusedInferAttentionScore.csv to enrich (default: the one of the "
    .. "database, see --database-path)."):argname("<csv>")
  options.database(parser, { write = true, help = "Database directory whose "
    .. "FusedInferAttentionScore.csv is enriched (when --csv-path is not given)." })
  parser:option("--jsonl-path", "Runtime metadata, one JSON object per line."):count(1)
  options.output(parser, "Where to write (default: replace the input CSV in place).",
    { aliases = { "--output-path" }, argname = "<csv>" })
  parser:option("--metadata-tag", "Value of Runtime metadata_completeness on matched rows.")
    :default("runtime_values_dumped")
  return parser
end

-- Python's str() of a JSON scalar, as the Python original wrote the cells.
local function pystr(v)
  if v == nil or v == cjson.null then return "" end
  if type(v) == "boolean" then return v and "True" or "False" end
  if type(v) == "number" then
    -- lua-cjson hands JSON integers over as floats: integral values print as integers
    if math.type(v) == "integer" or (v == math.floor(v) and math.abs(v) < 2^53) then
      return string.format("%d", math.tointeger(v) or v)
    end
    return (string.format("%.17g", v))
  end
  return tostring(v)
end

local function int_list(v)
  if type(v) ~= "table" or #v == 0 then return nil end
  local t = {}
  for i, x in ipairs(v) do
    if type(x) ~= "number" then return nil end
    t[i] = math.tointeger(x) or math.floor(x)
  end
  return t
end

local function dims_text(v)  -- a shape list as "a,b", "" when absent or empty
  local t = int_list(v)
  if not t then return "" end
  for i, x in ipairs(t) do t[i] = string.format("%d", x) end
  return table.concat(t, ",")
end

local function key_of(q, k, v, nseq, mask, block)
  return table.concat({ q, k, v, nseq, mask, block }, "|")
end

-- One JSONL record -> its match key and the runtime cells it gives.
local function payload(rec)
  local seq, kv = int_list(rec.actual_seq_lengths), int_list(rec.actual_seq_lengths_kv)
  local key = key_of(dims_text(rec.query_shape), dims_text(rec.key_shape),
    dims_text(rec.value_shape), kv and tostring(#kv) or "", dims_text(rec.atten_mask_shape),
    dims_text(rec.block_table_shape))
  local p = {}
  p["Runtime actual_seq_lengths_shape"] = seq and tostring(#seq) or ""
  p["Runtime actual_seq_lengths_values"] = seq and table.concat(seq, ",") or ""
  p["Runtime actual_seq_lengths_kv_shape"] = kv and tostring(#kv) or ""
  p["Runtime actual_seq_lengths_kv_values"] = kv and table.concat(kv, ",") or ""
  local avg = ""
  if kv then
    local sum = 0
    for _, x in ipairs(kv) do sum = sum + x end
    avg = string.format("%.6f", sum / #kv)
  end
  p["Runtime avg_seq_len"] = avg
  local vb = int_list(rec.block_table_valid_blocks)
  p["Runtime block_table_valid_blocks"] = vb and table.concat(vb, ",") or ""
  p["Runtime num_heads"] = pystr(rec.num_heads)
  p["Runtime num_key_value_heads"] = pystr(rec.num_key_value_heads)
  p["Runtime sparse_mode"] = pystr(rec.sparse_mode)
  p["Runtime input_layout"] = pystr(rec.input_layout)
  p["Runtime block_size"] = pystr(rec.block_size)
  return key, p
end

-- The JSONL dump: key -> list of payloads (first of equal (values, kv values) wins), and the
-- record count. Every malformed line is reported and nothing is written.
function M.read_records(jsonl_path)
  local index, nrecords, bad = {}, 0, {}
  local f = assert(io.open(jsonl_path, "rb"))
  local lineno = 0
  for line in f:lines() do
    lineno = lineno + 1
    if line:find("%S") then
      local ok, rec = pcall(cjson.decode, line)
      if not ok or type(rec) ~= "table" then
        bad[#bad + 1] = string.format("%s:%d: %s", jsonl_path, lineno,
          ok and "not a JSON object" or tostring(rec):gsub("^.-: ", ""))
      else
        nrecords = nrecords + 1
        local key, p = payload(rec)
        local list = index[key]
        if not list then list = {} index[key] = list end
        local dedup = p["Runtime actual_seq_lengths_values"] .. "|" .. p["Runtime actual_seq_lengths_kv_values"]
        local seen = false
        for _, q in ipairs(list) do if q.dedup == dedup then seen = true break end end
        if not seen then p.dedup = dedup list[#list + 1] = p end
      end
    end
  end
  f:close()
  if #bad > 0 then
    local shown = {}
    for i = 1, math.min(#bad, 20) do shown[i] = bad[i] end
    if #bad > 20 then shown[#shown + 1] = string.format("... and %d more", #bad - 20) end
    perf.fail("%d malformed JSON line(s):\n%s\nnothing was written", #bad, table.concat(shown, "\n"))
  end
  return index, nrecords
end

local function slot_dims(slots, i)  -- 0-based slot i as "a,b" ("" when absent or unparsable)
  local s = slots[i + 1]
  if type(s) ~= "table" or #s == 0 then return "" end
  local t = {}
  for k, d in ipairs(s) do t[k] = string.format("%d", d) end
  return table.concat(t, ",")
end

-- The CSV's rows with every matching record's cells (1:N). Returns the header, the rows, the
-- input row count, the matched count and the file's line-end style and BOM.
function M.fill(csv_path, index, tag)
  local r, err = perf.csv.open(csv_path)
  if not r then perf.fail("%s", err) end
  local header = r:header()
  if #header == 0 then perf.fail("CSV header is empty: %s", csv_path) end
  local eol, bom = r:style()
  local pos = {}
  for i, h in ipairs(header) do if not pos[h] then pos[h] = i end end
  for _, c in ipairs(fia.IMPORT) do
    if not pos[c] then header[#header + 1] = c pos[c] = #header end
  end
  local ishapes = pos["Input Shapes"]
  if not ishapes then perf.fail("%s: missing columns: Input Shapes", csv_path) end
  local rows, n_in, matched = {}, 0, 0
  for fields in r:lines() do
    n_in = n_in + 1
    local row = {}
    for i = 1, #header do row[i] = fields[i] or "" end
    local slots = shape.parse(row[ishapes], true) or {}
    local s6 = slots[7]
    local nseq = (type(s6) == "table" and #s6 == 1) and string.format("%d", s6[1]) or ""
    local key = key_of(slot_dims(slots, 0), slot_dims(slots, 1), slot_dims(slots, 2), nseq,
      slot_dims(slots, 4), slot_dims(slots, 14))
    local payloads = index[key]
    if not payloads then
      rows[#rows + 1] = row
    else
      matched = matched + 1
      for _, p in ipairs(payloads) do
        local copy = table.move(row, 1, #row, 1, {})
        for _, c in ipairs(fia.BACKFILL) do
          copy[pos[c]] = c == "Runtime metadata_completeness" and tag or p[c]
        end
        rows[#rows + 1] = copy
      end
    end
  end
  r:close()
  return header, rows, n_in, matched, eol, bom
end

function M.main(argv)
  local parser = M.parser()
  local args = parser:parse(argv)
  if args.csv_path and require("perfscript.dbpath").given(args) then
    parser:error("--csv-path and the database flags are alternatives")
  end
  if not args.csv_path then
    local dir = options.database_dir(args, { write = args.output == nil })
    args.csv_path = paths.join(dir, "FusedInferAttentionScore.csv")
  end
  if not paths.isfile(args.csv_path) then perf.fail("CSV not found: %s", args.csv_path) end
  if not paths.isfile(args.jsonl_path) then perf.fail("JSONL not found: %s", args.jsonl_path) end
  local out_path = args.output or args.csv_path
  local index, nrecords = M.read_records(args.jsonl_path)
  local header, rows, n_in, matched, eol, bom = M.fill(args.csv_path, index, args.metadata_tag)
  local lock <close>, lerr = perf.fs.lock(paths.dirname(out_path))
  if not lock then perf.fail("%s", lerr) end
  local w <close>, werr = perf.csv.writer(out_path, { eol = eol, bom = bom })
  if not w then perf.fail("%s", werr) end
  w:write(header)
  for _, row in ipairs(rows) do w:write(row) end
  local status, cerr = w:commit()  -- a full disk or a read-only file: said, nothing replaced
  if not status then perf.fail("%s", cerr) end
  local x = #rows - n_in
  print(string.format("Backfilled %d/%d CSV rows matched, %d output rows (%s from 1:N expansion) from %s into %s (%s; %d JSONL records)",
    matched, n_in, #rows, x > 0 and ("+" .. x) or tostring(x), args.jsonl_path, out_path, status, nrecords))
end

return M
