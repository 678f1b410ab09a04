"""Goldens of the matmul family: torch.mm and torch.matmul as the MatMulV2/V3/MatMulCommon and
BatchMatMulV2 builders call them (checked, so that a transposed or mismatched weight is named),
npu_transpose_batchmatmul (TransposeBatchMatMul), npu_quant_matmul (QuantBatchMatmulV3),
npu_grouped_matmul (GroupedMatmul) and npu_grouped_matmul_swiglu_quant
(GroupedMatmulSwigluQuant). A FRACTAL_NZ weight arrives as its ND (logical) tensor."""
import torch

from . import dtype_name, expect, expect_dtype, expect_rank, expect_shape, expect_tensor, is_meta, tensor_format

FLOATS = (torch.float16, torch.bfloat16, torch.float32)


def _shape(t):
    return tuple(int(d) for d in t.shape)


def _nd(name, t):
    """Only a weight may be FRACTAL_NZ: the activations are ND."""
    expect(tensor_format(t) == "ND", f"{name}: expected format ND, got {tensor_format(t)} (only the weight may be FRACTAL_NZ)")


def mm(input, mat2):
    expect_rank("input", input, 2)
    expect_rank("mat2", mat2, 2)
    expect_dtype("input", input, FLOATS)
    expect_dtype("mat2", mat2, input.dtype)
    k = input.shape[1]
    expect(mat2.shape[0] == k, f"mat2: expected shape ({k}, *) (K of input {_shape(input)}), got {_shape(mat2)}")
    return torch.mm(input.float(), mat2.float()).to(input.dtype)  # float32 accumulation, as the cube unit


def matmul(input, other):
    expect_rank("input", input, (2, 3, 4))
    expect_rank("other", other, (2, 3, 4))
    expect_dtype("input", input, FLOATS)
    expect_dtype("other", other, input.dtype)
    k = input.shape[-1]
    expect(other.shape[-2] == k, f"other: expected shape (..., {k}, *) (K of input {_shape(input)}), got {_shape(other)}")
    bi, bo = _shape(input)[:-2], _shape(other)[:-2]
    for a, b in zip(reversed(bi), reversed(bo)):
        expect(a == b or a == 1 or b == 1, f"other: batch dims {bo} do not broadcast with input's {bi}")
    return torch.matmul(input.float(), other.float()).to(input.dtype)


def npu_transpose_batchmatmul(input, weight, *, bias=None, scale=None, perm_x1=None, perm_x2=None, perm_y=None,
                              batch_split_factor=1):
    """(input permuted by perm_x1 = (B,M,K)) @ weight (B,K,N) = (B,M,N), permuted by perm_y to (M,B,N)."""
    perm_x1 = list(perm_x1 if perm_x1 is not None else [0, 1, 2])
    perm_x2 = list(perm_x2 if perm_x2 is not None else [0, 1, 2])
    perm_y = list(perm_y if perm_y is not None else [1, 0, 2])
    expect(perm_x1 in ([0, 1, 2], [1, 0, 2]), f"perm_x1: expected [0, 1, 2] or [1, 0, 2], got {perm_x1}")
    expect(perm_x2 == [0, 1, 2], f"perm_x2: expected [0, 1, 2], got {perm_x2}")
    expect(perm_y == [1, 0, 2], f"perm_y: expected [1, 0, 2], got {perm_y}")
    expect_rank("input", input, 3)
    expect_rank("weight", weight, 3)
    expect_dtype("input", input, FLOATS)
    expect_dtype("weight", weight, input.dtype)
    x = input.permute(*perm_x1)
    b, m, k = _shape(x)
    expect_shape("weight", weight, (b, k, None))
    n = weight.shape[2]
    if input.dtype != torch.float32:
        expect(k % 128 == 0, f"input: K={k} must be a multiple of 128 for {dtype_name(input.dtype)}")
        expect(n % 128 == 0, f"weight: N={n} must be a multiple of 128 for {dtype_name(input.dtype)}")
    expect(bias is None, "bias: not supported by the kernel (expected None)")
    expect(isinstance(batch_split_factor, int) and batch_split_factor >= 1 and b % batch_split_factor == 0,
           f"batch_split_factor: expected a divisor of B={b}, got {batch_split_factor!r}")
    y = torch.bmm(x.float(), weight.float()).permute(1, 0, 2)  # (M, B, N)
    if scale is not None:
        expect_shape("scale", scale, (b * n,))
        expect_dtype("scale", scale, torch.int64)
        y = torch.round(y * _dequant_scale(scale).reshape(b, n)).clamp(-128, 127).to(torch.int8)
    else:
        y = y.to(input.dtype)
    if batch_split_factor > 1:
        y = y.reshape(m, batch_split_factor, b // batch_split_factor, n).permute(1, 0, 2, 3) \
             .reshape(batch_split_factor, m, b * n // batch_split_factor)
    return y.contiguous()


def _dequant_scale(scale):
    """A scale as float32: an int64 scale (npu_trans_quant_param) holds the float32 bits in its low word."""
    if scale.dtype == torch.int64:
        if is_meta(scale):
            return torch.empty(scale.shape, dtype=torch.float32, device="meta")
        return (scale & 0xFFFFFFFF).to(torch.int32).view(torch.float32)
    return scale.float()


QMM_OUT = (torch.int8, torch.float16, torch.bfloat16, torch.int32)


def npu_quant_matmul(x1, x2, scale, *, offset=None, pertoken_scale=None, bias=None, output_dtype=None,
                     x1_dtype=None, x2_dtype=None, pertoken_scale_dtype=None, scale_dtype=None, group_sizes=None):
    """int8 x1 (..., M, K) @ int8 x2 (..., K, N), dequantised by scale (and pertoken_scale), plus bias."""
    expect_dtype("x1", x1, torch.int8)
    expect_dtype("x2", x2, torch.int8)
    _nd("x1", x1)
    expect_rank("x1", x1, (2, 3, 4, 5, 6))
    expect_rank("x2", x2, (2, 3, 4, 5, 6))
    m, k = x1.shape[-2], x1.shape[-1]
    expect(x2.shape[-2] == k, f"x2: expected shape (..., {k}, *) (K of x1 {_shape(x1)}), got {_shape(x2)}")
    n = x2.shape[-1]
    out_dtype = output_dtype if output_dtype is not None else torch.int8
    expect(out_dtype in QMM_OUT, f"output_dtype: expected int8, float16, bfloat16 or int32, got {out_dtype}")
    expect_rank("scale", scale, 1)
    expect(scale.shape[0] in (1, n), f"scale: expected shape (1,) or ({n},) (N of x2), got {_shape(scale)}")
    expect_dtype("scale", scale, (torch.float32, torch.int64, torch.bfloat16))
    if offset is not None:
        expect(out_dtype == torch.int8, f"offset: only with an int8 output, not {out_dtype}")
        expect_rank("offset", offset, 1)
        expect(offset.shape[0] in (1, n), f"offset: expected shape (1,) or ({n},), got {_shape(offset)}")
        expect_dtype("offset", offset, torch.float32)
    if pertoken_scale is not None:
        expect_shape("pertoken_scale", pertoken_scale, (m,))
        expect_dtype("pertoken_scale", pertoken_scale, torch.float32)
    if bias is not None:
        expect_rank("bias", bias, (1, 3))
        expect(bias.shape[-1] == n, f"bias: expected N={n} elements in the last dim, got {_shape(bias)}")
        expect_dtype("bias", bias, (torch.int32, torch.bfloat16, torch.float16, torch.float32))
        expect(bias.dtype == torch.int32 or bias.dtype in (out_dtype, torch.float32),
               f"bias: dtype {dtype_name(bias.dtype)} needs an output of the same dtype, not {dtype_name(out_dtype)}")
    acc = torch.matmul(x1.float(), x2.float())
    if out_dtype == torch.int32:
        y = acc if bias is None else acc + bias.float()
        return y.to(torch.int32)
    if bias is not None and bias.dtype == torch.int32:
        acc = acc + bias.float()
    y = acc * _dequant_scale(scale)
    if pertoken_scale is not None:
        y = y * pertoken_scale.float().unsqueeze(-1)
    if bias is not None and bias.dtype != torch.int32:
        y = y + bias.float()
    if out_dtype == torch.int8:
        if offset is not None:
            y = y + offset.float()
        return torch.round(y).clamp(-128, 127).to(torch.int8)
    return y.to(out_dtype)


def _group_bounds(name, group_list, group_list_type, groups, m):
    """[(start, end)] rows of each group from group_list (cumulative, or counts), on cpu."""
    vals = group_list.tolist() if isinstance(group_list, torch.Tensor) else list(group_list)
    expect(len(vals) == groups, f"{name}: expected {groups} entries (one per weight group), got {len(vals)}")
    if group_list_type == 1:
        ends, s = [], 0
        for v in vals:
            expect(v >= 0, f"{name}: a negative group size {v}")
            s += v
            ends.append(s)
    else:
        ends = vals
    prev = 0
    for e in ends:
        expect(e >= prev, f"{name}: not non-decreasing ({vals})")
        prev = e
    expect(prev <= m, f"{name}: the groups cover {prev} rows, x has {m}")
    starts = [0] + ends[:-1]
    return list(zip(starts, ends))


def _list(name, v):
    expect(isinstance(v, (list, tuple)) and len(v) > 0 and all(isinstance(t, torch.Tensor) for t in v),
           f"{name}: expected a non-empty list of tensors, got {type(v).__name__}")
    return list(v)


def npu_grouped_matmul(x, weight, *, bias=None, scale=None, offset=None, antiquant_scale=None, antiquant_offset=None,
                       per_token_scale=None, group_list=None, activation_input=None, activation_quant_scale=None,
                       activation_quant_offset=None, split_item=0, group_type=None, group_list_type=0, act_type=0,
                       output_dtype=None, tuning_config=None):
    """y = x @ weight per group: group_type 0 splits x's rows by group_list over weight (E, K, N);
    without grouping (group_type None or -1) x[i] @ weight[i]. split_item 2/3 gives one output."""
    xs, ws = _list("x", x), _list("weight", weight)
    expect(split_item in (0, 1, 2, 3), f"split_item: expected 0 to 3, got {split_item!r}")
    expect(group_type in (None, -1, 0), f"group_type: only -1 (none) and 0 (split M) have a golden, got {group_type!r}")
    expect(group_list_type in (0, 1), f"group_list_type: expected 0 (cumulative) or 1 (counts), got {group_list_type!r}")
    expect(act_type == 0, f"act_type: only 0 (no activation) has a golden, got {act_type!r}")
    grouped = group_type == 0
    x0, w0 = xs[0], ws[0]
    for i, xi in enumerate(xs):
        _nd(f"x[{i}]", xi)
    quant = x0.dtype == torch.int8
    antiquant = not quant and w0.dtype in (torch.int8,)
    if quant:
        expect_dtype("weight[0]", w0, torch.int8)
        expect(scale is not None, "scale: required with int8 x and weight")
        out_dtype = output_dtype if output_dtype is not None else torch.int8
        expect(out_dtype in (torch.int8, torch.float16, torch.bfloat16, torch.int32),
               f"output_dtype: expected int8, float16, bfloat16 or int32, got {out_dtype}")
    else:
        expect_dtype("x[0]", x0, FLOATS)
        if not antiquant:
            expect_dtype("weight[0]", w0, x0.dtype)
        else:
            expect(antiquant_scale is not None, "antiquant_scale: required with an int8 weight and float x")
        out_dtype = output_dtype if output_dtype is not None else x0.dtype
        expect(out_dtype == x0.dtype, f"output_dtype: expected {dtype_name(x0.dtype)} (x's), got {out_dtype}")
    expect(per_token_scale is None or quant, "per_token_scale: only with int8 x and weight")

    def opt(name, lst, i, want):
        if lst is None:
            return None
        lst = _list(name, lst)
        expect(i < len(lst), f"{name}: expected {i + 1} or more entries, got {len(lst)}")
        return expect_shape(f"{name}[{i}]", lst[i], want)

    def one(i, xi, wi, rows, e):
        """x rows of one group (2-D) times the weight of group e (2-D)."""
        if quant:
            y = xi.float() @ wi.float()
            s = opt("scale", scale, i, tuple(wsh_scale))[e] if grouped else opt("scale", scale, i, (wi.shape[-1],))
            y = y * _dequant_scale(s)
            if per_token_scale is not None:
                p = _list("per_token_scale", per_token_scale)[i]
                y = y * p.float()[rows[0]:rows[1]].unsqueeze(-1)
        elif antiquant:
            s = opt("antiquant_scale", antiquant_scale, i, tuple(wsh_scale))[e] if grouped else antiquant_scale[i]
            w = wi.float() * s.float()
            if antiquant_offset is not None:
                w = w + (_list("antiquant_offset", antiquant_offset)[i][e] if grouped else antiquant_offset[i]).float()
            y = xi.float() @ w
        else:
            y = xi.float() @ wi.float()
        if bias is not None:
            bsh = (ws[i].shape[0], ws[i].shape[-1]) if grouped else (wi.shape[-1],)
            b = opt("bias", bias, i, bsh)
            y = y + (b[e] if grouped else b).float()
        if out_dtype == torch.int8:
            return torch.round(y).clamp(-128, 127).to(torch.int8)
        return y.to(out_dtype)

    outs = []
    if grouped:
        expect(len(xs) == 1 and len(ws) == 1, f"x, weight: group_type 0 takes one x and one weight, got {len(xs)} and {len(ws)}")
        expect_rank("x[0]", x0, 2)
        expect_rank("weight[0]", w0, 3)
        e_n, k = w0.shape[0], x0.shape[1]
        expect_shape("weight[0]", w0, (None, k, None))
        wsh_scale = (e_n, w0.shape[2])
        expect(group_list is not None, "group_list: required with group_type 0")
        expect_tensor("group_list", group_list)
        expect_dtype("group_list", group_list, torch.int64)
        expect_shape("group_list", group_list, (e_n,))
        m = x0.shape[0]
        if is_meta(x0, w0):
            bounds = [(0, m)] + [(m, m)] * (e_n - 1)  # no values on meta: the shapes of one group
        else:
            bounds = _group_bounds("group_list", group_list.cpu(), group_list_type, e_n, m)
        parts = [one(0, x0[s:t], w0[e], (s, t), e) for e, (s, t) in enumerate(bounds)]
        covered = bounds[-1][1] if bounds else 0
        if covered < m:
            parts.append(torch.zeros((m - covered, w0.shape[2]), dtype=out_dtype, device=x0.device))
        y = torch.cat(parts, dim=0)
        outs = [y] if split_item in (2, 3) else [p for p in parts]
    else:
        expect(len(xs) == len(ws), f"weight: expected {len(xs)} tensors (one per x), got {len(ws)}")
        for i, (xi, wi) in enumerate(zip(xs, ws)):
            expect_rank(f"x[{i}]", xi, (2, 3, 4, 5, 6))
            expect_rank(f"weight[{i}]", wi, 2)
            expect_shape(f"weight[{i}]", wi, (xi.shape[-1], None))
            wsh_scale = (wi.shape[-1],)
            outs.append(one(i, xi.reshape(-1, xi.shape[-1]), wi, (0, xi.numel() // xi.shape[-1]), 0)
                        .reshape(*xi.shape[:-1], wi.shape[-1]))
        if split_item in (2, 3):
            outs = [torch.cat([o.reshape(-1, o.shape[-1]) for o in outs], dim=0)]
    return outs


def npu_grouped_matmul_swiglu_quant(x, weight, group_list, weight_scale, x_scale, *, bias=None, offset=None):
    """Per group: (x @ weight) dequantised by weight_scale and x_scale, SwiGlu over the halves of N,
    then per-row int8: (y int8 (M, N/2), scale float32 (M,), offset (empty))."""
    expect_dtype("x", x, torch.int8)
    expect_rank("x", x, 2)
    _nd("x", x)
    expect_dtype("weight", weight, torch.int8)
    expect_rank("weight", weight, 3)
    m, k = _shape(x)
    expect_shape("weight", weight, (None, k, None))
    e_n, n = weight.shape[0], weight.shape[2]
    expect(n % 2 == 0, f"weight: N={n} must be even (SwiGlu halves)")
    expect_shape("weight_scale", weight_scale, (e_n, n))
    expect_dtype("weight_scale", weight_scale, (torch.float32, torch.bfloat16, torch.float16))
    expect_shape("x_scale", x_scale, (m,))
    expect_dtype("x_scale", x_scale, torch.float32)
    expect_tensor("group_list", group_list)
    expect_shape("group_list", group_list, (e_n,))
    expect_dtype("group_list", group_list, torch.int64)
    expect(bias is None and offset is None, "bias, offset: not supported by the kernel (expected None)")
    if is_meta(x, weight):
        bounds = [(0, m)] + [(m, m)] * (e_n - 1)
    else:
        bounds = _group_bounds("group_list", group_list.cpu(), 0, e_n, m)
    acc = torch.zeros((m, n), dtype=torch.float32, device=x.device)
    parts = []
    for e, (s, t) in enumerate(bounds):
        parts.append((x[s:t].float() @ weight[e].float()) * weight_scale[e].float())
    covered = bounds[-1][1]
    if covered < m:
        parts.append(acc[covered:])
    acc = torch.cat(parts, dim=0) * x_scale.float().unsqueeze(-1)
    a, b = acc.chunk(2, dim=-1)
    y = torch.nn.functional.silu(a) * b
    scale = y.abs().amax(dim=-1) / 127.0
    if not is_meta(y):
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = torch.round(y / scale.unsqueeze(-1)).clamp(-128, 127).to(torch.int8)
    return q, scale, torch.empty((0,), dtype=torch.float32, device=x.device)


GOLDENS = {
    "torch.mm": mm,
    "torch.matmul": matmul,
    "torch_npu.npu_transpose_batchmatmul": npu_transpose_batchmatmul,
    "torch_npu.npu_quant_matmul": npu_quant_matmul,
    "torch_npu.npu_grouped_matmul": npu_grouped_matmul,
    "torch_npu.npu_grouped_matmul_swiglu_quant": npu_grouped_matmul_swiglu_quant,
}
