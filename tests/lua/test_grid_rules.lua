-- Grid rules as data: registry, patterns, assignments, template expansion, models and the
-- complex generators (docs/rules.md, Shape grids), on the Python original's worked examples.
local lu = require "luaunit"
local perf = require "perfscript"
local expand = require "perfscript.grid.expand"
local models = require "perfscript.grid.models"
local cells = require "perfscript.grid.cells"
local grids = require "perfscript.grids.registry"
local patterns = require "perfscript.grids.patterns"
local assignments = require "perfscript.grids.assignments"
local scenes = require "perfscript.grids.fia_scenes"
local fia = require "perfscript.grid.generators.fused_attention"

local env = { grids = grids, scenes = scenes, is_mla = models.is_mla, moe_configs = models.moe_configs }

local function rowtext(c)
  return cells.text(c.inputs) .. " -> " .. cells.text(c.outputs)
end

-- All candidates of a pattern (or generator) for a model list (nil: all / full grid).
local function gen(pname, names, p)
  p = p or patterns[pname]
  local out = {}
  local function emit(c) out[#out + 1] = c end
  if p.generator then
    local g = require("perfscript.grid.generators." .. p.generator)
    g.generate(models.resolve(names), emit, env)
  else
    local st = { candidates = 0, rejected = 0 }
    local pairs_ = names and models.matmul_nk_pairs(models.resolve(names)) or nil
    expand.each(expand.compile(pname, p, grids), pairs_, emit, st)
  end
  return out
end

local DSV3, QWEN, LLAMA, GLM51 = "deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-32B", "meta-llama/Meta-Llama-3-70B",
                                 "zai-org/GLM-5.1"

function test_registry()
  local sizes = { NK_GRID = 37, HEADS_GRID = 16, HEAD_DIM_GRID = 3, KV_HEADS_GRID = 6, M_GRID = 37,
                  ELEM_TOKENS_GRID = 13, PAD_TOKENS_GRID = 25, ATTN_SEQ_GRID = 15, ATTN_BATCH_GRID = 9,
                  MOE_TOKENS_GRID = 17, ELEM_HIDDEN_GRID = 37 }
  for name, n in pairs(sizes) do lu.assertEquals(#grids[name], n, name) end
  local m = {}
  for _, v in ipairs(grids.M_GRID) do m[v] = true end
  for _, v in ipairs { 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 48, 64, 80, 96, 128, 160, 192,
                       256, 384, 512, 768, 1024, 2048, 4096, 8192, 16384, 32768 } do
    lu.assertTrue(m[v], "M_GRID lacks " .. v)
  end
end

function test_pattern_and_assignment_counts()
  local np, na = 0, 0
  for _ in pairs(patterns) do np = np + 1 end
  for k, p in pairs(assignments) do
    na = na + 1
    if p ~= "skip" then lu.assertNotNil(patterns[p], k .. " -> " .. p) end
  end
  lu.assertEquals(np, 38)
  lu.assertEquals(na, 85)
  lu.assertEquals(assignments.MatMulCommon, "skip")
end

-- Spec 4.5, full-grid column
local COUNTS = {
  matmul = 50653, quant_matmul = 50653, transpose_batch_matmul = 11840, batch_matmul_nd = 5550,
  elementwise_binary = 481, elementwise_unary = 481, rmsnorm = 481, add_rmsnorm = 481,
  add_rmsnorm_bias = 481, add_rmsnorm_dynamic_quant = 481, quant = 481, dynamic_quant = 481,
  swiglu = 481, broadcast_to = 481, slice_op = 481, transpose_op = 481, tensor_move = 321,
  interleave_rope = 208, triton_rope = 208, kv_rmsnorm_rope_cache = 13, as_strided = 147,
  sort_op = 104, tile = 78, pad = 925, concat = 91, argmax = 56, apply_topk_top_p = 56,
  gather = 4329, gather_v3 = 6253, index = 3367, reshape_and_cache = 234, paged_cache_load = 273,
  attention_update = 432, moe_gating_topk = 117, grouped_matmul = 3570, dispatch_ffn_combine = 825,
  fused_attention = 916, split_qkv_rmsnorm_rope = 65,
}

function test_candidate_counts_full_grid()
  for name, n in pairs(COUNTS) do lu.assertEquals(#gen(name), n, name) end
end

function test_candidate_counts_per_model()
  local t = {
    -- (N, K) pairs x 37 M values; pairs: the Python original's, the serving engine's fused and
    -- split projections, DeepSeek-V3's shared expert (test_matmul_pair_sets)
    matmul = { 1591, 999, 777, 1221, 2590 }, quant_matmul = { 1591, 999, 777, 1221, 2590 },
    -- 7 EP x 5 TP x 17 token counts x (gate_up, down)
    grouped_matmul = { 1190, 0, 0, 1190, 1190 }, dispatch_ffn_combine = { 275, 0, 0, 275, 275 },
    fused_attention = { 102, 680, 216, 54, 782 }, split_qkv_rmsnorm_rope = { 0, 65, 52, 0, 65 },
  }
  local sets = { { DSV3 }, { QWEN }, { LLAMA }, { GLM51 }, { DSV3, QWEN } }
  for name, want in pairs(t) do
    for i, names in ipairs(sets) do
      lu.assertEquals(#gen(name, names), want[i], name .. " " .. table.concat(names, "+"))
    end
  end
end

function test_first_and_last_rows()
  local function first(n) return rowtext(gen(n)[1]) end
  local function last(n) local r = gen(n); return rowtext(r[#r]) end
  lu.assertEquals(first("matmul"), "1,128;128,128 -> 1,128")
  lu.assertEquals(last("matmul"), "32768,55296;55296,55296 -> 32768,55296")
  lu.assertEquals(first("kv_rmsnorm_rope_cache"),
    "1,1,1,576;512;1,1,1,64;1,1,1,64;1;16,128,1,64;16,128,1,512;;;;; -> 16,128,1,64;16,128,1,512;1,1,1,64;1,1,1,512")
  lu.assertStrContains(last("kv_rmsnorm_rope_cache"), "32768,1,1,576;512;")
  lu.assertStrContains(last("kv_rmsnorm_rope_cache"), "4096,128,1,64")
  lu.assertEquals(first("pad"), "1,128;4; -> 8,128")
  lu.assertEquals(last("pad"), "8193,55296;4; -> 8200,55296")
  lu.assertEquals(first("reshape_and_cache"),
    "1,1,64;1,1,64;16,128,1,64;16,128,1,64;1 -> 16,128,1,64;16,128,1,64")
  lu.assertStrContains(last("reshape_and_cache"),
    "32768,32,256;32768,32,256;262144,128,32,256;262144,128,32,256;32768 ->")
  lu.assertEquals(first("paged_cache_load"),
    "16,128,1,64;16,128,1,64;1,64;1;1,1,64;1,1,64;1 -> 1,1,64;1,1,64")
  lu.assertEquals(first("as_strided"), "128;3;3;1 -> 1,1,64")
  lu.assertEquals(last("as_strided"), "4194304;3;3;1 -> 64,128,256")
  lu.assertEquals(first("triton_rope"), "1,1,64;1,1,64;2048,64 -> 1,1,64;1,1,64")
  lu.assertStrContains(last("triton_rope"), "32768,128,64;32768,1,64;32768,64 -> ")
  lu.assertEquals(first("moe_gating_topk"), "1,64;; -> 1,2;1,2;1")
  lu.assertEquals(first("argmax"), "1,1024; -> 1")
  lu.assertEquals(first("transpose_op"), "1,128;2 -> 128,1")
  lu.assertEquals(last("slice_op"), "32768,55296;2;2;2;2 -> 16384,55296")
  lu.assertEquals(first("swiglu"), "1,256 -> 1,128")
  lu.assertEquals(last("transpose_batch_matmul"), "128,32768,512;128,512,1024 -> 32768,128,1024")
end

function test_template_expansion_vectors()
  local function rows(p) return gen("t", nil, p) end
  local G1 = { iterators = { { "tokens", { 128, 256 } } }, constants = { hidden = 5120 },
               inputs = { "(tokens, hidden)" }, outputs = { "(tokens, hidden)" } }
  lu.assertEquals(#rows(G1), 2)
  local G2 = { iterators = G1.iterators, constants = G1.constants, constraints = { "tokens > 200" },
               inputs = G1.inputs, outputs = G1.outputs }
  lu.assertEquals(rowtext(rows(G2)[1]), "256,5120 -> 256,5120")
  local G3 = { iterators = G1.iterators, constants = G1.constants, inputs = G1.inputs,
               outputs = { "(tokens, hidden)", "(tokens, 1)" } }
  lu.assertEquals(rows(G3)[1].outputs, { { 128, 5120 }, { 128, 1 } })
  local G4 = { iterators = G1.iterators, constants = G1.constants, inputs = G1.inputs, outputs = G1.outputs,
               input_dtypes = { "DT_BF16" }, input_formats = { "ND" }, output_dtypes = { "DT_BF16" },
               output_formats = { "ND" } }
  lu.assertEquals(rows(G4)[1].extra, { ["Input Data Types"] = "DT_BF16", ["Input Formats"] = "ND",
                                        ["Output Data Types"] = "DT_BF16", ["Output Formats"] = "ND" })
  lu.assertEquals(rowtext(rows { constants = { D = 5120 }, inputs = { "(D,)" }, outputs = { "()" } }[1]), "5120 -> ")
  lu.assertEquals(#rows { iterators = { { "tokens", { 128, 256 } }, { "hidden", { 4096, 5120 } } },
                          inputs = { "(tokens, hidden)" }, outputs = { "()" } }, 4)
  local G7 = rows { iterators = { { "seq", { 1, 2 } } }, constants = { D = 5120, R = 64 },
                    inputs = { "(seq, D)", "(seq + D, R)" }, outputs = { "()" } }
  lu.assertEquals(G7[1].inputs, { { 1, 5120 }, { 5121, 64 } })
  lu.assertEquals(G7[2].inputs, { { 2, 5120 }, { 5122, 64 } })
  local G8 = rows { iterators = { { "tokens", { 1, 2048, 4096 } } }, constants = { limit = 2048 },
                    inputs = { "(max(tokens, limit), 64)" }, outputs = { "()" } }
  lu.assertEquals({ G8[1].inputs[1], G8[2].inputs[1], G8[3].inputs[1] }, { { 2048, 64 }, { 2048, 64 }, { 4096, 64 } })
  local G9 = rows { iterators = { { "tokens", { 128 } } }, constants = { hidden = 512, rope_dim = 64 },
                    inputs = { "(tokens, hidden + rope_dim*2)", "(max(tokens, 2048), rope_dim)", "(tokens,)" },
                    outputs = { "()" }, input_dtypes = { "DT_BF16", "DT_BF16", "DT_INT64" },
                    input_formats = { "ND", "ND", "ND" } }
  lu.assertEquals(G9[1].inputs, { { 128, 640 }, { 2048, 64 }, { 128 } })
  lu.assertEquals(G9[1].extra["Input Data Types"], "DT_BF16;DT_BF16;DT_INT64")
  lu.assertEquals(G9[1].extra["Input Formats"], "ND;ND;ND")
  local G10 = rows { iterators = { { "M", { 1, 2 } } }, constants = { K = 4 }, constraints = { "M <= 2" },
                     inputs = { "M,K" }, outputs = { "()" } }
  lu.assertEquals({ G10[1].inputs, G10[2].inputs }, { { { 1, 4 } }, { { 2, 4 } } })
  -- G11: unknown grid name / bad spec
  local ok, e = pcall(rows, { iterators = { { "x", "NONEXISTENT_GRID" } }, inputs = {}, outputs = {} })
  lu.assertFalse(ok); lu.assertStrContains(tostring(e), "unknown grid 'NONEXISTENT_GRID'")
  ok, e = pcall(rows, { iterators = { { "x", 42 } }, inputs = {}, outputs = {} })
  lu.assertFalse(ok); lu.assertStrContains(tostring(e), "invalid grid spec")
  -- unknown variable in a template names pattern and expression
  ok, e = pcall(rows, { iterators = { { "x", { 1 } } }, inputs = { "(x, y)" }, outputs = {} })
  lu.assertFalse(ok); lu.assertStrContains(tostring(e), "pattern 't': expression 'y': unknown variable 'y'")
end

function test_tensor_move_and_quant_matmul()
  local tm = gen("tensor_move")
  lu.assertEquals(#tm, 321)
  lu.assertEquals(rowtext(tm[1]), "16,16384 -> 16,16384")
  for _, r in ipairs(tm) do
    lu.assertTrue(r.inputs[1][1] * r.inputs[1][2] >= 262144)
    lu.assertEquals(r.inputs, r.outputs)
  end
  local q = gen("quant_matmul")
  lu.assertEquals(rowtext(q[1]), "1,128;4,8,16,32;128;128 -> 1,128")
  lu.assertEquals(cells.text(q[#q].inputs), "32768,55296;1728,3456,16,32;55296;55296")
  -- constraints hold on the model-pair path too (the Python original skipped them there)
  local p = { iterators = patterns.quant_matmul.iterators, model_nk_pairs = true,
              fallback_iterators = patterns.quant_matmul.fallback_iterators,
              constants = patterns.quant_matmul.constants, constraints = { "N >= 4096" },
              inputs = patterns.quant_matmul.inputs, outputs = patterns.quant_matmul.outputs }
  local st = { candidates = 0, rejected = 0 }
  local n = 0
  expand.each(expand.compile("q", p, grids), models.matmul_nk_pairs(models.resolve { DSV3 }),
              function(c) n = n + 1; lu.assertTrue(c.outputs[1][2] >= 4096) end, st)
  lu.assertEquals(st.candidates, 1591)
  lu.assertEquals(n + st.rejected, 1591)
  lu.assertTrue(st.rejected > 0)
end

---------------------------------------------------------------------------------------------
-- Models (9.6)

-- A constant wins over an iterator or a model (N, K) pair of the same name: the iterator still
-- multiplies the candidates (the cartesian product), every candidate holds the constant.
function test_constant_wins_over_iterator_and_pair()
  local p = { iterators = { { "M", { 1, 2, 3 } }, { "K", { 16, 32 } } }, constants = { M = 7 },
              constraints = { "M == 7" }, inputs = { "M,K" }, outputs = { "M" } }
  local st, got = { candidates = 0, rejected = 0 }, {}
  expand.each(expand.compile("c", p, grids), nil, function(c) got[#got + 1] = cells.text(c.inputs) end, st)
  lu.assertEquals(st, { candidates = 6, rejected = 0 })
  lu.assertEquals(got, { "7,16", "7,32", "7,16", "7,32", "7,16", "7,32" })
  local q = { iterators = { { "M", { 1, 2 } } }, model_nk_pairs = true, constants = { N = 5 },
              inputs = { "M,K", "N,K" }, outputs = { "M,N" } }
  st, got = { candidates = 0, rejected = 0 }, {}
  expand.each(expand.compile("q", q, grids), { { 100, 200 }, { 300, 400 } },
              function(c) got[#got + 1] = cells.text(c.inputs) end, st)
  lu.assertEquals(got, { "1,200;5,200", "1,400;5,400", "2,200;5,200", "2,400;5,400" })
end

function test_model_names()
  lu.assertEquals(models.normalize("Qwen3-32B"), "qwen332b")
  lu.assertEquals(models.normalize("DeepSeek-V3"), "deepseekv3")
  lu.assertEquals(models.normalize("llama_70b"), "llama70b")
  lu.assertEquals(models.normalize("Qwen3 32B"), "qwen332b")
  lu.assertEquals(models.normalize("meta-llama/Meta-Llama-3-70B"), "metallamametallama370b")
  local legacy = { deepseekv3 = DSV3, dsv3 = DSV3, metallama370b = LLAMA, qwen332b = QWEN, llama70b = LLAMA,
                   glm51 = GLM51, glm52 = "zai-org/GLM-5.2" }
  for name, id in pairs(legacy) do
    local ok, e = pcall(models.resolve, { name })
    lu.assertFalse(ok)
    lu.assertStrContains(tostring(e), "Unsupported legacy model name '" .. name .. "'")
    lu.assertStrContains(tostring(e), "Use '" .. id .. "'")
  end
  lu.assertEquals(models.resolve { "DEEPSEEK-AI/deepseek_v3" }[1].model_key, "deepseekv3")
  local ok, e = pcall(models.resolve, { "no/such-model" })
  lu.assertFalse(ok); lu.assertStrContains(tostring(e), "--model-config")
end

function test_model_presets()
  local g = models.resolve { GLM51 }[1]
  lu.assertEquals({ g.hidden_size, g.q_lora_rank, g.kv_lora_rank, g.head_dim, g.expert_intermediate_size },
                  { 6144, 2048, 512, 256, 2048 })
  local g2 = models.resolve { "zai-org/GLM-5.2" }[1]
  lu.assertEquals({ g2.name, g2.model_key, g2.hidden_size, g2.head_dim }, { "GLM-5.2", "glm52", 6144, 256 })
  local all = models.resolve(nil)
  lu.assertEquals(#all, 5)
  local keys = {}
  for _, c in ipairs(all) do keys[#keys + 1] = c.model_key end
  lu.assertEquals(keys, { "deepseekv3", "qwen332b", "llama70b", "glm51", "glm52" })
  lu.assertEquals(#models.moe_configs(models.resolve { QWEN }), 0)
  lu.assertEquals(#models.moe_configs(models.resolve { DSV3 }), 1)
end

local function has(pairs_, n, k)
  for _, p in ipairs(pairs_) do if p[1] == n and p[2] == k then return true end end
  return false
end

function test_matmul_pairs()
  local function pl(names) return models.matmul_nk_pairs(models.resolve(names)) end
  local d = pl { DSV3 }
  lu.assertEquals(#d, 43)
  lu.assertEquals(d[1], { 256, 7168 })   -- the shared expert's gate_up at TP 16
  lu.assertEquals(d[43], { 36864, 7168 }) -- the dense layers' fused gate_up at TP 1
  lu.assertEquals(#pl { QWEN }, 27)
  lu.assertEquals(#pl { LLAMA }, 21)
  local g = pl { GLM51 }
  lu.assertEquals(#g, 33)
  for _, p in ipairs { { 2048, 6144 }, { 576, 6144 }, { 16384, 2048 }, { 16384, 512 } } do
    lu.assertTrue(has(g, p[1], p[2]))
  end
  local dense = models.preset { name = "dense", hidden_size = 5120, intermediate_size = 25600,
                                num_attention_heads = 64, num_kv_heads = 8, tp_sizes = { 1, 4 } }
  local dp = models.matmul_nk_pairs { dense }
  for _, p in ipairs { { 5120, 5120 }, { 1280, 5120 }, { 25600, 5120 }, { 6400, 5120 } } do
    lu.assertTrue(has(dp, p[1], p[2]))
  end
  local mla = models.preset { name = "mla", hidden_size = 7168, intermediate_size = 0, num_attention_heads = 128,
                              num_kv_heads = 1, q_lora_rank = 1536, kv_lora_rank = 512, qk_rope_head_dim = 64,
                              head_dim = 128, tp_sizes = { 1 } }
  local mp = models.matmul_nk_pairs { mla }
  for _, p in ipairs { { 1536, 7168 }, { 16384, 1536 }, { 576, 7168 }, { 16384, 512 } } do
    lu.assertTrue(has(mp, p[1], p[2]))
  end
  local moe = models.preset { name = "moe", hidden_size = 7168, intermediate_size = 0, num_attention_heads = 8,
                              num_kv_heads = 8, num_experts = 8, topk = 2, expert_intermediate_size = 2048,
                              tp_sizes = { 1, 8 } }
  local ep = models.expert_nk_pairs { moe }
  lu.assertTrue(has(ep, 2048, 7168)); lu.assertTrue(has(ep, 256, 896))
  lu.assertEquals(models.expert_nk_pairs { dense }, {})
  lu.assertEquals(#models.expert_nk_pairs(models.resolve { DSV3 }), 10)
end

-- M10: the full GEMM (N, K) pair sets of the presets (docs/rules.md, Shape grids: models).
function test_matmul_pair_sets()
  local function pl(id)
    local out = {}
    for _, p in ipairs(models.matmul_nk_pairs(models.resolve { id })) do out[#out + 1] = p[1] .. "," .. p[2] end
    return table.concat(out, " ")
  end
  -- the Python original's pairs (spec 3.5), plus the serving engine's projections
  -- (models.serving_pairs) and DeepSeek-V3's shared expert; e.g. DeepSeek-V3 at TP 1: fused
  -- q_a + kv_a (2112, 7168), q_b (24576, 1536), kv_b (32768, 512), o_proj (7168, 16384), dense
  -- gate_up (36864, 7168), shared gate_up (4096, 7168) and down (7168, 2048)
  lu.assertEquals(pl(DSV3), "256,7168 512,7168 576,7168 1024,512 1024,1536 1024,7168 1152,7168 1536,1536 "
    .. "1536,7168 2048,512 2048,1536 2048,7168 2112,7168 2304,7168 3072,1536 4096,512 4096,1536 4096,7168 "
    .. "4608,7168 6144,1536 7168,128 7168,256 7168,512 7168,1024 7168,1152 7168,2048 7168,2304 7168,4096 "
    .. "7168,4608 7168,8192 7168,9216 7168,16384 7168,18432 8192,512 8192,1536 9216,7168 12288,1536 16384,512 "
    .. "16384,1536 18432,7168 24576,1536 32768,512 36864,7168")
  -- Qwen3-32B at TP 1: fused QKV ((64 + 2 * 8) * 128, 5120), o_proj (5120, 8192), gate_up (51200, 5120)
  lu.assertEquals(pl(QWEN), "320,5120 640,5120 768,5120 1280,5120 1600,5120 2560,5120 3200,5120 5120,320 "
    .. "5120,512 5120,640 5120,1024 5120,1280 5120,1600 5120,2048 5120,2560 5120,3200 5120,4096 5120,5120 "
    .. "5120,6400 5120,8192 5120,12800 5120,25600 6400,5120 10240,5120 12800,5120 25600,5120 51200,5120")
  lu.assertEquals(pl(LLAMA), "512,8192 768,8192 1024,8192 1280,8192 1792,8192 2048,8192 2560,8192 3584,8192 "
    .. "7168,8192 8192,512 8192,1024 8192,1792 8192,2048 8192,3584 8192,7168 8192,8192 8192,28672 10240,8192 "
    .. "14336,8192 28672,8192 57344,8192")
  local glm = "576,6144 768,6144 1024,512 1024,2048 1536,6144 1792,512 2048,512 2048,2048 2048,6144 2624,6144 "
    .. "3072,6144 3584,512 4096,512 4096,2048 6144,768 6144,1024 6144,1536 6144,2048 6144,3072 6144,4096 "
    .. "6144,6144 6144,8192 6144,12288 6144,16384 7168,512 8192,512 8192,2048 12288,6144 14336,512 16384,512 "
    .. "16384,2048 24576,6144 28672,512"
  lu.assertEquals(pl(GLM51), glm)
  lu.assertEquals(pl("zai-org/GLM-5.2"), glm)
  local function ep(id)
    local out = {}
    for _, p in ipairs(models.expert_nk_pairs(models.resolve { id })) do out[#out + 1] = p[1] .. "," .. p[2] end
    return table.concat(out, " ")
  end
  lu.assertEquals(ep(DSV3), "128,448 256,896 448,128 512,1792 896,256 1024,3584 1792,512 2048,7168 3584,1024 7168,2048")
  lu.assertEquals(ep(GLM51), "128,384 256,768 384,128 512,1536 768,256 1024,3072 1536,512 2048,6144 3072,1024 6144,2048")
end

-- Spec 4.1: scene counts with all models, and the dense head variants.
function test_fia_scene_counts()
  local n = {}
  for _, r in ipairs(gen("fused_attention")) do
    local sc = r.extra["Runtime source_profile"]
    n[sc] = (n[sc] or 0) + 1
  end
  for _, tp in ipairs { 1, 2, 4, 8, 16 } do
    lu.assertEquals(n["qwen332b_dense_decode_tp" .. tp], 96)
    lu.assertEquals(n["qwen332b_dense_prefill_tp" .. tp], 40)
  end
  lu.assertEquals(n.deepseekv3_mla_decode, 66)
  lu.assertEquals(n.deepseekv3_mla_prefill, 36)
  lu.assertEquals(n.glm51_mla_decode, 30)
  lu.assertEquals(n.glm51_mla_prefill, 24)
  lu.assertNil(n.glm52_mla_decode)                       -- all collide with GLM-5.1
  for _, tp in ipairs { 1, 4, 8, 16 } do
    lu.assertEquals(n["llama70b_dense_decode_tp" .. tp], 12)
    lu.assertEquals(n["llama70b_dense_prefill_tp" .. tp], 8)
  end
  local v = {}
  for _, x in ipairs(fia.dense_variants(models.resolve { LLAMA }[1])) do v[#v + 1] = table.concat(x, ",") end
  lu.assertEquals(v, { "64,8,1", "16,2,4", "8,1,8", "4,1,16" })
  local dfc = require "perfscript.grid.generators.dispatch_ffn_combine"
  lu.assertEquals(dfc.experts_per_rank(models.resolve { DSV3 }[1]), { 1, 2, 4, 8, 16 })
  lu.assertEquals(dfc.experts_per_rank(models.resolve { GLM51 }[1]), { 1, 2, 4, 8, 16 })
end

function test_hf_config()
  local path = os.getenv("PERFSCRIPT_TEST_TMP") and (os.getenv("PERFSCRIPT_TEST_TMP") .. "/hf_config.json")
               or os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write [[{"_name_or_path": "my-org/Tiny-MoE", "hidden_size": 2048, "intermediate_size": 5632,
    "num_attention_heads": 16, "num_key_value_heads": 4, "n_routed_experts": 64,
    "num_experts_per_tok": 6, "moe_intermediate_size": 1408}]]
  f:close()
  local warned = {}
  local c = models.from_hf_config(path, function(s) warned[#warned + 1] = s end)
  os.remove(path)
  lu.assertEquals(c.name, "my-org/Tiny-MoE")
  lu.assertEquals(c.model_key, "myorgtinymoe")
  lu.assertEquals({ c.hidden_size, c.num_kv_heads, c.head_dim, c.num_experts, c.topk,
                    c.expert_intermediate_size, c.num_experts_per_card }, { 2048, 4, 128, 64, 6, 1408, 64 })
  lu.assertEquals(c.ep_sizes, { 1, 2, 4, 8, 16, 32, 64 })
  -- no layer is dense (no first_k_dense_replace): intermediate_size is read by nothing, and said so
  lu.assertEquals(c.intermediate_size, 0)
  lu.assertEquals(#warned, 1)
  lu.assertStrContains(warned[1], "field 'intermediate_size' (5632) is not used: every layer is MoE")
  lu.assertEquals(c.tp_sizes, { 1, 2, 4, 8, 16 })
  lu.assertEquals(models.resolve({ "my-org/Tiny-MoE" }, { c })[1], c)
end

-- Preset fields are checked as config fields are: one message naming the source and the field.
function test_preset_checks()
  local function err(fields)
    local p = { name = "bad", hidden_size = 4096, intermediate_size = 0, num_attention_heads = 32,
                num_kv_heads = 8, num_experts = 8, topk = 2, expert_intermediate_size = 1024 }
    for k, v in pairs(fields) do p[k] = v end
    local ok, e = pcall(models.preset, p, "my_moe.lua")
    lu.assertFalse(ok)
    lu.assertTrue(perf.is_user_error(e), tostring(e))
    return tostring(e)
  end
  lu.assertEquals(err { topk = -8 }, "my_moe.lua: field 'topk' is -8; it must be 0 or more")
  lu.assertEquals(err { topk = 9 }, "my_moe.lua: field 'topk' is 9; a MoE model routes each token to 1 .. num_experts (8)")
  lu.assertEquals(err { head_dim = -128 }, "my_moe.lua: field 'head_dim' is -128; it must be at least 1")
  lu.assertEquals(err { num_kv_heads = "8" }, 'my_moe.lua: field \'num_kv_heads\' is the string "8", not a number (write 8 without quotes)')
  lu.assertEquals(err { kv_lora_rank = 0 / 0 }, "my_moe.lua: field 'kv_lora_rank' is NaN, not a finite number")
  lu.assertEquals(err { hidden_size = math.huge }, "my_moe.lua: field 'hidden_size' is Infinity, not a finite number")
  lu.assertEquals(err { hidden_size = 1e300 }, "my_moe.lua: field 'hidden_size' is 1e+300, above the limit 2147483647")
  lu.assertEquals(err { hidden_size = 0 }, "my_moe.lua: field 'hidden_size' is 0; it must be at least 1")
  lu.assertEquals(err { tp_sizes = { 1, -2 } }, "my_moe.lua: field 'tp_sizes' item 2 is -2; it must be at least 1")
  lu.assertEquals(err { ep_sizes = {} }, "my_moe.lua: field 'ep_sizes' must be a non-empty list of sizes")
  -- whole floats become integers (a JSON 8.0 is 8)
  local ok = models.preset { name = "ok", hidden_size = 4096.0, intermediate_size = 0, num_attention_heads = 32,
                             num_kv_heads = 8 }
  lu.assertEquals(math.type(ok.hidden_size), "integer")
end

---------------------------------------------------------------------------------------------
-- Complex generators (9.7)


function test_fia_rows()
  local r = fia.dense_prefill("s", 2, 256, 64, 8, 128)
  lu.assertEquals(cells.text(r.inputs), "512,64,128;512,8,128;512,8,128;;2048,2048;2;2" .. string.rep(";", 24))
  lu.assertEquals(#r.inputs, 31)
  lu.assertEquals(cells.text(r.outputs), "512,64,128")
  local x = r.extra
  lu.assertEquals(x["Runtime actual_seq_lengths_values"], "256,512")
  lu.assertEquals(x["Runtime actual_seq_lengths_kv_values"], "256,512")
  lu.assertEquals(x["Runtime actual_seq_lengths_shape"], "2")
  lu.assertEquals(x["Runtime avg_seq_len"], "256.000000")
  lu.assertEquals(x["Runtime block_table_shape"], "")
  lu.assertEquals(x["Runtime block_table_valid_blocks"], "")
  lu.assertEquals({ x["Runtime num_heads"], x["Runtime num_key_value_heads"], x["Runtime sparse_mode"],
                    x["Runtime input_layout"], x["Runtime block_size"] }, { "64", "8", "3", "TND", "128" })
  lu.assertEquals(x["Runtime metadata_completeness"], "shape_grid_scene_generated")
  lu.assertEquals(x["Input Data Types"], "DT_BF16;DT_BF16;DT_BF16;DT_UNDEFINED;INT8;INT64;INT64"
                  .. string.rep(";DT_UNDEFINED", 24))
  lu.assertEquals(x["Input Formats"], "ND;ND;ND;NULL;ND;ND;ND" .. string.rep(";NULL", 24))

  r = fia.dense_decode("s", 1, 3593, 16, 2, 128)
  lu.assertEquals(cells.text(r.inputs), "1,16,128;29,2,128,128;29,2,128,128;;2048,2048;1;1;;;;;;;;1,29"
                  .. string.rep(";", 16))
  lu.assertEquals(r.extra["Runtime block_table_valid_blocks"], "29")
  lu.assertEquals(r.extra["Runtime avg_seq_len"], "3593.000000")

  r = fia.mla_decode("s", 2, 2048, 128, 512, 64)
  lu.assertEquals(cells.text(r.inputs),
    "2,128,1,512;32,1,128,512;32,1,128,512;;;2;2;;;;;;;;2,16;;;;;;;;;;2,128,1,64;32,1,128,64;;;;;")
  lu.assertEquals(cells.text(r.outputs), "128,2,1,512")
  lu.assertEquals({ r.extra["Runtime block_table_valid_blocks"], r.extra["Runtime sparse_mode"],
                    r.extra["Runtime input_layout"] }, { "16,16", "0", "BNSD_NBSD" })

  -- MLA prefill in TND, as the consumer's MLA decomposer asks: q (T, H, nope), sparse 3, H KV heads
  r = fia.mla_prefill("s", 4, 2048, 128, 128, 64, 128)
  lu.assertEquals(r.inputs[1], { 8192, 128, 128 })
  lu.assertEquals(r.inputs[15], {})
  lu.assertEquals(r.inputs[25], { 8192, 128, 64 })
  lu.assertEquals(r.outputs[1], { 8192, 128, 128 })
  lu.assertEquals(r.extra["Runtime actual_seq_lengths_values"], "2048,4096,6144,8192")
  lu.assertEquals({ r.extra["Runtime num_key_value_heads"], r.extra["Runtime sparse_mode"],
                    r.extra["Runtime input_layout"] }, { "128", "3", "TND" })

  r = fia.mla_prefill("s", 1, 512, 128, 128, 64, 128)
  lu.assertEquals(cells.text(r.inputs),
    "512,128,128;512,128,128;512,128,128;;2048,2048;1;1;;;;;;;;;;;;;;;;;;512,128,64;512,128,64;;;;;")
  local dt = {}
  for t in (r.extra["Input Data Types"] .. ";"):gmatch("([^;]*);") do dt[#dt + 1] = t end
  lu.assertEquals({ dt[25], dt[26] }, { "DT_BF16", "DT_BF16" })
  -- 40 slots are cut to 31
  local s = {}
  for i = 0, 39 do s[i] = { 1 } end
  lu.assertEquals(#fia.slots(s), 31)
end

function test_fia_scenes()
  local all = gen("fused_attention")
  local sigs, scenes_seen = {}, {}
  for _, r in ipairs(all) do
    local k = cells.text(r.inputs) .. "|" .. cells.text(r.outputs)
    lu.assertNil(sigs[k]); sigs[k] = true
    scenes_seen[r.extra["Runtime source_profile"]] = true
  end
  lu.assertTrue(scenes_seen.qwen332b_dense_prefill_tp1)
  lu.assertTrue(scenes_seen.deepseekv3_mla_prefill)
  local pairs_ = {}
  for _, r in ipairs(gen("fused_attention", { QWEN })) do
    if r.extra["Runtime source_profile"]:find("decode") and r.inputs[1][1] == 1 then
      pairs_[r.extra["Runtime num_heads"] .. "," .. r.extra["Runtime num_key_value_heads"]] = true
    end
  end
  for _, p in ipairs { "64,8", "32,4", "16,2", "8,1", "4,1" } do lu.assertTrue(pairs_[p], p) end
  local found4112, found4099 = false, false
  for _, r in ipairs(all) do
    if r.extra["Runtime avg_seq_len"] == "4112.000000" then found4112 = true end
    if r.extra["Runtime avg_seq_len"] == "4099.000000" then found4099 = true end
  end
  lu.assertTrue(found4112); lu.assertTrue(found4099)
end

function test_dfc_gmm_split()
  local d = gen("dispatch_ffn_combine", { DSV3 })
  lu.assertEquals(#d, 275)
  lu.assertEquals(rowtext(d[1]), "1,7168;1,7168,4096;1,2048,7168;1,8;4096;7168;1,8 -> 1,7168;1")
  lu.assertEquals(d[1].extra["EP Size"], "256")
  for _, r in ipairs(gen("dispatch_ffn_combine", { GLM51 })) do
    lu.assertEquals(r.extra["EP Size"], tostring(256 // r.outputs[2][1]))
    if r.inputs[1][2] == 6144 and r.outputs[2][1] == 8 then lu.assertEquals(r.extra["EP Size"], "32") end
  end
  local all = gen("dispatch_ffn_combine")
  lu.assertEquals(rowtext(all[#all]), "1024,6144;16,6144,256;16,128,6144;1024,8;4096;98304;1024,8 -> 1024,6144;16")
  lu.assertEquals(all[#all].extra["EP Size"], "16")
  -- (E, N/32, K/16, 16, 32): gate_up (K = hidden, N = 2 * 2048 / TP) and down (K = 2048 / TP,
  -- N = hidden), E = 256 / EP; the hidden size is never split by TP
  local g = gen("grouped_matmul", { DSV3 })
  lu.assertEquals(rowtext(g[1]), "1,7168;256,128,448,16,32;;256,4096;;;;256;1 -> 1,4096")
  lu.assertEquals(rowtext(g[2]), "1,2048;256,224,128,16,32;;256,7168;;;;256;1 -> 1,7168")
  local ga = gen("grouped_matmul")
  lu.assertEquals(rowtext(ga[#ga]), "65536,128;4,192,8,16,32;;4,6144;;;;4;65536 -> 65536,6144")
  local q = gen("split_qkv_rmsnorm_rope", { QWEN })
  local found = false
  for _, r in ipairs(q) do
    if rowtext(r) == "1,768;128 -> 1,512;1,128;1,128" then found = true end
    lu.assertEquals(r.inputs[1][2], r.outputs[1][2] + 2 * r.outputs[2][2])
    lu.assertEquals(r.outputs[2], r.outputs[3])
    lu.assertEquals(r.extra["Output Formats"], "ND;ND;ND")
  end
  lu.assertTrue(found)
  lu.assertEquals(rowtext(gen("split_qkv_rmsnorm_rope")[1]), "1,10240;128 -> 1,8192;1,1024;1,1024")
  lu.assertEquals(#gen("split_qkv_rmsnorm_rope", { DSV3, GLM51 }), 0)
end

---------------------------------------------------------------------------------------------
-- Axis-density standard (docs/rules.md, Shape grids: axis density)

function test_density_standard()
  local density = require "perfscript.grid.density"
  for _, r in ipairs(density.audit(grids, patterns, require "perfscript.db.density")) do
    lu.assertEquals(r.problems, {}, r.axis)
  end
  local rule = { range = { 1, 64 }, segments = { { 1, 8, gap = 1 }, { 9, 64, ratio = 2 } }, required = { 1, 3 } }
  lu.assertEquals(density.check({ 1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64 }, rule), {})
  local bad = density.check({ 2, 3, 5, 8, 32 }, rule)
  lu.assertEquals(bad, { "missing required value 1", "starts at 2, above the range start 1",
                         "ends at 32, below the range end 64", "step 3 -> 5 is wider than 1",
                         "step 5 -> 8 is wider than 1", "step 8 -> 32 exceeds ratio 2" })
end

-- One standard: the grid audit and the database's coverage check read the same rules
-- (perfscript.db.density), PAD_TOKENS_GRID and the template axes included.
function test_density_one_standard()
  local std = require "perfscript.db.density"
  local problems = std.check("PAD_TOKENS_GRID", { 1, 2, 3, 9, 15 })
  lu.assertEquals(problems[1].why, "missing anchors: 4,5,6,7")
  local results = require("perfscript.grid.density").audit(grids, patterns)
  lu.assertEquals(#results, 30)
  local names = {}
  for _, r in ipairs(results) do names[r.axis] = true; lu.assertEquals(r.problems, {}, r.axis) end
  lu.assertTrue(names.PAD_TOKENS_GRID and names["moe_gating_topk.topk"])
  lu.assertNil(names.COMM_BYTES)
end

os.exit(lu.LuaUnit.run())
