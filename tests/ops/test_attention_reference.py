"""The float64 attention golden (ascendc_ops.ops.attention_reference) against an independent
brute-force PyTorch float64 attention: matmul, masked_fill(-inf), softmax, matmul, with the masks
built here from torch.triu/tril as torch_npu's documentation writes them, layouts converted by
torch permutes, GQA by repeat_interleave (and once by scaled_dot_product_attention's enable_gqa),
and the grads by torch.autograd. Only test_row_blocks_do_not_change_the_result compares the golden with
itself (its row blocking); every other expectation is computed here without it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ascendc_ops.ops import attention_reference as R
from ascendc_ops.ops.attention_args import TOCKENS_MAX, AttentionAttrs, compressed_mask

TOL = dict(rtol=1e-10, atol=1e-12)
BIG = TOCKENS_MAX
COMPRESSED = torch.from_numpy(compressed_mask())
FLT_MAX = float(np.finfo(np.float32).max)


# ---- the independent side: layouts, masks, brute-force attention ----
def to_layout(x: torch.Tensor, layout: str) -> torch.Tensor:
    """[B, N, S, D] -> the layout."""
    if layout == "BNSD":
        return x
    bsnd = x.transpose(1, 2)
    if layout == "BSND":
        return bsnd
    bsh = bsnd.flatten(2)
    return bsh if layout == "BSH" else bsh.transpose(0, 1)


def from_layout(x: torch.Tensor, layout: str, heads: int) -> torch.Tensor:
    """The layout -> [B, N, S, D]."""
    if layout == "BNSD":
        return x
    if layout in ("BSH", "SBH"):
        bsh = x if layout == "BSH" else x.transpose(0, 1)
        x = bsh.unflatten(2, (heads, -1))
    return x.transpose(1, 2)


def band_top_left(sq: int, skv: int, pre: int, nxt: int) -> torch.Tensor:
    """torch_npu's doc example for sparse_mode 0: triu(next + 1) | tril(-pre - 1), True = masked."""
    ones = torch.ones(sq, skv, dtype=torch.bool)
    return torch.triu(ones, diagonal=min(nxt, skv) + 1) | torch.tril(ones, diagonal=-min(pre, sq) - 1)


def mode_mask(mode: int, sq: int, skv: int, pre: int = BIG, nxt: int = BIG) -> torch.Tensor:
    """The positions a compressed-mask mode masks, written with triu/tril offsets."""
    ones = torch.ones(sq, skv, dtype=torch.bool)
    if mode == 2:
        return torch.triu(ones, diagonal=1)
    if mode == 3:
        return torch.triu(ones, diagonal=skv - sq + 1)
    assert mode == 4
    d = skv - sq
    return torch.triu(ones, diagonal=d + min(nxt, skv) + 1) | torch.tril(ones, diagonal=d - min(pre, sq + skv) - 1)


def brute(q, k, v, masked, scale):
    """q [B, Nq, Sq, D], k/v [B, Nkv, Skv, *], masked broadcastable to [B, Nq, Sq, Skv] (True = masked)
    -> out, row max, row sum; rows with every key masked give out 0 (cann-bench's golden)."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    s = scale * q @ k.transpose(-1, -2)
    masked = torch.as_tensor(masked).expand(s.shape)
    s = s.masked_fill(masked, float("-inf"))
    empty = masked.all(dim=-1, keepdim=True)
    p = torch.where(empty, torch.zeros_like(s), torch.softmax(s, dim=-1))
    row_max = s.max(dim=-1).values
    row_sum = torch.where(empty[..., 0], 0.0, torch.exp(s - row_max[..., None]).nan_to_num(0.0).sum(-1))
    return p @ v, row_max, row_sum


def qkv(b, nq, nkv, sq, skv, d, dv, scale_k=1.0):
    q = torch.randn(b, nq, sq, d, dtype=torch.float64)
    k = torch.randn(b, nkv, skv, d, dtype=torch.float64) * scale_k
    v = torch.randn(b, nkv, skv, dv, dtype=torch.float64)
    return q, k, v


def check_forward(got, q, k, v, masked, scale, layout):
    out, mx, sm = got
    ref, ref_max, ref_sum = brute(q, k, v, masked, scale)
    np.testing.assert_allclose(out, to_layout(ref, layout).numpy(), **TOL)
    assert mx.shape == sm.shape == (*ref_max.shape, 8)
    assert np.all(mx == mx[..., :1]) and np.all(sm == sm[..., :1])
    empty = torch.as_tensor(masked).expand(ref.shape[:-1] + (k.shape[2],)).all(-1).numpy()
    np.testing.assert_allclose(mx[..., 0][~empty], ref_max.numpy()[~empty], **TOL)
    np.testing.assert_allclose(sm[..., 0][~empty], ref_sum.numpy()[~empty], **TOL)
    assert np.all(mx[..., 0][empty] == -FLT_MAX) and np.all(sm[..., 0][empty] == FLT_MAX)


# ---- forward: layouts, GQA, head dims ----
@pytest.mark.parametrize("layout", ["BSH", "SBH", "BSND", "BNSD"])
@pytest.mark.parametrize("sq,skv", [(5, 9), (9, 5), (7, 7)])
def test_layouts(layout, sq, skv):
    q, k, v = qkv(2, 4, 2, sq, skv, 24, 16)
    got = R.fusion_attention_reference(
        to_layout(q, layout), to_layout(k, layout), to_layout(v, layout), 4, layout, scale=0.2
    )
    assert got[0].shape == tuple(to_layout(torch.empty(2, 4, sq, 16), layout).shape)
    check_forward(got, q, k, v, torch.zeros(1, dtype=torch.bool), 0.2, layout)


@pytest.mark.parametrize("group", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("d,dv", [(40, 40), (64, 64), (80, 64), (128, 128), (256, 128)])
def test_gqa_and_head_dims(group, d, dv):
    nkv = 1 if group >= 8 else 2
    q, k, v = qkv(1, nkv * group, nkv, 6, 11, d, dv)
    scale = d**-0.5
    got = R.fusion_attention_reference(
        to_layout(q, "BSND"), to_layout(k, "BSND"), to_layout(v, "BSND"), nkv * group, "BSND", scale=scale
    )
    check_forward(got, q, k, v, torch.zeros(1, dtype=torch.bool), scale, "BSND")
    if d == dv:  # torch's own GQA convention agrees with q head h -> kv head h // group
        sdpa = F.scaled_dot_product_attention(q, k, v, scale=scale, enable_gqa=True)
        np.testing.assert_allclose(got[0], to_layout(sdpa, "BSND").numpy(), **TOL)


def test_numpy_and_torch_inputs_agree():
    q, k, v = qkv(1, 2, 1, 4, 6, 8, 8)
    a = R.fusion_attention_reference(q, k, v, 2, "BNSD", scale=0.5)
    b = R.fusion_attention_reference(q.float().numpy(), k.float().numpy(), v.float().numpy(), 2, "BNSD", scale=0.5)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)


# ---- masks and sparse modes ----
@pytest.mark.parametrize("shape", ["BNSS", "B1SS", "11SS", "SS"])
@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8])
def test_mode_0_and_1_full_mask(shape, dtype):
    b, n, sq, skv = 2, 4, 6, 9
    dims = {"BNSS": (b, n, sq, skv), "B1SS": (b, 1, sq, skv), "11SS": (1, 1, sq, skv), "SS": (sq, skv)}[shape]
    mask = torch.rand(dims) < 0.4
    q, k, v = qkv(b, n, 2, sq, skv, 16, 16)
    for mode in (0, 1):
        got = R.fusion_attention_reference(q, k, v, n, "BNSD", mask.to(dtype), 0.3, sparse_mode=mode)
        check_forward(got, q, k, v, mask, 0.3, "BNSD")


@pytest.mark.parametrize("sq,skv", [(8, 8), (6, 11), (11, 6)])
@pytest.mark.parametrize("pre,nxt", [(BIG, 0), (2, 3), (BIG, BIG), (4, -1), (-1, 3), (0, 0)])
def test_mode_0_band_from_top_left(sq, skv, pre, nxt):
    """sparse_mode 0: the band by the tockens counts from the top-left corner; the mask must agree with it
    (torch_npu), and the golden masks their union."""
    band = band_top_left(sq, skv, pre, nxt)
    q, k, v = qkv(1, 2, 2, sq, skv, 16, 8)
    got = R.fusion_attention_reference(q, k, v, 2, "BNSD", band, 0.4, pre, nxt, sparse_mode=0)
    check_forward(got, q, k, v, band, 0.4, "BNSD")
    extra = torch.rand(sq, skv) < 0.3  # a mask with more than the band: the union
    got = R.fusion_attention_reference(q, k, v, 2, "BNSD", band | extra, 0.4, pre, nxt, sparse_mode=0)
    check_forward(got, q, k, v, band | extra, 0.4, "BNSD")


@pytest.mark.parametrize("mode", [2, 3])
@pytest.mark.parametrize("sq,skv", [(8, 8), (5, 12), (12, 5)])
@pytest.mark.parametrize("layout", ["BSND", "SBH"])
def test_causal_modes(mode, sq, skv, layout):
    q, k, v = qkv(2, 4, 1, sq, skv, 32, 32)
    args = (to_layout(q, layout), to_layout(k, layout), to_layout(v, layout), 4, layout, COMPRESSED, 0.25)
    got = R.fusion_attention_reference(*args, 7, -3, sparse_mode=mode)  # the tockens are ignored
    check_forward(got, q, k, v, mode_mask(mode, sq, skv), 0.25, layout)


@pytest.mark.parametrize("sq,skv", [(8, 8), (5, 12), (12, 5)])
@pytest.mark.parametrize("pre,nxt", [(3, 0), (2, 2), (BIG, 0), (6, -2)])
def test_mode_4_band_from_bottom_right(sq, skv, pre, nxt):
    q, k, v = qkv(1, 2, 2, sq, skv, 16, 16)
    got = R.fusion_attention_reference(q, k, v, 2, "BNSD", COMPRESSED, 0.3, pre, nxt, sparse_mode=4)
    check_forward(got, q, k, v, mode_mask(4, sq, skv, pre, nxt), 0.3, "BNSD")


def test_alignments_differ_only_when_lengths_differ():
    """Modes 2 and 3 agree for Sq == Skv and not otherwise: the checks above can tell them apart."""
    for sq, skv, same in ((7, 7, True), (4, 9, False)):
        q, k, v = qkv(1, 1, 1, sq, skv, 8, 8)
        o2 = R.fusion_attention_reference(q, k, v, 1, "BNSD", COMPRESSED, sparse_mode=2)[0]
        o3 = R.fusion_attention_reference(q, k, v, 1, "BNSD", COMPRESSED, sparse_mode=3)[0]
        assert np.allclose(o2, o3) == same


@pytest.mark.parametrize("mode,pre,nxt", [(0, 1, 0), (2, BIG, BIG), (3, 0, 0), (4, 1, 1)])
def test_no_mask_means_full_attention(mode, pre, nxt):
    """torch_npu: with atten_mask None, sparse_mode and the tockens take no effect."""
    q, k, v = qkv(1, 2, 2, 5, 8, 16, 16)
    got = R.fusion_attention_reference(q, k, v, 2, "BNSD", None, 0.5, pre, nxt, sparse_mode=mode)
    check_forward(got, q, k, v, torch.zeros(1, dtype=torch.bool), 0.5, "BNSD")


def test_fully_masked_rows():
    """Rows whose every key is masked: output 0, max -FLT_MAX, sum FLT_MAX, no gradient."""
    q, k, v = qkv(2, 2, 1, 6, 7, 16, 16)
    mask = torch.rand(2, 2, 6, 7) < 0.3
    mask[0, 1, 2] = True
    mask[1, :, 0] = True
    got = R.fusion_attention_reference(q, k, v, 2, "BNSD", mask, 0.5, sparse_mode=1)
    check_forward(got, q, k, v, mask, 0.5, "BNSD")
    assert np.all(got[0][0, 1, 2] == 0) and np.all(got[0][1, :, 0] == 0)
    dy = torch.randn(2, 2, 6, 16, dtype=torch.float64)
    dq, dk, dv = R.fusion_attention_grad_reference(q, k, v, dy, 2, "BNSD", mask, 0.5, sparse_mode=1)
    assert np.all(dq[0, 1, 2] == 0) and np.all(dq[1, :, 0] == 0)
    # mode 3 with Sq > Skv: the first Sq - Skv rows see no key
    q, k, v = qkv(1, 1, 1, 9, 4, 8, 8)
    got = R.fusion_attention_reference(q, k, v, 1, "BNSD", COMPRESSED, sparse_mode=3)
    assert np.all(got[0][0, 0, :5] == 0) and np.all(got[1][0, 0, :5] == -FLT_MAX)
    check_forward(got, q, k, v, mode_mask(3, 9, 4), 1.0, "BNSD")


# ---- TND ----
Q_LENS = [1, 5, 3, 8, 2]
KV_LENS = [4, 5, 9, 8, 1]


def tnd(lens, n, d):
    return torch.randn(sum(lens), n, d, dtype=torch.float64)


def cum(lens):
    return list(np.cumsum(lens))


def tnd_brute(q, k, v, q_lens, kv_lens, masks, scale):
    """Per sequence: [s, N, D] slices -> brute -> concatenated [T, N, Dv], and per-sequence max/sum [N, s]."""
    outs, maxes, sums, qa, ka = [], [], [], 0, 0
    for sq, skv, m in zip(q_lens, kv_lens, masks, strict=True):
        o, mx, sm = brute(
            q[qa : qa + sq].permute(1, 0, 2)[None],
            k[ka : ka + skv].permute(1, 0, 2)[None],
            v[ka : ka + skv].permute(1, 0, 2)[None],
            m,
            scale,
        )
        outs.append(o[0].permute(1, 0, 2))
        maxes.append(mx[0])
        sums.append(sm[0])
        qa, ka = qa + sq, ka + skv
    return torch.cat(outs), maxes, sums


@pytest.mark.parametrize("mode", [0, 1, 2, 3, 4])
def test_tnd_per_sequence(mode):
    n, nkv, d, dv = 4, 2, 16, 8
    q_lens = Q_LENS if mode != 3 else [1, 5, 3, 8, 1]  # TND mode 3 refuses Sq > Skv
    q, k, v = tnd(q_lens, n, d), tnd(KV_LENS, nkv, d), tnd(KV_LENS, nkv, dv)
    sq_max, skv_max = max(q_lens), max(KV_LENS)
    pre, nxt = (2, 1) if mode in (0, 4) else (BIG, BIG)
    if mode in (2, 3, 4):
        mask = COMPRESSED
        masks = [mode_mask(mode, a, b, pre, nxt) for a, b in zip(q_lens, KV_LENS, strict=True)]
    else:
        ss = torch.rand(sq_max, skv_max) < 0.25
        ss[:, 0] = False  # TND: torch_npu takes no mask row that masks everything
        if mode == 0:
            ss |= band_top_left(sq_max, skv_max, pre + 6, nxt)
            pre += 6
        mask = ss
        masks = [ss[:a, :b] for a, b in zip(q_lens, KV_LENS, strict=True)]
    got = R.fusion_attention_reference(q, k, v, n, "TND", mask, 0.3, pre, nxt, cum(q_lens), cum(KV_LENS), mode)
    ref, maxes, sums = tnd_brute(q, k, v, q_lens, KV_LENS, masks, 0.3)
    np.testing.assert_allclose(got[0], ref.numpy(), **TOL)
    # default softmax layout: sequence b's block of N * s_b rows holds [N, s_b] (CANN's NTD offsets)
    flat_max, flat_sum = got[1][..., 0].reshape(-1), got[2][..., 0].reshape(-1)
    row0 = 0
    for mx, sm, s in zip(maxes, sums, q_lens, strict=True):
        for h in range(n):
            for i in range(s):
                at = row0 * n + h * s + i
                assert flat_max[at] == pytest.approx(mx[h, i].item(), rel=1e-12)
                assert flat_sum[at] == pytest.approx(sm[h, i].item(), rel=1e-12)
        row0 += s
    tnd_layout = R.fusion_attention_reference(
        q, k, v, n, "TND", mask, 0.3, pre, nxt, cum(q_lens), cum(KV_LENS), mode, softmax_layout="TND"
    )
    assert tnd_layout[1].shape == (sum(q_lens), n, 8)
    np.testing.assert_allclose(tnd_layout[1][..., 0], torch.cat([m.T for m in maxes]).numpy(), **TOL)


def test_tnd_lengths_and_trailing_zeros():
    """Lengths 2, 2, 2 are passed as [2, 4, 6]; trailing zeros drop batches; a zero-length sequence is fine."""
    q, k, v = tnd([2, 2, 2], 2, 8), tnd([2, 2, 2], 2, 8), tnd([2, 2, 2], 2, 8)
    a = R.fusion_attention_reference(
        q, k, v, 2, "TND", None, 1.0, actual_seq_qlen=[2, 4, 6], actual_seq_kvlen=[2, 4, 6]
    )
    b = R.fusion_attention_reference(
        q, k, v, 2, "TND", None, 1.0, actual_seq_qlen=[2, 4, 6, 0], actual_seq_kvlen=[2, 4, 6, 0]
    )
    ref, _, _ = tnd_brute(q, k, v, [2, 2, 2], [2, 2, 2], [torch.zeros(1, dtype=torch.bool)] * 3, 1.0)
    np.testing.assert_allclose(a[0], ref.numpy(), **TOL)
    np.testing.assert_allclose(b[0], ref.numpy(), **TOL)
    c = R.fusion_attention_reference(
        q, k, v, 2, "TND", None, 1.0, actual_seq_qlen=[2, 2, 6], actual_seq_kvlen=[2, 4, 6]
    )
    ref, _, _ = tnd_brute(q, k, v, [2, 0, 4], [2, 2, 2], [torch.zeros(1, dtype=torch.bool)] * 3, 1.0)
    np.testing.assert_allclose(c[0], ref.numpy(), **TOL)


# ---- backward ----
GRAD_CASES = [
    ("BNSD", 4, 2, 6, 9, 16, 8, None, 0, BIG, BIG),
    ("BSH", 4, 1, 9, 6, 24, 24, "c", 3, BIG, BIG),
    ("SBH", 2, 2, 7, 7, 16, 16, "c", 2, BIG, BIG),
    ("BSND", 8, 2, 5, 10, 32, 16, "c", 4, 3, 1),
    ("BNSD", 2, 1, 6, 8, 16, 16, "band", 0, 2, 1),
]


@pytest.mark.parametrize("layout,n,nkv,sq,skv,d,dv,mask_kind,mode,pre,nxt", GRAD_CASES)
def test_grad_against_autograd(layout, n, nkv, sq, skv, d, dv, mask_kind, mode, pre, nxt):
    q, k, v = qkv(2, n, nkv, sq, skv, d, dv)
    mask, masked = None, torch.zeros(1, dtype=torch.bool)
    if mask_kind == "c":
        mask, masked = COMPRESSED, mode_mask(mode, sq, skv, pre, nxt)
    elif mask_kind == "band":
        mask = masked = band_top_left(sq, skv, pre, nxt)
    ql, kl, vl = (to_layout(t, layout).clone().requires_grad_() for t in (q, k, v))
    out = to_layout(
        brute(from_layout(ql, layout, n), from_layout(kl, layout, nkv), from_layout(vl, layout, nkv), masked, 0.3)[0],
        layout,
    )
    dy = torch.randn_like(out)
    out.backward(dy)
    got = R.fusion_attention_grad_reference(
        ql.detach(), kl.detach(), vl.detach(), dy, n, layout, mask, 0.3, pre, nxt, sparse_mode=mode
    )
    for g, t in zip(got, (ql, kl, vl), strict=True):
        np.testing.assert_allclose(g, t.grad.numpy(), **TOL)


def test_tnd_grad_against_autograd():
    n, nkv, d, dv = 4, 2, 16, 8
    q_lens, kv_lens = [1, 5, 3, 8], [4, 5, 9, 8]
    q, k, v = (t.requires_grad_() for t in (tnd(q_lens, n, d), tnd(kv_lens, nkv, d), tnd(kv_lens, nkv, dv)))
    masks = [mode_mask(3, a, b) for a, b in zip(q_lens, kv_lens, strict=True)]
    out, _, _ = tnd_brute(q, k, v, q_lens, kv_lens, masks, 0.3)
    dy = torch.randn_like(out)
    out.backward(dy)
    got = R.fusion_attention_grad_reference(
        q.detach(),
        k.detach(),
        v.detach(),
        dy,
        n,
        "TND",
        COMPRESSED,
        0.3,
        actual_seq_qlen=cum(q_lens),
        actual_seq_kvlen=cum(kv_lens),
        sparse_mode=3,
    )
    for g, t in zip(got, (q, k, v), strict=True):
        np.testing.assert_allclose(g, t.grad.numpy(), **TOL)


# ---- expand_mask ----
def test_expand_mask_matches_the_rules():
    m = R.expand_mask([6, 6], [9, 9], 3, COMPRESSED, 4, 2, 1)
    assert m.shape == (2, 3, 6, 9) and np.array_equal(m[1, 2], mode_mask(4, 6, 9, 2, 1).numpy())
    assert not R.expand_mask([6], [9], 3, None, 3).any()  # no mask: nothing masked
    full = torch.rand(2, 3, 6, 9) < 0.5
    assert np.array_equal(R.expand_mask([6, 6], [9, 9], 3, full, 0, 2, 1), (full | band_top_left(6, 9, 2, 1)).numpy())
    t = R.expand_mask([2, 4], [6, 5], 1, COMPRESSED, 3, varlen=True)  # TND: past a sequence's lengths is masked
    assert t.shape == (2, 1, 4, 6)
    assert np.array_equal(t[0, 0, :2], mode_mask(3, 2, 6).numpy()) and t[0, 0, 2:].all()
    assert np.array_equal(t[1, 0, :, :5], mode_mask(3, 4, 5).numpy()) and t[1, 0, :, 5:].all()


# ---- bad input ----
def bad(exc, match, *args, **kwargs):
    with pytest.raises(exc, match=match):
        R.fusion_attention_reference(*args, **kwargs)


def test_bad_input():
    q, k, v = qkv(1, 4, 2, 5, 6, 16, 16)
    bad(ValueError, "input_layout", q, k, v, 4, "BSDN")
    bad(ValueError, "head_num", q, k, v, 3, "BNSD")
    bad(ValueError, "multiple of key/value heads", q, *qkv(1, 4, 3, 5, 6, 16, 16)[1:], 4, "BNSD")
    bad(ValueError, "Dq == Dk >= Dv", q, k, torch.randn(1, 2, 6, 32, dtype=torch.float64), 4, "BNSD")
    bad(ValueError, "atten_mask must have shape", q, k, v, 4, "BNSD", torch.zeros(5, 5, dtype=torch.bool))
    bad(TypeError, "bool or uint8", q, k, v, 4, "BNSD", torch.zeros(5, 6))
    bad(
        ValueError, r"compressed \[2048, 2048\]", q, k, v, 4, "BNSD", torch.zeros(5, 6, dtype=torch.bool), sparse_mode=2
    )
    bad(ValueError, "triu", q, k, v, 4, "BNSD", ~COMPRESSED, sparse_mode=3)
    bad(ValueError, "no valid block", q, k, v, 4, "BNSD", torch.zeros(5, 6, dtype=torch.bool), 1.0, -1, -1)
    for mode, name in ((5, "prefix"), (6, "prefix compressed")):
        bad(NotImplementedError, f"sparse_mode {mode} \\({name}", q, k, v, 4, "BNSD", sparse_mode=mode)
    bad(ValueError, "sparse_mode must be one of", q, k, v, 4, "BNSD", sparse_mode=7)
    bad(NotImplementedError, "pse", q, k, v, 4, "BNSD", pse=torch.zeros(1, 4, 5, 6))
    tq, tk = tnd([2, 3], 4, 16), tnd([2, 3], 2, 16)
    bad(ValueError, "actual_seq_qlen", tq, tk, tk, 4, "TND")
    bad(ValueError, "non-decreasing", tq, tk, tk, 4, "TND", actual_seq_qlen=[3, 2, 5], actual_seq_kvlen=[2, 3, 5])
    bad(ValueError, "last cumulative length", tq, tk, tk, 4, "TND", actual_seq_qlen=[2, 4], actual_seq_kvlen=[2, 5])
    bad(ValueError, "same length", tq, tk, tk, 4, "TND", actual_seq_qlen=[5], actual_seq_kvlen=[2, 5])
    packed = AttentionAttrs(4, "TND", COMPRESSED, actual_seq_qlen=[2, 5], actual_seq_kvlen=[2, 5])
    bad(ValueError, "Sq <= Skv", tq, tk, tk, *packed._replace(actual_seq_qlen=[3, 5], sparse_mode=3))
    for mode in (7, 8):
        bad(NotImplementedError, f"sparse_mode {mode}", tq, tk, tk, *packed._replace(sparse_mode=mode))
    with pytest.raises(ValueError, match="dy must have attention_out's shape"):
        R.fusion_attention_grad_reference(q, k, v, torch.zeros(1, 4, 5, 8), 4, "BNSD")


def test_row_blocks_do_not_change_the_result(monkeypatch):
    """The goldens walk blocks of query rows; a block of a few rows gives the same numbers."""
    q, k, v = qkv(2, 4, 2, 9, 7, 16, 8)
    dy = torch.randn(2, 4, 9, 8, dtype=torch.float64)
    args = (4, "BNSD", COMPRESSED, 0.3, BIG, BIG, None, None, 3)
    whole = (*R.fusion_attention_reference(q, k, v, *args), *R.fusion_attention_grad_reference(q, k, v, dy, *args))
    monkeypatch.setattr(R, "BLOCK_ELEMENTS", 15)  # two rows of 7 keys per block
    blocks = (*R.fusion_attention_reference(q, k, v, *args), *R.fusion_attention_grad_reference(q, k, v, dy, *args))
    for a, b in zip(whole, blocks, strict=True):
        np.testing.assert_allclose(a, b, **TOL)
