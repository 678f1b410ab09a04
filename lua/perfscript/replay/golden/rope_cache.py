"""Goldens of the RoPE and RoPE+cache operators: InterleaveRope (torch_npu.npu_interleave_rope),
KvRmsNormRopeCache (torch_npu.npu_kv_rmsnorm_rope_cache) and split_qkv_rmsnorm_rope_kernel
(vllm-ascend's Triton op torch.ops.vllm.qkv_rmsnorm_rope). Constraints from the torch_npu API
reference (npu_interleave_rope: 4-D x, D = 64, cos/sin N = 1; npu_kv_rmsnorm_rope_cache: kv
[B, 1, S, 576] = 512 RMSNorm + 64 RoPE, caches by cache_mode) and vllm-ascend's
ops/triton/linearnorm/split_qkv_rmsnorm_rope.py."""
import torch

from ._attn import (FLOAT, HALF, INT, choice, expect, expect_dtype, expect_rank, expect_shape, integer,
                    interleave_rope, is_meta, rms_norm, same_dtype, shape, tensor)

ROPE_D = 64          # InterleaveRope's and KvRmsNormRopeCache's rope size
RMS_D = 512          # KvRmsNormRopeCache's RMSNorm size (kv's last dim is 576)


def npu_interleave_rope(x, cos, sin):
    for nm, t in (("x", x), ("cos", cos), ("sin", sin)):
        tensor(nm, t)
    expect_dtype("x", x, HALF)
    same_dtype([("x", x), ("cos", cos), ("sin", sin)])
    expect_rank("x", x, 4)
    b, n, s, d = shape(x)
    expect(d == ROPE_D, f"x: last dim must be {ROPE_D}, got {d} (shape {shape(x)})")
    expect_rank("cos", cos, 4)
    cb, cn, cs, cd = shape(cos)
    expect(cb == b and cn == 1 and cs in (1, s) and cd == d,
           f"cos: expected ({b}, 1, {s} or 1, {d}) for x {shape(x)}, got {shape(cos)}")
    expect_shape("sin", sin, shape(cos))
    if is_meta(x, cos, sin):
        return torch.empty_like(x)
    return interleave_rope(x, cos, sin).to(x.dtype)


CACHE_MODES = ("Norm", "PA", "PA_BNSD", "PA_NZ", "PA_BLK_BNSD", "PA_BLK_NZ")


def npu_kv_rmsnorm_rope_cache(kv, gamma, cos, sin, index, k_cache, ckv_cache, *, k_rope_scale=None, c_kv_scale=None,
                              k_rope_offset=None, c_kv_offset=None, v=None, epsilon=1e-5, cache_mode="Norm",
                              is_output_kv=False):
    for nm, t in (("kv", kv), ("gamma", gamma), ("cos", cos), ("sin", sin), ("index", index),
                  ("k_cache", k_cache), ("ckv_cache", ckv_cache)):
        tensor(nm, t)
    for nm, t in (("k_rope_scale", k_rope_scale), ("c_kv_scale", c_kv_scale), ("k_rope_offset", k_rope_offset),
                  ("c_kv_offset", c_kv_offset), ("v", v)):
        expect(t is None, f"{nm}: the quantised caches and the separate v are not modelled by the golden, got a tensor")
    choice("cache_mode", cache_mode, CACHE_MODES)
    expect(cache_mode in ("Norm", "PA", "PA_BNSD"),
           f"cache_mode: {cache_mode!r} (FRACTAL_NZ or per-block index) is not modelled by the golden")
    expect(isinstance(is_output_kv, bool), f"is_output_kv: expected a bool, got {is_output_kv!r}")
    expect_dtype("kv", kv, HALF)
    same_dtype([("kv", kv), ("gamma", gamma), ("cos", cos), ("sin", sin), ("k_cache", k_cache), ("ckv_cache", ckv_cache)])
    expect_rank("kv", kv, 4)
    b, n, s, h = shape(kv)
    expect(n == 1, f"kv: dim 1 (heads) must be 1, got {n} (shape {shape(kv)})")
    expect(h == RMS_D + ROPE_D, f"kv: last dim must be {RMS_D + ROPE_D} ({RMS_D} RMSNorm + {ROPE_D} RoPE), got {h}")
    expect_shape("gamma", gamma, (RMS_D,))
    expect_shape("cos", cos, (b, 1, s, ROPE_D))
    expect_shape("sin", sin, (b, 1, s, ROPE_D))
    expect_dtype("index", index, (torch.int64,))
    expect_rank("k_cache", k_cache, 4)
    if cache_mode == "Norm":
        expect_shape("index", index, (b, s))
        expect_shape("k_cache", k_cache, (b, 1, None, ROPE_D))
        expect_shape("ckv_cache", ckv_cache, (b, 1, k_cache.shape[2], RMS_D))
        slots = k_cache.shape[2]
    else:
        expect_shape("index", index, (b * s,))
        blocks, bs = k_cache.shape[0], k_cache.shape[1]
        expect_shape("k_cache", k_cache, (blocks, bs, 1, ROPE_D))
        expect_shape("ckv_cache", ckv_cache, (blocks, bs, 1, RMS_D))
        slots = blocks * bs
    k_rope = torch.empty((b, 1, s, ROPE_D), dtype=kv.dtype, device=kv.device)
    c_kv = torch.empty((b, 1, s, RMS_D), dtype=kv.dtype, device=kv.device)
    if is_meta(kv, index, k_cache, ckv_cache):
        return k_cache, ckv_cache, k_rope, c_kv
    idx = index.reshape(-1).tolist()
    for i, p in enumerate(idx):
        expect(-1 <= p < slots, f"index: entry {i} is {p}, the cache holds {slots} positions")
    c_kv.copy_(rms_norm(kv[..., :RMS_D], gamma, epsilon).to(kv.dtype))
    k_rope.copy_(interleave_rope(kv[..., RMS_D:], cos, sin).to(kv.dtype))
    for i, p in enumerate(idx):
        if p < 0:
            continue
        bi, si = divmod(i, s)
        if cache_mode == "Norm":
            k_cache[bi, 0, p] = k_rope[bi, 0, si]
            ckv_cache[bi, 0, p] = c_kv[bi, 0, si]
        else:
            k_cache[p // bs, p % bs, 0] = k_rope[bi, 0, si]
            ckv_cache[p // bs, p % bs, 0] = c_kv[bi, 0, si]
    return k_cache, ckv_cache, k_rope, c_kv


def qkv_rmsnorm_rope(input, cos_sin_cache, positions, q_weight, k_weight, q_hidden_size, kv_hidden_size, head_dim, eps,
                     q_bias=None, k_bias=None):
    for nm, t in (("input", input), ("cos_sin_cache", cos_sin_cache), ("positions", positions),
                  ("q_weight", q_weight), ("k_weight", k_weight)):
        tensor(nm, t)
    integer("q_hidden_size", q_hidden_size, lo=1)
    integer("kv_hidden_size", kv_hidden_size, lo=1)
    integer("head_dim", head_dim, lo=1)
    expect(isinstance(eps, float), f"eps: expected a float, got {eps!r}")
    expect_dtype("input", input, FLOAT)
    expect_rank("input", input, 2)
    t = input.shape[0]
    expect_shape("input", input, (t, q_hidden_size + 2 * kv_hidden_size))
    expect(q_hidden_size % head_dim == 0, f"head_dim: {head_dim} does not divide q_hidden_size {q_hidden_size}")
    expect(kv_hidden_size % head_dim == 0, f"head_dim: {head_dim} does not divide kv_hidden_size {kv_hidden_size}")
    expect_rank("cos_sin_cache", cos_sin_cache, 2)
    rope = cos_sin_cache.shape[1]
    expect(rope % 2 == 0 and 0 < rope <= head_dim,
           f"cos_sin_cache: rope dim {rope} must be even and at most head_dim {head_dim}")
    expect_dtype("cos_sin_cache", cos_sin_cache, FLOAT)
    expect_shape("positions", positions, (t,))
    expect_dtype("positions", positions, INT)
    for nm, w in (("q_weight", q_weight), ("k_weight", k_weight), ("q_bias", q_bias), ("k_bias", k_bias)):
        if w is not None:
            expect_shape(nm, w, (head_dim,))
    expect((q_bias is None) == (k_bias is None), "q_bias: q_bias and k_bias come together")
    q = torch.empty((t, q_hidden_size), dtype=input.dtype, device=input.device)
    k = torch.empty((t, kv_hidden_size), dtype=input.dtype, device=input.device)
    v = torch.empty((t, kv_hidden_size), dtype=input.dtype, device=input.device)
    if is_meta(input, cos_sin_cache, positions):
        return q, k, v
    pos = positions.tolist()
    for i, p in enumerate(pos):
        expect(0 <= p < cos_sin_cache.shape[0], f"positions: entry {i} is {p}, cos_sin_cache has {cos_sin_cache.shape[0]} rows")
    cs = cos_sin_cache[positions.long()].float()
    cos, sin = cs[:, None, :rope // 2], cs[:, None, rope // 2:]

    def norm_rope(x, w, bias, heads):
        x = x.float().reshape(t, heads, head_dim)
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w.float()
        if bias is not None:
            y = y + bias.float()
        y = y.to(input.dtype).float()
        x1, x2 = y[..., :rope // 2], y[..., rope // 2:rope]
        y = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin, y[..., rope:]), dim=-1)
        return y.reshape(t, heads * head_dim).to(input.dtype)

    q.copy_(norm_rope(input[:, :q_hidden_size], q_weight, q_bias, q_hidden_size // head_dim))
    k.copy_(norm_rope(input[:, q_hidden_size:q_hidden_size + kv_hidden_size], k_weight, k_bias,
                      kv_hidden_size // head_dim))
    v.copy_(input[:, q_hidden_size + kv_hidden_size:])
    return q, k, v


GOLDENS = {
    "torch_npu.npu_interleave_rope": npu_interleave_rope,
    "torch_npu.npu_kv_rmsnorm_rope_cache": npu_kv_rmsnorm_rope_cache,
    "torch.ops.vllm.qkv_rmsnorm_rope": qkv_rmsnorm_rope,
}
