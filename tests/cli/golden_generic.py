"""Unit tests of the generic goldens (lua/perfscript/replay/golden/{matmul,norm,quant,elementwise}.py),
run by tests/cli/test_golden.sh with a python that has torch:

    python3 tests/cli/golden_generic.py LUA_REPLAY_DIR

Each golden: a right call gives the NPU API's shapes and dtypes (and values against a plain
reference on cpu, the same shapes on meta); a deliberately wrong argument (a transposed weight,
a wrong dtype, a short group list ...) is rejected with a GoldenError naming that argument."""
import sys
import unittest

sys.path.insert(0, sys.argv.pop(1))
import torch  # noqa: E402

import golden  # noqa: E402
from golden import GoldenError, mark_format  # noqa: E402

G = golden.load_goldens()
bf, f32, i8, i32, i64 = torch.bfloat16, torch.float32, torch.int8, torch.int32, torch.int64


def rnd(*shape, dtype=bf, device="cpu"):
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=f32).to(dtype).to(device)
    return torch.randint(-4, 4, shape, dtype=i64).to(dtype).to(device)


class Base(unittest.TestCase):
    def rejects(self, api, arg, *args, **kwargs):
        """The golden of api refuses the call with a message naming arg."""
        with self.assertRaises(GoldenError) as cm:
            G[api](*args, **kwargs)
        self.assertIn(arg, str(cm.exception), f"{api}: the message does not name {arg}: {cm.exception}")
        return str(cm.exception)

    def shapes(self, out, *want):
        outs = out if isinstance(out, (tuple, list)) else [out]
        self.assertEqual([(tuple(t.shape), t.dtype) for t in outs[:len(want)]], list(want))


class Helpers(Base):
    def test_messages(self):
        x = rnd(4, 8)
        with self.assertRaisesRegex(GoldenError, r"^w: expected shape \(8, \*\), got \(4, 8\)$"):
            golden.expect_shape("w", x, (8, None))
        with self.assertRaisesRegex(GoldenError, r"^w: expected dtype int8 or int32, got bfloat16$"):
            golden.expect_dtype("w", x, (i8, i32))
        with self.assertRaisesRegex(GoldenError, r"^w: expected a 3-D tensor, got 2-D \(4, 8\)$"):
            golden.expect_rank("w", x, 3)
        self.assertEqual(golden.tensor_format(mark_format(x, "FRACTAL_NZ")), "FRACTAL_NZ")
        self.assertEqual(golden.tensor_format(rnd(2)), "ND")

    def test_every_generic_api_has_a_golden(self):
        for api in ("torch.mm", "torch.matmul", "torch_npu.npu_transpose_batchmatmul", "torch_npu.npu_quant_matmul",
                    "torch_npu.npu_grouped_matmul", "torch_npu.npu_grouped_matmul_swiglu_quant",
                    "torch_npu.npu_rms_norm", "torch_npu.npu_add_rms_norm", "torch.ops._C_ascend.npu_add_rms_norm_bias",
                    "torch_npu.npu_add_rms_norm_dynamic_quant", "torch_npu.npu_dynamic_quant", "torch_npu.npu_quantize",
                    "torch_npu.npu_swiglu", "torch_npu.npu_slice", "torch_npu.npu_scatter_nd_update"):
            self.assertIn(api, G)


class MatMul(Base):
    def test_mm(self):
        a, b = rnd(16, 64), rnd(32, 64)
        y = G["torch.mm"](a, b.t())
        self.shapes(y, ((16, 32), bf))
        self.assertTrue(torch.equal(y, torch.mm(a.float(), b.t().float()).to(bf)))
        self.rejects("torch.mm", "mat2", a, b)                      # the recorded [n,k] B, not transposed
        self.rejects("torch.mm", "mat2", a, b.t().float())          # dtype differs from input
        self.rejects("torch.mm", "input", rnd(2, 16, 64), b.t())   # 3-D

    def test_matmul(self):
        self.shapes(G["torch.matmul"](rnd(4, 8, 64), rnd(4, 64, 32)), ((4, 8, 32), bf))
        self.rejects("torch.matmul", "other", rnd(4, 8, 64), rnd(4, 32, 64))
        self.rejects("torch.matmul", "other", rnd(4, 8, 64), rnd(3, 64, 32))

    def test_transpose_batchmatmul(self):
        f = G["torch_npu.npu_transpose_batchmatmul"]
        x, w = rnd(4, 16, 128), rnd(4, 128, 256)                  # (B,M,K), (B,K,N)
        y = f(x, w, perm_x1=[0, 1, 2], perm_x2=[0, 1, 2], perm_y=[1, 0, 2])
        self.shapes(y, ((16, 4, 256), bf))
        ref = torch.bmm(x.float(), w.float()).permute(1, 0, 2).to(bf)
        self.assertTrue(torch.allclose(y.float(), ref.float(), rtol=1e-2, atol=1e-2))
        self.shapes(f(x.permute(1, 0, 2).contiguous(), w, perm_x1=[1, 0, 2]), ((16, 4, 256), bf))
        self.rejects("torch_npu.npu_transpose_batchmatmul", "weight", x, w.transpose(1, 2))
        self.rejects("torch_npu.npu_transpose_batchmatmul", "perm_x1", x, w, perm_x1=[2, 1, 0])
        self.rejects("torch_npu.npu_transpose_batchmatmul", "weight", rnd(4, 16, 128), rnd(4, 128, 200))  # N % 128
        self.rejects("torch_npu.npu_transpose_batchmatmul", "weight", x, w.float())

    def test_quant_matmul(self):
        f = G["torch_npu.npu_quant_matmul"]
        x, w = rnd(8, 64, dtype=i8), mark_format(rnd(64, 32, dtype=i8), "FRACTAL_NZ")
        scale, bias = torch.rand(32), rnd(32)
        y = f(x, w, scale, bias=bias, output_dtype=bf)
        self.shapes(y, ((8, 32), bf))
        ref = (x.float() @ w.float()) * scale + bias.float()
        self.assertTrue(torch.allclose(y.float(), ref, rtol=1e-2, atol=1e-1))
        pt = torch.rand(8)
        self.shapes(f(x, w, scale, pertoken_scale=pt, output_dtype=bf), ((8, 32), bf))
        bits = torch.tensor([0.5], dtype=f32).view(i32).to(i64).expand(32).contiguous()  # npu_trans_quant_param
        y = f(x, w, bits, output_dtype=torch.float16)
        self.assertTrue(torch.allclose(y.float(), (x.float() @ w.float()) * 0.5, rtol=1e-2, atol=1e-1))
        self.rejects("torch_npu.npu_quant_matmul", "x2", x, w.t(), scale, output_dtype=bf)
        self.rejects("torch_npu.npu_quant_matmul", "x1", x.to(bf), w, scale, output_dtype=bf)
        self.rejects("torch_npu.npu_quant_matmul", "x1", mark_format(x.clone(), "FRACTAL_NZ"), w, scale, output_dtype=bf)
        self.rejects("torch_npu.npu_quant_matmul", "scale", x, w, torch.rand(7), output_dtype=bf)
        self.rejects("torch_npu.npu_quant_matmul", "pertoken_scale", x, w, scale, pertoken_scale=torch.rand(9))
        self.rejects("torch_npu.npu_quant_matmul", "bias", x, w, scale, bias=rnd(31), output_dtype=bf)
        self.rejects("torch_npu.npu_quant_matmul", "output_dtype", x, w, scale, output_dtype=f32)

    def gmm_args(self, m=10, k=64, n=32, e=4):
        x = rnd(m, k, dtype=i8)
        w = mark_format(rnd(e, k, n, dtype=i8), "FRACTAL_NZ")
        return x, w, torch.tensor([3, 6, 8, 10][:e], dtype=i64), torch.rand(e, n), torch.rand(m)

    def test_grouped_matmul(self):
        f = G["torch_npu.npu_grouped_matmul"]
        x, w, gl, scale, pt = self.gmm_args()
        y = f(x=[x], weight=[w], split_item=2, group_list_type=0, group_type=0, group_list=gl, scale=[scale],
              per_token_scale=[pt], output_dtype=bf)
        self.assertEqual(len(y), 1)
        self.shapes(y[0], ((10, 32), bf))
        ref = torch.cat([(x[s:t].float() @ w[g].float()) * scale[g] for g, (s, t) in
                         enumerate([(0, 3), (3, 6), (6, 8), (8, 10)])]) * pt.unsqueeze(-1)
        self.assertTrue(torch.allclose(y[0].float(), ref, rtol=1e-2, atol=1e-1))
        # float, not grouped
        xs, ws = rnd(6, 16), rnd(16, 8)
        y = f([xs], [ws], split_item=0)
        self.shapes(y[0], ((6, 8), bf))
        kw = dict(split_item=2, group_list_type=0, group_type=0, output_dtype=bf)
        self.rejects("torch_npu.npu_grouped_matmul", "group_list", x=[x], weight=[w], group_list=gl[:3],
                     scale=[scale], **kw)                           # one group short
        self.rejects("torch_npu.npu_grouped_matmul", "group_list", x=[x], weight=[w], group_list=gl.to(i32),
                     scale=[scale], **kw)
        self.rejects("torch_npu.npu_grouped_matmul", "group_list", x=[x], weight=[w],
                     group_list=torch.tensor([3, 6, 8, 12], dtype=i64), scale=[scale], **kw)  # past x's rows
        self.rejects("torch_npu.npu_grouped_matmul", "weight[0]", x=[x], weight=[w.transpose(1, 2)], group_list=gl,
                     scale=[scale], **kw)
        self.rejects("torch_npu.npu_grouped_matmul", "scale", x=[x], weight=[w], group_list=gl, **kw)
        self.rejects("torch_npu.npu_grouped_matmul", "x[0]", x=[mark_format(x.clone(), "FRACTAL_NZ")], weight=[w],
                     group_list=gl, scale=[scale], **kw)
        self.rejects("torch_npu.npu_grouped_matmul", "scale[0]", x=[x], weight=[w], group_list=gl,
                     scale=[scale.t()], **kw)

    def test_grouped_matmul_swiglu_quant(self):
        f = G["torch_npu.npu_grouped_matmul_swiglu_quant"]
        x, w, gl, ws, xs = self.gmm_args()
        y, s, _ = f(x=x, weight=w, group_list=gl, weight_scale=ws, x_scale=xs)
        self.shapes((y, s), ((10, 16), i8), ((10,), f32))
        self.rejects("torch_npu.npu_grouped_matmul_swiglu_quant", "weight", x=x, weight=w.transpose(1, 2),
                     group_list=gl, weight_scale=ws, x_scale=xs)
        self.rejects("torch_npu.npu_grouped_matmul_swiglu_quant", "x_scale", x=x, weight=w, group_list=gl,
                     weight_scale=ws, x_scale=xs[:5])
        self.rejects("torch_npu.npu_grouped_matmul_swiglu_quant", "weight_scale", x=x, weight=w, group_list=gl,
                     weight_scale=ws.t(), x_scale=xs)
        self.rejects("torch_npu.npu_grouped_matmul_swiglu_quant", "x", x=x.to(bf), weight=w, group_list=gl,
                     weight_scale=ws, x_scale=xs)
        self.rejects("torch_npu.npu_grouped_matmul_swiglu_quant", "x", x=mark_format(x.clone(), "FRACTAL_NZ"), weight=w,
                     group_list=gl, weight_scale=ws, x_scale=xs)

    def test_meta(self):
        x = torch.empty(4099, 7168, dtype=bf, device="meta")
        w = torch.empty(7168, 2112, dtype=bf, device="meta")
        self.shapes(G["torch.mm"](x, w), ((4099, 2112), bf))
        xq = torch.empty(16, 7168, dtype=i8, device="meta")
        wq = torch.empty(32, 7168, 4096, dtype=i8, device="meta")
        gl = torch.empty(32, dtype=i64, device="meta")
        y = G["torch_npu.npu_grouped_matmul"](x=[xq], weight=[wq], split_item=2, group_type=0, group_list=gl,
                                              scale=[torch.empty(32, 4096, device="meta")], output_dtype=bf)
        self.shapes(y[0], ((16, 4096), bf))
        self.assertEqual(y[0].device.type, "meta")
        y, s, _ = G["torch_npu.npu_grouped_matmul_swiglu_quant"](
            x=xq, weight=wq, group_list=gl, weight_scale=torch.empty(32, 4096, device="meta"),
            x_scale=torch.empty(16, device="meta"))
        self.shapes((y, s), ((16, 2048), i8), ((16,), f32))


class Norm(Base):
    def test_rms_norm(self):
        x, g = rnd(4, 64), rnd(64)
        y, rstd = G["torch_npu.npu_rms_norm"](x, g)
        self.shapes((y, rstd), ((4, 64), bf), ((4, 1), f32))
        ref = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * g.float()
        self.assertTrue(torch.allclose(y.float(), ref, rtol=1e-2, atol=1e-2))
        self.rejects("torch_npu.npu_rms_norm", "gamma", x, rnd(32))
        self.rejects("torch_npu.npu_rms_norm", "gamma", x, rnd(64, dtype=torch.float16))
        self.rejects("torch_npu.npu_rms_norm", "x", rnd(4, 64, dtype=i32), g)
        self.rejects("torch_npu.npu_rms_norm", "epsilon", x, g, -1.0)

    def test_add_rms_norm(self):
        x1, x2, g = rnd(3, 64), rnd(3, 64), rnd(64)
        y, rstd, x = G["torch_npu.npu_add_rms_norm"](x1, x2, g, 1e-6)
        self.shapes((y, rstd, x), ((3, 64), bf), ((3, 1), f32), ((3, 64), bf))
        self.assertTrue(torch.equal(x, (x1.float() + x2.float()).to(bf)))
        self.rejects("torch_npu.npu_add_rms_norm", "x2", x1, rnd(3, 32), g)
        self.rejects("torch_npu.npu_add_rms_norm", "x2", x1, x2.float(), g)
        self.rejects("torch_npu.npu_add_rms_norm", "gamma", x1, x2, rnd(63))

    def test_add_rms_norm_bias(self):
        f = "torch.ops._C_ascend.npu_add_rms_norm_bias"
        x1, x2, g, b = rnd(3, 64), rnd(3, 64), rnd(64), rnd(64)
        y, rstd, x = G[f](x1, x2, g, b, 1e-6)
        y0, _, _ = G[f](x1, x2, g, None, 1e-6)
        self.assertTrue(torch.allclose(y.float(), y0.float() + b.float(), rtol=2e-2, atol=5e-2))
        self.shapes((y, rstd, x), ((3, 64), bf), ((3, 1), f32), ((3, 64), bf))
        self.rejects(f, "beta", x1, x2, g, rnd(32), 1e-6)

    def test_add_rms_norm_dynamic_quant(self):
        f = "torch_npu.npu_add_rms_norm_dynamic_quant"
        x1, x2, g, s1 = rnd(16, 64), rnd(16, 64), rnd(64), rnd(64)
        out = G[f](x1, x2, g, smooth_scale1=s1, epsilon=1e-6, output_mask=[True, False])
        self.shapes(out, ((16, 64), i8), ((16, 64), i8), ((16, 64), bf), ((16,), f32), ((16,), f32))
        y1, _, _, sc1, _ = out
        ref, _, _ = G["torch_npu.npu_add_rms_norm"](x1, x2, g)
        deq = y1.float() * sc1.unsqueeze(-1)
        self.assertLess(float((deq - ref.float() * s1.float()).abs().max()), float(sc1.max()) * 0.51 + 0.05)
        self.rejects(f, "smooth_scale1", x1, x2, g, smooth_scale1=rnd(32))
        self.rejects(f, "smooth_scale2", x1, x2, g, smooth_scale2=s1)
        self.rejects(f, "gamma", x1, x2, rnd(64, dtype=f32))
        self.rejects(f, "x1", x1.float(), x2.float(), g.float())
        self.rejects(f, "output_mask", x1, x2, g, output_mask=[True])


class Quant(Base):
    def test_dynamic_quant(self):
        x = rnd(16, 64)
        y, s = G["torch_npu.npu_dynamic_quant"](x)
        self.shapes((y, s), ((16, 64), i8), ((16,), f32))
        self.assertLessEqual(float((y.float() * s.unsqueeze(-1) - x.float()).abs().max()), float(s.max()) * 0.51)
        self.rejects("torch_npu.npu_dynamic_quant", "x", x.float())
        self.rejects("torch_npu.npu_dynamic_quant", "smooth_scales", x, smooth_scales=rnd(32))
        self.rejects("torch_npu.npu_dynamic_quant", "x", rnd(64))
        y4, _ = G["torch_npu.npu_dynamic_quant"](x, dst_type=torch.quint4x2)
        self.shapes(y4, ((16, 8), i32))

    def test_quantize(self):
        f = G["torch_npu.npu_quantize"]
        x, s, o = rnd(16, 64), rnd(64), rnd(64)
        y = f(x, s, o, torch.qint8, -1, False)
        self.shapes(y, ((16, 64), i8))
        ref = torch.round(x.float() * s.float() + o.float()).clamp(-128, 127).to(i8)
        self.assertTrue(torch.equal(y, ref))
        self.shapes(f(x, s, None, torch.quint8, -1, False), ((16, 64), torch.uint8))
        self.rejects("torch_npu.npu_quantize", "scales", x, rnd(16), None, torch.qint8, -1, False)  # axis 0's size
        self.rejects("torch_npu.npu_quantize", "zero_points", x, s, rnd(8), torch.qint8, -1, False)
        self.rejects("torch_npu.npu_quantize", "dtype", x, s, o, torch.float16, -1, False)
        self.rejects("torch_npu.npu_quantize", "input", x.to(i32), s, o, torch.qint8, -1, False)
        self.rejects("torch_npu.npu_quantize", "axis", x, s, o, torch.qint8, 2, False)


class Elementwise(Base):
    def test_swiglu(self):
        x = rnd(4, 64)
        y = G["torch_npu.npu_swiglu"](x, dim=-1)
        self.shapes(y, ((4, 32), bf))
        a, b = x.float().chunk(2, -1)
        self.assertTrue(torch.allclose(y.float(), torch.nn.functional.silu(a) * b, rtol=1e-2, atol=1e-2))
        self.rejects("torch_npu.npu_swiglu", "x", rnd(4, 63), dim=-1)
        self.rejects("torch_npu.npu_swiglu", "dim", x, dim=2)
        self.rejects("torch_npu.npu_swiglu", "x", rnd(4, 64, dtype=i32))

    def test_slice(self):
        x = rnd(16, 64)
        y = G["torch_npu.npu_slice"](x, [2, 0], [8, 64])
        self.assertTrue(torch.equal(y, x[2:10]))
        self.rejects("torch_npu.npu_slice", "size", x, [0, 0], [17, 64])
        self.rejects("torch_npu.npu_slice", "offsets", x, [0], [8, 64])
        self.rejects("torch_npu.npu_slice", "size", x, [0, 0], [8])

    def test_scatter_nd_update(self):
        f = "torch_npu.npu_scatter_nd_update"
        data, upd = rnd(10, 8), rnd(3, 8)
        ind = torch.tensor([[7], [2], [5]], dtype=i32)
        y = G[f](data, ind, upd)
        ref = data.clone()
        ref[[7, 2, 5]] = upd
        self.assertTrue(torch.equal(y, ref))
        self.assertFalse(torch.equal(y, data))  # a copy: data itself is untouched
        self.rejects(f, "indices", data, torch.tensor([[7], [12], [5]], dtype=i32), upd)   # out of range
        self.rejects(f, "updates", data, ind, rnd(3, 7))
        self.rejects(f, "indices", data, ind.float(), upd)
        self.rejects(f, "updates", data, ind, upd.float())


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
