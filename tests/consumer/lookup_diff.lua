-- The REPL's db:lookup against the real consumer (issue 19): for every row the consumer was
-- asked about (tests/consumer/consumer_ask.py, its answers as TSV), ask db:lookup the same
-- query -- the op op_mapping.yaml routes the row's kernel to, the row's non-empty input slots
-- with the dtypes their slots say (as the consumer spells them) and FRACTAL_NZ restored, in the
-- TC layout the harness builds -- and compare the row it answers (or its miss) with the
-- consumer's exact path: "exact" is the row itself, "other" the row the consumer found,
-- "miss" and "interpolated" an exact miss.
--   perfscript tests/consumer/lookup_diff.lua DB_DIR ANSWERS.tsv
-- TSV columns: kernel, row (1-based data row), status, found kernel, found row, op, route.
-- Prints one line per disagreement and a summary; exit status 1 when any row disagrees.
local perf = require "perfscript"
local shape = require "perfscript.shape"
local match = require "perfscript.db.match"

local dir, tsv = arg[1], arg[2]
if not dir or not tsv then
  io.stderr:write("usage: lookup_diff.lua DB_DIR ANSWERS.tsv\n")
  os.exit(2)
end
local db = assert(perf.open(dir))

-- The consumer's spelling of what a row's dtype means (the harness maps any spelling to a
-- torch dtype, the consumer's DTYPE_MAP spells it back); "(none)" matches no row.
local function asked(d) return shape.dtype_consumer(d or "") or "(none)" end

-- The row's tensors of one side (Input/Output): non-empty slots, dtype and format by slot.
local function tensors(t, i, side)
  local S = shape.split(t:column(side .. " Shapes") and t:cell(i, side .. " Shapes") or "")
  local Dt = shape.split(t:column(side .. " Data Types") and t:cell(i, side .. " Data Types") or "")
  local F = shape.split(t:column(side .. " Formats") and t:cell(i, side .. " Formats") or "")
  local out = {}
  for p, s in ipairs(S) do
    if s ~= "" then
      local parsed = assert(t:shapes(s, F[p] == "FRACTAL_NZ" and "FRACTAL_NZ" or nil))[1]
      out[#out + 1] = { shape = parsed.scalar and {} or parsed, dtype = asked(Dt[p]) }
    end
  end
  return out
end

-- The TC layout of the rope and reshape-and-cache inputs (what the consumer rewrites back).
local function tc_layout(kernel, ins)
  local shapes, dtypes = {}, {}
  for j, x in ipairs(ins) do shapes[j], dtypes[j] = x.shape, x.dtype end
  shapes, dtypes = match.tc_layout(kernel, shapes, dtypes)
  local out = {}
  for j = 1, #shapes do out[j] = { shape = shapes[j], dtype = dtypes[j] } end
  return out
end

local function ask(kernel, i, op, route)
  local K = db:kernel(kernel)
  local t = K:table()
  if route == "attention_special" then
    local ins = tensors(t, i, "Input")
    local S = shape.split(t:cell(i, "Input Shapes"))
    local q = assert(t:shapes(S[1]))[1]
    local seqcol = t:column("Runtime avg_seq_len") and "Runtime avg_seq_len" or "avg_seq_len"
    local avg = math.floor(tonumber(t:cell(i, seqcol)))
    local kvh = t:column("Runtime num_key_value_heads") and tonumber(t:cell(i, "Runtime num_key_value_heads"))
    local key = ins[2] and #ins[2].shape >= 2 and ins[2].shape or nil
    if not key or (kvh and key[#key - 1] ~= kvh) then key = { 1, kvh or 1, q[#q] } end
    local kv = {}
    local kvcell = t:column("Runtime actual_seq_lengths_kv_values") and t:cell(i, "Runtime actual_seq_lengths_kv_values") or ""
    for v in kvcell:gmatch("[^,;%s]+") do kv[#kv + 1] = math.floor(tonumber(v)) end
    local sum = 0
    for _, v in ipairs(kv) do sum = sum + v end
    local seq = (#kv > 0 and math.floor(sum / #kv) == avg) and math.floor(sum / #kv) or avg
    return db:lookup(op, { q = q, seq = seq, kv_heads = key[#key - 1], head_dim = key[#key],
                           dtype = asked(match.list(t:cell(i, "Input Data Types"))[1]) })
  end
  local ins = tc_layout(kernel, tensors(t, i, "Input"))
  local shapes, dtypes = {}, {}
  for j, x in ipairs(ins) do shapes[j], dtypes[j] = x.shape, x.dtype end
  local opts = {}
  if route == "elementwise" then
    local outs = tensors(t, i, "Output")
    if #outs == 0 then return nil, "no output tensor" end
    opts.out, opts.out_dtype = { outs[1].shape }, outs[1].dtype
  elseif route == "moe_fused" then
    opts.ep = math.tointeger(tonumber(t:cell(i, "EP Size")))
  end
  return db:lookup(op, shapes, dtypes, opts)
end

local agree, disagree, skipped, why_skipped = 0, 0, 0, {}
for line in io.lines(tsv) do
  local kernel, row, status, fk, frow, op, route = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)$")
  if not kernel then error("bad answers line: " .. line) end
  row = math.tointeger(tonumber(row))
  local skip
  if status == "unasked" or status == "error" then skip = "the consumer was not asked (" .. status .. ")"
  elseif route == "communication" or route == "mla_decode" then skip = route .. " (not an explorer lookup here)"
  elseif status == "other" and fk == "" then skip = "the consumer answered from a composite" end
  if skip then
    skipped = skipped + 1
    why_skipped[skip] = (why_skipped[skip] or 0) + 1
  else
    local want
    if status == "exact" then want = kernel .. ":" .. row
    elseif status == "other" then want = fk .. ":" .. frow
    else want = "miss" end
    local ok, res, why = pcall(ask, kernel, row, op, route)
    local got
    if not ok then got = "error: " .. tostring(type(res) == "table" and res.message or res)
    elseif not res then got = "error: " .. tostring(why)
    elseif res.miss or not res.row then got = "miss"
    else got = (res.kernel or kernel) .. ":" .. res.row end
    if got == want then
      agree = agree + 1
    else
      disagree = disagree + 1
      print(string.format("DISAGREE %s row %d via %s (%s): consumer %s, db:lookup %s%s", kernel, row, op, route, want, got,
                          (ok and res and res.title) and ("  [" .. res.title .. "]") or ""))
    end
  end
end
local notes = {}
for k, v in pairs(why_skipped) do notes[#notes + 1] = string.format("%d %s", v, k) end
table.sort(notes)
print(string.format("lookup_diff %s: %d rows agree, %d disagree, %d not compared%s", dir, agree, disagree, skipped,
                    #notes > 0 and (" (" .. table.concat(notes, "; ") .. ")") or ""))
os.exit(disagree == 0 and 0 or 1)
