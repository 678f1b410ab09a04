#!/usr/bin/python3
"""Ask TensorCast's real profiling-database reader for every measured row of a database.

For each kernel CSV of a database version directory
(DB_ROOT/<DEVICE>/vllm_ascend/vllm..._torch..._cann.../), every row with a valid latency (as the
consumer defines it) is turned into the query a simulator would make for that row: the torch op
that op_mapping.yaml routes to the kernel, with meta tensors of the row's shapes, dtypes and
(FRACTAL_NZ-restored) formats, and the runtime arguments its query mode needs (output tensor,
sequence lengths, EP size, message bytes). The consumer is loaded unchanged, by path, from
$PERFSCRIPT_CONSUMER (default: ../shared/consumer relative to the repository root), and asked
through InterpolatingDataSource(ProfilingDataSource(dir)) as a simulator asks it.

Each asked row gets one status:
  exact         the consumer answered with this very row (MEASURED);
  other         it answered MEASURED, but from another row (named in "found");
  interpolated  no exact row was found; the answer was interpolated;
  miss          no answer; "reason" is the consumer's last_miss_reason;
  error         the consumer raised (crash hazard); "reason" holds the exception;
  unasked       no query could be built (no route in op_mapping.yaml, a dtype with no torch
                type, ...); "reason" says why.
For composite (decomposed) routes, e.g. MLA decode attention, the status is that of the
sub-query for the row's own kernel; "op_source" is the source of the op's whole answer.

Rows are numbered 1-based over data records (the header is not counted), as pandas reads them.

CLI (stable; other tests parse --json):
  consumer_ask.py DB_VERSION_DIR [--json] [--kernels K1,K2] [--sample N] [--min-exact PCT]
                  [--consumer DIR] [--show STATUS,...]
Exit status: 0 done (and --min-exact met), 1 --min-exact not met, 2 usage or input error,
77 skipped (torch, pandas, numpy, yaml or the consumer missing; the reason is printed).

JSON (--json): {"database", "consumer", "sample", "rows": [row...], "kernels": {K: counts},
"totals": counts}; a row is {"kernel", "row", "status", "reason", "found": {"kernel", "row"} |
null, "op", "route", "source", "op_source", "confidence", "rule", "latency_us",
"row_latency_us"}; counts are {"rows" (measured rows in the file), "asked", "exact", "other",
"interpolated", "miss", "error", "unasked"}. --min-exact counts over the rows that have a route
(asked minus unasked).

Python API: ask_database(db_dir, consumer_root=None, kernels=None, sample=None) -> dict (the JSON
document); load(consumer_root) -> the consumer's profiling_database package and its loader.
"""
import argparse
import json
import logging
import math
import os
import sys

SKIP = 77
STATUSES = ("exact", "other", "interpolated", "miss", "error", "unasked")
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Skip(Exception):
    """The consumer or its dependencies are missing: the caller skips."""


def default_consumer_root():
    return os.environ.get("PERFSCRIPT_CONSUMER") or os.path.join(REPO_ROOT, "..", "shared", "consumer")


def load(consumer_root=None):
    """Import torch/pandas and the consumer's profiling_database package, or raise Skip."""
    consumer_root = os.path.abspath(consumer_root or default_consumer_root())
    for mod in ("torch", "pandas", "numpy", "yaml"):
        try:
            __import__(mod)
        except ImportError as e:
            raise Skip(f"python module {mod} is missing ({e}); on Debian: apt-get install "
                       "python3-torch python3-pandas python3-numpy python3-yaml, and run /usr/bin/python3")
    if not os.path.isfile(os.path.join(consumer_root, "load_consumer.py")):
        raise Skip(f"the consumer is not at {consumer_root} (set PERFSCRIPT_CONSUMER)")
    if consumer_root not in sys.path:
        sys.path.insert(0, consumer_root)
    import load_consumer  # noqa: E402  (the consumer's own loader)
    try:
        pdb = load_consumer.load(consumer_root)
    except SystemExit as e:
        raise Skip(str(e))
    return pdb, load_consumer


# ---- row cells, read as the profiler wrote them (slots kept in place, empty ones included) ----

def _cell(row, col):
    v = row.get(col) if col in row.index else None
    if v is None:
        return ""
    if isinstance(v, float) and math.isnan(v):
        return ""
    return str(v).strip().strip('"')


def _slots(text):
    """'a,b;;c' -> [(a, b), None, (c,)]; '()' -> (); raises ValueError on a bad dimension."""
    if text == "":
        return []
    out = []
    for part in text.split(";"):
        part = part.strip()
        if part == "":
            out.append(None)
        elif part == "()":
            out.append(())
        else:
            out.append(tuple(int(x) for x in part.split(",")))
    return out


def _names(text):
    return [x.strip() for x in text.split(";")] if text != "" else []


_TORCH_DTYPES = {
    "BF16": "bfloat16", "BFLOAT16": "bfloat16",
    "FLOAT16": "float16", "FP16": "float16", "HALF": "float16",
    "FLOAT": "float32", "FLOAT32": "float32", "FP32": "float32",
    "DOUBLE": "float64", "FLOAT64": "float64",
    "INT8": "int8", "UINT8": "uint8", "INT16": "int16", "INT32": "int32", "INT64": "int64",
    "BOOL": "bool",
}


def torch_dtype(name):
    """A profiler dtype name (any spelling: DT_BF16, INT8, DT_INT8, ...) -> torch dtype or None.
    The query carries what the data means; whether the consumer knows the row's spelling is
    what the lookup then shows."""
    import torch
    key = name.strip().upper()
    if key.startswith("DT_"):
        key = key[3:]
    t = _TORCH_DTYPES.get(key)
    return getattr(torch, t) if t else None


class Unaskable(Exception):
    pass


def _meta(shape, dtype):
    import torch
    return torch.empty(shape, dtype=dtype, device="meta")


def _row_tensors(row, prefix, nz_restore):
    """The row's (shape, torch dtype) per non-empty slot, in order; FRACTAL_NZ restored."""
    shapes = _slots(_cell(row, f"{prefix} Shapes"))
    dtypes = _names(_cell(row, f"{prefix} Data Types"))
    formats = _names(_cell(row, f"{prefix} Formats"))
    out = []
    for i, s in enumerate(shapes):
        if s is None:
            continue
        name = dtypes[i] if i < len(dtypes) else ""
        dt = torch_dtype(name)
        if dt is None:
            raise Unaskable(f"{prefix.lower()} slot {i + 1}: dtype {name or '(none)'} has no torch type")
        if i < len(formats) and formats[i] == "FRACTAL_NZ":
            s = nz_restore(s)
        out.append((s, dt))
    return out


def _int_list(text):
    vals = []
    for part in text.replace(";", ",").split(","):
        part = part.strip()
        if part:
            vals.append(int(float(part)))
    return vals


def _num(row, col):
    v = _cell(row, col)
    if v == "":
        return None
    try:
        return float(v)
    except ValueError:
        return None


# ---- routes: which op a simulator asks for a kernel ----

def _entry_kernels(entry):
    if entry.get("query_mode") in ("elementwise", "moe_fused"):
        # _lookup_elementwise and _lookup_moe read only kernel_type's CSV, never the alternates
        return [entry["kernel_type"]] if entry.get("kernel_type") else []
    ks = []
    for lst in (entry.get("kernel_types_by_input_rank") or {}).values():
        if isinstance(lst, list):
            ks.extend(lst)
    if entry.get("kernel_type"):
        ks.append(entry["kernel_type"])
    ks.extend(entry.get("alternate_kernel_types") or [])
    return ks


def routes(mapping):
    """kernel -> list of (op, entry) that reach it, best first: the kernel as primary kernel_type
    before as an alternate (an alternate is only tried when the primary misses), TC ops before
    profiling.* placeholders, then file order."""
    ops = (mapping or {}).get("operator_mappings") or {}
    ranked = {}
    for order, (op, entry) in enumerate(ops.items()):
        if not isinstance(entry, dict) or entry.get("zero_cost") or entry.get("accepted_miss"):
            continue
        if entry.get("composite"):
            continue
        placeholder = op.startswith("profiling.")
        for k in dict.fromkeys(_entry_kernels(entry)):
            primary = k == entry.get("kernel_type")
            ranked.setdefault(k, []).append(((not primary, placeholder, order), op, entry))
    out = {k: [(op, e) for _, op, e in sorted(v, key=lambda t: t[0])] for k, v in ranked.items()}
    # Decomposed MLA: its attention sub-query reaches decode rows of the attention kernel.
    for op, entry in ops.items():
        if isinstance(entry, dict) and entry.get("composite") and entry.get("decomposer") \
                and op == "tensor_cast.multihead_latent_attention.default":
            out.setdefault("__mla__", []).append((op, entry))
    return out


_ROPE = {"ApplyRotaryPosEmb", "_triton_rope", "split_qkv_rmsnorm_rope_kernel"}
_RESHAPE_AND_CACHE = {"ReshapeAndCacheNdKernel", "reshape_and_cache_200000000"}


def _tc_inputs_compute(kernel, ins, entry):
    """The TC-side tensors whose consumer rewrite gives the row's inputs."""
    if kernel in _ROPE and len(ins) >= 2:
        def back(s):  # CSV (B,S,H,D) -> TC (B,H,S,D)
            return (s[0], s[2], s[1], s[3]) if len(s) == 4 else s
        (k, kd), (q, qd) = ins[0], ins[1]
        rest = []
        for i, (s, d) in enumerate(ins[2:4]):
            rest.append(((s[0], s[1], s[3]) if len(s) == 4 and s[2] == 1 else s, d))
        ins = [(back(q), qd), (back(k), kd)] + rest + ins[4:]
    elif kernel in _RESHAPE_AND_CACHE and len(ins) == 5:
        (k, kd), (v, vd), (ck, ckd), (cv, _), (sl, sld) = ins
        if len(k) == 3 and k[1] == 1 and len(v) == 3 and v[1] == 1 and ck == cv:
            ins = [((k[0], k[2]), kd), ((v[0], v[2]), vd), ((2,) + ck, ckd), (sl, sld)]
    n = entry.get("tc_input_count")
    if isinstance(n, int):
        ins = ins[:n]
    return [_meta(s, d) for s, d in ins]


def _outputs(row, nz_restore):
    outs = [_meta(s, d) for s, d in _row_tensors(row, "Output", nz_restore)]
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else tuple(outs)


class Asker:
    def __init__(self, pdb, load_consumer, db_dir):
        self.pdb = pdb
        self.lc = load_consumer
        self.db_dir = db_dir
        self.pds = pdb.profiling_data_source
        self._sources = {}
        self.base = self.source(None)[1]
        self.mapping = self.base._op_mapping or {}
        self.routes = routes(self.mapping)
        self.log = []

    def source(self, ep_size):
        """(InterpolatingDataSource, ProfilingDataSource) per EP size, instrumented so every row
        the consumer's candidate search returns is recorded as (kernel, row index)."""
        if ep_size not in self._sources:
            pc = self.lc.ParallelConfig(expert_parallel_size=ep_size) if ep_size else None
            base = self.pds.ProfilingDataSource(self.db_dir, None, pc)
            orig = base._find_candidates
            asker = self

            def find(kernel_types, checker_fn, select="first"):
                def chk(row, kt, lat_col):
                    c = checker_fn(row, kt, lat_col)
                    if c is not None:
                        c.details["__ps_row__"] = (kt, int(row.name))
                    return c
                hit = orig(kernel_types, chk, select)
                if hit is not None:
                    asker.log.append(hit.details.pop("__ps_row__", None))
                return hit

            base._find_candidates = find
            src = self.pdb.InterpolatingDataSource(base)
            self._sources[ep_size] = (src, base)
        return self._sources[ep_size]

    # -- query building per mode --

    def build(self, kernel, row):
        """-> (op, route, args, kwargs, out, ep_size) or raises Unaskable."""
        nz = self.pds.fractal_nz_to_nd
        if kernel.startswith("hcom_") or kernel in self._comm_kernels():
            op, entry = self._route(kernel, comm=True)
            b, n = _num(row, "message_bytes"), _num(row, "num_devices")
            if b is None or n is None:
                raise Unaskable("no message_bytes/num_devices")
            import torch
            return op, "communication", (_meta((int(b),), torch.int8), list(range(int(n)))), {}, None, None
        rts = self.routes.get(kernel) or []
        if not rts:
            raise Unaskable(f"no op in op_mapping.yaml routes {kernel}")
        op, entry = rts[0]
        mode = entry.get("query_mode")
        if mode == "attention_special":
            return self._build_attention(kernel, row, op, entry)
        ins = _row_tensors(row, "Input", nz)
        if mode == "moe_fused":
            return self._build_moe(kernel, row, ins, op, entry)
        args = _tc_inputs_compute(kernel, ins, entry)
        out = _outputs(row, nz)
        return op, mode or "compute", tuple(args), {}, out, None

    def _comm_kernels(self):
        ops = self.mapping.get("operator_mappings") or {}
        return {e.get("kernel_type") for e in ops.values()
                if isinstance(e, dict) and e.get("category") == "communication"}

    def _route(self, kernel, comm=False):
        ops = self.mapping.get("operator_mappings") or {}
        for op, e in ops.items():
            if isinstance(e, dict) and e.get("kernel_type") == kernel and (not comm or e.get("category") == "communication"):
                return op, e
        raise Unaskable(f"no op in op_mapping.yaml routes {kernel}")

    def _build_attention(self, kernel, row, op, entry):
        import torch
        shapes = _slots(_cell(row, "Input Shapes"))
        dtypes = _names(_cell(row, "Input Data Types"))
        if not shapes or shapes[0] is None:
            raise Unaskable("no query shape in slot 1")
        q = shapes[0]
        qd = torch_dtype(dtypes[0]) if dtypes else None
        if qd is None:
            raise Unaskable(f"query dtype {dtypes[0] if dtypes else '(none)'} has no torch type")
        avg = _num(row, "Runtime avg_seq_len")
        if avg is None:
            avg = _num(row, "avg_seq_len")
        if avg is None:
            raise Unaskable("no Runtime avg_seq_len")
        kv_lens = _int_list(_cell(row, "Runtime actual_seq_lengths_kv_values")) or [int(avg)]
        if int(sum(kv_lens) / len(kv_lens)) != int(avg):
            kv_lens = [int(avg)]
        sparse = _num(row, "Runtime sparse_mode")
        kvh = _num(row, "Runtime num_key_value_heads")
        mla = self.routes.get("__mla__")
        if mla and sparse == 0 and kvh == 1 and len(q) in (3, 4):
            # MLA decode: the decomposer asks the attention kernel with (B, N, kv_lora_rank),
            # sparse_mode 0 and one KV head.
            op, entry = mla[0]
            b, n, d = (q[0], q[1], q[3]) if len(q) == 4 else q
            if len(q) == 4 and q[2] != 1:
                raise Unaskable(f"decode query {q} has S != 1")
            rope, nope, v = 64, 128, 128
            blk = int(_num(row, "Runtime block_size") or 128)
            seq = torch.tensor(kv_lens[:b] if len(kv_lens) >= b else [int(avg)] * b, dtype=torch.int64)
            args = (_meta((b, n, nope + rope), qd), _meta((1, blk, d + rope), qd), None, None, seq, None,
                    _meta((n, nope, d), qd), _meta((n, d, v), qd), _meta((d, n * (nope + v)), qd), None)
            return op, "mla_decode", args, {}, None, None
        # tensor_cast.attention(query, key, value, mask, block_table, query_start_loc, seq_lens, query_lens)
        key = shapes[1] if len(shapes) > 1 and shapes[1] is not None and len(shapes[1]) >= 2 else None
        if key is None or (kvh is not None and key[-2] != int(kvh)):
            key = (1, int(kvh) if kvh is not None else 1, q[-1])
        seq = torch.tensor(kv_lens, dtype=torch.int64)
        qlens = torch.tensor(_int_list(_cell(row, "Runtime actual_seq_lengths_values")) or [1], dtype=torch.int64)
        args = (_meta(q, qd), _meta(key, qd), _meta(key, qd), None, None, None, seq, qlens)
        return op, "attention_special", args, {}, None, None

    def _build_moe(self, kernel, row, ins, op, entry):
        import torch
        ep = _num(row, "EP Size")
        quant = len(ins) > 1 and ins[1][1] != ins[0][1]
        if quant:
            for cand, e in self.routes.get(kernel) or []:
                if cand == "tensor_cast.dispatch_ffn_combine_quant.default":
                    op, entry = cand, e
                    break
        if entry.get("project_full_shape") and len(ins) == 7:
            (x, xd), (w1, w1d), (w2, w2d), (idx, _), _, _, _ = ins
            if len(w1) != 3 or len(w2) != 3:
                raise Unaskable(f"expert weights {w1}, {w2} are not (E, ., .)")
            g1 = [_meta(w1[1:], w1d) for _ in range(w1[0])]
            g2 = [_meta(w2[1:], w2d) for _ in range(w2[0])]
            xi = _meta(x, xd)
            ii = _meta(idx, torch.int32)
            if op == "tensor_cast.dispatch_ffn_combine.default":
                args = (xi, ii, g1, None, g2, None, None, None)
            else:
                args = (xi, ii, g1, None, None, None, None, g2)
        else:
            args = tuple(_tc_inputs_compute(kernel, ins, entry))
        return op, "moe_fused", args, {}, None, int(ep) if ep is not None else None

    # -- asking --

    def ask(self, kernel, idx, row):
        rec = {"kernel": kernel, "row": idx + 1, "status": None, "reason": "", "found": None, "op": None,
               "route": None, "source": None, "op_source": None, "confidence": None, "rule": None,
               "latency_us": None, "row_latency_us": None}
        try:
            op, route, args, kwargs, out, ep = self.build(kernel, row)
        except (Unaskable, ValueError) as e:
            rec["status"], rec["reason"] = "unasked", str(e)
            return rec
        rec["op"], rec["route"] = op, route
        src, base = self.source(ep)
        info = self.lc.OpInfo(op, args, out=out, kwargs=kwargs)
        self.log = []
        base.last_miss_reason = ""
        try:
            res = src.lookup(info)
        except Exception as e:  # the consumer raising is a finding, not a harness failure
            rec["status"], rec["reason"] = "error", f"{type(e).__name__}: {e}"
            return rec
        if route == "communication":
            return self._classify_comm(rec, kernel, idx, row, res, base)
        mine = [e for e in self.log if e is not None and e[0] == kernel]
        if res is not None:
            rec["op_source"] = res.source.name if hasattr(res.source, "name") else str(res.source)
            rec["confidence"] = res.confidence
            rec["latency_us"] = res.latency_us
            smi = res.shape_match_info
            rec["rule"] = getattr(smi, "shape_match_rule", None) if smi is not None else None
        if (kernel, idx) in self.log:
            rec["status"], rec["source"] = "exact", "MEASURED"
        elif self.log and (res is not None and rec["op_source"] == "MEASURED" or route == "mla_decode"):
            found = mine[-1] if mine else self.log[-1]
            rec["status"], rec["source"] = "other", "MEASURED"
            rec["found"] = {"kernel": found[0], "row": found[1] + 1}
        elif res is not None and rec["op_source"] in ("INTERPOLATED", "PARTIAL"):
            rec["status"], rec["source"] = "interpolated", rec["op_source"]
        elif res is not None:
            rec["status"], rec["source"] = "other", rec["op_source"]
        else:
            rec["status"] = "miss"
        if rec["status"] != "exact":
            rec["reason"] = _reason(base, src, rec["status"])
        return rec

    def _classify_comm(self, rec, kernel, idx, row, res, base):
        if res is None:
            rec["status"], rec["reason"] = "miss", base.last_miss_reason or "no answer"
            return rec
        rec["op_source"] = res.source.name
        rec["latency_us"], rec["confidence"] = res.latency_us, res.confidence
        if res.source.name != "MEASURED":
            rec["status"], rec["source"] = "interpolated", res.source.name
            return rec
        # Exact comm answers come from the first valid row with equal bytes and devices.
        df = base._load_csv(kernel)
        b, n = _num(row, "message_bytes"), _num(row, "num_devices")
        lat_col = base._latency_col(df)
        for j, r in df.iterrows():
            if _num(r, "message_bytes") == b and _num(r, "num_devices") == n and \
                    base._row_latency_value(r, lat_col) is not None:
                if j == idx:
                    rec["status"], rec["source"] = "exact", "MEASURED"
                else:
                    rec["status"], rec["source"] = "other", "MEASURED"
                    rec["found"] = {"kernel": kernel, "row": int(j) + 1}
                return rec
        rec["status"], rec["source"] = "other", "MEASURED"
        return rec


def _reason(base, src, status):
    """The exact path's miss reason, and the interpolation's when it was tried."""
    exact = base.last_miss_reason or ""
    interp = getattr(src, "last_miss_reason", "") or ""
    parts = []
    if exact:
        parts.append(f"exact: {exact}")
    if interp and interp != exact and status in ("miss", "interpolated"):
        parts.append(f"interpolation: {interp}")
    return "; ".join(parts) or ("no answer" if status == "miss" else "")


def _sample(indices, n):
    """n indices spread evenly over the list, first and last included (deterministic)."""
    if not n or len(indices) <= n:
        return list(indices)
    if n == 1:
        return [indices[0]]
    return [indices[round(i * (len(indices) - 1) / (n - 1))] for i in range(n)]


def _counts():
    return dict(rows=0, asked=0, **{s: 0 for s in STATUSES})


def ask_database(db_dir, consumer_root=None, kernels=None, sample=None):
    db_dir = os.path.abspath(db_dir)
    if not os.path.isdir(db_dir):
        raise ValueError(f"{db_dir}: not a directory")
    if not os.path.isfile(os.path.join(db_dir, "op_mapping.yaml")):
        raise ValueError(f"{db_dir}: no op_mapping.yaml (not a database version directory)")
    pdb, lc = load(consumer_root)
    logging.getLogger("tensor_cast").setLevel(logging.ERROR)
    asker = Asker(pdb, lc, db_dir)
    names = sorted(f[:-4] for f in os.listdir(db_dir) if f.endswith(".csv"))
    if kernels:
        names = [k for k in names if k in kernels]
    doc = {"database": db_dir, "consumer": os.path.abspath(consumer_root or default_consumer_root()),
           "sample": sample or 0, "rows": [], "kernels": {}, "totals": _counts()}
    for k in names:
        c = doc["kernels"].setdefault(k, _counts())
        try:
            df = asker.base._load_csv(k)
        except Exception as e:
            c["error"] += 1
            doc["rows"].append({"kernel": k, "row": 0, "status": "error",
                                "reason": f"read_csv: {type(e).__name__}: {e}", "found": None})
            continue
        if df is None or len(df.columns) == 0:
            continue
        lat_col = asker.base._latency_col(df)
        measured = [i for i, (_, r) in enumerate(df.iterrows())
                    if asker.base._row_latency_value(r, lat_col) is not None]
        c["rows"] = len(measured)
        for i in _sample(measured, sample):
            row = df.iloc[i]
            rec = asker.ask(k, i, row)
            try:
                rec["row_latency_us"] = asker.base._row_latency_value(row, lat_col)
            except Exception:
                pass
            c["asked"] += 1
            c[rec["status"]] += 1
            doc["rows"].append(rec)
    for c in doc["kernels"].values():
        for key in doc["totals"]:
            doc["totals"][key] += c[key]
    return doc


def exact_percent(counts):
    """Exact answers over the asked rows that have a route (asked minus unasked)."""
    routed = counts["asked"] - counts["unasked"]
    return 100.0 * counts["exact"] / routed if routed else 100.0


def table(doc, out=sys.stdout):
    w = max([len("kernel")] + [len(k) for k in doc["kernels"]])
    cols = ("rows", "asked", "exact", "other", "interpolated", "miss", "error", "unasked")
    head = "kernel".ljust(w) + "".join(f" {c:>12}" for c in cols)
    print(head, file=out)
    for k, c in doc["kernels"].items():
        if c["rows"] or c["error"]:
            print(k.ljust(w) + "".join(f" {c[x]:>12}" for x in cols), file=out)
    t = doc["totals"]
    print("total".ljust(w) + "".join(f" {t[x]:>12}" for x in cols), file=out)
    print(f"exact: {t['exact']} of {t['asked'] - t['unasked']} asked rows with a route "
          f"({exact_percent(t):.1f} %); {t['unasked']} rows have no route in op_mapping.yaml", file=out)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="consumer_ask.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("database", help="database version directory (holds op_mapping.yaml and <Kernel>.csv)")
    ap.add_argument("--json", action="store_true", help="print the JSON document instead of the tables")
    ap.add_argument("--kernels", help="comma-separated kernel types (default: every CSV)")
    ap.add_argument("--sample", type=int, default=0,
                    help="ask at most N measured rows per kernel, spread evenly (0 = all)")
    ap.add_argument("--min-exact", type=float, default=None,
                    help="exit 1 unless at least PCT %% of the asked rows with a route answer exactly")
    ap.add_argument("--consumer", help="consumer root (default $PERFSCRIPT_CONSUMER or ../shared/consumer)")
    ap.add_argument("--show", default="other,interpolated,miss,error,unasked",
                    help="statuses whose rows are listed under the table (default: all but exact; '' none)")
    a = ap.parse_args(argv)
    kernels = set(x for x in (a.kernels or "").split(",") if x) or None
    try:
        doc = ask_database(a.database, a.consumer, kernels, a.sample)
    except Skip as e:
        print(f"SKIP: {e}")
        return SKIP
    except ValueError as e:
        print(f"consumer_ask.py: {e}", file=sys.stderr)
        return 2
    if a.json:
        json.dump(doc, sys.stdout, indent=1, default=str)
        print()
    else:
        table(doc)
        show = set(x for x in a.show.split(",") if x)
        for r in doc["rows"]:
            if r["status"] in show:
                found = f" -> {r['found']['kernel']} row {r['found']['row']}" if r.get("found") else ""
                print(f"  {r['status']:<12} {r['kernel']} row {r['row']}{found} via {r.get('op')}: {r.get('reason', '')}")
    if a.min_exact is not None:
        pct = exact_percent(doc["totals"])
        if pct < a.min_exact:
            print(f"consumer_ask.py: {pct:.1f} % exact, under --min-exact {a.min_exact}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
