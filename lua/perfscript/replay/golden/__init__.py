"""CPU / meta golden implementations of the torch_npu APIs the replay plans call.

A golden takes the same positional and keyword arguments as the NPU API (as the plan passes
them), checks them (raising GoldenError that names the argument, the expected and the actual
value), computes the result in plain torch on the device of its inputs (cpu: real values;
meta: shapes and dtypes only, no data-dependent step) and returns what the NPU API returns:
the same structure, shapes and dtypes.

An in-place API's golden returns None like the API and says which arguments it writes
(@inplace(2, 3), or fn.inplace_outputs = (2, 3)): the executor checks those as the outputs.

Each module golden/<name>.py (other than this one) defines GOLDENS = {"torch_npu.npu_xxx": fn};
load_goldens() merges them (an API defined twice is an error). A tensor the plan built as
FRACTAL_NZ stays ND (its logical shape) and is marked: tensor_format(t) == "FRACTAL_NZ".
"""
import importlib
import os
import pkgutil

import torch

FORMAT_ATTR = "_perfscript_format"


class GoldenError(ValueError):
    """An argument the NPU operator would refuse (or compute something else with)."""


def expect(cond, msg):
    if not cond:
        raise GoldenError(msg)


def _shape(t):
    return tuple(int(d) for d in t.shape)


def _fmt_shape(s):
    return "(" + ", ".join("*" if d is None else str(d) for d in s) + ("," if len(s) == 1 else "") + ")"


def expect_tensor(name, t):
    expect(isinstance(t, torch.Tensor), f"{name}: expected a tensor, got {type(t).__name__}")
    return t


def expect_rank(name, t, rank):
    """rank: an int or a collection of allowed ranks."""
    expect_tensor(name, t)
    ranks = (rank,) if isinstance(rank, int) else tuple(rank)
    want = " or ".join(str(r) for r in ranks)
    expect(t.dim() in ranks, f"{name}: expected a {want}-D tensor, got {t.dim()}-D {_fmt_shape(_shape(t))}")
    return t


def expect_shape(name, t, expected):
    """expected: a tuple of dims; None matches any size."""
    expect_tensor(name, t)
    got = _shape(t)
    ok = len(got) == len(expected) and all(e is None or int(e) == g for e, g in zip(expected, got))
    expect(ok, f"{name}: expected shape {_fmt_shape(expected)}, got {_fmt_shape(got)}")
    return t


def dtype_name(d):
    return str(d).replace("torch.", "")


def expect_dtype(name, t, allowed):
    """allowed: a torch dtype or a collection of them."""
    expect_tensor(name, t)
    allowed = (allowed,) if isinstance(allowed, torch.dtype) else tuple(allowed)
    expect(t.dtype in allowed, f"{name}: expected dtype {' or '.join(dtype_name(a) for a in allowed)}, "
                               f"got {dtype_name(t.dtype)}")
    return t


def expect_same_device(**tensors):
    devs = {n: t.device.type for n, t in tensors.items() if isinstance(t, torch.Tensor)}
    expect(len(set(devs.values())) <= 1, "inputs on different devices: " + ", ".join(f"{n}={d}" for n, d in devs.items()))


def tensor_format(t):
    """"FRACTAL_NZ" for a tensor the plan built as FRACTAL_NZ (kept ND here), else "ND"."""
    return getattr(t, FORMAT_ATTR, "ND")


def mark_format(t, fmt):
    setattr(t, FORMAT_ATTR, fmt)
    return t


def is_meta(*ts):
    """Whether any of the tensors is on the meta device (no values: shape logic only)."""
    return any(isinstance(t, torch.Tensor) and t.device.type == "meta" for t in ts)


def inplace(*outputs):
    """Marks the golden of an in-place API (one that returns None): the outputs the row records
    are the arguments it writes, at these positions (int: positional, str: keyword), in order.
    The same as setting fn.inplace_outputs = (2, 3)."""
    def mark(fn):
        fn.inplace_outputs = tuple(outputs)
        return fn
    return mark


def load_goldens():
    """{api path: golden fn} from every module of this package; a duplicate API is an error."""
    out, where = {}, {}
    here = os.path.dirname(os.path.abspath(__file__))
    for m in sorted(pkgutil.iter_modules([here]), key=lambda m: m.name):
        if m.name.startswith("_") or m.ispkg:
            continue
        mod = importlib.import_module(f"{__name__}.{m.name}")
        table = getattr(mod, "GOLDENS", None)
        if not isinstance(table, dict):
            raise ImportError(f"golden/{m.name}.py: no GOLDENS dict")
        for api, fn in table.items():
            if api in out:
                raise ImportError(f"golden for {api} defined twice: golden/{where[api]}.py and golden/{m.name}.py")
            if not callable(fn):
                raise ImportError(f"golden/{m.name}.py: GOLDENS[{api!r}] is not callable")
            out[api], where[api] = fn, m.name
    return out
