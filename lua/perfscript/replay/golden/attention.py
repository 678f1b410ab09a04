"""Goldens of the attention operators: FusedInferAttentionScore
(torch_npu.npu_fused_infer_attention_score), SparseFlashAttention
(torch.ops._C_ascend.npu_sparse_flash_attention, vllm-ascend 0.18.0's schema) and
LightningIndexer (torch_npu.npu_lightning_indexer).

Each takes the API's arguments, checks them as the operator does (layouts, head counts, paged KV
with block tables and block size, sequence lengths, masks), and computes the result in float32
torch; on meta only the shapes and dtypes. Output shapes follow torch_npu's meta registrations
(op-plugin op_plugin/python/meta/_meta_registrations.py) and vllm-ascend's
csrc/torch_binding_meta.cpp."""
import torch

from ._attn import (FLOAT, HALF, attend, causal_mask, check_block_table, choice, expect, expect_dtype,
                    expect_rank, expect_shape, gather_paged, int_list, integer, is_meta,
                    per_batch, shape, tensor)

# input_layout -> (query layout, output layout), as torch_npu's meta registration reads it
FIA_LAYOUTS = {
    "BSH": ("BSH", "BSH"), "BSND": ("BSND", "BSND"), "BNSD": ("BNSD", "BNSD"), "TND": ("TND", "TND"),
    "NTD": ("NTD", "NTD"), "BNSD_BSND": ("BNSD", "BSND"), "BSH_BNSD": ("BSH", "BNSD"),
    "BSND_BNSD": ("BSND", "BNSD"), "NTD_TND": ("NTD", "TND"), "BSH_NBSD": ("BSH", "NBSD"),
    "BSND_NBSD": ("BSND", "NBSD"), "BNSD_NBSD": ("BNSD", "NBSD"), "TND_NTD": ("TND", "NTD"),
    "NSD": ("NSD", "NSD"),
}
RANK = {"BSH": 3, "BSND": 4, "BNSD": 4, "TND": 3, "NTD": 3, "NSD": 3}
TOKEN_LAYOUTS = ("TND", "NTD")
MASK_DTYPES = (torch.bool, torch.int8, torch.uint8)
# FIA arguments the builders never pass: the golden does not model them
FIA_UNMODELLED = ("pse_shift", "dequant_scale1", "quant_scale1", "dequant_scale2", "quant_scale2",
                  "quant_offset2", "antiquant_scale", "antiquant_offset", "query_padding_size",
                  "kv_padding_size", "key_antiquant_scale", "key_antiquant_offset", "value_antiquant_scale",
                  "value_antiquant_offset", "key_shared_prefix", "value_shared_prefix",
                  "actual_shared_prefix_len", "key_rope_antiquant_scale")


def _bsnd(name, t, layout, heads):
    """(B, S, N, D) of a query-like tensor in layout (B = 1 for NSD, B = None for token layouts)."""
    s = shape(t)
    if layout == "BSH":
        expect(s[2] % heads == 0, f"{name}: hidden size {s[2]} of shape {s} is not a multiple of the {heads} heads")
        return s[0], s[1], heads, s[2] // heads
    if layout == "BSND":
        return s
    if layout == "BNSD":
        return s[0], s[2], s[1], s[3]
    if layout == "NSD":
        return 1, s[1], s[0], s[2]
    if layout == "TND":
        return None, s[0], s[1], s[2]
    return None, s[1], s[0], s[2]  # NTD


def _heads_view(t, layout, b, start, n, heads):
    """Batch b's n tokens of a query-like tensor as (N, n, D)."""
    if layout == "BSH":
        x = t[b, :n]
        return x.reshape(n, heads, -1).transpose(0, 1)
    if layout == "BSND":
        return t[b, :n].transpose(0, 1)
    if layout == "BNSD":
        return t[b, :, :n]
    if layout == "NSD":
        return t[:, :n]
    if layout == "TND":
        return t[start:start + n].transpose(0, 1)
    return t[:, start:start + n]  # NTD


def _write(out, layout, b, start, n, val):
    """Store val (N, n, Dv) as batch b's rows of out in layout."""
    if layout == "BSH":
        out[b, :n] = val.transpose(0, 1).reshape(n, -1)
    elif layout == "BSND":
        out[b, :n] = val.transpose(0, 1)
    elif layout == "BNSD":
        out[b, :, :n] = val
    elif layout == "NBSD":
        out[:, b, :n] = val
    elif layout == "NSD":
        out[:, :n] = val
    elif layout == "TND":
        out[start:start + n] = val.transpose(0, 1)
    else:  # NTD
        out[:, start:start + n] = val


def _out_shape(layout, b, s, n, dv, t):
    return {"BSH": (b, s, n * dv), "BSND": (b, s, n, dv), "BNSD": (b, n, s, dv), "NBSD": (n, b, s, dv),
            "NSD": (n, s, dv), "TND": (t, n, dv), "NTD": (n, t, dv)}[layout]


def _batch_lengths(name, lens, b, limit):
    """Per-batch lengths of a B-major layout: one per batch (or one for all), each within the
    tensor's limit; the limit for every batch when not given."""
    if lens is None:
        return [limit] * b
    expect(len(lens) in (1, b), f"{name}: expected {b} lengths (one per batch), got {len(lens)}")
    lens = lens * b if len(lens) == 1 else lens
    for i, n in enumerate(lens):
        expect(0 <= n <= limit, f"{name}: batch {i} length {n} outside [0, {limit}]")
    return lens


def _kv_paged(name, key, layout_q, kv_heads, d, block_size):
    """A paged key/value cache: 3-D (blocks, block_size, kv_heads*d) or 4-D (blocks, kv_heads,
    block_size, d). Returns (gather layout, blocks, per-head d)."""
    expect(key.dim() in (3, 4), f"{name}: with a block_table expected a 3-D (blocks, block_size, H) or 4-D "
                                f"(blocks, kv_heads, block_size, D) cache, got shape {shape(key)}"
                                + (" (5-D FRACTAL_NZ caches are not modelled)" if key.dim() == 5 else ""))
    if key.dim() == 3:
        blocks, bs, h = shape(key)
        expect(bs == block_size, f"{name}: block dim is {bs}, block_size says {block_size} (shape {shape(key)})")
        expect(h % kv_heads == 0, f"{name}: last dim {h} is not a multiple of num_key_value_heads {kv_heads}")
        return "BSH", blocks, h // kv_heads
    blocks, nk, bs, dk = shape(key)
    expect(nk == kv_heads, f"{name}: {nk} key/value heads in shape {shape(key)} (blocks, heads, block_size, D), "
                           f"num_key_value_heads says {kv_heads}")
    expect(bs == block_size, f"{name}: block dim is {bs}, block_size says {block_size} (shape {shape(key)})")
    return "BNSD", blocks, dk


def _kv_dense(name, key, layout_q, b, kv_heads):
    """A non-paged key/value in the query's layout: (B, Skv, Nk, D) view sizes."""
    expect(key.dim() == RANK[layout_q], f"{name}: expected rank {RANK[layout_q]} (layout {layout_q}, as the query), "
                                        f"got shape {shape(key)}")
    kb, skv, nk, dk = _bsnd(name, key, layout_q, kv_heads)
    if layout_q not in TOKEN_LAYOUTS and layout_q != "NSD":
        expect(kb == b, f"{name}: batch {kb} differs from the query's {b}")
    expect(nk == kv_heads, f"{name}: {nk} heads in shape {shape(key)} (layout {layout_q}), "
                           f"num_key_value_heads says {kv_heads}")
    return skv, dk


def _fia_mask(atten_mask, sparse_mode, smax, lmax, b):
    if sparse_mode in (2, 3, 4):
        tensor("atten_mask", atten_mask)
        expect_shape("atten_mask", atten_mask, (2048, 2048))
        expect_dtype("atten_mask", atten_mask, MASK_DTYPES)
        return None
    if atten_mask is None:
        expect(sparse_mode == 0, f"atten_mask: sparse_mode {sparse_mode} needs a mask, got None")
        return None
    tensor("atten_mask", atten_mask)
    expect_dtype("atten_mask", atten_mask, MASK_DTYPES)
    s = shape(atten_mask)
    expect(len(s) in (2, 3, 4), f"atten_mask: expected (S, Skv), (B, S, Skv) or (B, 1, S, Skv), got {s}")
    expect(s[-2] >= smax and s[-1] >= lmax,
           f"atten_mask: the last two dims {s[-2:]} must cover the {smax} query and {lmax} key positions")
    if len(s) >= 3:
        expect(s[0] in (1, b), f"atten_mask: leading dim {s[0]} is neither 1 nor the batch {b}")
    if len(s) == 4:
        expect(s[1] == 1, f"atten_mask: dim 1 of a 4-D mask must be 1, got {s[1]}")
    return atten_mask


def _masked(sparse_mode, mask, b, sb, lb, pre_tokens, next_tokens):
    if sparse_mode == 0:
        if mask is None:
            return None
        m = mask if mask.dim() == 2 else mask[min(b, mask.shape[0] - 1)].reshape(mask.shape[-2], mask.shape[-1])
        return m[:sb, :lb].bool()
    if sparse_mode == 1:
        return mask.reshape(mask.shape[-2], mask.shape[-1])[:sb, :lb].bool() if mask is not None else None
    i = torch.arange(sb).unsqueeze(1)
    j = torch.arange(lb).unsqueeze(0)
    if sparse_mode == 2:
        return j > i
    if sparse_mode == 3:
        return causal_mask(sb, lb)
    d = lb - sb
    return (j > i + d + next_tokens) | (j < i + d - pre_tokens)


def npu_fused_infer_attention_score(query, key, value, *, pse_shift=None, atten_mask=None, actual_seq_lengths=None,
                                    actual_seq_lengths_kv=None, dequant_scale1=None, quant_scale1=None,
                                    dequant_scale2=None, quant_scale2=None, quant_offset2=None, antiquant_scale=None,
                                    antiquant_offset=None, block_table=None, query_padding_size=None,
                                    kv_padding_size=None, key_antiquant_scale=None, key_antiquant_offset=None,
                                    value_antiquant_scale=None, value_antiquant_offset=None, key_shared_prefix=None,
                                    value_shared_prefix=None, actual_shared_prefix_len=None, query_rope=None,
                                    key_rope=None, key_rope_antiquant_scale=None, num_heads=1, scale=1.0,
                                    pre_tokens=2147483647, next_tokens=2147483647, input_layout="BSH",
                                    num_key_value_heads=0, sparse_mode=0, inner_precise=0, block_size=0,
                                    antiquant_mode=0, softmax_lse_flag=False, key_antiquant_mode=0,
                                    value_antiquant_mode=0):
    loc = locals()
    for n in FIA_UNMODELLED:
        expect(loc[n] is None, f"{n}: not modelled by the golden (quantised/prefix/pse FIA), got a value")
    for n, t in (("query", query), ("key", key), ("value", value)):
        tensor(n, t)
    expect_dtype("query", query, HALF)
    expect_dtype("key", key, (query.dtype,))
    expect_dtype("value", value, (query.dtype,))
    integer("num_heads", num_heads, lo=1)
    integer("num_key_value_heads", num_key_value_heads, lo=0)
    kv_heads = num_key_value_heads or num_heads
    expect(num_heads % kv_heads == 0,
           f"num_key_value_heads: {kv_heads} does not divide num_heads {num_heads}")
    choice("input_layout", input_layout, tuple(FIA_LAYOUTS))
    ql, ol = FIA_LAYOUTS[input_layout]
    expect(query.dim() == RANK[ql], f"query: layout {input_layout} needs a {RANK[ql]}-D query, got shape {shape(query)}")
    integer("sparse_mode", sparse_mode, allowed=(0, 1, 2, 3, 4))
    integer("inner_precise", inner_precise, allowed=(0, 1, 2, 3))
    expect(isinstance(scale, (int, float)) and not isinstance(scale, bool), f"scale: expected a float, got {scale!r}")
    expect(isinstance(softmax_lse_flag, bool), f"softmax_lse_flag: expected a bool, got {softmax_lse_flag!r}")
    b, s, n, d = _bsnd("query", query, ql, num_heads)
    expect(n == num_heads, f"num_heads: {num_heads}, but query {shape(query)} in layout {ql} has {n} heads")
    expect((query_rope is None) == (key_rope is None),
           "query_rope: query_rope and key_rope come together, got only " + ("key_rope" if query_rope is None else "query_rope"))
    if query_rope is not None:
        tensor("query_rope", query_rope)
        expect_dtype("query_rope", query_rope, (query.dtype,))
        expect_shape("query_rope", query_rope, shape(query)[:-1] + (None,))
    # the query's per-batch lengths
    qlens = int_list("actual_seq_lengths", actual_seq_lengths)
    if ql in TOKEN_LAYOUTS:
        expect(actual_seq_lengths is not None, f"actual_seq_lengths: layout {ql} needs the cumulative query lengths, got None")
        if qlens is not None:
            qlens = per_batch("actual_seq_lengths", qlens, s)
        b = len(qlens) if qlens is not None else None
    else:
        qlens = _batch_lengths("actual_seq_lengths", qlens, b, s)
    # key and value: paged or dense
    kvlens = int_list("actual_seq_lengths_kv", actual_seq_lengths_kv)
    paged = block_table is not None
    if paged:
        tensor("block_table", block_table)
        integer("block_size", block_size, lo=1)
        kl, blocks, dk = _kv_paged("key", key, ql, kv_heads, d, block_size)
        vl, vblocks, dv = _kv_paged("value", value, ql, kv_heads, d, block_size)
        expect(vl == kl and vblocks == blocks, f"value: shape {shape(value)} does not match key {shape(key)}")
        expect(dk == d, f"key: head dim {dk} differs from the query's {d}")
        if key_rope is not None:
            tensor("key_rope", key_rope)
            expect_dtype("key_rope", key_rope, (query.dtype,))
            rl, rblocks, _ = _kv_paged("key_rope", key_rope, ql, kv_heads, d, block_size)
            expect(rl == kl and rblocks == blocks, f"key_rope: shape {shape(key_rope)} does not match key {shape(key)}")
            expect(key_rope.shape[-1] == query_rope.shape[-1],
                   f"key_rope: last dim {key_rope.shape[-1]} differs from query_rope's {query_rope.shape[-1]}")
        expect(actual_seq_lengths_kv is not None, "actual_seq_lengths_kv: paged attention needs the kv lengths, got None")
        rows = block_table.shape[0] if block_table.dim() >= 1 else 0
        if b is not None:
            expect(rows == b, f"block_table: {rows} rows for a batch of {b}")
        if kvlens is not None:
            expect(len(kvlens) == rows, f"actual_seq_lengths_kv: expected {rows} lengths (block_table rows), got {len(kvlens)}")
            check_block_table("block_table", block_table, kvlens, block_size, blocks)
        else:
            expect_rank("block_table", block_table, 2)
            expect_dtype("block_table", block_table, (torch.int32,))
        lmax = block_table.shape[1] * block_size
    else:
        expect(block_size in (0, None) or isinstance(block_size, int), f"block_size: expected an integer, got {block_size!r}")
        skv, dk = _kv_dense("key", key, ql, b, kv_heads)
        vskv, dv = _kv_dense("value", value, ql, b, kv_heads)
        expect(vskv == skv, f"value: {vskv} positions, key has {skv}")
        expect(dk == d, f"key: head dim {dk} differs from the query's {d}")
        if key_rope is not None:
            tensor("key_rope", key_rope)
            expect_shape("key_rope", key_rope, shape(key)[:-1] + (query_rope.shape[-1],))
        if ql in TOKEN_LAYOUTS:
            expect(actual_seq_lengths_kv is not None, f"actual_seq_lengths_kv: layout {ql} needs the cumulative kv lengths, got None")
            if kvlens is not None:
                kvlens = per_batch("actual_seq_lengths_kv", kvlens, skv)
                if qlens is not None:
                    expect(len(kvlens) == len(qlens), f"actual_seq_lengths_kv: {len(kvlens)} sequences, the query has {len(qlens)}")
        else:
            kvlens = _batch_lengths("actual_seq_lengths_kv", kvlens, b, skv)
        lmax = skv
    mask = _fia_mask(atten_mask, sparse_mode, max(qlens) if qlens else s, max(kvlens) if kvlens else lmax, b)
    if sparse_mode in (2, 3) and qlens is not None and kvlens is not None and sparse_mode == 3:
        for i, (q, L) in enumerate(zip(qlens, kvlens)):
            expect(L >= q or L == 0, f"actual_seq_lengths_kv: batch {i} has {L} kv positions for {q} queries "
                                     f"(sparse_mode 3 needs kv >= q)")
    t = s if ql in TOKEN_LAYOUTS else None
    out = torch.empty(_out_shape(ol, b, s, n, dv, t), dtype=query.dtype, device=query.device)
    if softmax_lse_flag:
        lse_shape = (t, n, 1) if input_layout in ("TND", "NTD", "TND_NTD", "NTD_TND") else (b, n, s, 1)
        lse = torch.full(lse_shape, float("-inf"), dtype=torch.float32, device=query.device)
    else:
        lse = torch.empty((0,), dtype=torch.float32, device=query.device)
    if is_meta(query, key, value, block_table) or qlens is None or kvlens is None:
        return out, lse
    out.zero_()
    start = kstart = 0
    for bi, (sb, lb) in enumerate(zip(qlens, kvlens)):
        q = _heads_view(query, ql, bi, start, sb, n)
        qr = _heads_view(query_rope, ql, bi, start, sb, n) if query_rope is not None else None
        if paged:
            row = block_table[bi].tolist()
            k = gather_paged(key, row, lb, block_size, kl).reshape(lb, kv_heads, -1).transpose(0, 1)
            v = gather_paged(value, row, lb, block_size, kl).reshape(lb, kv_heads, -1).transpose(0, 1)
            kr = (gather_paged(key_rope, row, lb, block_size, kl).reshape(lb, kv_heads, -1).transpose(0, 1)
                  if key_rope is not None else None)
        else:
            k = _heads_view(key, ql, bi, kstart, lb, kv_heads)
            v = _heads_view(value, ql, bi, kstart, lb, kv_heads)
            kr = _heads_view(key_rope, ql, bi, kstart, lb, kv_heads) if key_rope is not None else None
        m = _masked(sparse_mode, mask, bi, sb, lb, pre_tokens, next_tokens)
        o, l = attend(q, k, v, scale, m, qr, kr)
        _write(out, ol, bi, start, sb, o.to(query.dtype))
        if softmax_lse_flag:
            if lse.dim() == 3:
                lse[start:start + sb, :, 0] = l.transpose(0, 1)
            else:
                lse[bi, :, :sb, 0] = l
        start += sb
        kstart += lb
    return out, lse


def _sparse_lengths(layout_query, t, bq, sq, block_table, lens_q, kv_name, lens_kv, bs, blocks):
    """SparseFlashAttention's and LightningIndexer's paged sequences: the block table's rows are
    the batch; (per-batch query lengths, per-batch kv lengths), None where a meta tensor hides
    them. TND queries give cumulative lengths (the last = t), BSND ones sq each."""
    tensor("block_table", block_table)
    expect_rank("block_table", block_table, 2)
    batch = block_table.shape[0]
    tensor(kv_name, lens_kv)
    expect_shape(kv_name, lens_kv, (batch,))
    kvlens = int_list(kv_name, lens_kv, (torch.int32,))
    if layout_query == "TND":
        tensor("actual_seq_lengths_query", lens_q)
        expect_shape("actual_seq_lengths_query", lens_q, (batch,))
        cum = int_list("actual_seq_lengths_query", lens_q, (torch.int32,))
        qlens = per_batch("actual_seq_lengths_query", cum, t) if cum is not None else None
    else:
        expect(bq == batch, f"block_table: {batch} rows for a query batch of {bq}")
        qlens = [sq] * bq
    if kvlens is not None:
        check_block_table("block_table", block_table, kvlens, bs, blocks)
    else:
        expect_dtype("block_table", block_table, (torch.int32,))
    return qlens, kvlens


# ---- SparseFlashAttention (vllm-ascend 0.18.0) -------------------------------------------

def npu_sparse_flash_attention(query, key, value, sparse_indices, scale_value, sparse_block_size, *,
                               block_table=None, actual_seq_lengths_query=None, actual_seq_lengths_kv=None,
                               query_rope=None, key_rope=None, layout_query="BSND", layout_kv="BSND", sparse_mode=3):
    for nm, t in (("query", query), ("key", key), ("value", value), ("sparse_indices", sparse_indices)):
        tensor(nm, t)
    expect_dtype("query", query, HALF)
    expect_dtype("key", key, (query.dtype,))
    expect_dtype("value", value, (query.dtype,))
    expect_dtype("sparse_indices", sparse_indices, (torch.int32,))
    choice("layout_query", layout_query, ("BSND", "TND"))
    choice("layout_kv", layout_kv, ("PA_BSND",))  # the layout vllm-ascend passes; the golden models it only
    integer("sparse_mode", sparse_mode, allowed=(0, 3))
    integer("sparse_block_size", sparse_block_size, lo=1)
    expect(isinstance(scale_value, (int, float)) and not isinstance(scale_value, bool),
           f"scale_value: expected a float, got {scale_value!r}")
    if layout_query == "TND":
        expect_rank("query", query, 3)
        t, n, d = shape(query)
        bq = sq = None
    else:
        expect_rank("query", query, 4)
        bq, sq, n, d = shape(query)
        t = bq * sq
    expect_rank("key", key, 4)
    blocks, bs, nk, dk = shape(key)
    expect_shape("value", value, (blocks, bs, nk, None))
    expect(dk == d, f"key: last dim {dk} differs from the query's {d}")
    expect(value.shape[-1] == d, f"value: last dim {value.shape[-1]} differs from the query's {d} (the output has the query's shape)")
    expect(nk >= 1 and n % nk == 0, f"key: {nk} kv heads do not divide the query's {n} heads")
    topk_shape = (t, nk, None) if layout_query == "TND" else (bq, sq, nk, None)
    expect_shape("sparse_indices", sparse_indices, topk_shape)
    expect((query_rope is None) == (key_rope is None), "query_rope: query_rope and key_rope come together")
    if query_rope is not None:
        tensor("query_rope", query_rope)
        tensor("key_rope", key_rope)
        expect_dtype("query_rope", query_rope, (query.dtype,))
        expect_dtype("key_rope", key_rope, (query.dtype,))
        expect_shape("query_rope", query_rope, shape(query)[:-1] + (None,))
        expect_shape("key_rope", key_rope, (blocks, bs, nk, query_rope.shape[-1]))
    qlens, kvlens = _sparse_lengths(layout_query, t, bq, sq, block_table, actual_seq_lengths_query,
                                    "actual_seq_lengths_kv", actual_seq_lengths_kv, bs, blocks)
    out = torch.empty(shape(query), dtype=query.dtype, device=query.device)
    if is_meta(query, key, sparse_indices, block_table) or qlens is None or kvlens is None:
        return out
    out.zero_()
    q2 = query.reshape(t, n, d)
    qr2 = query_rope.reshape(t, n, -1) if query_rope is not None else None
    idx = sparse_indices.reshape(t, nk, -1).long()
    tok = 0
    for b, (sb, lb) in enumerate(zip(qlens, kvlens)):
        row = block_table[b].tolist()
        k = gather_paged(key, row, lb, bs, "BSND").transpose(0, 1)        # (nk, lb, d)
        v = gather_paged(value, row, lb, bs, "BSND").transpose(0, 1)
        kr = gather_paged(key_rope, row, lb, bs, "BSND").transpose(0, 1) if key_rope is not None else None
        for i in range(sb):
            sel = idx[tok]                                                # (nk, topk): block ids
            pos = (sel.unsqueeze(-1) * sparse_block_size + torch.arange(sparse_block_size)).reshape(nk, -1)
            limit = lb if sparse_mode == 0 else lb - sb + i + 1
            ok = (sel.repeat_interleave(sparse_block_size, 1) >= 0) & (pos < limit) & (pos < lb)
            masked = torch.ones(nk, lb, dtype=torch.bool)
            for g in range(nk):
                masked[g, pos[g][ok[g]]] = False
            m = masked.repeat_interleave(n // nk, 0).unsqueeze(1)            # (n, 1, lb)
            o, _ = attend(q2[tok].unsqueeze(1), k, v, scale_value, m,
                          qr2[tok].unsqueeze(1) if qr2 is not None else None, kr)
            out.reshape(t, n, d)[tok] = o.squeeze(1).to(query.dtype)
            tok += 1
    return out


# ---- LightningIndexer --------------------------------------------------------------------

def npu_lightning_indexer(query, key, weights, *, actual_seq_lengths_query=None, actual_seq_lengths_key=None,
                          block_table=None, layout_query="BSND", layout_key="BSND", sparse_count=2048, sparse_mode=3,
                          pre_tokens=9223372036854775807, next_tokens=9223372036854775807, return_value=False):
    for nm, t in (("query", query), ("key", key), ("weights", weights)):
        tensor(nm, t)
    expect_dtype("query", query, HALF)
    expect_dtype("key", key, (query.dtype,))
    expect_dtype("weights", weights, FLOAT)
    choice("layout_query", layout_query, ("BSND", "TND"))
    choice("layout_key", layout_key, ("PA_BSND",))  # the layout the builders and vllm-ascend pass
    integer("sparse_mode", sparse_mode, allowed=(0, 3))
    integer("sparse_count", sparse_count, lo=1, hi=2048)
    if layout_query == "TND":
        expect_rank("query", query, 3)
        t, n, d = shape(query)
        bq = sq = None
        expect_shape("weights", weights, (t, n))
    else:
        expect_rank("query", query, 4)
        bq, sq, n, d = shape(query)
        t = bq * sq
        expect_shape("weights", weights, (bq, sq, n))
    expect_rank("key", key, 4)
    blocks, bs, nk, dk = shape(key)
    expect(dk == d, f"key: last dim {dk} differs from the query's {d}")
    expect(nk >= 1 and n % nk == 0, f"key: {nk} key heads do not divide the query's {n} heads")
    qlens, klens = _sparse_lengths(layout_query, t, bq, sq, block_table, actual_seq_lengths_query,
                                   "actual_seq_lengths_key", actual_seq_lengths_key, bs, blocks)
    oshape = (t, nk, sparse_count) if layout_query == "TND" else (bq, sq, nk, sparse_count)
    idx_out = torch.full(oshape, -1, dtype=torch.int32, device=query.device)
    val_out = (torch.zeros(oshape, dtype=query.dtype, device=query.device) if return_value
               else torch.empty((0,), dtype=query.dtype, device=query.device))
    if is_meta(query, key, weights, block_table) or qlens is None or klens is None:
        return idx_out, val_out
    q2, w2 = query.reshape(t, n, d).float(), weights.reshape(t, n).float()
    iv, vv = idx_out.reshape(t, nk, sparse_count), (val_out.reshape(t, nk, sparse_count) if return_value else None)
    tok = 0
    rep = n // nk
    for b, (sb, lb) in enumerate(zip(qlens, klens)):
        k = gather_paged(key, block_table[b].tolist(), lb, bs, "BSND").float().transpose(0, 1)  # (nk, lb, d)
        for i in range(sb):
            limit = lb if sparse_mode == 0 else max(0, min(lb, lb - sb + i + 1))
            if limit > 0:
                # score_j = sum over the heads of a key head's group: w * relu(q . k_j)
                s = torch.relu(torch.einsum("gd,gld->gl", q2[tok].reshape(nk, rep, d).reshape(-1, d),
                                            k.repeat_interleave(rep, 0)[:, :limit]))
                s = (s * w2[tok].unsqueeze(1)).reshape(nk, rep, limit).sum(1)
                c = min(sparse_count, limit)
                top = torch.topk(s, c, dim=-1)
                iv[tok, :, :c] = top.indices.to(torch.int32)
                if vv is not None:
                    vv[tok, :, :c] = top.values.to(query.dtype)
            tok += 1
    return idx_out, val_out


GOLDENS = {
    "torch_npu.npu_fused_infer_attention_score": npu_fused_infer_attention_score,
    "torch.ops._C_ascend.npu_sparse_flash_attention": npu_sparse_flash_attention,
    "torch_npu.npu_lightning_indexer": npu_lightning_indexer,
}
