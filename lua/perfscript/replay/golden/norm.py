"""Goldens of the RmsNorm family: npu_rms_norm, npu_add_rms_norm (AddRmsNorm,
InplaceAddRmsNorm), vllm-ascend's npu_add_rms_norm_bias (AddRmsNormBias) and
npu_add_rms_norm_dynamic_quant (AddRmsNormDynamicQuant)."""
import torch

from . import expect, expect_dtype, expect_rank, expect_shape, expect_tensor, is_meta

FLOATS = (torch.float16, torch.bfloat16, torch.float32)


def _check_x_gamma(x, gamma, x_name="x", gamma_name="gamma"):
    expect_dtype(x_name, x, FLOATS)
    expect_tensor(gamma_name, gamma)
    expect(1 <= gamma.dim() <= x.dim(), f"{gamma_name}: expected 1-D to {x.dim()}-D (x's trailing dims), "
                                        f"got {gamma.dim()}-D {tuple(gamma.shape)}")
    expect_shape(gamma_name, gamma, tuple(x.shape[x.dim() - gamma.dim():]))
    expect_dtype(gamma_name, gamma, (x.dtype, torch.float32))


def _rms(x, gamma, eps):
    """y (x's dtype) and rstd (float32, x's leading dims then 1 per normalised dim)."""
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(dim=dims, keepdim=True) + eps)
    return xf * rstd * gamma.float(), rstd


def _eps(epsilon):
    expect(isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool) and epsilon > 0,
           f"epsilon: expected a positive float, got {epsilon!r}")
    return float(epsilon)


def npu_rms_norm(x, gamma, epsilon=1e-6):
    _check_x_gamma(x, gamma)
    y, rstd = _rms(x, gamma, _eps(epsilon))
    return y.to(x.dtype), rstd


def _add(x1, x2):
    expect_dtype("x1", x1, FLOATS)
    expect_shape("x2", x2, tuple(x1.shape))
    expect_dtype("x2", x2, x1.dtype)
    return (x1.float() + x2.float()).to(x1.dtype)


def npu_add_rms_norm(x1, x2, gamma, epsilon=1e-6):
    x = _add(x1, x2)
    _check_x_gamma(x, gamma)
    y, rstd = _rms(x, gamma, _eps(epsilon))
    return y.to(x1.dtype), rstd, x


def npu_add_rms_norm_bias(x1, x2, gamma, beta=None, epsilon=1e-6):
    x = _add(x1, x2)
    _check_x_gamma(x, gamma)
    y, rstd = _rms(x, gamma, _eps(epsilon))
    if beta is not None:
        expect_shape("beta", beta, tuple(gamma.shape))
        expect_dtype("beta", beta, gamma.dtype)
        y = y + beta.float()
    return y.to(x1.dtype), rstd, x


def _quant_rows(y):
    """Symmetric per-row int8: (int8 values, float32 scale of x's leading dims)."""
    scale = y.abs().amax(dim=-1) / 127.0
    if not is_meta(y):
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = torch.round(y / scale.unsqueeze(-1)).clamp(-128, 127).to(torch.int8)
    return q, scale


def npu_add_rms_norm_dynamic_quant(x1, x2, gamma, *, smooth_scale1=None, smooth_scale2=None, beta=None,
                                   epsilon=1e-6, output_mask=None):
    x = _add(x1, x2)
    expect(x1.dtype in (torch.float16, torch.bfloat16), f"x1: expected dtype float16 or bfloat16, got "
                                                        f"{str(x1.dtype).replace('torch.', '')}")
    expect_rank("gamma", gamma, 1)
    _check_x_gamma(x, gamma)
    expect_dtype("gamma", gamma, x1.dtype)
    h = x.shape[-1]
    for name, s in (("smooth_scale1", smooth_scale1), ("smooth_scale2", smooth_scale2), ("beta", beta)):
        if s is not None:
            expect_shape(name, s, (h,))
            expect_dtype(name, s, x1.dtype)
    expect(smooth_scale2 is None or smooth_scale1 is not None, "smooth_scale2: given without smooth_scale1")
    if output_mask is not None:
        expect(isinstance(output_mask, (list, tuple)) and len(output_mask) == 2
               and all(isinstance(b, bool) for b in output_mask),
               f"output_mask: expected two bools, got {output_mask!r}")
    y, _ = _rms(x, gamma, _eps(epsilon))
    if beta is not None:
        y = y + beta.float()
    outs = []
    for s in (smooth_scale1, smooth_scale2):
        ys = y * s.float() if s is not None else y
        outs.append(_quant_rows(ys))
    (y1, scale1), (y2, scale2) = outs
    return y1, y2, x, scale1, scale2


GOLDENS = {
    "torch_npu.npu_rms_norm": npu_rms_norm,
    "torch_npu.npu_add_rms_norm": npu_add_rms_norm,
    "torch.ops._C_ascend.npu_add_rms_norm_bias": npu_add_rms_norm_bias,
    "torch_npu.npu_add_rms_norm_dynamic_quant": npu_add_rms_norm_dynamic_quant,
}
