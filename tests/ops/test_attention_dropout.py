"""Attention dropout with an explicit mask (docs/attention.md, "Dropout"): torch_npu's bit packing of the mask,
the float64 reference's forward and backward against brute-force torch autograd of
out = (softmax(S) * keep / keep_prob) V, whose statistics stay the undropped softmax's, and the fusion_attention
kernel's forward against that reference under the attention accuracy standard (tests/ops/test_attention.py's)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.library import opcheck

import ascendc_ops
from accuracy import assert_accurate, np64
from ascendc_ops import precision as P
from ascendc_ops.harness.verify import attention_grad_standard as S
from ascendc_ops.ops import attention_reference as R
from ascendc_ops.ops.attention_args import (
    TOCKENS_MAX,
    compressed_mask,
    pack_dropout_mask,
    split_heads,
    unpack_dropout_mask,
)
from test_attention import DTYPES, P_ROUNDING, bounds, dname, merge_heads, score_error, torch_stats

TOL = dict(rtol=1e-10, atol=1e-12)
COMPRESSED = torch.from_numpy(compressed_mask())


def to_layout(x: torch.Tensor, layout: str) -> torch.Tensor:
    """[B, N, S, D] -> BNSD, BSND or BSH."""
    if layout == "BNSD":
        return x
    bsnd = x.transpose(1, 2)
    return bsnd if layout == "BSND" else bsnd.flatten(2)


def brute(q, k, v, masked, scale, keep, keep_prob):
    """q [B, Nq, Sq, D], k / v [B, Nkv, Skv, *], masked / keep [B, Nq, Sq, Skv] -> out, row max, row sum of
    the dropped attention (rows with every key masked: out 0)."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    s = (scale * q @ k.transpose(-1, -2)).masked_fill(masked, float("-inf"))
    empty = masked.all(dim=-1, keepdim=True)
    p = torch.where(empty, torch.zeros_like(s), torch.softmax(s, dim=-1))
    row_max = s.max(dim=-1).values
    row_sum = torch.exp(s - row_max[..., None]).nan_to_num(0.0).sum(-1)
    return (p * keep / keep_prob) @ v, row_max, row_sum


def draw(shape, keep_prob, gen, dropped_rows=()):
    """A keep matrix with about keep_prob of it kept; the rows (b, h, i) in dropped_rows drop every key."""
    keep = torch.rand(shape, generator=gen, dtype=torch.float64) < keep_prob
    for b, h, i in dropped_rows:
        keep[b, h, i] = False
    return keep


# ---- the mask's packing ----
def test_packing_is_flat_bits_least_significant_first():
    keep = np.zeros((1, 1, 3, 7), bool)
    keep[0, 0, 0, 0] = True  # element 0: byte 0, bit 0
    keep[0, 0, 1, 2] = True  # element 9: byte 1, bit 1
    keep[0, 0, 2, 6] = True  # element 20: byte 2, bit 4
    packed = pack_dropout_mask(keep)
    assert packed.dtype == np.uint8 and packed.shape == (16,)  # 21 bits -> one 128-bit draw
    assert packed[:3].tolist() == [0b1, 0b10, 0b10000] and not packed[3:].any()


def test_unpack_inverts_pack():
    gen = torch.Generator().manual_seed(1)
    keep = draw((2, 3, 77, 133), 0.5, gen)
    packed = pack_dropout_mask(keep)
    assert packed.size == -(-keep.numel() // 128) * 16
    np.testing.assert_array_equal(unpack_dropout_mask(torch.from_numpy(packed), keep.shape), keep.numpy())


# ---- the reference against autograd ----
CASES = [  # layout, heads, kv heads, Sq, Skv, D, Dv, keep_prob, causal
    ("BNSD", 2, 1, 77, 133, 16, 8, 0.9, False),
    ("BSND", 2, 2, 77, 133, 8, 8, 0.5, True),
    ("BSH", 4, 2, 9, 12, 8, 8, 0.5, False),
]


@pytest.mark.parametrize("layout,n,nkv,sq,skv,d,dv,keep_prob,causal", CASES)
def test_forward_and_backward_against_autograd(layout, n, nkv, sq, skv, d, dv, keep_prob, causal):
    gen = torch.Generator().manual_seed(sq * skv)
    b = 2
    q = torch.randn(b, n, sq, d, dtype=torch.float64, generator=gen)
    k = torch.randn(b, nkv, skv, d, dtype=torch.float64, generator=gen)
    v = torch.randn(b, nkv, skv, dv, dtype=torch.float64, generator=gen)
    keep = draw((b, n, sq, skv), keep_prob, gen, dropped_rows=[(0, 0, 3), (1, n - 1, sq - 1)])
    masked = torch.zeros(b, n, sq, skv, dtype=torch.bool)
    mask, mode = None, 0
    if causal:  # bottom-right causal, sparse_mode 3
        masked |= torch.ones(sq, skv, dtype=torch.bool).triu(skv - sq + 1)
        mask, mode = COMPRESSED, 3
    drop = torch.from_numpy(pack_dropout_mask(keep))
    ql, kl, vl = (to_layout(t, layout).clone().requires_grad_() for t in (q, k, v))

    def split(x, heads):
        return x if layout == "BNSD" else (x.unflatten(2, (heads, -1)) if layout == "BSH" else x).transpose(1, 2)

    out, row_max, row_sum = brute(split(ql, n), split(kl, nkv), split(vl, nkv), masked, 0.3, keep, keep_prob)
    got = R.fusion_attention_reference(
        ql.detach(), kl.detach(), vl.detach(), n, layout, mask, 0.3, TOCKENS_MAX, TOCKENS_MAX,
        sparse_mode=mode, drop_mask=drop, keep_prob=keep_prob,
    )  # fmt: skip
    np.testing.assert_allclose(got[0], to_layout(out, layout).detach().numpy(), **TOL)
    np.testing.assert_allclose(got[1][..., 0], row_max.detach().numpy(), **TOL)  # the undropped softmax's
    np.testing.assert_allclose(got[2][..., 0], row_sum.detach().numpy(), **TOL)
    assert np.isfinite(got[0]).all()
    dy = torch.randn(out.shape, dtype=torch.float64, generator=gen)
    to_layout(out, layout).backward(to_layout(dy, layout))
    grads = R.fusion_attention_grad_reference(
        ql.detach(), kl.detach(), vl.detach(), to_layout(dy, layout), n, layout, mask, 0.3, TOCKENS_MAX,
        TOCKENS_MAX, sparse_mode=mode, drop_mask=drop, keep_prob=keep_prob,
    )  # fmt: skip
    for g, t in zip(grads, (ql, kl, vl), strict=True):
        np.testing.assert_allclose(g, t.grad.numpy(), **TOL)


def test_a_dropped_row_gives_zero_output():
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 1, 5, 8, dtype=torch.float64, generator=gen) for _ in range(3))
    keep = torch.ones(1, 1, 5, 5, dtype=torch.bool)
    keep[0, 0, 2] = False
    out, row_max, _ = R.fusion_attention_reference(q, k, v, 1, "BNSD", drop_mask=pack_dropout_mask(keep), keep_prob=0.5)
    assert not out[0, 0, 2].any() and out[0, 0, 1].any()
    undropped = R.fusion_attention_reference(q, k, v, 1, "BNSD")
    np.testing.assert_array_equal(row_max, undropped[1])


def test_keep_prob_one_reads_no_mask():
    gen = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, 2, 6, 8, dtype=torch.float64, generator=gen) for _ in range(3))
    zeros = np.zeros(16, np.uint8)  # would drop everything, were it read
    for got, want in zip(
        R.fusion_attention_reference(q, k, v, 2, "BNSD", drop_mask=zeros, keep_prob=1.0),
        R.fusion_attention_reference(q, k, v, 2, "BNSD"),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)


def test_bad_dropout_arguments():
    q = k = v = torch.randn(1, 1, 4, 8, dtype=torch.float64)
    mask = pack_dropout_mask(np.ones((1, 1, 4, 4), bool))
    with pytest.raises(NotImplementedError, match="keep_prob 0.5 needs an explicit drop_mask"):
        R.fusion_attention_reference(q, k, v, 1, "BNSD", keep_prob=0.5)
    with pytest.raises(ValueError, match=r"keep_prob must be in \(0, 1\]"):
        R.fusion_attention_reference(q, k, v, 1, "BNSD", drop_mask=mask, keep_prob=0.0)
    with pytest.raises(TypeError, match="fusion_attention: drop_mask must be uint8"):
        R.fusion_attention_reference(q, k, v, 1, "BNSD", drop_mask=mask.astype(bool), keep_prob=0.5)
    with pytest.raises(
        ValueError, match=r"drop_mask must hold 16 bits \(2 bytes\) for the scores \[1, 1, 4, 4\], got 1 bytes"
    ):
        R.fusion_attention_reference(q, k, v, 1, "BNSD", drop_mask=np.ones(1, np.uint8), keep_prob=0.5)
    t = torch.randn(6, 1, 8, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"drop_mask must hold 20 bits \(3 bytes\) for the scores \[20\], got 2 bytes"):
        R.fusion_attention_grad_reference(
            t, t, t, t, 1, "TND", actual_seq_qlen=[4, 6], actual_seq_kvlen=[4, 6], drop_mask=mask[:2], keep_prob=0.5
        )


# ---- the kernel's forward against the reference ----
def torch_dropped(q, k, v, scale, attend, keep, keep_prob):
    """PyTorch's eager dropped attention in the inputs' dtype (the double benchmark's second), [B, N, S, D]."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = ((q @ k.transpose(-1, -2)) * scale).masked_fill(~attend, float("-inf"))
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    return (p * (keep / keep_prob).to(q.dtype)) @ v


KERNEL_CASES = [  # layout, B, N1, N2, S1, S2, D, keep_prob, causal (sparse_mode 3)
    ("BNSD", 1, 2, 1, 77, 133, 64, 0.9, False),
    ("BSND", 2, 2, 2, 77, 133, 64, 0.5, True),
    ("BSH", 1, 4, 2, 9, 300, 64, 0.5, False),
    # S2 % 8 == 0: rows of whole bytes (attention_dropout.h's one copy and one Gather a block), a narrower last block
    ("BNSD", 1, 2, 1, 77, 264, 64, 0.9, False),
    ("BSND", 2, 4, 2, 80, 512, 64, 0.5, True),
    ("BSH", 1, 2, 2, 9, 128, 64, 0.5, False),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("layout,b,n1,n2,s1,s2,d,keep_prob,causal", KERNEL_CASES)
def test_kernel_forward(dtype, layout, b, n1, n2, s1, s2, d, keep_prob, causal):
    gen = torch.Generator().manual_seed(s1 * s2 + n1)
    q = torch.randn(b, n1, s1, d, generator=gen).to(dtype)
    k = torch.randn(b, n2, s2, d, generator=gen).to(dtype)
    v = torch.randn(b, n2, s2, d, generator=gen).to(dtype)
    keep = draw((b, n1, s1, s2), keep_prob, gen, dropped_rows=[(0, 0, 3), (b - 1, n1 - 1, s1 - 1)])
    drop = torch.from_numpy(pack_dropout_mask(keep))
    mask, mode = (COMPRESSED, 3) if causal else (None, 0)
    attend = torch.ones(s1, s2, dtype=torch.bool)
    if causal:
        attend = ~torch.ones(s1, s2, dtype=torch.bool).triu(s2 - s1 + 1)
    scale = 1.0 / d**0.5
    out, smax, ssum = ascendc_ops.fusion_attention(
        *(merge_heads(t, layout).contiguous() for t in (q, k, v)), n1, layout, mask, scale,
        sparse_mode=mode, keep_prob=keep_prob, drop_mask=drop,
    )  # fmt: skip
    golden = dict(sparse_mode=mode, keep_prob=keep_prob, drop_mask=drop)
    g_out, g_max, g_sum = R.fusion_attention_reference(np64(q), np64(k), np64(v), n1, "BNSD", mask, scale, **golden)
    g_abs = R.fusion_attention_reference(np64(q), np64(k), np.abs(np64(v)), n1, "BNSD", mask, scale, **golden)[0]
    b_out, b_max, b_sum = bounds(q, k, v, scale, dtype, g_abs, g_sum[..., 0])
    b_out = b_out + 2 * P.U32 * g_abs  # 1 / keep_prob rounded to fp32, and its product
    name = f"dropout {layout} {dname(dtype)} s{s1}x{s2} keep {keep_prob}"
    got = out if layout == "BNSD" else split_heads(out, layout, n1)
    second = torch_dropped(q, k, v, scale, attend, keep, keep_prob)
    assert_accurate(got, g_out, second, dtype, name + " out", bound=b_out)
    assert not got[0, 0, 3].any(), name + ": a row whose keys are all dropped gives 0"
    t_max, t_sum = torch_stats(q, k, scale, attend.expand(b, n1, s1, s2))
    assert_accurate(smax[..., 0], g_max[..., 0], t_max, torch.float32, name + " max", bound=b_max)
    assert_accurate(ssum[..., 0], g_sum[..., 0], t_sum, torch.float32, name + " sum", bound=b_sum)


def torch_dropped_grads(q, k, v, dy, attend, z, scale, softcap=0.0):
    """PyTorch's own backward of the dropped attention in the inputs' dtype, [B, N, S, D] (rows with no key: 0),
    the scores capped first with softcap."""
    q, k, v = (x.detach().clone().requires_grad_() for x in (q, k, v))
    g = q.shape[1] // k.shape[1]
    s = (q @ k.repeat_interleave(g, 1).transpose(-1, -2)) * scale
    s = (softcap * torch.tanh(s / softcap) if softcap else s).masked_fill(~attend, float("-inf"))
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    return torch.autograd.grad((p * z.to(q.dtype)) @ v.repeat_interleave(g, 1), (q, k, v), dy)


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("layout,b,n1,n2,s1,s2,d,keep_prob,causal", KERNEL_CASES)
def test_kernel_backward(dtype, layout, b, n1, n2, s1, s2, d, keep_prob, causal):
    check_kernel_backward(dtype, layout, b, n1, n2, s1, s2, d, keep_prob, causal)


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("s2", [133, 264])  # rows at any bit; of whole bytes
def test_kernel_backward_softcap(dtype, s2):
    """With the softcap the backward multiplies dP by Z before the cap's w takes the buffer Z passes through, and
    forms Z again for the key steps' P Z."""
    check_kernel_backward(dtype, "BSND", 1, 4, 2, 77, s2, 64, 0.5, True, softcap=1.5)


def check_kernel_backward(dtype, layout, b, n1, n2, s1, s2, d, keep_prob, causal, softcap=0.0):
    gen = torch.Generator().manual_seed(s1 * s2 + n1 + 1)
    q = torch.randn(b, n1, s1, d, generator=gen).to(dtype)
    k = torch.randn(b, n2, s2, d, generator=gen).to(dtype)
    v = torch.randn(b, n2, s2, d, generator=gen).to(dtype)
    dy = torch.randn(b, n1, s1, d, generator=gen).to(dtype)
    keep = draw((b, n1, s1, s2), keep_prob, gen, dropped_rows=[(0, 0, 3), (b - 1, n1 - 1, s1 - 1)])
    drop = torch.from_numpy(pack_dropout_mask(keep))
    mask, mode = (COMPRESSED, 3) if causal else (None, 0)
    attend = ~torch.ones(s1, s2, dtype=torch.bool).triu(s2 - s1 + 1) if causal else torch.ones(s1, s2, dtype=bool)
    scale = 1.0 / d**0.5
    ql, kl, vl, dyl = (merge_heads(t, layout).contiguous() for t in (q, k, v, dy))
    out, smax, ssum = ascendc_ops.fusion_attention(
        ql, kl, vl, n1, layout, mask, scale, sparse_mode=mode, softcap=softcap, keep_prob=keep_prob, drop_mask=drop
    )
    grads = torch.ops.custom.fusion_attention_grad(
        ql, kl, vl, dyl, smax, ssum, out, n1, layout, mask, scale, TOCKENS_MAX, TOCKENS_MAX, None, None, mode,
        softcap, keep_prob, drop,
    )[:3]  # fmt: skip
    golden = R.fusion_attention_grad_reference(
        np64(q), np64(k), np64(v), np64(dy), n1, "BNSD", mask, scale, sparse_mode=mode, softcap=softcap,
        keep_prob=keep_prob, drop_mask=drop,
    )  # fmt: skip
    second = torch_dropped_grads(q, k, v, dy, attend, keep / keep_prob, scale, softcap)
    o = out if layout == "BNSD" else split_heads(out, layout, n1)
    z = keep.double() / keep_prob
    per = [
        S.grad_bounds(q[i], k[i], v[i], dy[i], o[i], smax[i, ..., 0], ssum[i, ..., 0], attend[None], scale, dtype,
                      softcap=softcap, drop=z[i])
        for i in range(b)
    ]  # fmt: skip
    name = f"dropout {layout} {dname(dtype)} s{s1}x{s2} keep {keep_prob} cap {softcap}"
    for j, (label, got) in enumerate(zip(("dq", "dk", "dv"), grads, strict=True)):
        got = got if layout == "BNSD" else split_heads(got, layout, (n1, n2, n2)[j])
        bound = torch.stack([p[j] for p in per]).numpy()
        check = S.check_cancelling(np64(got), golden[j], np64(second[j]), dtype, bound)
        assert check.passed, f"{name} {label}: {'; '.join(check.failures)}\n  {check.describe()}"
    ql.requires_grad_(), kl.requires_grad_(), vl.requires_grad_()
    out2 = ascendc_ops.fusion_attention(
        ql, kl, vl, n1, layout, mask, scale, sparse_mode=mode, softcap=softcap, keep_prob=keep_prob, drop_mask=drop
    )[0]
    out2.backward(dyl)
    for got, t in zip(grads, (ql, kl, vl), strict=True):
        assert torch.equal(got, t.grad), name + ": autograd is the direct call"


def test_kernel_keep_prob_one_reads_no_mask():
    q = torch.randn(1, 2, 8, 64)
    plain = ascendc_ops.fusion_attention(q, q, q, 2, "BNSD")
    unread = ascendc_ops.fusion_attention(q, q, q, 2, "BNSD", drop_mask=torch.zeros(1, dtype=torch.uint8))
    for a, b in zip(plain, unread, strict=True):
        assert torch.equal(a, b)


def test_kernel_bad_dropout_arguments():
    q = torch.randn(1, 2, 8, 64)
    drop = torch.from_numpy(pack_dropout_mask(np.ones((1, 2, 8, 8), bool)))
    run = torch.ops.custom.fusion_attention
    with pytest.raises(ValueError, match=r"fusion_attention: keep_prob 0.5 < 1 needs drop_mask"):
        run(q, q, q, 2, "BNSD", keep_prob=0.5)
    with pytest.raises(ValueError, match=r"fusion_attention: keep_prob must be in \(0, 1\], got 0"):
        run(q, q, q, 2, "BNSD", keep_prob=0.0, drop_mask=drop)
    with pytest.raises(TypeError, match="fusion_attention: drop_mask must be one of uint8"):
        run(q, q, q, 2, "BNSD", keep_prob=0.5, drop_mask=drop.bool())
    with pytest.raises(ValueError, match=r"fusion_attention: drop_mask must hold B \* N1 \* S1 \* S2 = 128 bits"):
        run(q, q, q, 2, "BNSD", keep_prob=0.5, drop_mask=drop[:15])
    t = torch.randn(8, 2, 64)
    with pytest.raises(ValueError, match=r"drop_mask must hold N1 \* sum\(s1_b \* s2_b\) = 68 bits \(9 bytes\), got 8"):
        run(t, t, t, 2, "TND", actual_seq_qlen=[3, 8], actual_seq_kvlen=[3, 8], keep_prob=0.5, drop_mask=drop[:8])
    out, smax, ssum = run(q, q, q, 2, "BNSD", keep_prob=0.5, drop_mask=drop)
    with pytest.raises(ValueError, match="fusion_attention_grad: drop_mask must hold B"):
        torch.ops.custom.fusion_attention_grad(
            q, q, q, q, smax, ssum, out, 2, "BNSD", keep_prob=0.5, drop_mask=drop[:9]
        )
    with pytest.raises(TypeError, match="fusion_attention_grad: drop_mask must be one of uint8"):
        torch.ops.custom.fusion_attention_grad(q, q, q, q, smax, ssum, out, 2, "BNSD", keep_prob=0.5, drop_mask=q)


def test_kernel_opcheck():
    q = torch.randn(1, 2, 16, 64, requires_grad=True)
    drop = torch.from_numpy(pack_dropout_mask(np.random.default_rng(5).random((1, 2, 16, 16)) < 0.5))
    opcheck(torch.ops.custom.fusion_attention, (q, q, q, 2, "BNSD"), {"keep_prob": 0.5, "drop_mask": drop})
    out, smax, ssum = torch.ops.custom.fusion_attention(q, q, q, 2, "BNSD", keep_prob=0.5, drop_mask=drop)
    args = (q.detach(), q.detach(), q.detach(), q.detach(), smax, ssum, out.detach(), 2, "BNSD")
    opcheck(torch.ops.custom.fusion_attention_grad, args, {"keep_prob": 0.5, "drop_mask": drop})


# ---- TND: each sequence's [N1, s1_b, s2_b] block of the mask after the ones before it ----
TND_LENS = [  # query lengths, key lengths
    ([5, 130, 1, 77, 0], [7, 133, 3, 77, 0]),  # odd lengths: rows at any bit; an empty sequence
    ([9, 64, 130], [16, 128, 136]),  # keys a multiple of 8: rows of whole bytes
]


def tnd_case(lens_q, lens_k, n1, n2, d, dtype, keep_prob, seed):
    """q [T, N1, D], k / v [Tk, N2, D], dy, each sequence's keep [N1, s1_b, s2_b] (one of its rows dropping every
    key), their packing in order, and the cumulative ends."""
    gen = torch.Generator().manual_seed(seed)
    q, dy = (torch.randn(sum(lens_q), n1, d, generator=gen).to(dtype) for _ in range(2))
    k, v = (torch.randn(sum(lens_k), n2, d, generator=gen).to(dtype) for _ in range(2))
    keeps = [torch.rand(n1, a, b, generator=gen) < keep_prob for a, b in zip(lens_q, lens_k, strict=True)]
    keeps[1][n1 - 1, 3] = False
    drop = torch.from_numpy(pack_dropout_mask(np.concatenate([x.numpy().reshape(-1) for x in keeps])))
    return q, k, v, dy, keeps, drop, np.cumsum(lens_q).tolist(), np.cumsum(lens_k).tolist()


def sequences(lens_q, lens_k):
    """(sequence, first query token, first key token, query rows, keys) of the non-empty sequences."""
    sq, sk = np.cumsum([0, *lens_q[:-1]]), np.cumsum([0, *lens_k[:-1]])
    return [(i, int(sq[i]), int(sk[i]), a, b) for i, (a, b) in enumerate(zip(lens_q, lens_k, strict=True)) if a]


@pytest.mark.parametrize("lens_q,lens_k", TND_LENS)
def test_reference_tnd_is_each_sequence_alone(lens_q, lens_k):
    """The reference's TND dropout gives each sequence what BNSD gives it with its own keep matrix."""
    q, k, v, dy, keeps, drop, cq, ck = tnd_case(lens_q, lens_k, 4, 2, 8, torch.float64, 0.5, 3)
    kw = dict(actual_seq_qlen=cq, actual_seq_kvlen=ck, drop_mask=drop, keep_prob=0.5)
    out = R.fusion_attention_reference(q, k, v, 4, "TND", None, 0.3, **kw)[0]
    grads = R.fusion_attention_grad_reference(q, k, v, dy, 4, "TND", None, 0.3, **kw)
    for i, sq, sk, a, b in sequences(lens_q, lens_k):
        alone = [x.transpose(0, 1)[None] for x in (q[sq : sq + a], k[sk : sk + b], v[sk : sk + b], dy[sq : sq + a])]
        one = dict(drop_mask=pack_dropout_mask(keeps[i][None]), keep_prob=0.5)
        want = R.fusion_attention_reference(*alone[:3], 4, "BNSD", None, 0.3, **one)[0]
        np.testing.assert_allclose(out[sq : sq + a], want[0].transpose(1, 0, 2), **TOL)
        want = R.fusion_attention_grad_reference(*alone, 4, "BNSD", None, 0.3, **one)
        for g, w, t0, n in zip(grads, want, (sq, sk, sk), (a, b, b), strict=True):
            np.testing.assert_allclose(g[t0 : t0 + n], w[0].transpose(1, 0, 2), **TOL)


def tnd_alone(q, k, v, keep, keep_prob, scale, dy=None):
    """The kernel on one sequence (TND of one): (out, max, sum), then with dy (dq, dk, dv)."""
    drop = torch.from_numpy(pack_dropout_mask(keep[None]))
    lens = dict(actual_seq_qlen=[q.shape[0]], actual_seq_kvlen=[k.shape[0]])
    out = ascendc_ops.fusion_attention(q, k, v, q.shape[1], "TND", None, scale, keep_prob=keep_prob, drop_mask=drop,
                                       **lens)  # fmt: skip
    if dy is None:
        return out
    return torch.ops.custom.fusion_attention_grad(
        q, k, v, dy, out[1], out[2], out[0], q.shape[1], "TND", None, scale, TOCKENS_MAX, TOCKENS_MAX,
        lens["actual_seq_qlen"], lens["actual_seq_kvlen"], 0, 0.0, keep_prob, drop,
    )[:3]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("lens_q,lens_k", TND_LENS)
def test_kernel_tnd(dtype, lens_q, lens_k):
    """TND with dropout: the forward and each sequence's gradients against the float64 reference, and each sequence
    of the packed batch bit for bit what the kernel gives it alone (its own keep matrix), forward and backward."""
    n1, scale, keep_prob = 4, 0.125, 0.5
    q, k, v, dy, keeps, drop, cq, ck = tnd_case(lens_q, lens_k, n1, 2, 64, dtype, keep_prob, 7)
    lens = dict(actual_seq_qlen=cq, actual_seq_kvlen=ck)
    out, smax, ssum = ascendc_ops.fusion_attention(q, k, v, n1, "TND", None, scale, keep_prob=keep_prob,
                                                   drop_mask=drop, **lens)  # fmt: skip
    kw = dict(**lens, keep_prob=keep_prob, drop_mask=drop)
    g = R.fusion_attention_reference(np64(q), np64(k), np64(v), n1, "TND", None, scale, **kw)
    g_abs = R.fusion_attention_reference(np64(q), np64(k), np.abs(np64(v)), n1, "TND", None, scale, **kw)[0]
    es = score_error(q.transpose(0, 1)[None], k.transpose(0, 1)[None], scale).max()  # every pair: an upper bound
    bound = (P_ROUNDING[dtype] + P.gamma(max(lens_k) + 16) + 2 * es + 2 * P.U32) * g_abs
    second = torch.zeros_like(out)
    for i, sq, sk, a, b in sequences(lens_q, lens_k):
        qs, ks, vs = (x.transpose(0, 1)[None] for x in (q[sq : sq + a], k[sk : sk + b], v[sk : sk + b]))
        attend = torch.ones(a, b, dtype=torch.bool)
        second[sq : sq + a] = torch_dropped(qs, ks, vs, scale, attend, keeps[i][None], keep_prob)[0].transpose(0, 1)
    name = f"TND dropout {dname(dtype)} {lens_q} x {lens_k}"
    assert_accurate(out, g[0], second, dtype, name + " out", bound=bound)
    grads = torch.ops.custom.fusion_attention_grad(
        q, k, v, dy, smax, ssum, out, n1, "TND", None, scale, TOCKENS_MAX, TOCKENS_MAX, cq, ck, 0, 0.0, keep_prob, drop
    )[:3]
    golden = R.fusion_attention_grad_reference(np64(q), np64(k), np64(v), np64(dy), n1, "TND", None, scale, **kw)
    bound, second = [np.zeros(g.shape) for g in golden], [np.zeros(g.shape) for g in golden]
    for i, sq, sk, a, b in sequences(lens_q, lens_k):  # each sequence's bounds and PyTorch's gradients, in place
        qs, ks, vs, dys, os = (x.transpose(0, 1) for x in (q[sq : sq + a], k[sk : sk + b], v[sk : sk + b],
                                                           dy[sq : sq + a], out[sq : sq + a]))  # fmt: skip
        stats = [x.reshape(-1)[sq * n1 * 8 : (sq + a) * n1 * 8].reshape(n1, a, 8)[..., 0] for x in (smax, ssum)]
        attend, z = torch.ones(1, a, b, dtype=torch.bool), keeps[i].double() / keep_prob
        per = S.grad_bounds(qs, ks, vs, dys, os, *stats, attend, scale, dtype, drop=z)
        torch_grads = torch_dropped_grads(qs[None], ks[None], vs[None], dys[None], attend, z[None], scale)
        for j, (t0, n) in enumerate(zip((sq, sk, sk), (a, b, b), strict=True)):
            bound[j][t0 : t0 + n] = per[j].numpy().transpose(1, 0, 2)
            second[j][t0 : t0 + n] = np64(torch_grads[j][0]).transpose(1, 0, 2)
    for j, label in enumerate(("dq", "dk", "dv")):
        check = S.check_cancelling(np64(grads[j]), golden[j], second[j], dtype, bound[j])
        assert check.passed, f"{name} {label}: {'; '.join(check.failures)}\n  {check.describe()}"
    for i, sq, sk, a, b in sequences(lens_q, lens_k):
        alone = tnd_alone(q[sq : sq + a], k[sk : sk + b], v[sk : sk + b], keeps[i], keep_prob, scale)
        assert torch.equal(out[sq : sq + a], alone[0]), f"{name}: sequence {i} out"
        alone = tnd_alone(q[sq : sq + a], k[sk : sk + b], v[sk : sk + b], keeps[i], keep_prob, scale, dy[sq : sq + a])
        for got, want, t0, n, label in zip(grads, alone, (sq, sk, sk), (a, b, b), ("dq", "dk", "dv"), strict=True):
            assert torch.equal(got[t0 : t0 + n], want), f"{name}: sequence {i} {label}"
