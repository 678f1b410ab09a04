-- Which generator a kernel type gets (docs/rules.md, Shape grids: routing): op_mapping.yaml
-- metadata (first occurrence wins, alternates inherit their parent's assignment,
-- elementwise query mode), zero-cost / composite / communication kernels excluded.
local M = {}

-- load_meta(path) -> {kernel = {zero_cost, composite, communication, query_mode,
-- tc_input_count, alternates_of, before}}, `before` listing the kernels the consumer tries
-- ahead of this one for the same op; {} when the file is missing or empty; nil, message when
-- unreadable.
function M.load_meta(path)
  local doc, text = require("perfscript.db.mapping").read_file(path)
  if doc == nil then return {} end
  if doc == false then return nil, text end
  local ok2, order = pcall(M.mapping_order, text)
  return M.meta_from(doc, ok2 and order or nil)
end

-- Keys of the top-level `operator_mappings` map in document order (a Lua table has none),
-- read from the YAML event stream.
function M.mapping_order(text)
  local parser = require("yaml").parser(text)
  local stack, keys, target = {}, {}, nil
  local function value_done()
    local top = stack[#stack]
    if top and top.map then top.want_key = not top.want_key end
  end
  for ev in parser do
    local t = ev.type
    if t == "MAPPING_START" or t == "SEQUENCE_START" then
      local top = stack[#stack]
      local is_target = top and top.map and #stack == 1 and top.last_key == "operator_mappings"
      stack[#stack + 1] = { map = t == "MAPPING_START", want_key = true, target = is_target }
      if is_target then target = stack[#stack] end
    elseif t == "MAPPING_END" or t == "SEQUENCE_END" then
      stack[#stack] = nil
      value_done()
    elseif t == "SCALAR" or t == "ALIAS" then
      local top = stack[#stack]
      if top and top.map and top.want_key then
        top.last_key = ev.value
        if top == target then keys[#keys + 1] = ev.value end
      end
      value_done()
    end
  end
  return keys
end

function M.meta_from(doc, order)
  local meta = {}
  local mappings = type(doc) == "table" and doc.operator_mappings
  if type(mappings) ~= "table" then return meta end
  -- "first occurrence wins" needs file order (mapping_order); without it, sorted keys.
  if not order then
    order = {}
    for k in pairs(mappings) do order[#order + 1] = k end
    table.sort(order, function(a, b) return tostring(a) < tostring(b) end)
  end
  local done = {}
  for _, op in ipairs(order) do
    if done[op] then goto continue end
    done[op] = true
    local info = mappings[op]
    if type(info) == "table" and type(info.kernel_type) == "string" and info.kernel_type ~= "" then
      local function yes(v) return v ~= nil and v ~= false and v ~= 0 and v ~= "" end
      local fields = {
        zero_cost = yes(info.zero_cost), composite = yes(info.composite),
        communication = info.category == "communication",
        query_mode = info.query_mode,
        tc_input_count = math.tointeger(info.tc_input_count),
        before = {},
      }
      local k = info.kernel_type
      if not meta[k] then meta[k] = fields end
      if type(info.alternate_kernel_types) == "table" then
        local chain = { k }
        for _, alt in ipairs(info.alternate_kernel_types) do
          if type(alt) == "string" and not meta[alt] then
            meta[alt] = { zero_cost = fields.zero_cost, composite = fields.composite,
                          communication = fields.communication, query_mode = fields.query_mode,
                          tc_input_count = fields.tc_input_count, alternates_of = k,
                          before = table.move(chain, 1, #chain, 1, {}) }
          end
          if type(alt) == "string" then chain[#chain + 1] = alt end
        end
      end
    end
    ::continue::
  end
  return meta
end

-- pattern_for(kernel, assignments, patterns, meta) -> pattern name or nil, reason.
function M.pattern_for(kernel, assignments, patterns, meta)
  local km = meta[kernel] or {}
  if km.zero_cost then return nil, "zero-cost in op_mapping.yaml" end
  if km.composite then return nil, "composite in op_mapping.yaml" end
  if km.communication then return nil, "communication kernel" end
  local name = assignments[kernel]
  if (name == nil or name == "") and km.alternates_of then name = assignments[km.alternates_of] end
  if (name == nil or name == "") and km.query_mode == "elementwise" then name = "elementwise_binary" end
  if name == nil or name == "" then return nil, "no grid rule" end
  if not patterns[name] then return nil, "assigned to '" .. name .. "', which is no pattern" end
  return name
end

return M
