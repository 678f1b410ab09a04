"""Unit tests of the attention / MLA / RoPE-cache / MoE goldens (lua/perfscript/replay/golden/
attention.py, mla.py, rope_cache.py, moe.py), run by test_golden_attn.sh:

* each golden computes what an independent reference says on a small valid case (two goldens
  against each other where they overlap: paged and dense FIA, SFA over every position and
  causal FIA, ring-MLA's merge against one pass, permute then unpermute), and gives the same
  shapes and dtypes on meta;
* a deliberately wrong argument (head count, short block table, dtype, layout, transposed
  weight, ...) is rejected with a GoldenError naming it."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lua", "perfscript", "replay"))

import torch  # noqa: E402

from golden import GoldenError  # noqa: E402
from golden import attention, mla, moe, rope_cache  # noqa: E402

BF = torch.bfloat16
I32 = torch.int32


def rnd(*shape, dtype=BF, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(shape, generator=g).to(dtype)


def ints(vals, dtype=I32):
    return torch.tensor(vals, dtype=dtype)


def to_meta(v):
    if isinstance(v, torch.Tensor):
        return v.to("meta")
    if isinstance(v, list):
        return [to_meta(x) for x in v]
    return v


def ref_attention(q, k, v, scale, causal):
    """q (S, N, D), k/v (L, Nk, D): plain softmax attention, grouped heads."""
    rep = q.shape[1] // k.shape[1]
    k = k.float().repeat_interleave(rep, 1)
    v = v.float().repeat_interleave(rep, 1)
    s = torch.einsum("snd,lnd->nsl", q.float(), k) * scale
    if causal:
        S, L = q.shape[0], k.shape[0]
        s = s.masked_fill(torch.arange(L)[None, :] > torch.arange(S)[:, None] + (L - S), float("-inf"))
    return torch.einsum("nsl,lnd->snd", torch.softmax(s, -1), v)


class Case(unittest.TestCase):
    def rejects(self, fn, kwargs, name, *words, args=()):
        """fn(*args, **kwargs) raises GoldenError whose message names `name` (and words)."""
        with self.assertRaises(GoldenError) as cm:
            fn(*args, **kwargs)
        msg = str(cm.exception)
        self.assertIn(name, msg)
        for w in words:
            self.assertIn(w, msg)
        return msg

    def same_on_meta(self, fn, args, kwargs, res, host=()):
        """The same call on meta (host tensors, named in host, stay on the CPU as the executor
        builds them) gives the same shapes and dtypes."""
        m = fn(*to_meta(list(args)), **{k: v if k in host else to_meta(v) for k, v in kwargs.items()})
        res = res if isinstance(res, (tuple, list)) else [res]
        m = m if isinstance(m, (tuple, list)) else [m]
        self.assertEqual([(tuple(x.shape), x.dtype) for x in res], [(tuple(x.shape), x.dtype) for x in m])

    def close(self, a, b, tol=3e-2):
        self.assertTrue(torch.allclose(a.float(), b.float(), atol=tol, rtol=tol),
                        f"max diff {(a.float() - b.float()).abs().max().item()}")


# ---- FusedInferAttentionScore ---------------------------------------------------------------

def fia_paged():
    """MLA decode: 2 sequences of 40 and 33 positions in blocks of 16, 8 query heads, 1 kv head."""
    key = rnd(6, 1, 16, 32)
    return dict(query=rnd(2, 8, 1, 32), key=key, value=key, query_rope=rnd(2, 8, 1, 16), key_rope=rnd(6, 1, 16, 16),
                block_table=ints([[0, 1, 2], [3, 4, 5]]), actual_seq_lengths=[1, 1], actual_seq_lengths_kv=[40, 33],
                num_heads=8, num_key_value_heads=1, input_layout="BNSD_NBSD", block_size=16, sparse_mode=0,
                scale=0.1)


def fia_tnd():
    return dict(query=rnd(10, 4, 32), key=rnd(10, 2, 32, seed=1), value=rnd(10, 2, 32, seed=2),
                atten_mask=torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1), actual_seq_lengths=[4, 10],
                actual_seq_lengths_kv=[4, 10], num_heads=4, num_key_value_heads=2, input_layout="TND", sparse_mode=3,
                scale=0.2)


class FIA(Case):
    f = staticmethod(attention.npu_fused_infer_attention_score)

    def test_paged_mla_matches_the_reference(self):
        kw = fia_paged()
        out, lse = self.f(**kw)
        self.assertEqual((tuple(out.shape), out.dtype, tuple(lse.shape)), ((8, 2, 1, 32), BF, (0,)))
        for b, (L, blocks) in enumerate([(40, [0, 1, 2]), (33, [3, 4, 5])]):
            k = torch.cat([kw["key"][i, 0] for i in blocks])[:L]                 # (L, D)
            kr = torch.cat([kw["key_rope"][i, 0] for i in blocks])[:L]
            q = torch.cat([kw["query"][b, :, 0], kw["query_rope"][b, :, 0]], -1)  # (N, D + Dr)
            want = ref_attention(q.unsqueeze(0), torch.cat([k, kr], -1).unsqueeze(1), k.unsqueeze(1), 0.1, False)
            self.close(out[:, b, 0], want[0])
        self.same_on_meta(self.f, (), kw, (out, lse))

    def test_tnd_causal_gqa_and_lse(self):
        kw = dict(fia_tnd(), softmax_lse_flag=True)
        out, lse = self.f(**kw)
        self.assertEqual((tuple(out.shape), tuple(lse.shape)), ((10, 4, 32), (10, 4, 1)))
        for s, e in ((0, 4), (4, 10)):
            want = ref_attention(kw["query"][s:e], kw["key"][s:e], kw["value"][s:e], 0.2, True)
            self.close(out[s:e], want)

    def test_paged_equals_dense(self):
        kw = fia_paged()
        # the same sequences laid out densely (TND, no block table)
        k = [torch.cat([kw["key"][i, 0] for i in blocks])[:L] for L, blocks in ((40, [0, 1, 2]), (33, [3, 4, 5]))]
        kr = [torch.cat([kw["key_rope"][i, 0] for i in blocks])[:L] for L, blocks in ((40, [0, 1, 2]), (33, [3, 4, 5]))]
        dense = dict(query=kw["query"][:, :, 0], key=torch.cat(k).unsqueeze(1), value=torch.cat(k).unsqueeze(1),
                     query_rope=kw["query_rope"][:, :, 0], key_rope=torch.cat(kr).unsqueeze(1),
                     actual_seq_lengths=[1, 2], actual_seq_lengths_kv=[40, 73], num_heads=8, num_key_value_heads=1,
                     input_layout="TND", scale=0.1)
        out, _ = self.f(**kw)
        out2, _ = self.f(**dense)
        self.close(out[:, :, 0].transpose(0, 1), out2)

    def test_wrong_arguments_are_named(self):
        self.rejects(self.f, dict(fia_paged(), num_heads=4), "num_heads", "8 heads")
        self.rejects(self.f, dict(fia_paged(), block_table=ints([[0, 1], [3, 4]])), "block_table", "too short")
        self.rejects(self.f, dict(fia_paged(), block_table=ints([[0, 1, 99], [3, 4, 5]])), "block_table", "99")
        self.rejects(self.f, dict(fia_paged(), block_table=ints([[0, 1, 2], [3, 4, 5]], torch.int64)), "block_table", "int32")
        self.rejects(self.f, dict(fia_paged(), num_key_value_heads=2), "key", "num_key_value_heads says 2")
        self.rejects(self.f, dict(fia_paged(), block_size=32), "key", "block_size says 32")
        self.rejects(self.f, dict(fia_paged(), actual_seq_lengths_kv=[40]), "actual_seq_lengths_kv")
        self.rejects(self.f, dict(fia_paged(), input_layout="TND"), "query", "3-D")
        self.rejects(self.f, dict(fia_paged(), input_layout="NCHW"), "input_layout")
        kw = fia_paged()
        self.rejects(self.f, dict(kw, query=kw["query"].float()), "query", "float32")
        self.rejects(self.f, dict(kw, key_rope=None), "query_rope")
        self.rejects(self.f, dict(fia_tnd(), atten_mask=torch.zeros(16, 16, dtype=torch.bool)), "atten_mask", "2048")
        self.rejects(self.f, dict(fia_tnd(), actual_seq_lengths=[4, 9]), "actual_seq_lengths", "10 tokens")
        self.rejects(self.f, dict(fia_tnd(), num_key_value_heads=3), "num_key_value_heads", "does not divide")
        self.rejects(self.f, dict(fia_tnd(), quant_scale2=torch.ones(1)), "quant_scale2")


# ---- SparseFlashAttention -------------------------------------------------------------------

def sfa(topk=8):
    key = rnd(4, 8, 1, 64)
    idx = torch.arange(topk, dtype=I32).repeat(6, 1, 1)  # (6, 1, topk): the first topk positions
    return dict(query=rnd(6, 4, 64), key=key, value=key, sparse_indices=idx, scale_value=0.125, sparse_block_size=1,
                block_table=ints([[0, 1], [2, 3]]), actual_seq_lengths_query=ints([3, 6]),
                actual_seq_lengths_kv=ints([16, 10]), query_rope=rnd(6, 4, 16), key_rope=rnd(4, 8, 1, 16),
                layout_query="TND", layout_kv="PA_BSND", sparse_mode=3)


class SFA(Case):
    f = staticmethod(attention.npu_sparse_flash_attention)

    def test_every_position_selected_is_causal_attention(self):
        kw = sfa(topk=16)
        out = self.f(**kw)
        self.assertEqual((tuple(out.shape), out.dtype), ((6, 4, 64), BF))
        # the same through the FIA golden: paged TND prefill, causal (sparse mode 3)
        fia, _ = attention.npu_fused_infer_attention_score(
            kw["query"], kw["key"].transpose(1, 2).contiguous(), kw["value"].transpose(1, 2).contiguous(),
            query_rope=kw["query_rope"], key_rope=kw["key_rope"].transpose(1, 2).contiguous(),
            atten_mask=torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1), block_table=kw["block_table"],
            actual_seq_lengths=[3, 6], actual_seq_lengths_kv=[16, 10], num_heads=4, num_key_value_heads=1,
            input_layout="TND", sparse_mode=3, block_size=8, scale=0.125)
        self.close(out, fia)
        self.same_on_meta(self.f, (), kw, out)

    def test_wrong_arguments_are_named(self):
        kw = sfa()
        self.rejects(self.f, dict(kw, sparse_indices=kw["sparse_indices"].long()), "sparse_indices", "int32")
        self.rejects(self.f, dict(kw, sparse_indices=kw["sparse_indices"][:5]), "sparse_indices", "shape")
        self.rejects(self.f, dict(kw, block_table=ints([[0], [2]])), "block_table", "too short")
        self.rejects(self.f, dict(kw, key_rope=rnd(4, 8, 1, 8)), "key_rope")
        self.rejects(self.f, dict(kw, layout_query="BSND"), "query", "4-D")
        self.rejects(self.f, dict(kw, actual_seq_lengths_query=ints([3, 5])), "actual_seq_lengths_query", "6 tokens")
        self.rejects(self.f, dict(kw, key=rnd(4, 8, 3, 64), value=rnd(4, 8, 3, 64)), "key", "do not divide")


# ---- LightningIndexer -----------------------------------------------------------------------

def li():
    return dict(query=rnd(6, 4, 32), key=rnd(4, 8, 1, 32), weights=rnd(6, 4), actual_seq_lengths_query=ints([3, 6]),
                actual_seq_lengths_key=ints([16, 10]), block_table=ints([[0, 1], [2, 3]]), layout_query="TND",
                layout_key="PA_BSND", sparse_count=8, sparse_mode=3)


class LI(Case):
    f = staticmethod(attention.npu_lightning_indexer)

    def test_top_positions_are_the_best_scores(self):
        kw = li()
        idx, val = self.f(**kw)
        self.assertEqual((tuple(idx.shape), idx.dtype, tuple(val.shape)), ((6, 1, 8), I32, (0,)))
        # token 0 of batch 0 (3 queries, 16 keys) sees keys 0..13 (causal): its first pick is the best
        k = torch.cat([kw["key"][0, :, 0], kw["key"][1, :, 0]])[:14].float()
        s = (torch.relu(kw["query"][0].float() @ k.T) * kw["weights"][0].float().unsqueeze(1)).sum(0)
        self.assertEqual(idx[0, 0, 0].item(), int(s.argmax()))
        self.assertTrue(bool((idx[0, 0] < 14).all()))
        # token 3 (batch 1's first of 3, 10 keys) sees 8 keys: all picked, no padding
        self.assertEqual(sorted(idx[3, 0].tolist()), list(range(8)))
        self.same_on_meta(self.f, (), kw, (idx, val))

    def test_wrong_arguments_are_named(self):
        kw = li()
        self.rejects(self.f, dict(kw, weights=rnd(6, 3)), "weights", "(6, 4)")
        self.rejects(self.f, dict(kw, sparse_count=4096), "sparse_count")
        self.rejects(self.f, dict(kw, actual_seq_lengths_key=ints([16, 17])), "block_table", "too short")
        self.rejects(self.f, dict(kw, key=rnd(4, 8, 1, 16)), "key", "last dim")


# ---- RINGMLAPrefillBF16Kernel ----------------------------------------------------------------

def ring(q=8, kv=8, heads=2):
    return dict(q_nope=rnd(q, heads, 128), q_rope=rnd(q, heads, 64), k_nope=rnd(kv, heads, 128, seed=1),
                k_rope=rnd(kv, heads, 64, seed=1), value=rnd(kv, heads, 128, seed=2), mask=torch.zeros(512, 512, dtype=BF),
                seqlen=ints([[q], [kv]]), head_num=heads, kv_head_num=heads, qk_scale=0.07, kernel_type="kernel_type_high_precision",
                mask_type="no_mask", input_layout="type_bsnd", calc_type="calc_type_first_ring")


class RingMLA(Case):
    f = staticmethod(mla.npu_ring_mla)

    def test_two_rings_merge_into_one_pass(self):
        a, b = ring(), ring()
        b.update(k_nope=rnd(8, 2, 128, seed=5), k_rope=rnd(8, 2, 64, seed=5), value=rnd(8, 2, 128, seed=6))
        o1, l1 = self.f(**a)
        self.assertEqual((tuple(o1.shape), tuple(l1.shape), l1.dtype), ((8, 2, 128), (2, 8), torch.float32))
        o2, l2 = self.f(**dict(b, calc_type="calc_type_default", pre_out=o1, prev_lse=l1))
        whole = dict(a, k_nope=torch.cat([a["k_nope"], b["k_nope"]]), k_rope=torch.cat([a["k_rope"], b["k_rope"]]),
                     value=torch.cat([a["value"], b["value"]]), seqlen=ints([[8], [16]]))
        o, l = self.f(**whole)
        self.close(o2, o)
        self.close(l2, l, 1e-3)
        self.same_on_meta(self.f, (), a, (o1, l1), host=("seqlen",))

    def test_triu_is_causal_and_out_form_writes_its_outputs(self):
        kw = dict(ring(), mask_type="mask_type_triu", output=torch.empty(8, 2, 128, dtype=BF),
                  softmax_lse=torch.empty(2, 8))
        o, _ = self.f(**kw)
        self.assertIs(o, kw["output"])
        q = torch.cat([kw["q_nope"], kw["q_rope"]], -1)
        k = torch.cat([kw["k_nope"], kw["k_rope"]], -1)
        self.close(o, ref_attention(q, k, kw["value"], 0.07, True))

    def test_wrong_arguments_are_named(self):
        self.rejects(self.f, dict(ring(), head_num=4), "q_nope", "(8, 4, 128)")
        self.rejects(self.f, dict(ring(), seqlen=ints([[8], [4]])), "seqlen", "k_nope has 8 tokens")
        self.rejects(self.f, dict(ring(kv=4), seqlen=ints([[8], [4]])), "seqlen", "kv length 4 < query length 8")
        self.rejects(self.f, dict(ring(), mask_type="mask_type_triu", mask=torch.zeros(256, 256, dtype=BF)), "mask", "(512, 512)")
        self.rejects(self.f, dict(ring(), seqlen=ints([[8], [8]]).long()), "seqlen", "int32")
        self.rejects(self.f, dict(ring(), calc_type="calc_type_default"), "pre_out", "required")
        self.rejects(self.f, dict(ring(), q_rope=rnd(8, 2, 32)), "q_rope")


# ---- PagedCacheLoadNdKernel and ReshapeAndCacheNdKernel --------------------------------------

def pcl():
    return dict(key_cache=rnd(8, 4, 1, 32), value_cache=rnd(8, 4, 1, 16, seed=1), block_table=ints([[0, 1, 2], [3, 4, 5]]),
                context_lens=ints([5, 7]), key=torch.empty(12, 1, 32, dtype=BF), value=torch.empty(12, 1, 16, dtype=BF))


class CacheOps(Case):
    def test_paged_cache_load_gathers_the_blocks(self):
        kw = pcl()
        k, v = mla.npu_paged_cache_load(kw.pop("key_cache"), kw.pop("value_cache"), kw.pop("block_table"),
                                        kw.pop("context_lens"), **kw)
        src = pcl()
        self.assertTrue(torch.equal(k[:4], src["key_cache"][0]))
        self.assertTrue(torch.equal(k[4], src["key_cache"][1, 0]))
        self.assertTrue(torch.equal(v[5:9], src["value_cache"][3]))
        self.assertTrue(torch.equal(v[11], src["value_cache"][4, 2]))

    def test_paged_cache_load_wrong_arguments(self):
        f = mla.npu_paged_cache_load
        self.rejects(f, dict(pcl(), context_lens=ints([5, 6])), "context_lens", "11")
        self.rejects(f, dict(pcl(), block_table=ints([[0], [3]])), "block_table", "too short")
        self.rejects(f, dict(pcl(), value_cache=rnd(8, 4, 1, 24), value=torch.empty(12, 1, 24, dtype=BF)),
                     "value_cache", "32-byte")
        self.rejects(f, dict(pcl(), key=torch.empty(12, 1, 32)), "key", "float32")

    def test_reshape_and_cache_writes_the_slots(self):
        key, value = rnd(4, 2, 16), rnd(4, 2, 8)
        kc, vc = torch.zeros(3, 4, 2, 16, dtype=BF), torch.zeros(3, 4, 2, 8, dtype=BF)
        self.assertIsNone(mla._npu_reshape_and_cache(key, value, kc, vc, ints([0, 5, 6, 11])))
        self.assertTrue(torch.equal(kc[1, 1], key[1]) and torch.equal(vc[2, 3], value[3]))
        self.assertEqual(mla._npu_reshape_and_cache.inplace_outputs, (2, 3))

    def test_reshape_and_cache_wrong_arguments(self):
        f = mla._npu_reshape_and_cache
        base = dict(key=rnd(4, 2, 16), value=rnd(4, 2, 8), key_cache=torch.zeros(3, 4, 2, 16, dtype=BF),
                    value_cache=torch.zeros(3, 4, 2, 8, dtype=BF), slot_indices=ints([0, 5, 6, 11]))
        self.rejects(f, dict(base, slot_indices=ints([0, 5, 6, 12])), "slot_indices", "12 slots")
        self.rejects(f, dict(base, slot_indices=ints([0, 5, 5, 11])), "slot_indices", "twice")
        self.rejects(f, dict(base, slot_indices=ints([0, 5, 6, 11], torch.int64)), "slot_indices", "int32")
        self.rejects(f, dict(base, key_cache=torch.zeros(3, 4, 1, 16, dtype=BF)), "key_cache", "(3, 4, 2, 16)")


# ---- RoPE and RoPE+cache ---------------------------------------------------------------------

def kvr():
    return dict(kv=rnd(2, 1, 3, 576), gamma=rnd(512), cos=rnd(2, 1, 3, 64), sin=rnd(2, 1, 3, 64, seed=1),
                index=torch.tensor([0, 1, 2, 5, 6, 7]), k_cache=torch.zeros(2, 4, 1, 64, dtype=BF),
                ckv_cache=torch.zeros(2, 4, 1, 512, dtype=BF), epsilon=1e-5, cache_mode="PA_BNSD", is_output_kv=True)


def qkv():
    return dict(input=rnd(3, 1024 + 2 * 256), cos_sin_cache=rnd(16, 64), positions=torch.tensor([0, 5, 9]),
                q_weight=rnd(128), k_weight=rnd(128, seed=1), q_hidden_size=1024, kv_hidden_size=256, head_dim=128,
                eps=1e-6)


class Rope(Case):
    def test_interleave_rope_pairs(self):
        x, cos, sin = rnd(2, 3, 4, 64, dtype=torch.float32), rnd(2, 1, 4, 64, dtype=torch.float32), rnd(2, 1, 4, 64, seed=3, dtype=torch.float32)
        x, cos, sin = x.to(BF), cos.to(BF), sin.to(BF)
        y = rope_cache.npu_interleave_rope(x, cos, sin)
        # element 0 is x0*cos0 - x1*sin0; element 32 (the odd half) is x1*cos32 + x0*sin32
        xf, c, s = x.float(), cos.float(), sin.float()
        self.close(y[1, 2, 3, 0], xf[1, 2, 3, 0] * c[1, 0, 3, 0] - xf[1, 2, 3, 1] * s[1, 0, 3, 0])
        self.close(y[1, 2, 3, 32], xf[1, 2, 3, 1] * c[1, 0, 3, 32] + xf[1, 2, 3, 0] * s[1, 0, 3, 32])
        self.same_on_meta(rope_cache.npu_interleave_rope, (x, cos, sin), {}, y)
        f = rope_cache.npu_interleave_rope
        self.rejects(f, {}, "x", "64", args=(rnd(2, 3, 4, 32), rnd(2, 1, 4, 32), rnd(2, 1, 4, 32)))
        self.rejects(f, {}, "cos", args=(x, rnd(2, 2, 4, 64), rnd(2, 2, 4, 64)))
        self.rejects(f, {}, "cos", "bfloat16", args=(x, cos.half(), sin.half()))

    def test_kv_rmsnorm_rope_cache_scatters_into_the_cache(self):
        kw = kvr()
        kc, ckv, k_rope, c_kv = rope_cache.npu_kv_rmsnorm_rope_cache(**kw)
        self.assertEqual([tuple(t.shape) for t in (kc, ckv, k_rope, c_kv)], [(2, 4, 1, 64), (2, 4, 1, 512), (2, 1, 3, 64), (2, 1, 3, 512)])
        self.assertTrue(torch.equal(kc[1, 1, 0], k_rope[1, 0, 0]) and torch.equal(ckv[1, 3, 0], c_kv[1, 0, 2]))
        x = kw["kv"][0, 0, 1, :512].float()
        self.close(c_kv[0, 0, 1], x * torch.rsqrt(x.pow(2).mean() + 1e-5) * kw["gamma"].float())
        f = rope_cache.npu_kv_rmsnorm_rope_cache
        self.rejects(f, dict(kvr(), kv=rnd(2, 1, 3, 512)), "kv", "576")
        self.rejects(f, dict(kvr(), index=torch.tensor([0, 1, 2, 5, 6, 8])), "index", "8 positions")
        self.rejects(f, dict(kvr(), gamma=rnd(256)), "gamma")
        self.rejects(f, dict(kvr(), index=torch.arange(6, dtype=I32)), "index", "int64")
        self.rejects(f, dict(kvr(), cache_mode="BNSD"), "cache_mode")

    def test_qkv_rmsnorm_rope(self):
        kw = qkv()
        q, k, v = rope_cache.qkv_rmsnorm_rope(**kw)
        self.assertEqual([tuple(t.shape) for t in (q, k, v)], [(3, 1024), (3, 256), (3, 256)])
        self.assertTrue(torch.equal(v, kw["input"][:, 1280:]))
        # the part of a head past the rope dim is only normalised
        h = kw["input"][1, 128:256].float()
        self.close(q[1, 128 + 64:256], (h * torch.rsqrt(h.pow(2).mean() + 1e-6) * kw["q_weight"].float())[64:])
        self.same_on_meta(rope_cache.qkv_rmsnorm_rope, (), kw, (q, k, v))
        f = rope_cache.qkv_rmsnorm_rope
        self.rejects(f, dict(qkv(), head_dim=96), "head_dim", "does not divide")
        self.rejects(f, dict(qkv(), positions=torch.tensor([0, 5, 20])), "positions", "16 rows")
        self.rejects(f, dict(qkv(), kv_hidden_size=512), "input", "(3, 2048)")
        self.rejects(f, dict(qkv(), q_weight=rnd(64)), "q_weight")


# ---- MoE -------------------------------------------------------------------------------------

def gate():
    return dict(x=rnd(4, 64), k=4, bias=rnd(64, seed=1), k_group=2, group_count=8, group_select_mode=1, renorm=0,
                norm_type=1)


def dfc(int8=False):
    w1 = rnd(2, 16, 8)
    w2 = rnd(2, 4, 16, seed=1)
    if int8:
        w1, w2 = torch.randint(-8, 8, (2, 16, 8), dtype=torch.int8), torch.randint(-8, 8, (2, 4, 16), dtype=torch.int8)
    return dict(x=rnd(4, 16, seed=2), weight1=[w1], weight2=[w2], expert_idx=ints([[0, 3], [1, 2], [5, 4], [6, 7]]),
                scale1=[torch.full((2, 8), 0.5)], scale2=[torch.full((2, 16), 0.25)],
                probs=torch.tensor([[0.5, 0.5], [0.7, 0.3], [1.0, 0.0], [0.2, 0.8]]), group="g", max_output_size=64,
                out=torch.empty(4, 16, dtype=BF), expert_token_nums=torch.zeros(2, dtype=I32))


class MoE(Case):
    def test_gating_top_k_picks_within_the_chosen_groups(self):
        kw = gate()
        y, idx, out = moe.npu_moe_gating_top_k(**kw)
        self.assertEqual([(tuple(t.shape), t.dtype) for t in (y, idx, out)],
                         [((4, 4), BF), ((4, 4), I32), ((4, 64), torch.float32)])
        s = torch.sigmoid(kw["x"].float()) + kw["bias"].float()
        g = s.reshape(4, 8, 8).topk(2, -1).values.sum(-1).topk(2, -1).indices
        for t in range(4):
            self.assertTrue(set((idx[t] // 8).tolist()) <= set(g[t].tolist()))
        self.close(y.float().sum(-1), torch.ones(4))
        self.same_on_meta(moe.npu_moe_gating_top_k, (), kw, (y, idx, out))
        f = moe.npu_moe_gating_top_k
        self.rejects(f, dict(gate(), k=20), "k", "<= 16")
        self.rejects(f, dict(gate(), bias=rnd(32)), "bias", "(64,)")
        self.rejects(f, dict(gate(), group_count=7), "group_count", "does not divide")
        self.rejects(f, dict(gate(), renorm=2), "renorm")
        self.rejects(f, dict(gate(), x=rnd(4, 4096), bias=rnd(4096), group_count=8), "x", "at most 2048")
        self.rejects(f, dict(gate(), x=rnd(4, 16), bias=rnd(16), group_count=16, k_group=8), "group_count", "hold 1 each")
        self.rejects(f, dict(gate(), x=rnd(4, 2048), bias=rnd(2048), group_count=128, k_group=2), "group_count", "32-aligned")
        self.rejects(f, dict(gate(), x=rnd(4, 64, dtype=torch.int32)), "x", "int32")

    def test_permute_then_unpermute_restores_the_tokens(self):
        tokens = rnd(4, 8)
        ind = torch.tensor([[2, 0], [1, 2], [0, 0], [1, 1]])
        perm, sidx = moe.npu_moe_token_permute(tokens, ind)
        self.assertEqual((tuple(perm.shape), tuple(sidx.shape), sidx.dtype), ((8, 8), (8,), I32))
        self.assertEqual(perm[0].tolist(), tokens[0].tolist())       # expert 0 first: token 0's second pick
        back = moe.npu_moe_token_unpermute(perm, sidx, torch.full((4, 2), 0.5, dtype=BF))
        self.close(back, tokens, 1e-2)
        self.same_on_meta(moe.npu_moe_token_permute, (tokens, ind), {}, (perm, sidx))
        self.rejects(moe.npu_moe_token_permute, {}, "indices", "3 rows", args=(tokens, ind[:3]))
        self.rejects(moe.npu_moe_token_permute, {}, "indices", args=(tokens, ind.float()))
        self.rejects(moe.npu_moe_token_unpermute, {}, "sorted_indices", "int32", args=(perm, sidx.long()))
        self.rejects(moe.npu_moe_token_unpermute, {}, "probs", args=(perm, sidx, torch.ones(4, 3, dtype=BF)))
        self.rejects(moe.npu_moe_token_unpermute, {}, "sorted_indices", "permutation",
                     args=(perm, torch.zeros(8, dtype=I32)))

    def test_dispatch_ffn_combine_is_the_weighted_expert_sum(self):
        for int8 in (False, True):
            kw = dfc(int8)
            out, etn = moe.dispatch_ffn_combine(**kw)
            self.assertIs(out, kw["out"])
            self.assertEqual(etn.tolist(), [4, 4])                      # ids mod 2 (each rank's local experts)
            if not int8:
                x = kw["x"].float()
                want = torch.zeros(4, 16)
                for t in range(4):
                    for j in range(2):
                        e = kw["expert_idx"][t, j].item() % 2
                        h = x[t] @ kw["weight1"][0][e].float()
                        a = torch.nn.functional.silu(h[:4]) * h[4:]
                        want[t] += kw["probs"][t, j] * (a @ kw["weight2"][0][e].float())
                self.close(out, want)
        f = moe.dispatch_ffn_combine
        w1 = dfc()["weight1"][0]
        self.rejects(f, dict(dfc(), weight1=[w1.transpose(1, 2).contiguous()]), "weight1[0]", "transposed")
        self.rejects(f, dict(dfc(), weight2=[rnd(2, 8, 16)]), "weight2[0]", "(2, 4, 16)")
        self.rejects(f, dict(dfc(), expert_idx=dfc()["expert_idx"].long()), "expert_idx", "int32")
        self.rejects(f, dict(dfc(), out=torch.empty(4, 8, dtype=BF)), "out", "(4, 16)")
        self.rejects(f, dict(dfc(), scale1=[torch.ones(2, 16)]), "scale1[0]")
        self.rejects(f, dict(dfc(), group=None), "group")


if __name__ == "__main__":
    unittest.main(verbosity=1)
