"""Goldens of the MoE routing and expert-parallel operators: MoeGatingTopK
(torch_npu.npu_moe_gating_top_k), MoeTokenPermute / MoeTokenUnpermute
(torch_npu.npu_moe_token_permute / npu_moe_token_unpermute) and DispatchFFNCombine
(torch.ops._C_ascend.dispatch_ffn_combine, vllm-ascend 0.18.0's schema).

DispatchFFNCombine is a collective over the expert-parallel group; the golden is the
single-process model of its result on one rank when every rank holds the same inputs (the
replay seeds every rank alike): each (token, k) pair goes to global expert e, whose FFN is the
local expert e mod E_local of the rank that owns it, and those weights are the same on every
rank. Contracts from op-plugin (MoeGatingTopKKernelNpuOpApi.cpp, the meta registrations of
npu_moe_token_(un)permute and their reference test) and the aclnnMoeGatingTopK reference
(ops-transformer moe/moe_gating_top_k/docs: its constraints, and outOut shaped as x)."""
import torch

from ._attn import (FLOAT, HALF, INT, expect, expect_dtype, expect_rank, expect_shape, integer, is_meta,
                    out_tensor, shape, tensor)

MAX_EXPERTS = 2048   # aclnnMoeGatingTopK: at most 2048 experts, also once each group is 32-aligned


def npu_moe_gating_top_k(x, k, *, bias=None, k_group=1, group_count=1, group_select_mode=0, renorm=0, norm_type=0,
                         out_flag=False, routed_scaling_factor=1.0, eps=1e-20):
    # torch_npu 7.3.0's schema (torch 2.9, CANN 8.5: the database's versions); later ones add
    # the hash-routing input_ids/tid2eid
    tensor("x", x)
    expect_dtype("x", x, FLOAT)
    expect_rank("x", x, 2)
    t, e = shape(x)
    expect(e <= MAX_EXPERTS, f"x: {e} experts, at most {MAX_EXPERTS}")
    integer("group_count", group_count, lo=1)
    expect(e % group_count == 0, f"group_count: {group_count} does not divide the {e} experts of x")
    integer("k_group", k_group, lo=1, hi=group_count)
    per = e // group_count
    integer("k", k, lo=1, hi=per * k_group)
    integer("group_select_mode", group_select_mode, allowed=(0, 1))
    expect(per > group_select_mode, f"group_count: {group_count} groups of the {e} experts hold {per} each, "
                                    f"group_select_mode {group_select_mode} needs more")
    aligned = -(-per // 32) * 32 * group_count
    expect(aligned <= MAX_EXPERTS, f"group_count: {group_count} groups of {per} experts, 32-aligned, make {aligned} "
                                   f"(at most {MAX_EXPERTS})")
    integer("norm_type", norm_type, allowed=(0, 1, 2))
    integer("renorm", renorm, allowed=(0, 1))  # read with softmax (norm_type 0) only
    if bias is not None:
        tensor("bias", bias)
        expect_dtype("bias", bias, (x.dtype,))
        expect_shape("bias", bias, (e,))
    y = torch.empty((t, k), dtype=x.dtype, device=x.device)
    idx = torch.empty((t, k), dtype=torch.int32, device=x.device)
    out = torch.empty((t, e), dtype=torch.float32, device=x.device)
    if is_meta(x, bias):
        return y, idx, out
    xf = x.float()
    if norm_type == 0:
        norm = torch.softmax(xf, dim=-1)
    elif norm_type == 1:
        norm = torch.sigmoid(xf)
    else:
        norm = torch.sqrt(torch.nn.functional.softplus(xf))
    score = norm + bias.float() if bias is not None else norm.clone()
    if group_count > 1:
        g = score.reshape(t, group_count, per)
        gs = g.max(-1).values if group_select_mode == 0 else g.topk(2, dim=-1).values.sum(-1)
        keep = torch.zeros(t, group_count, dtype=torch.bool)
        keep.scatter_(1, gs.topk(k_group, dim=-1).indices, True)
        score = score.masked_fill(~keep.repeat_interleave(per, 1), float("-inf"))
    top = score.topk(k, dim=-1).indices
    w = norm.gather(1, top)
    if norm_type != 0 or renorm == 1:
        w = w / (w.sum(-1, keepdim=True) + eps) * routed_scaling_factor
    y.copy_(w.to(x.dtype))
    idx.copy_(top.to(torch.int32))
    out.copy_(norm)
    return y, idx, out


def npu_moe_token_permute(tokens, indices, num_out_tokens=None, padded_mode=False):
    tensor("tokens", tokens)
    tensor("indices", indices)
    expect_dtype("tokens", tokens, FLOAT)
    expect_rank("tokens", tokens, 2)
    expect(indices.dim() in (1, 2), f"indices: expected 1-D (tokens,) or 2-D (tokens, topk), got shape {shape(indices)}")
    expect_dtype("indices", indices, INT)
    expect(indices.shape[0] == tokens.shape[0],
           f"indices: {indices.shape[0]} rows for {tokens.shape[0]} tokens (shape {shape(indices)})")
    expect(padded_mode is False, "padded_mode: the padded (capacity) form is not modelled by the golden")
    flat = indices.numel()
    n = flat if not num_out_tokens else min(integer("num_out_tokens", num_out_tokens, lo=0), flat)
    topk = 1 if indices.dim() == 1 else indices.shape[1]
    out = torch.empty((n, tokens.shape[1]), dtype=tokens.dtype, device=tokens.device)
    sorted_idx = torch.empty((flat,), dtype=torch.int32, device=tokens.device)
    if is_meta(tokens, indices):
        return out, sorted_idx
    expect(bool((indices >= 0).all()), "indices: expert ids must be >= 0")
    order = torch.sort(indices.reshape(-1).long(), stable=True).indices
    out.copy_(tokens.index_select(0, order[:n] // topk))
    sorted_idx.copy_(order.to(torch.int32))
    return out, sorted_idx


def npu_moe_token_unpermute(permuted_tokens, sorted_indices, probs=None, padded_mode=False, restore_shape=None):
    tensor("permuted_tokens", permuted_tokens)
    tensor("sorted_indices", sorted_indices)
    expect_dtype("permuted_tokens", permuted_tokens, FLOAT)
    expect_rank("permuted_tokens", permuted_tokens, 2)
    expect_rank("sorted_indices", sorted_indices, 1)
    expect_dtype("sorted_indices", sorted_indices, (torch.int32,))
    expect(padded_mode is False, "padded_mode: the padded (capacity) form is not modelled by the golden")
    n = sorted_indices.shape[0]
    topk = 1
    if probs is not None:
        tensor("probs", probs)
        expect_rank("probs", probs, 2)
        expect_dtype("probs", probs, FLOAT)
        topk = probs.shape[1]
        expect(probs.numel() == n, f"probs: {shape(probs)} holds {probs.numel()} weights for {n} sorted indices")
    expect(n % topk == 0, f"sorted_indices: {n} entries are not a multiple of topk {topk}")
    expect(permuted_tokens.shape[0] <= n,
           f"permuted_tokens: {permuted_tokens.shape[0]} rows, more than the {n} sorted indices")
    t = n // topk
    out = torch.zeros((t, permuted_tokens.shape[1]), dtype=permuted_tokens.dtype, device=permuted_tokens.device)
    if is_meta(permuted_tokens, sorted_indices, probs):
        return out
    si = sorted_indices.long()
    expect(sorted(si.tolist()) == list(range(n)), "sorted_indices: expected a permutation of 0..n-1")
    # permuted row r holds flat entry si[r] (token si[r] // topk, slot si[r] % topk)
    rows = permuted_tokens.shape[0]
    src = permuted_tokens.float()
    if probs is not None:
        src = src * probs.reshape(-1)[si[:rows]].float().unsqueeze(1)
    acc = torch.zeros((t, permuted_tokens.shape[1]))
    acc.index_add_(0, si[:rows] // topk, src)
    out.copy_(acc.to(out.dtype))
    return out


def _scale(name, s, e, n):
    """A per-channel dequant scale list of one tensor: (E, N) or (E*N,), float32 or int64
    (float32 bits in the low word, as npu_trans_quant_param packs them)."""
    expect(isinstance(s, (list, tuple)) and len(s) == 1, f"{name}: expected a list of one tensor, got {s!r}")
    t = tensor(f"{name}[0]", s[0])
    expect_dtype(f"{name}[0]", t, (torch.float32, torch.int64, torch.bfloat16))
    expect(shape(t) in ((e, n), (e * n,)), f"{name}[0]: expected ({e}, {n}) or ({e * n},), got {shape(t)}")
    return t


def _scale_values(t, e, n):
    if t.dtype == torch.int64:
        t = (t & 0xFFFFFFFF).to(torch.int32).view(torch.float32)
    return t.float().reshape(e, n)


def _quant_rows(a):
    """Per-row symmetric int8 quantisation (the dynamic quant of the int8 path)."""
    s = a.abs().amax(-1, keepdim=True).clamp_min(1e-12) / 127.0
    return torch.round(a / s).clamp(-127, 127), s


def dispatch_ffn_combine(x, weight1, weight2, expert_idx, scale1, scale2, probs, group, max_output_size, out,
                         expert_token_nums):
    tensor("x", x)
    expect_dtype("x", x, HALF)
    expect_rank("x", x, 2)
    t, h = shape(x)
    for nm, w in (("weight1", weight1), ("weight2", weight2)):
        expect(isinstance(w, (list, tuple)) and len(w) == 1, f"{nm}: expected a list of one tensor, got {w!r}")
        tensor(f"{nm}[0]", w[0])
    w1, w2 = weight1[0], weight2[0]
    int8 = w1.dtype == torch.int8
    expect_dtype("weight1[0]", w1, (torch.int8, x.dtype))
    expect_dtype("weight2[0]", w2, (w1.dtype,))
    expect_rank("weight1[0]", w1, 3)
    el, wh, n1 = shape(w1)
    expect(wh == h, f"weight1[0]: expected (E, {h}, N) for x {shape(x)} (hidden {h}), got {shape(w1)} "
                    f"(a transposed weight?)")
    expect(n1 % 2 == 0, f"weight1[0]: last dim {n1} must be even (gate and up halves of SwiGLU)")
    expect_shape("weight2[0]", w2, (el, n1 // 2, h))
    s1 = _scale("scale1", scale1, el, n1)
    s2 = _scale("scale2", scale2, el, h)
    tensor("expert_idx", expert_idx)
    expect_dtype("expert_idx", expert_idx, (torch.int32,))
    expect_rank("expert_idx", expert_idx, 2)
    expect(expert_idx.shape[0] == t, f"expert_idx: {expert_idx.shape[0]} rows for {t} tokens")
    topk = expert_idx.shape[1]
    tensor("probs", probs)
    expect_dtype("probs", probs, (torch.float32,))
    expect_shape("probs", probs, (t, topk))
    expect(isinstance(group, str) and group != "", f"group: expected the HCCL group name (a string), got {group!r}")
    integer("max_output_size", max_output_size, lo=1)
    out_tensor("out", out, (t, h), x.dtype)
    tensor("expert_token_nums", expert_token_nums)
    expect_dtype("expert_token_nums", expert_token_nums, (torch.int32,))
    expect(shape(expert_token_nums) in ((el,), (1, el)),
           f"expert_token_nums: expected ({el},) or (1, {el}) (the local experts), got {shape(expert_token_nums)}")
    if is_meta(x, w1, w2, expert_idx, probs, out):
        return out, expert_token_nums
    ids = expert_idx.long()
    expect(bool((ids >= 0).all()), "expert_idx: expert ids must be >= 0")
    a1 = _scale_values(s1, el, n1)
    a2 = _scale_values(s2, el, h)
    acc = torch.zeros((t, h))
    xf = x.float()
    for j in range(el):
        rows, slots = torch.nonzero(ids % el == j, as_tuple=True)
        if rows.numel() == 0:
            continue
        a = xf[rows]
        if int8:
            aq, sa = _quant_rows(a)
            hmid = (aq @ w1[j].float()) * sa * a1[j]
        else:
            hmid = a @ w1[j].float()
        act = torch.nn.functional.silu(hmid[:, :n1 // 2]) * hmid[:, n1 // 2:]
        if int8:
            bq, sb = _quant_rows(act)
            y = (bq @ w2[j].float()) * sb * a2[j]
        else:
            y = act @ w2[j].float()
        acc.index_add_(0, rows, y * probs[rows, slots].unsqueeze(1))
    out.copy_(acc.to(out.dtype))
    counts = torch.bincount((ids % el).reshape(-1), minlength=el).to(torch.int32)
    expert_token_nums.copy_(counts.reshape(shape(expert_token_nums)))
    return out, expert_token_nums


GOLDENS = {
    "torch_npu.npu_moe_gating_top_k": npu_moe_gating_top_k,
    "torch_npu.npu_moe_token_permute": npu_moe_token_permute,
    "torch_npu.npu_moe_token_unpermute": npu_moe_token_unpermute,
    "torch.ops._C_ascend.dispatch_ffn_combine": dispatch_ffn_combine,
}
