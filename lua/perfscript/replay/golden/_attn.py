"""Shared pieces of the attention, MLA, RoPE-cache and MoE goldens (attention.py, mla.py,
rope_cache.py, moe.py): argument checks that several of them make, paged-KV gathering, and the
reference attention itself. Plain torch; every function works on cpu, and the ones that only
look at shapes also on meta (data checks are skipped there: a meta tensor has no values)."""
import torch

from . import dtype_name as dtname  # noqa: F401 (re-exported)
from . import expect, expect_dtype, expect_rank, expect_shape, expect_tensor, is_meta  # noqa: F401 (re-exported)

GOLDENS = {}  # helpers only

HALF = (torch.float16, torch.bfloat16)
FLOAT = (torch.float16, torch.bfloat16, torch.float32)
INT = (torch.int32, torch.int64)
NEG_INF = float("-inf")


def shape(t):
    return tuple(int(d) for d in t.shape)


def tensor(name, t, optional=False):
    """t must be a tensor (or None when optional)."""
    if t is None:
        expect(optional, f"{name}: required, got None")
        return None
    return expect_tensor(name, t)


def integer(name, v, lo=None, hi=None, allowed=None):
    expect(isinstance(v, int) and not isinstance(v, bool), f"{name}: expected an integer, got {v!r}")
    if allowed is not None:
        expect(v in allowed, f"{name}: expected one of {sorted(allowed)}, got {v}")
    if lo is not None:
        expect(v >= lo, f"{name}: expected >= {lo}, got {v}")
    if hi is not None:
        expect(v <= hi, f"{name}: expected <= {hi}, got {v}")
    return v


def choice(name, v, allowed):
    expect(v in allowed, f"{name}: expected one of {', '.join(repr(a) for a in allowed)}, got {v!r}")
    return v


def int_list(name, v, dtypes=INT):
    """A SymInt[] (list of ints) or a 1-D integer tensor as a list of ints; None for None and for
    a meta tensor (its values are unknown)."""
    if v is None:
        return None
    if isinstance(v, torch.Tensor):
        expect_rank(name, v, 1)
        expect_dtype(name, v, dtypes)
        return None if is_meta(v) else [int(x) for x in v.tolist()]
    expect(isinstance(v, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool) for x in v),
           f"{name}: expected a list of integers or a 1-D integer tensor, got {v!r}")
    return list(v)


def per_batch(name, cum, total):
    """Cumulative lengths (TND's actual_seq_lengths) -> per-batch lengths; the last must be total."""
    expect(len(cum) >= 1, f"{name}: expected at least one cumulative length, got none")
    prev, out = 0, []
    for i, c in enumerate(cum):
        expect(c >= prev, f"{name}: cumulative lengths must not decrease, got {cum} (index {i})")
        out.append(c - prev)
        prev = c
    expect(prev == total, f"{name}: the last cumulative length must equal the {total} tokens, got {prev}")
    return out


def check_block_table(name, table, lens, block_size, num_blocks, starts=None):
    """A paged-KV block table (rows = sequences) holds enough columns for each sequence's
    length, and (on cpu) the block ids a sequence uses are within the cache."""
    expect_rank(name, table, 2)
    expect_dtype(name, table, (torch.int32,))
    rows, cols = shape(table)
    expect(len(lens) == rows, f"{name}: expected one row per sequence ({len(lens)}), got {rows} rows")
    vals = None if is_meta(table) else table.tolist()
    for b, n in enumerate(lens):
        first = (starts[b] // block_size) if starts else 0
        need = first + -(-n // block_size)
        expect(need <= cols, f"{name}: row {b} needs {need} blocks for {n} tokens of block size {block_size}, "
                             f"the table has {cols} columns (block table too short)")
        if vals is not None:
            for j in range(first, need):
                blk = vals[b][j]
                expect(0 <= blk < num_blocks, f"{name}: row {b} column {j} holds block id {blk}, "
                                              f"expected 0 <= id < {num_blocks} (the cache's blocks)")


def gather_paged(cache, row, n, block_size, layout, start=0):
    """The first n tokens of one sequence from a paged cache, as (n, heads, d).
    layout: "BSND" = (blocks, block_size, heads, d), "BNSD" = (blocks, heads, block_size, d),
    "BSH" = (blocks, block_size, heads*d) (returned as (n, 1, heads*d))."""
    if n == 0:
        d = cache.shape[-1]
        heads = cache.shape[1] if layout == "BNSD" else (cache.shape[2] if layout == "BSND" else 1)
        return cache.new_zeros((0, heads, d))
    pos = torch.arange(start, start + n)
    blocks = torch.as_tensor(row, dtype=torch.long)[pos // block_size]
    off = pos % block_size
    if layout == "BNSD":
        return cache[blocks, :, off, :]
    if layout == "BSND":
        return cache[blocks, off]
    return cache[blocks, off].unsqueeze(1)


def causal_mask(s, l):
    """(s, l) bool, True where query i may not see key j: keys after i + (l - s)
    (the bottom-right aligned causal mask of sparse modes 2/3)."""
    i = torch.arange(s).unsqueeze(1)
    j = torch.arange(l).unsqueeze(0)
    return j > i + (l - s)


def attend(q, k, v, scale, masked=None, qr=None, kr=None):
    """Reference attention in float32. q (N, S, D), k (Nk, L, D), v (Nk, L, Dv); Nk divides N
    (grouped heads); masked: bool, broadcast to (N, S, L), True = not attended; qr/kr the
    rotary parts added to the scores. Returns out (N, S, Dv) and lse (N, S); a query row with
    nothing to attend gives 0 and lse -inf."""
    n, nk = q.shape[0], k.shape[0]
    rep = n // nk
    k = k.float().repeat_interleave(rep, 0)
    v = v.float().repeat_interleave(rep, 0)
    s = torch.matmul(q.float(), k.transpose(-1, -2))
    if qr is not None:
        s = s + torch.matmul(qr.float(), kr.float().repeat_interleave(rep, 0).transpose(-1, -2))
    s = s * scale
    if masked is not None:
        s = s.masked_fill(masked, NEG_INF)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse.unsqueeze(-1).masked_fill(torch.isinf(lse).unsqueeze(-1), 0.0))
    p = p.masked_fill(torch.isinf(lse).unsqueeze(-1), 0.0)
    return torch.matmul(p, v), lse


def rms_norm(x, gamma, eps):
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * gamma.float()


def interleave_rope(x, cos, sin):
    """RoPE on interleaved pairs: (x0, x1), (x2, x3), ... (InterleaveRope, KvRmsNormRopeCache)."""
    xf = x.float()
    x1, x2 = xf[..., 0::2], xf[..., 1::2]
    part1 = torch.cat((x1, x2), dim=-1)
    part2 = torch.cat((-x2, x1), dim=-1)
    return part1 * cos.float() + part2 * sin.float()


def same_dtype(names_tensors):
    """Every named tensor has the first one's dtype."""
    (n0, t0) = names_tensors[0]
    for n, t in names_tensors[1:]:
        if t is not None:
            expect(t.dtype == t0.dtype, f"{n}: expected dtype {dtname(t0.dtype)} (as {n0}), got {dtname(t.dtype)}")


def out_tensor(name, t, want_shape, want_dtype):
    """An output tensor passed in (out=): its shape and dtype are the ones the op writes."""
    tensor(name, t)
    expect_shape(name, t, want_shape)
    expect_dtype(name, t, (want_dtype,))
    return t
