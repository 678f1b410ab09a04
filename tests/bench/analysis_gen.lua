-- Writes the analysis benchmark inputs: a forward-pass CSV of N kernel rows (47-column
-- kernel_details header, TAB after timestamps, hcom pairs) and a TC trace of M events.
--   perfscript tests/bench/analysis_gen.lua OUT.csv N OUT.json M
local csv_path, n, json_path, m = arg[1], tonumber(arg[2]), arg[3], tonumber(arg[4])
local header = "Step Id,Device_id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core," ..
  "Start Time(us),Duration(us),Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,Input Shapes," ..
  "Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Context ID"
local types = { "MatMulV2", "FusedInferAttentionScore", "RmsNorm", "Add", "SwiGlu", "DynamicQuant",
                "GroupedMatmul", "Cast", "allgatherAicpuKernel" }
local f = assert(io.open(csv_path, "wb"))
f:write(header, "\r\n")
local t0 = 1764246877073569640   -- ns
local buf = {}
local i = 0
while i < n do
  local start = t0 + i * 5000
  local ty = types[i % #types + 1]
  local line
  if i % 50 == 0 then
    local s = string.format("%d.%03d", start // 1000, start % 1000)
    for _, stream in ipairs { "N/A", "8" } do
      buf[#buf + 1] = string.format('1,0,4294967295,N/A,%s,hcom_allReduce__%d_1_1,hcom_allReduce_,N/A,' ..
        'N/A,%s\t,%d.%03d,0,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A', stream, i, s, 40 + i % 7, i % 1000)
      i = i + 1
    end
  else
    line = string.format('1,0,4294967295,%d,2,aclnn_%s,%s,dynamic,AI_CORE,%d.%03d\t,%d.%03d,0.5,24,0,NO,' ..
      '"""%d,5120;5120,768""",DT_BF16;DT_BF16,ND;ND,"""%d,768""",DT_BF16,ND,N/A', i, ty, ty,
      start // 1000, start % 1000, 10 + i % 30, (i * 7) % 1000, 16 + i % 64, 16 + i % 64)
    buf[#buf + 1] = line
    i = i + 1
  end
  if #buf >= 10000 then f:write(table.concat(buf, "\r\n"), "\r\n"); buf = {} end
end
if #buf > 0 then f:write(table.concat(buf, "\r\n"), "\r\n") end
f:close()

local j = assert(io.open(json_path, "wb"))
j:write('{"traceEvents": [\n{"name":"process_name","ph":"M","pid":1,"args":{"name":"empirical (PID: 1)"}}')
buf = {}
for k = 1, m do
  local ty = types[k % (#types - 1) + 1]
  local args
  if k % 10 == 0 then
    args = string.format('{"kernel_type":"MatMulV2,hcom_allReduce_","source":"MEASURED",' ..
      '"sub_kernel_durations":"[(\'MatMulV2\', %d.25), (\'hcom_allReduce_\', 8.5)]",' ..
      '"simulation_shapes":"[[%d, 5120], [5120, 768]]"}', 10 + k % 20, 16 + k % 64)
  elseif k % 7 == 0 then
    args = '{"shape_match_rule":"analytic"}'
  else
    args = string.format('{"kernel_type":"%s","source":"%s","simulation_shapes":"[[%d, 5120], [5120, 768]]"}',
      ty, k % 3 == 0 and "INTERPOLATED" or "MEASURED", 16 + k % 64)
  end
  buf[#buf + 1] = string.format(',\n{"name":"aten.op%d.default","cat":"empirical","ph":"X","ts":%d,"dur":%d,' ..
    '"pid":1,"tid":0,"args":%s}', k % 40, k * 20, 5 + k % 30, args)
  if #buf >= 10000 then j:write(table.concat(buf)); buf = {} end
end
j:write(table.concat(buf), "\n]}\n")
j:close()
