#!/usr/bin/env python3
"""perfscript replay executor: runs a replay plan (JSON lines written by
recipes/microbench.lua) on an Ascend NPU with torch and torch_npu, under msprof.

    python3 executor.py PLAN [--ops A,B] [--status FILE] [--repeat-count N] [--warmup N]
    python3 executor.py PLAN --check      # validate the plan only (no torch needed)
    python3 executor.py PLAN --device cpu|meta [--max-elements N] [--status FILE]
                                          # run every case through the golden functions of
                                          # golden/ (plain torch, no NPU): valid or rejected
    python3 executor.py PLAN --profile cuda|cpu --trace FILE [--status FILE]
                                          # time the plain-torch cases on a GPU (or the CPU)
                                          # under torch.profiler; FILE: its Chrome trace

Each operator runs in its own child process (one crash cannot lose the others' results);
a case builds its tensors once (seeded), warms up, calls the API --repeat-count times with a
device synchronize after each call, and records its status. The database is never touched:
failures go to the status file, and write-back decides what to do with them.

With --device cpu or meta nothing of torch_npu is imported: each torch_npu API a case names
runs as its golden (golden/<module>.py, plain torch, the same arguments; an API with no golden
rejects the case), plain torch APIs run as they are, on meta (shapes and dtypes only) or on cpu
(real values, after meta; cases with more than --max-elements input and output elements stay on
meta), and every output is checked against the shapes and dtypes the row records.

With --profile cuda (or cpu) the cases whose calls are plain torch (matmuls, elementwise,
softmax, gather, transpose, ...) run on that device under torch.profiler; each timed call is
a range "perfscript:<case id>:<repeat>" of the Chrome trace written to --trace, which
perfscript reads back (lua/perfscript/microbench/torchprof.lua). Cases that call an Ascend
API (torch_npu.*, torch.ops.*) or use an Ascend-only format are skipped with the reason.
"""
import argparse
import json
import os
import subprocess
import sys

PLAN_KIND = "perfscript-replay-plan"
DTYPES = {"DT_FLOAT": "float32", "DT_FLOAT16": "float16", "DT_BF16": "bfloat16",
          "DT_DOUBLE": "float64", "DT_INT8": "int8", "DT_UINT8": "uint8", "DT_INT16": "int16",
          "DT_INT32": "int32", "DT_INT64": "int64", "DT_BOOL": "bool"}
INITS = {"empty", "randint", "ones", "zeros", "arange", "perm", "data", "triu", "randn"}
API_PREFIXES = ("torch.", "torch_npu.")
FRACTAL_NZ_FORMAT_ID = 29


class PlanError(Exception):
    pass


def read_plan(path):
    header, cases = None, []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                v = json.loads(line)
            except ValueError as e:
                raise PlanError(f"{path}:{n}: {e}")
            if header is None:
                if not isinstance(v, dict) or v.get("kind") != PLAN_KIND:
                    raise PlanError(f"{path}:{n}: not a perfscript replay plan")
                header = v
            else:
                cases.append((n, v))
    if header is None:
        raise PlanError(f"{path}: empty plan")
    return header, cases


def as_list(v):
    # the Lua JSON encoder writes an empty list as {}
    if v == {}:
        return []
    return v


def check_value(v, where):
    if isinstance(v, dict) and "tensor" in v:
        t = v["tensor"]
        shape = as_list(t.get("shape"))
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise PlanError(f"{where}: bad tensor shape {shape!r}")
        if t.get("dtype") not in DTYPES:
            raise PlanError(f"{where}: unsupported dtype {t.get('dtype')!r}")
        if t.get("init", "empty") not in INITS:
            raise PlanError(f"{where}: unknown init {t.get('init')!r}")
    elif isinstance(v, dict) and "torch_attr" in v:
        if not isinstance(v["torch_attr"], str):
            raise PlanError(f"{where}: bad torch_attr")
    elif isinstance(v, dict):
        for k, x in v.items():
            check_value(x, f"{where}.{k}")
    elif isinstance(v, list):
        for i, x in enumerate(v):
            check_value(x, f"{where}[{i}]")


def check_case(n, c, where_prefix):
    where = f"{where_prefix}:{n} ({c.get('id', '?')})"
    for key in ("id", "op"):
        if not isinstance(c.get(key), str):
            raise PlanError(f"{where}: missing {key}")
    attempts = as_list(c.get("attempts")) or [c]
    for a in attempts:
        api = a.get("api")
        if not a.get("method") and not a.get("index"):
            if not isinstance(api, str) or not api.startswith(API_PREFIXES):
                raise PlanError(f"{where}: unsupported api path {api!r}")
        check_value(as_list(a.get("args", [])), where + ".args")
        check_value(a.get("kwargs") or {}, where + ".kwargs")


def check_plan(path):
    header, cases = read_plan(path)
    for n, c in cases:
        check_case(n, c, path)
    if header.get("cases") not in (None, len(cases)):
        raise PlanError(f"{path}: header says {header.get('cases')} cases, found {len(cases)}")
    return header, cases


# ---- running on the NPU ----------------------------------------------------------------

def resolve(torch, torch_npu, path):
    if path.startswith("torch_npu."):
        obj, rest = torch_npu, path[len("torch_npu."):]
    elif path.startswith("torch."):
        obj, rest = torch, path[len("torch."):]
    else:
        raise PlanError(f"Unsupported api path {path}")
    for part in rest.split("."):
        obj = getattr(obj, part)
    return obj


def build_tensor(torch, torch_npu, t, gen, device="npu"):
    shape = as_list(t["shape"])
    dtype = getattr(torch, DTYPES[t["dtype"]])
    init = t.get("init", "empty")
    # on cuda the values are made on the GPU (a CPU randn of a large weight takes seconds)
    dev = "cuda" if device == "cuda" and not t.get("host") else None
    if dev is None and gen is not None and gen.device.type != "cpu":
        gen = torch.Generator().manual_seed(gen.initial_seed())
    if device == "meta" and not t.get("host"):
        x = torch.empty(shape, dtype=dtype, device="meta")  # no values: shapes and dtypes only
    elif init == "data":
        x = torch.tensor(as_list(t["data"]), dtype=dtype, device=dev).reshape(shape)
    elif init == "arange":
        x = (torch.arange(int(torch.tensor(shape).prod().item()) if shape else 1, device=dev) % max(1, t.get("high", 1 << 62))).to(dtype).reshape(shape)
    elif init == "perm":
        n = t.get("high", shape[0] if shape else 1)
        x = torch.randperm(n, generator=gen, device=dev)[: (shape[0] if shape else 1)].to(dtype).reshape(shape)
    elif init == "ones":
        x = torch.ones(shape, dtype=dtype, device=dev)
    elif init == "zeros":
        x = torch.zeros(shape, dtype=dtype, device=dev)
    elif init == "triu":
        upper = torch.triu(torch.ones(shape[-2:], dtype=torch.bool, device=dev), diagonal=1).expand(shape)
        if t.get("value") is not None:  # e.g. -inf above the diagonal of a float16 mask
            x = torch.zeros(shape, dtype=dtype, device=dev).masked_fill(upper, float(t["value"]))
        else:
            x = upper.to(dtype)
    elif dtype == torch.bool:
        x = torch.randint(0, 2, shape, generator=gen, dtype=torch.int32, device=dev).to(torch.bool)
    elif dtype.is_floating_point:
        # finite values: uninitialised memory may hold NaN/Inf and change kernel paths
        x = torch.randn(shape, generator=gen, dtype=torch.float32, device=dev).to(dtype)
    else:
        x = torch.randint(0, t.get("high", 8), shape, generator=gen, dtype=torch.int64, device=dev).to(dtype)
    if t.get("host"):
        return x
    if device == "npu":
        x = x.npu()
    elif device == "cuda":
        x = x.cuda()
    if t.get("transpose"):
        x = x.t()
    if t.get("transpose_last2"):
        x = x.transpose(-1, -2)
    if t.get("nz"):
        if device == "npu":
            x = torch_npu.npu_format_cast(x, FRACTAL_NZ_FORMAT_ID)
        else:  # the golden gets the ND (logical) tensor, marked
            from golden import mark_format
            x = mark_format(x, "FRACTAL_NZ")
    return x


_GROUP = {}


def hccl_group_name(torch, torch_npu):
    """The HCCL communicator name of the default process group (created once per process):
    WORLD_SIZE ranks under torchrun, else a 1-rank group on the current device."""
    if "name" in _GROUP:
        return _GROUP["name"]
    import torch.distributed as dist
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        torch.npu.set_device(rank % torch.npu.device_count())
        addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
        port = os.environ.get("MASTER_PORT", "29500")
    else:
        addr, port = "127.0.0.1", str(free_port())
    if not dist.is_initialized():
        dist.init_process_group(backend="hccl", rank=rank, world_size=world, init_method=f"tcp://{addr}:{port}")
    pg = dist.distributed_c10d._get_default_group()
    backend = pg._get_backend(torch.device("npu"))
    _GROUP["name"] = backend.get_hccl_comm_name(rank)
    return _GROUP["name"]


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare(kind):
    if kind == "vllm_ascend_triton":
        searched = []
        for extra in [None, os.environ.get("VLLM_ASCEND_PATH")]:
            if extra:
                sys.path.insert(0, extra)
                searched.append(extra)
            try:
                import vllm_ascend.ops.register_custom_ops  # noqa: F401
                from vllm_ascend.ops.triton.triton_utils import init_device_properties_triton
                init_device_properties_triton()
                return
            except ImportError:
                continue
        raise RuntimeError(f"Unable to import vllm_ascend. Searched: {searched}")


# The communicator name a golden gets: one process stands for every rank.
GOLDEN_GROUP = "perfscript-golden-group"


def build_value(torch, torch_npu, v, gen, device="npu"):
    if isinstance(v, dict) and v.get("hccl_group"):
        return hccl_group_name(torch, torch_npu) if device == "npu" else GOLDEN_GROUP
    if isinstance(v, dict) and "tensor" in v:
        return build_tensor(torch, torch_npu, v["tensor"], gen, device)
    if isinstance(v, dict) and "torch_attr" in v:
        return getattr(torch, v["torch_attr"])
    if isinstance(v, dict) and v.get("list_of") is not None:
        return [build_value(torch, torch_npu, x, gen, device) for x in as_list(v["list_of"])]
    if isinstance(v, dict):
        return {k: build_value(torch, torch_npu, x, gen, device) for k, x in v.items()}
    if isinstance(v, list):
        return [build_value(torch, torch_npu, x, gen, device) for x in v]
    return v


def make_call(torch, torch_npu, a, gen, device="npu", goldens=None):
    """The case's call as a function of no arguments. device cpu/meta: the API resolves to its
    golden (goldens) or, for a plain torch API, to torch itself."""
    fn = None if a.get("method") or a.get("index") or device == "npu" else resolve_golden(torch, goldens, a["api"])
    args = [build_value(torch, torch_npu, x, gen, device) for x in as_list(a.get("args", []))]
    kwargs = {k: build_value(torch, torch_npu, x, gen, device) for k, x in (a.get("kwargs") or {}).items()}
    if a.get("method"):
        fn = getattr(args[0], a["method"])
        args = args[1:]
    elif a.get("index"):
        src, idx = args[0], args[1]
        return lambda: src[idx]
    elif fn is None:
        fn = resolve(torch, torch_npu, a["api"])
    if device != "npu" and getattr(fn, "inplace_outputs", None):
        # an in-place API returns nothing: its outputs are the arguments it writes
        def inplace_call():
            fn(*args, **kwargs)
            return tuple(args[p] if isinstance(p, int) else kwargs.get(p) for p in fn.inplace_outputs)
        return inplace_call
    if a.get("graph") == "torchair" and device == "npu":  # a golden is the same call
        try:
            import torchair
        except ImportError:
            raise RuntimeError("FRACTAL_NZ QuantBatchMatmulV3 replay requires torchair graph mode")

        class Call(torch.nn.Module):
            def forward(self, *xs):
                return fn(*xs, **kwargs)
        compiled = torch.compile(Call(), backend=torchair.get_npu_backend(), dynamic=True)
        return lambda: compiled(*args)
    post = a.get("post")
    if post == "contiguous":
        return lambda: fn(*args, **kwargs).contiguous()
    return lambda: fn(*args, **kwargs)


def run_op(plan_path, op, repeat, warmup, seed):
    import torch
    import torch_npu  # noqa: F401
    try:
        from vllm_ascend.utils import enable_custom_op
        enable_custom_op()
    except Exception as e:  # custom ops only matter for some operators
        print(f"Warning: custom op dependencies are unavailable ({e}). Replay may fail for custom operators.")
    torch_npu.npu.config.allow_internal_format = True
    if not torch.npu.is_available():
        raise RuntimeError("NPU not found")
    _, cases = check_plan(plan_path)
    results = []
    for _, c in cases:
        if c["op"] != op:
            continue
        gen = torch.Generator().manual_seed(seed)
        if c.get("prepare"):
            prepare(c["prepare"])
        attempts = as_list(c.get("attempts")) or [c]
        errors = []
        for a in attempts:
            try:
                call = make_call(torch, torch_npu, a, gen)
                for _ in range(warmup):
                    call()
                torch.npu.synchronize()
                for _ in range(repeat):
                    call()
                    torch.npu.synchronize()
                results.append({"id": c["id"], "status": "ok", "attempt": a.get("name")})
                print(f"[OK] {c['id']} shapes={c.get('record', {}).get('Input Shapes', '')}")
                break
            except MemoryError:
                raise
            except Exception as e:  # recorded, never deleted
                if type(e).__name__.endswith("OutOfMemoryError"):
                    raise
                fb = a.get("fallback")
                if fb and fb.get("when", "\0") in str(e):
                    attempts.append(fb)
                errors.append(f"{type(e).__name__}: {e}")
        else:
            results.append({"id": c["id"], "status": "failed", "error": "; ".join(errors)})
            print(f"[FAIL] {c['id']} error={'; '.join(errors)}")
    return results


# ---- golden validation on cpu / meta (no NPU, no torch_npu) --------------------------------

class Rejected(Exception):
    """A case the goldens refuse, with the reason."""


def resolve_golden(torch, goldens, path):
    """The function a cpu/meta run calls for api path: its golden, else a plain torch API."""
    if path in goldens:
        return goldens[path]
    if path.startswith("torch."):
        try:
            return resolve(torch, None, path)
        except Exception:  # torch.ops.<custom library>.x: not in plain torch
            pass
    raise Rejected(f"no golden for {path}")


def spec_elements(v):
    """Elements of every tensor a case builds."""
    if isinstance(v, dict) and "tensor" in v:
        n = 1
        for d in as_list(v["tensor"].get("shape")):
            n *= d
        return n
    if isinstance(v, dict):
        return sum(spec_elements(x) for x in v.values())
    if isinstance(v, list):
        return sum(spec_elements(x) for x in v)
    return 0


def flatten_result(y):
    if isinstance(y, (tuple, list)):
        out = []
        for x in y:
            out.extend(flatten_result(x) if isinstance(x, (tuple, list)) else [x])
        return out
    return [y]


# An output the row records as DT_INT32 may come back as int64: the torch API widens the
# kernel's int32 indices (torch.sort, torch.argmax, torch.cumsum of int32).
WIDER = {"int32": ("int32", "int64")}


def check_outputs(torch, y, outputs):
    """y against the row's output slots [{shape, dtype}] (a slot without a shape is not checked)."""
    got = flatten_result(y)
    for i, o in enumerate(as_list(outputs)):
        shape = as_list(o.get("shape"))
        if not shape:
            continue
        if i >= len(got) or got[i] is None:
            raise Rejected(f"output {i + 1}: the row records ({','.join(map(str, shape))}), the call returns "
                           f"{len([g for g in got if g is not None])} output(s) and nothing in this place")
        t = got[i]
        if not isinstance(t, torch.Tensor):
            raise Rejected(f"output {i + 1}: the call returns {type(t).__name__}, not a tensor")
        if list(t.shape) != shape:
            raise Rejected(f"output {i + 1}: shape ({','.join(map(str, t.shape))}), the row records "
                           f"({','.join(map(str, shape))})")
        want = DTYPES.get(o.get("dtype") or "")
        have = str(t.dtype).replace("torch.", "")
        if want and have not in WIDER.get(want, (want,)):
            raise Rejected(f"output {i + 1}: dtype {have}, the row records {o.get('dtype')}")


def golden_attempts(c):
    """A case's attempts off the NPU, its fallback included (tried after the others)."""
    attempts = as_list(c.get("attempts")) or [c]
    return attempts + [c["fallback"]] if c.get("fallback") else attempts


def run_case(torch, goldens, c, device, seed):
    """The case's attempts (a fallback included) on device through the goldens, the outputs
    checked: (None, api, elements of the outputs) when valid, else (reason, None, 0)."""
    from golden import GoldenError
    attempts = golden_attempts(c)
    reason = None
    for a in attempts:
        gen = torch.Generator().manual_seed(seed)
        try:
            y = make_call(torch, None, a, gen, device, goldens)()
            check_outputs(torch, y, c["outputs"])
            n = sum(t.numel() for t in flatten_result(y) if isinstance(t, torch.Tensor))
            return None, a.get("api") or a.get("method") or "index", n
        except Rejected as e:
            if not str(e).startswith("no golden for "):
                return str(e), None, 0
            # the next attempt (a fallback) may have one; the reason names every API tried
            reason = str(e) if reason is None else f"{reason}, nor for {str(e)[len('no golden for '):]}"
        except GoldenError as e:
            return f"{a.get('api')}: {e}", None, 0
        except MemoryError:
            return f"out of memory on {device} (lower --max-elements)", None, 0
        except Exception as e:  # torch refused the arguments: the builder's fault, or the golden's
            msg = str(e).strip()
            return f"{type(e).__name__}: {msg.splitlines()[0] if msg else ''}", None, 0
    return reason, None, 0


def validate_case(torch, goldens, c, device, max_elements, seed):
    """One case through the goldens: {id, op, status: valid|rejected, reason, device, note}.
    cpu: the case runs on meta first (cheap: the checks and the output sizes), then on cpu when
    its input and output elements together are within max_elements, else it stays on meta."""
    res = {"id": c["id"], "op": c["op"], "device": device}
    if "outputs" not in c:
        res.update(status="rejected", reason=c.get("outputs_error") or "the plan carries no parsed output "
                   "shapes (plans made by `microbench.lua --validate` do)")
        return res
    reason, api, n_out = run_case(torch, goldens, c, "meta", seed)
    if device == "cpu":
        n = spec_elements([c.get("args"), c.get("kwargs")]) + n_out
        if reason is None and max_elements and n > max_elements:
            res["note"] = f"{n} elements over --max-elements {max_elements}: run on meta"
            res["device"] = "meta"
        elif reason is None:
            reason, api, _ = run_case(torch, goldens, c, "cpu", seed)
        else:
            res["device"] = "meta"
    if reason is None:
        res.update(status="valid", api=api)
    else:
        res.update(status="rejected", reason=reason)
    return res


def validate(plan_path, device, max_elements, ops, seed, status_path):
    """Every case of the plan (of ops when given) through the goldens; writes the per-case
    status; returns 0 when every case is valid, 1 otherwise."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    from golden import load_goldens
    goldens = load_goldens()
    _, cases = check_plan(plan_path)
    results = {}
    for _, c in cases:
        if ops and c["op"] not in ops:
            continue
        r = validate_case(torch, goldens, c, device, max_elements, seed)
        results[c["id"]] = r
        if r["status"] == "valid":
            print(f"[VALID] {c['id']} ({r['device']})", flush=True)
        else:
            print(f"[REJECTED] {c['id']} ({r['device']}): {r['reason']}", flush=True)
    n_bad = sum(1 for r in results.values() if r["status"] != "valid")
    print(f"[GOLDEN] {len(results) - n_bad} valid, {n_bad} rejected of {len(results)} case(s) on {device}; "
          f"torch {torch.__version__} ({sys.executable})", flush=True)
    if status_path:
        tmp = f"{status_path}.tmp.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"device": device, "python": sys.executable, "torch": torch.__version__,
                       "cases": results}, f)
        os.replace(tmp, status_path)
    return 1 if n_bad else 0


# ---- timing plain torch on a GPU (or the CPU) under torch.profiler -------------------------

ASCEND_APIS = ("torch_npu.", "torch.ops.")
RANGE_PREFIX = "perfscript:"


def uses_nz(v):
    if isinstance(v, dict):
        if "tensor" in v:
            return bool(v["tensor"].get("nz"))
        return any(uses_nz(x) for x in v.values())
    if isinstance(v, list):
        return any(uses_nz(x) for x in v)
    return False


def plain_attempt(c, device):
    """The first attempt of case c (its fallback included) that plain torch can run on device,
    or (None, reason)."""
    attempts = golden_attempts(c)
    reasons = []
    for a in attempts:
        api = a.get("api") or ""
        if api.startswith(ASCEND_APIS) and not a.get("method") and not a.get("index"):
            reasons.append(f"{api} is an Ascend API with no {device} kernel")
        elif a.get("graph") == "torchair":
            reasons.append("a torchair graph call")
        elif uses_nz([a.get("args"), a.get("kwargs")]):
            reasons.append("a FRACTAL_NZ (Ascend-only) tensor format")
        else:
            return a, None
    return None, "; ".join(reasons)


def profile_plan(plan_path, device, ops, repeat, warmup, seed, max_elements, trace_path, status_path):
    """Times every plain-torch case of the plan (of ops when given) on device under
    torch.profiler, repeat timed calls each after warmup untimed ones, each timed call in its
    own record_function range; writes the Chrome trace and the per-case status. Returns 0 when
    no case failed (skipped cases are not failures), 1 otherwise."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function
    if device == "cuda" and not torch.cuda.is_available():
        print("executor: --profile cuda: torch sees no CUDA device "
              f"(torch {torch.__version__}, {sys.executable})", file=sys.stderr)
        return 2
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    _, cases = check_plan(plan_path)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    results = {}
    with profile(activities=activities) as prof:
        for _, c in cases:
            if ops and c["op"] not in ops:
                continue
            a, why = plain_attempt(c, device)
            n = spec_elements([a.get("args"), a.get("kwargs")]) if a else 0
            if a and max_elements and n > max_elements:
                a, why = None, f"{n} input elements over --max-elements {max_elements}"
            if a is None:
                results[c["id"]] = {"id": c["id"], "op": c["op"], "status": "skipped", "reason": why}
                print(f"[SKIP] {c['id']}: {why}", flush=True)
                continue
            try:
                gen = torch.Generator(device=device).manual_seed(seed)
                call = make_call(torch, None, a, gen, device, {})
                for _ in range(warmup):
                    call()
                sync()
                for rep in range(1, repeat + 1):
                    with record_function(f"{RANGE_PREFIX}{c['id']}:{rep}"):
                        call()
                    sync()
                results[c["id"]] = {"id": c["id"], "op": c["op"], "status": "ok",
                                    "api": a.get("api") or a.get("method") or "index"}
                print(f"[OK] {c['id']} shapes={c.get('record', {}).get('Input Shapes', '')}", flush=True)
            except Exception as e:  # recorded: the row stays unmeasured
                msg = str(e).strip()
                reason = f"{type(e).__name__}: {msg.splitlines()[0] if msg else ''}"
                results[c["id"]] = {"id": c["id"], "op": c["op"], "status": "failed", "reason": reason}
                print(f"[FAIL] {c['id']}: {reason}", flush=True)
                if device == "cuda":
                    torch.cuda.empty_cache()
            call = None
    tmp = f"{trace_path}.tmp.{os.getpid()}.json"
    prof.export_chrome_trace(tmp)
    os.replace(tmp, trace_path)
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    counts = {k: sum(1 for r in results.values() if r["status"] == k) for k in ("ok", "skipped", "failed")}
    print(f"[PROFILE] {counts['ok']} timed, {counts['skipped']} skipped, {counts['failed']} failed of "
          f"{len(results)} case(s) on {name}; torch {torch.__version__} ({sys.executable}); trace {trace_path}",
          flush=True)
    if status_path:
        tmp = f"{status_path}.tmp.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"device": device, "device_name": name, "python": sys.executable,
                       "torch": torch.__version__, "repeat": repeat, "warmup": warmup, "cases": results}, f)
        os.replace(tmp, status_path)
    return 1 if counts["failed"] else 0


def torchrun_command(cmd, d):
    """The worker under torch.distributed.run with ep_size ranks (nproc_per_node x nnodes)."""
    ep = int(d["ep_size"])
    nproc = int(d.get("nproc_per_node") or ep)
    nnodes = int(d.get("nnodes") or 1)
    if nproc * nnodes != ep:
        raise PlanError(f"torchrun world size mismatch: nproc_per_node({nproc}) * nnodes({nnodes}) != ep_size({ep})")
    port = d.get("master_port")
    if nnodes > 1 and not port:
        raise PlanError("--dispatch-ffn-combine-master-port must be set explicitly for multi-node DispatchFFNCombine EP replay.")
    port = port or free_port()
    run = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}", f"--nnodes={nnodes}",
           f"--node_rank={int(d.get('node_rank') or 0)}", f"--master_addr={d.get('master_addr') or '127.0.0.1'}",
           f"--master_port={port}"] + cmd[1:]
    env = dict(os.environ, _DFC_AUTO_TORCHRUN="1")
    print(f"[Auto EP] Launching torchrun world_size={ep} nnodes={nnodes} nproc_per_node={nproc} "
          f"node_rank={d.get('node_rank') or 0} master={d.get('master_addr') or '127.0.0.1'}:{port}...", flush=True)
    return run, env


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("plan")
    ap.add_argument("--check", action="store_true", help="validate the plan; no torch needed")
    ap.add_argument("--ops", help="comma-separated operators to run (default: all in the plan)")
    ap.add_argument("--status", help="write the per-operator status JSON here")
    ap.add_argument("--repeat-count", type=int)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--device", choices=("npu", "cpu", "meta"), default="npu",
                    help="npu (default): torch_npu on an Ascend NPU; cpu or meta: the golden functions "
                         "of golden/ in plain torch, each output checked against the row")
    ap.add_argument("--max-elements", type=int,
                    help="with --device cpu: cases with more input and output elements stay on meta "
                         "(default 4194304; 0: no cap); with --profile: cases with more input elements "
                         "are skipped (default: no cap)")
    ap.add_argument("--profile", choices=("cuda", "cpu"),
                    help="time the plain-torch cases on this device under torch.profiler (no NPU)")
    ap.add_argument("--trace", help="with --profile: write the profiler's Chrome trace here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        header, cases = check_plan(args.plan)
    except (PlanError, OSError) as e:
        print(f"executor: {e}", file=sys.stderr)
        return 2
    if args.check:
        print(f"plan OK: {len(cases)} case(s), ops {', '.join(header.get('ops') or []) or '-'}")
        return 0
    wanted = set(args.ops.split(",")) if args.ops else None
    if args.device != "npu":
        cap = (1 << 22) if args.max_elements is None else args.max_elements
        return validate(args.plan, args.device, cap, wanted, header.get("seed", 0), args.status)
    repeat = args.repeat_count or header.get("repeat_count") or 1
    warmup = header.get("warmup", 1) if args.warmup is None else args.warmup
    if repeat <= 0:
        print(f"executor: --repeat-count must be positive, got {repeat}", file=sys.stderr)
        return 2
    if args.profile:
        if not args.trace:
            print("executor: --profile needs --trace FILE", file=sys.stderr)
            return 2
        return profile_plan(args.plan, args.profile, wanted, repeat, warmup, header.get("seed", 0),
                            args.max_elements or 0, args.trace, args.status)
    seed = header.get("seed", 0)
    if args.worker:
        results = run_op(args.plan, args.worker, repeat, warmup, seed)
        if os.environ.get("RANK", "0") == "0":
            with open(args.status, "w", encoding="utf-8") as f:
                json.dump(results, f)
        return 0
    ops = [o for o in (header.get("ops") or [])]
    if args.ops:
        wanted = set(args.ops.split(","))
        ops = [o for o in ops if o in wanted]
    status = {"success": [], "failed": [], "skipped": [], "cases": {}}
    for op in ops:
        part = f"{args.status or args.plan}.{op}.json"
        cmd = [sys.executable, os.path.abspath(__file__), args.plan, "--worker", op, "--status", part,
               "--repeat-count", str(repeat), "--warmup", str(warmup)]
        print(f"[RUN] {op}", flush=True)
        dist = header.get("distributed", {}).get(op)
        env = None
        if dist and int(dist.get("ep_size", 1)) > 1:
            cmd, env = torchrun_command(cmd, dist)
        rc = subprocess.call(cmd, env=env)
        results = []
        if os.path.exists(part):
            with open(part, encoding="utf-8") as f:
                results = json.load(f)
            os.remove(part)
        for r in results:
            status["cases"][r["id"]] = r
        if rc != 0:
            status["failed"].append({"op": op, "reason": f"worker exit code {rc}"})
        elif any(r["status"] != "ok" for r in results):
            bad = sum(1 for r in results if r["status"] != "ok")
            status["failed"].append({"op": op, "reason": f"{bad} case(s) failed"})
        else:
            status["success"].append(op)
        print(f"[DONE] {op}", flush=True)
    if args.status:
        with open(args.status, "w", encoding="utf-8") as f:
            json.dump(status, f, indent=2)
    return 1 if status["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
