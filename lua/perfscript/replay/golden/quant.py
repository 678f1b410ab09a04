"""Goldens of the quantisation operators: npu_dynamic_quant (DynamicQuant) and npu_quantize
(AscendQuantV2)."""
import torch

from . import dtype_name, expect, expect_dtype, expect_rank, expect_shape, expect_tensor, is_meta

HALF = (torch.float16, torch.bfloat16)


def npu_dynamic_quant(x, *, smooth_scales=None, group_index=None, dst_type=None):
    """Per-token symmetric quantisation: (y int8 of x's shape, scale float32 of x's leading dims)."""
    expect_dtype("x", x, HALF)
    expect(x.dim() >= 2, f"x: expected at least 2-D (tokens, hidden), got {x.dim()}-D {tuple(x.shape)}")
    expect(dst_type in (None, torch.int8, torch.quint4x2),
           f"dst_type: expected int8 or quint4x2, got {dst_type}")
    h = x.shape[-1]
    xf = x.float()
    if smooth_scales is not None:
        if group_index is None:
            expect_shape("smooth_scales", smooth_scales, (h,))
        else:
            expect_rank("smooth_scales", smooth_scales, 2)
            expect_shape("smooth_scales", smooth_scales, (None, h))
            expect_rank("group_index", group_index, 1)
            expect_shape("group_index", group_index, (smooth_scales.shape[0],))
            expect_dtype("group_index", group_index, torch.int32)
        expect_dtype("smooth_scales", smooth_scales, x.dtype)
        if group_index is None:
            xf = xf * smooth_scales.float()
        elif not is_meta(x):
            rows, start = xf.reshape(-1, h), 0
            for e, end in enumerate(group_index.tolist()):
                rows[start:end] *= smooth_scales[e].float()
                start = end
    expect(group_index is None or smooth_scales is not None, "group_index: given without smooth_scales")
    int4 = dst_type == torch.quint4x2
    expect(not int4 or h % 8 == 0, f"x: the last dim ({h}) must be a multiple of 8 for quint4x2")
    scale = xf.abs().amax(dim=-1) / (7.0 if int4 else 127.0)
    if not is_meta(x):
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    y = torch.round(xf / scale.unsqueeze(-1)).clamp(-128, 127).to(torch.int8)
    if int4:
        y = pack_int4(y.clamp(-8, 7))
    return y, scale


def pack_int4(q):
    """Eight int4 values (-8..7) of the last dim per int32, the first in the low nibble."""
    nib = (q.to(torch.int64) & 0xF).reshape(*q.shape[:-1], q.shape[-1] // 8, 8)
    shifts = torch.arange(0, 32, 4, dtype=torch.int64, device=q.device)
    packed = (nib << shifts).sum(dim=-1)
    return torch.where(packed >= 2 ** 31, packed - 2 ** 32, packed).to(torch.int32)


QDTYPES = {torch.qint8: (torch.int8, -128, 127), torch.quint8: (torch.uint8, 0, 255),
           torch.int32: (torch.int32, -2 ** 31, 2 ** 31 - 1), torch.quint4x2: (torch.int32, -8, 7)}


def npu_quantize(input, scales, zero_points, dtype, axis=1, div_mode=True):
    """AscendQuantV2: y = round(x * scale + offset) (div_mode False) or round(x / scale + offset)."""
    expect_dtype("input", input, (torch.float16, torch.bfloat16, torch.float32))
    expect(dtype in QDTYPES, f"dtype: expected qint8, quint8, int32 or quint4x2, got {dtype}")
    expect(isinstance(axis, int) and -input.dim() <= axis < input.dim(),
           f"axis: expected a dim of the {input.dim()}-D input, got {axis!r}")
    n = input.shape[axis]
    expect_rank("scales", scales, 1)
    expect(scales.shape[0] in (1, n), f"scales: expected shape (1,) or ({n},) (input dim {axis}), "
                                      f"got {tuple(scales.shape)}")
    expect_dtype("scales", scales, (torch.float32, input.dtype))
    if zero_points is not None:
        expect_tensor("zero_points", zero_points)
        expect_shape("zero_points", zero_points, tuple(scales.shape))
        expect(zero_points.dtype in (scales.dtype, torch.int32, torch.int8, torch.uint8),
               f"zero_points: expected dtype {dtype_name(scales.dtype)} or an integer type, got {dtype_name(zero_points.dtype)}")
    out_dtype, lo, hi = QDTYPES[dtype]
    shape = [1] * input.dim()
    shape[axis] = scales.shape[0]
    s = scales.float().reshape(shape)
    y = input.float() / s if div_mode else input.float() * s
    if zero_points is not None:
        y = y + zero_points.float().reshape(shape)
    y = torch.round(y).clamp(lo, hi).to(out_dtype)
    if dtype == torch.quint4x2:
        expect(input.shape[-1] % 8 == 0, f"input: the last dim ({input.shape[-1]}) must be a multiple of 8 for quint4x2")
        y = pack_int4(y)
    return y


GOLDENS = {
    "torch_npu.npu_dynamic_quant": npu_dynamic_quant,
    "torch_npu.npu_quantize": npu_quantize,
}
