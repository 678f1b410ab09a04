"""Goldens of the generic torch_npu operators the builders call: npu_swiglu (SwiGlu),
npu_slice (Slice), npu_scatter_nd_update (ScatterNdUpdate). The other generic builders
(Index, GatherV2, PadV3, Transpose, Sort, ArgMaxV2, SoftmaxV2, MaskedFill, TensorMove and the
generic.lua / shaped.lua tables) call plain torch, which runs as it is."""
import torch

from . import expect, expect_dtype, expect_shape, expect_tensor, is_meta

FLOATS = (torch.float16, torch.bfloat16, torch.float32)


def npu_swiglu(x, dim=-1):
    """silu(a) * b of the two halves of x along dim."""
    expect_dtype("x", x, FLOATS)
    expect(isinstance(dim, int) and -x.dim() <= dim < x.dim(), f"dim: expected a dim of the {x.dim()}-D x, got {dim!r}")
    expect(x.shape[dim] % 2 == 0, f"x: dim {dim} must be even (two halves), got {tuple(x.shape)}")
    a, b = x.float().chunk(2, dim=dim)
    return (torch.nn.functional.silu(a) * b).to(x.dtype)


def _int_list(name, v, n):
    expect(isinstance(v, (list, tuple)) and all(isinstance(d, int) and not isinstance(d, bool) for d in v),
           f"{name}: expected a list of ints, got {v!r}")
    expect(len(v) == n, f"{name}: expected {n} entries (the input's rank), got {len(v)}")
    return list(v)


def npu_slice(self, offsets, size):
    expect_tensor("self", self)
    offsets = _int_list("offsets", offsets, self.dim())
    size = _int_list("size", size, self.dim())
    for d, (o, s, n) in enumerate(zip(offsets, size, self.shape)):
        expect(o >= 0 and s >= 0 and o + s <= n,
               f"size: dim {d}: offset {o} + size {s} exceeds the input's {n} (input {tuple(self.shape)})")
    idx = tuple(slice(o, o + s) for o, s in zip(offsets, size))
    return self[idx].contiguous()


def npu_scatter_nd_update(input, indices, updates):
    """A copy of input with input[indices[i]] = updates[i] (indices (N, k): k leading dims)."""
    expect_tensor("input", input)
    expect_dtype("indices", indices, (torch.int32, torch.int64))
    expect(indices.dim() >= 2, f"indices: expected at least 2-D (..., k), got {indices.dim()}-D {tuple(indices.shape)}")
    k = indices.shape[-1]
    expect(1 <= k <= input.dim(), f"indices: the last dim k={k} must be 1..{input.dim()} (input {tuple(input.shape)})")
    expect_shape("updates", updates, tuple(indices.shape[:-1]) + tuple(input.shape[k:]))
    expect_dtype("updates", updates, input.dtype)
    out = input.clone()
    if not is_meta(input, indices, updates):
        idx = indices.reshape(-1, k).to(torch.int64)
        for d in range(k):
            bad = ((idx[:, d] < 0) | (idx[:, d] >= input.shape[d])).nonzero()
            if len(bad):
                expect(False, f"indices: column {d} holds {int(idx[bad[0, 0], d])}, "
                              f"outside input dim {d} of size {input.shape[d]}")
        out[tuple(idx[:, d] for d in range(k))] = updates.reshape(-1, *input.shape[k:])
    return out


GOLDENS = {
    "torch_npu.npu_swiglu": npu_swiglu,
    "torch_npu.npu_slice": npu_slice,
    "torch_npu.npu_scatter_nd_update": npu_scatter_nd_update,
}
