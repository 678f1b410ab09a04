"""Goldens of the MLA prefill and KV-cache operators: RINGMLAPrefillBF16Kernel
(torch_npu.atb.npu_ring_mla and its .out form), PagedCacheLoadNdKernel
(torch_npu.atb.npu_paged_cache_load) and ReshapeAndCacheNdKernel
(torch_npu._npu_reshape_and_cache, in place). Contracts from op-plugin's ATB adapters
(op_plugin/ops/atb/{RingMlaAtb,PagedCacheLoadAtb,ReshapeAndCachAtb}.cpp) and their documented
constraints (op_plugin/python/atb/_atb_api_docs.py)."""
import torch

from . import inplace
from ._attn import (HALF, attend, causal_mask, check_block_table, choice, dtname, expect, expect_dtype,
                    expect_rank, expect_shape, gather_paged, int_list, integer, is_meta, out_tensor, shape, tensor)

RING_NOPE, RING_ROPE = 128, 64   # the documented q/k head dims ([tokens, heads, 128] and [.., 64])
RING_MASK = 512                  # the documented triu mask: [512, 512]


def npu_ring_mla(q_nope, q_rope, k_nope, k_rope, value, mask, seqlen, head_num, kv_head_num, *, pre_out=None,
                 prev_lse=None, qk_scale=1.0, kernel_type=None, mask_type=None, input_layout=None, calc_type=None,
                 output=None, softmax_lse=None):
    for nm, t in (("q_nope", q_nope), ("q_rope", q_rope), ("k_nope", k_nope), ("k_rope", k_rope),
                  ("value", value), ("mask", mask), ("seqlen", seqlen)):
        tensor(nm, t)
    expect_dtype("q_nope", q_nope, HALF)
    for nm, t in (("q_rope", q_rope), ("k_nope", k_nope), ("k_rope", k_rope), ("value", value)):
        expect_dtype(nm, t, (q_nope.dtype,))
    integer("head_num", head_num, lo=1)
    integer("kv_head_num", kv_head_num, lo=1)
    expect(head_num % kv_head_num == 0, f"kv_head_num: {kv_head_num} does not divide head_num {head_num}")
    kernel_type = choice("kernel_type", kernel_type or "kernel_type_high_precision",
                         ("kernel_type_default", "kernel_type_high_precision"))
    mask_type = choice("mask_type", mask_type or "no_mask", ("no_mask", "mask_type_triu"))
    choice("input_layout", input_layout or "type_bsnd", ("type_bsnd",))
    calc_type = choice("calc_type", calc_type or "calc_type_first_ring", ("calc_type_default", "calc_type_first_ring"))
    expect_rank("q_nope", q_nope, 3)
    tq = q_nope.shape[0]
    expect_shape("q_nope", q_nope, (tq, head_num, RING_NOPE))
    expect_shape("q_rope", q_rope, (tq, head_num, RING_ROPE))
    expect_rank("k_nope", k_nope, 3)
    tkv = k_nope.shape[0]
    expect_shape("k_nope", k_nope, (tkv, kv_head_num, RING_NOPE))
    expect_shape("k_rope", k_rope, (tkv, kv_head_num, RING_ROPE))
    expect_shape("value", value, (tkv, kv_head_num, None))
    dv = value.shape[2]
    if mask_type == "mask_type_triu":
        expect_dtype("mask", mask, (q_nope.dtype,))
        expect_shape("mask", mask, (RING_MASK, RING_MASK))
    # seqlen: a host tensor, [batch] (q and kv alike) or [2, batch] (q lengths, then kv lengths)
    expect(seqlen.device.type == "cpu", f"seqlen: expected a CPU (host) tensor, got one on {seqlen.device.type}")
    expect_dtype("seqlen", seqlen, (torch.int32,))
    expect(seqlen.dim() == 1 or (seqlen.dim() == 2 and seqlen.shape[0] == 2),
           f"seqlen: expected shape (batch,) or (2, batch), got {shape(seqlen)}")
    sl = seqlen.tolist()
    qlens, kvlens = (sl, sl) if seqlen.dim() == 1 else (sl[0], sl[1])
    expect(sum(qlens) == tq, f"seqlen: the query lengths {qlens} add up to {sum(qlens)}, q_nope has {tq} tokens")
    expect(sum(kvlens) == tkv, f"seqlen: the kv lengths {kvlens} add up to {sum(kvlens)}, k_nope has {tkv} tokens")
    for i, (q, k) in enumerate(zip(qlens, kvlens)):
        expect(q > 0, f"seqlen: batch {i} has query length {q} (must be > 0)")
        expect(k >= q or k == 0, f"seqlen: batch {i} has kv length {k} < query length {q} (must be >= or 0)")
    if calc_type == "calc_type_default":
        tensor("pre_out", pre_out)
        tensor("prev_lse", prev_lse)
    if pre_out is not None:
        expect_dtype("pre_out", pre_out, (q_nope.dtype,))
        expect_shape("pre_out", pre_out, (tq, head_num, dv))
    if prev_lse is not None:
        expect_dtype("prev_lse", prev_lse, (torch.float32,))
        expect_shape("prev_lse", prev_lse, (head_num, tq))
    expect((output is None) == (softmax_lse is None), "output: the .out form takes output and softmax_lse together")
    if output is not None:
        out_tensor("output", output, (tq, head_num, dv), q_nope.dtype)
        out_tensor("softmax_lse", softmax_lse, (head_num, tq), torch.float32)
    out = torch.empty((tq, head_num, dv), dtype=q_nope.dtype, device=q_nope.device)
    lse = torch.empty((head_num, tq), dtype=torch.float32, device=q_nope.device)
    if not is_meta(q_nope, k_nope, value, pre_out, prev_lse):
        qs = ks = 0
        for q, k in zip(qlens, kvlens):
            qn, qr = q_nope[qs:qs + q].transpose(0, 1), q_rope[qs:qs + q].transpose(0, 1)
            if k == 0:
                o = torch.zeros(head_num, q, dv)
                l = torch.full((head_num, q), float("-inf"))
            else:
                kn, kr = k_nope[ks:ks + k].transpose(0, 1), k_rope[ks:ks + k].transpose(0, 1)
                v = value[ks:ks + k].transpose(0, 1)
                m = causal_mask(q, k) if mask_type == "mask_type_triu" else None
                o, l = attend(qn, kn, v, qk_scale, m, qr, kr)
            out[qs:qs + q] = o.transpose(0, 1).to(out.dtype)
            lse[:, qs:qs + q] = l
            qs += q
            ks += k
        if calc_type == "calc_type_default":
            # merge with the previous ring's partial result through the log-sum-exps
            new = torch.logaddexp(prev_lse.float(), lse)
            wp = torch.exp(prev_lse.float() - new).transpose(0, 1).unsqueeze(-1)
            wc = torch.exp(lse - new).transpose(0, 1).unsqueeze(-1)
            out = (pre_out.float() * wp + out.float() * wc).to(q_nope.dtype)
            lse = new
    if output is not None:
        output.copy_(out)
        softmax_lse.copy_(lse)
        return output, softmax_lse
    return out, lse


def npu_paged_cache_load(key_cache, value_cache, block_table, context_lens, *, seq_starts=None, cumsum=False,
                         key=None, value=None):
    for nm, t in (("key_cache", key_cache), ("value_cache", value_cache), ("block_table", block_table),
                  ("context_lens", context_lens)):
        tensor(nm, t)
    cache_dtypes = HALF + (torch.int8,)
    expect_dtype("key_cache", key_cache, cache_dtypes)
    expect_dtype("value_cache", value_cache, (key_cache.dtype,))
    expect_rank("key_cache", key_cache, 4)
    blocks, bs, heads, dk = shape(key_cache)
    expect_shape("value_cache", value_cache, (blocks, bs, heads, None))
    dv = value_cache.shape[3]
    esz = key_cache.element_size()
    expect(heads * dk * esz % 32 == 0, f"key_cache: num_heads*head_size_k = {heads}*{dk} {dtname(key_cache.dtype)} "
                                       f"is not 32-byte aligned")
    expect(heads * dv * esz % 32 == 0, f"value_cache: num_heads*head_size_v = {heads}*{dv} {dtname(key_cache.dtype)} "
                                       f"is not 32-byte aligned")
    expect_rank("block_table", block_table, 2)
    expect_dtype("block_table", block_table, (torch.int32,))
    batch = block_table.shape[0]
    expect(isinstance(cumsum, bool), f"cumsum: expected a bool, got {cumsum!r}")
    expect_shape("context_lens", context_lens, (batch + 1,) if cumsum else (batch,))
    lens = int_list("context_lens", context_lens, (torch.int32,))
    if lens is not None and cumsum:
        expect(lens[0] == 0, f"context_lens: a cumulative list starts at 0, got {lens[0]}")
        lens = [b - a for a, b in zip(lens, lens[1:])]
    if lens is not None:
        for i, n in enumerate(lens):
            expect(n >= 0, f"context_lens: batch {i} has a negative length {n}")
    starts = None
    if seq_starts is not None:
        tensor("seq_starts", seq_starts)
        expect_shape("seq_starts", seq_starts, (batch,))
        starts = int_list("seq_starts", seq_starts, (torch.int32,))
    if lens is not None:
        check_block_table("block_table", block_table, lens, bs, blocks, starts)
    expect((key is None) == (value is None), "key: the .out form takes key and value together")
    if key is None:
        expect(lens is not None, "key: without key=/value= the token count comes from context_lens' values, "
                                 "which a meta tensor does not have")
        tokens = sum(lens)
    else:
        expect_rank("key", key, 3)
        tokens = key.shape[0]
        out_tensor("key", key, (tokens, heads, dk), key_cache.dtype)
        out_tensor("value", value, (tokens, heads, dv), key_cache.dtype)
        if lens is not None:
            expect(sum(lens) == tokens, f"context_lens: the lengths add up to {sum(lens)}, key has {tokens} tokens")
    k_out = key if key is not None else torch.empty((tokens, heads, dk), dtype=key_cache.dtype, device=key_cache.device)
    v_out = value if value is not None else torch.empty((tokens, heads, dv), dtype=key_cache.dtype, device=key_cache.device)
    if is_meta(key_cache, value_cache, block_table, context_lens) or lens is None:
        return k_out, v_out
    pos = 0
    for b, n in enumerate(lens):
        row = block_table[b].tolist()
        start = (starts[b] // bs) * bs if starts else 0
        k_out[pos:pos + n] = gather_paged(key_cache, row, n, bs, "BSND", start)
        v_out[pos:pos + n] = gather_paged(value_cache, row, n, bs, "BSND", start)
        pos += n
    return k_out, v_out


@inplace(2, 3)  # the row's outputs are the two caches it writes
def _npu_reshape_and_cache(key, value, key_cache, value_cache, slot_indices):
    for nm, t in (("key", key), ("value", value), ("key_cache", key_cache), ("value_cache", value_cache),
                  ("slot_indices", slot_indices)):
        tensor(nm, t)
    expect_dtype("key", key, HALF + (torch.int8,))
    expect_dtype("key_cache", key_cache, (key.dtype,))
    expect_dtype("value", value, HALF + (torch.int8,))
    expect_dtype("value_cache", value_cache, (value.dtype,))
    expect_rank("key", key, 3)
    t, heads, dk = shape(key)
    expect_shape("value", value, (t, heads, None))
    dv = value.shape[2]
    expect_rank("key_cache", key_cache, 4)
    blocks, bs = key_cache.shape[0], key_cache.shape[1]
    expect_shape("key_cache", key_cache, (blocks, bs, heads, dk))
    expect_shape("value_cache", value_cache, (blocks, bs, heads, dv))
    expect_dtype("slot_indices", slot_indices, (torch.int32,))
    expect_shape("slot_indices", slot_indices, (t,))
    if not is_meta(key, value, key_cache, value_cache, slot_indices):
        slots = slot_indices.tolist()
        seen = set()
        for i, s in enumerate(slots):
            expect(s < blocks * bs, f"slot_indices: entry {i} is slot {s}, the caches hold {blocks * bs} slots")
            expect(s < 0 or s not in seen, f"slot_indices: slot {s} is written twice (entry {i})")
            seen.add(s)
            if s >= 0:
                key_cache[s // bs, s % bs] = key[i]
                value_cache[s // bs, s % bs] = value[i]
    return None


GOLDENS = {
    "torch_npu.atb.npu_ring_mla": npu_ring_mla,
    "torch_npu.atb.npu_paged_cache_load": npu_paged_cache_load,
    "torch_npu._npu_reshape_and_cache": _npu_reshape_and_cache,
}
