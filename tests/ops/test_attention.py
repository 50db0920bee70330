"""fusion_attention (forward) against the float64 golden (ops/attention_reference.py) under the accuracy
standard -- MERE/MARE for attention_out in its dtype with the double benchmark against PyTorch's own
attention in the same dtype, softmax_max / softmax_sum under the fp32 standard -- for fp16/bf16/fp32, every
layout, GQA groups, head dims 64/128/80, Sq != Skv, the causal modes in both alignments, bands, fully
masked rows; bad inputs, empty tensors, opcheck. The twin's sanitizer is on (tests/conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.library import opcheck

import ascendc_ops
from accuracy import assert_accurate, np64
from ascendc_ops.ops import attention_reference as R
from bad_inputs import assert_fake_raises_the_same, assert_readable, fake_checkable

DTYPES = [torch.float16, torch.bfloat16, torch.float32]
COMPRESSED = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)  # sparse modes 2-4


def dname(d) -> str:
    return str(d).removeprefix("torch.")


def to_layout(x: torch.Tensor, layout: str) -> torch.Tensor:
    """[B, N, S, D] -> the layout (TND: B = 1 and its one sequence's tokens)."""
    b, n, s, d = x.shape
    if layout == "BNSD":
        return x.contiguous()
    if layout == "BSND":
        return x.transpose(1, 2).contiguous()
    if layout == "BSH":
        return x.transpose(1, 2).reshape(b, s, n * d).contiguous()
    if layout == "SBH":
        return x.permute(2, 0, 1, 3).reshape(s, b, n * d).contiguous()
    raise ValueError(layout)


def torch_attention(q, k, v, scale, keep):
    """PyTorch's eager attention in the inputs' dtype ([B, N, S, D], GQA by repeat; keep: True = attend), a fully
    masked row 0 as the golden's."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = (q @ k.transpose(-1, -2)) * scale
    if keep is not None:
        s = s.masked_fill(~keep, float("-inf"))
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    return p @ v


def torch_stats(q, k, scale, keep):
    """softmax_max / softmax_sum in fp32 from the dtype-rounded inputs (the double benchmark's second)."""
    g = q.shape[1] // k.shape[1]
    s = (q.float() @ k.float().repeat_interleave(g, 1).transpose(-1, -2)) * scale
    if keep is not None:
        s = s.masked_fill(~keep, float("-inf"))
    m = s.amax(-1, keepdim=True)
    rowkept = torch.isfinite(m)
    total = torch.exp(s - torch.where(rowkept, m, torch.zeros_like(m))).sum(-1, keepdim=True)
    return m.squeeze(-1), torch.where(rowkept, total, torch.zeros_like(total)).squeeze(-1)


def keep_of(mask_np, b, n, s1, s2):
    """The golden's dense mask (True = masked) as a keep tensor [B, N, S1, S2], or None."""
    if mask_np is None:
        return None
    return torch.from_numpy(~np.broadcast_to(mask_np, (b, n, s1, s2)))


def check(
    dtype,
    layout,
    b,
    n1,
    n2,
    s1,
    s2,
    d,
    dv=None,
    mask=None,
    sparse_mode=0,
    pre=2147483647,
    nxt=2147483647,
    label="",
    data=None,
):
    dv = dv or d
    torch.manual_seed(hash((layout, b, n1, n2, s1, s2, d, dv, sparse_mode)) % 2**31)
    q, k, v = data or (torch.randn(b, n1, s1, d), torch.randn(b, n2, s2, d), torch.randn(b, n2, s2, dv))
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    scale = 1.0 / d**0.5
    out, smax, ssum = ascendc_ops.fusion_attention(
        to_layout(q, layout),
        to_layout(k, layout),
        to_layout(v, layout),
        n1,
        layout,
        atten_mask=mask,
        scale=scale,
        pre_tockens=pre,
        next_tockens=nxt,
        sparse_mode=sparse_mode,
    )
    g_out, g_max, g_sum = R.fusion_attention_reference(
        np64(q),
        np64(k),
        np64(v),
        n1,
        "BNSD",
        atten_mask=None if mask is None else mask.numpy(),
        scale=scale,
        pre_tockens=pre,
        next_tockens=nxt,
        sparse_mode=sparse_mode,
    )
    dense = (
        None
        if mask is None
        else R.expand_mask(mask.numpy(), b, n1, s1, s2, sparse_mode=sparse_mode, pre_tockens=pre, next_tockens=nxt)
    )
    keep = keep_of(dense, b, n1, s1, s2)
    name = f"{label or layout} {dname(dtype)} b{b} n{n1}/{n2} s{s1}x{s2} d{d}/{dv} mode{sparse_mode}"
    got = out if layout == "BNSD" else from_layout(out, layout, b, n1, s1, dv)
    assert_accurate(got, g_out, torch_attention(q, k, v, scale, keep), dtype, name + " out")
    t_max, t_sum = torch_stats(q, k, scale, keep)
    assert smax.shape == (b, n1, s1, 8) and ssum.shape == (b, n1, s1, 8), name
    assert (smax == smax[..., :1]).all() and (ssum == ssum[..., :1]).all(), name + ": 8 equal lanes"
    assert_accurate(smax[..., 0], np.asarray(g_max).reshape(b, n1, s1, -1)[..., 0], t_max, torch.float32, name + " max")
    assert_accurate(ssum[..., 0], np.asarray(g_sum).reshape(b, n1, s1, -1)[..., 0], t_sum, torch.float32, name + " sum")
    return out, smax, ssum


def from_layout(x: torch.Tensor, layout: str, b, n, s, d) -> torch.Tensor:
    if layout == "BSND":
        return x.transpose(1, 2)
    if layout == "BSH":
        return x.reshape(b, s, n, d).transpose(1, 2)
    if layout == "SBH":
        return x.reshape(s, b, n, d).permute(1, 2, 0, 3)
    return x


# ---------------------------------------------------------------- accuracy
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH", "SBH"])
def test_layouts_and_dtypes(dtype, layout):
    check(dtype, layout, 2, 4, 2, 100, 150, 64)


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("d", [64, 128, 80])
def test_head_dims(dtype, d):
    check(dtype, "BNSD", 1, 2, 1, 130, 257, d)


@pytest.mark.parametrize("groups", [1, 2, 8])
def test_gqa_groups(groups):
    check(torch.float16, "BSND", 1, 2 * groups, 2, 40, 300, 64)


def test_value_dim_below_key_dim():
    check(torch.float16, "BNSD", 1, 2, 2, 64, 96, 128, dv=64)


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("mode", [2, 3])
@pytest.mark.parametrize("s1,s2", [(200, 200), (70, 300), (300, 70)])
def test_causal_both_alignments(dtype, mode, s1, s2):
    check(dtype, "BNSD", 1, 2, 1, s1, s2, 64, mask=COMPRESSED, sparse_mode=mode)


def test_causal_skips_the_masked_blocks():
    """Mode 2 on 512 x 512 computes the diagonal's blocks and below only: the fully masked ones never run."""
    q = torch.randn(1, 1, 512, 64).half()
    full = torch.ops.custom.fusion_attention(q, q, q, 1, "BNSD", None, 0.125)
    causal = torch.ops.custom.fusion_attention(q, q, q, 1, "BNSD", COMPRESSED, 0.125, sparse_mode=2)
    # row 0 keeps key 0 only: its softmax sum is exactly 1 and its output the first value row
    assert causal[2][0, 0, 0, 0] == 1.0 and torch.equal(causal[0][0, 0, 0], q[0, 0, 0])
    assert not torch.equal(full[0], causal[0])


@pytest.mark.parametrize("pre,nxt", [(16, 0), (40, 8), (0, 200)])
def test_band_mode_4(pre, nxt):
    check(torch.float16, "BNSD", 1, 2, 1, 300, 260, 64, mask=COMPRESSED, sparse_mode=4, pre=pre, nxt=nxt)


@pytest.mark.parametrize("shape", [(2, 4, 90, 140), (2, 1, 90, 140), (1, 1, 90, 140), (90, 140)])
def test_full_masks(shape):
    torch.manual_seed(3)
    mask = torch.rand(shape) < 0.3
    check(torch.float16, "BNSD", 2, 4, 2, 90, 140, 64, mask=mask)


def test_fully_masked_rows():
    """Rows whose every key is masked: out 0, softmax_max -inf, softmax_sum 0 (as the golden)."""
    mask = torch.zeros(1, 1, 50, 70, dtype=torch.bool)
    mask[..., 3, :] = True
    mask[..., 40:, :] = True
    out, smax, ssum = check(torch.float32, "BNSD", 1, 2, 2, 50, 70, 64, mask=mask, label="fully masked rows")
    assert (out[:, :, 40:] == 0).all() and (out[:, :, 3] == 0).all()


def test_band_mode_0_with_a_mask():
    mask = torch.rand(1, 1, 100, 100) < 0.1
    check(torch.bfloat16, "BNSD", 1, 2, 1, 100, 100, 64, mask=mask, sparse_mode=0, pre=20, nxt=5)


def test_outlier_inputs():
    """FlashAttention-3's outliers: N(0, 1) + N(0, 100) * Bernoulli(0.001)."""
    torch.manual_seed(7)

    def outliers(*shape):
        return torch.randn(*shape) + torch.randn(*shape) * 10 * (torch.rand(*shape) < 0.001)

    data = (outliers(1, 4, 256, 128), outliers(1, 2, 256, 128), outliers(1, 2, 256, 128))
    check(torch.bfloat16, "BNSD", 1, 4, 2, 256, 256, 128, data=data, label="outliers")


# ---------------------------------------------------------------- TND
def test_tnd_matches_each_sequence_alone():
    """TND (packed sequences, cumulative lengths) gives each sequence what BNSD gives it alone."""
    torch.manual_seed(11)
    lens_q, lens_k = [5, 130, 1, 64], [7, 130, 3, 64]
    n1, n2, d = 4, 2, 64
    qs = [torch.randn(s, n1, d).half() for s in lens_q]
    ks = [torch.randn(s, n2, d).half() for s in lens_k]
    vs = [torch.randn(s, n2, d).half() for s in lens_k]
    cq, ck = np.cumsum(lens_q).tolist(), np.cumsum(lens_k).tolist()
    for mode, mask in ((0, None), (3, COMPRESSED)):
        out, smax, ssum = ascendc_ops.fusion_attention(
            torch.cat(qs),
            torch.cat(ks),
            torch.cat(vs),
            n1,
            "TND",
            atten_mask=mask,
            scale=0.125,
            actual_seq_qlen=cq,
            actual_seq_kvlen=ck,
            sparse_mode=mode,
        )
        assert out.shape == (sum(lens_q), n1, d) and smax.shape == (sum(lens_q), n1, 8)
        start = 0
        for q, k, v in zip(qs, ks, vs, strict=True):
            alone = ascendc_ops.fusion_attention(
                q[None], k[None], v[None], n1, "BSND", atten_mask=mask, scale=0.125, sparse_mode=mode
            )
            s = q.shape[0]
            assert torch.equal(out[start : start + s], alone[0][0]), f"mode {mode} sequence at {start}"
            assert torch.equal(smax[start : start + s], alone[1][0].transpose(0, 1)), f"mode {mode} max at {start}"
            start += s


# ---------------------------------------------------------------- API
def test_opcheck():
    q, k, v = torch.randn(1, 4, 20, 64), torch.randn(1, 2, 30, 64), torch.randn(1, 2, 30, 64)
    opcheck(torch.ops.custom.fusion_attention, (q, k, v, 4, "BNSD", None, 0.125))
    opcheck(torch.ops.custom.fusion_attention, (q, k, v, 4, "BNSD", COMPRESSED, 0.125, 2147483647, 0, None, None, 3))
    t = torch.randn(12, 2, 64)
    opcheck(torch.ops.custom.fusion_attention, (t, t, t, 2, "TND", None, 1.0, 2147483647, 2147483647, [5, 12], [5, 12]))


def test_empty_tensors():
    out, smax, ssum = ascendc_ops.fusion_attention(
        torch.randn(0, 2, 5, 64), torch.randn(0, 2, 5, 64), torch.randn(0, 2, 5, 64), 2, "BNSD"
    )
    assert out.shape == (0, 2, 5, 64) and smax.shape == (0, 2, 5, 8)
    out, smax, ssum = ascendc_ops.fusion_attention(
        torch.randn(1, 2, 0, 64), torch.randn(1, 2, 5, 64), torch.randn(1, 2, 5, 64), 2, "BNSD"
    )
    assert out.shape == (1, 2, 0, 64)
    # no keys: every row is fully masked
    out, smax, ssum = ascendc_ops.fusion_attention(
        torch.randn(1, 2, 3, 64), torch.randn(1, 2, 0, 64), torch.randn(1, 2, 0, 64), 2, "BNSD"
    )
    assert (out == 0).all() and (ssum == 0).all() and (smax == float("-inf")).all()


def fa(q, k, v, heads=2, layout="BNSD", **kw):
    return lambda: ascendc_ops.fusion_attention(q, k, v, heads, layout, **kw)


_q, _k = torch.randn(1, 2, 8, 64), torch.randn(1, 2, 8, 64)
BAD = [
    (fa(_q, _k, _k, layout="BNS"), ValueError, "input_layout must be one of 'BSH', 'SBH', 'BSND', 'BNSD', 'TND'"),
    (fa(_q[0], _k, _k), ValueError, "query must be 4-D [B, N, S, D] for input_layout='BNSD', got shape [2, 8, 64]"),
    (fa(torch.randn(1, 3, 8, 64), _k, _k, heads=3), ValueError, "must be a multiple of key's heads N2 = 2"),
    (fa(_q, torch.randn(1, 2, 8, 32), _k), ValueError, "key's head dim Dk must equal query's Dq = 64, got 32"),
    (fa(_q, _k, torch.randn(1, 2, 8, 80)), ValueError, "value's head dim Dv must be at most Dk = 64, got 80"),
    (fa(_q, _k, torch.randn(1, 2, 9, 64)), ValueError, "value must have key's S = 8 rows, got 9"),
    (fa(_q, _k, _k, heads=4), ValueError, "head_num must equal query's N = 2, got 4"),
    (
        fa(torch.randn(1, 8, 6 * 64), torch.randn(1, 8, 128), torch.randn(1, 8, 128), heads=4, layout="BSH"),
        ValueError,
        "head_num = 4 must divide query's H = 384",
    ),
    (fa(_q, _k.half(), _k), TypeError, "key must have query's dtype float32, got float16"),
    (fa(_q.double(), _k.double(), _k.double()), TypeError, "query must be one of float16, float32, bfloat16"),
    (fa(_q, _k, _k, sparse_mode=5), ValueError, "sparse_mode 5 (prefix) is not supported"),
    (fa(_q, _k, _k, sparse_mode=6), ValueError, "sparse_mode 6 (prefix) is not supported"),
    (fa(_q, _k, _k, sparse_mode=8), ValueError, "sparse_mode 8 (varlen split across cards) is not supported"),
    (
        fa(_q, _k, _k, atten_mask=torch.zeros(8, 8, dtype=torch.uint8)),
        TypeError,
        "atten_mask must be one of bool, got",
    ),
    (
        fa(_q, _k, _k, atten_mask=torch.zeros(8, 7, dtype=torch.bool)),
        ValueError,
        "atten_mask must be [B, N, S1, S2], [B, 1, S1, S2], [1, 1, S1, S2] or [S1, S2] = [8, 8]",
    ),
    (
        fa(_q, _k, _k, atten_mask=torch.zeros(8, 8, dtype=torch.bool), sparse_mode=2),
        ValueError,
        "atten_mask must be the compressed [2048, 2048] causal mask for sparse_mode 2, got shape [8, 8]",
    ),
    (
        fa(torch.randn(6, 2, 64), torch.randn(6, 2, 64), torch.randn(6, 2, 64), layout="TND"),
        ValueError,
        "input_layout='TND' needs actual_seq_qlen and actual_seq_kvlen",
    ),
    (
        fa(*(torch.randn(6, 2, 64),) * 3, layout="TND", actual_seq_qlen=[4, 2, 6], actual_seq_kvlen=[2, 4, 6]),
        ValueError,
        "actual_seq_qlen must be cumulative sequence ends (non-decreasing, from >= 0, no leading 0), got [4, 2, 6]",
    ),
    (
        fa(*(torch.randn(6, 2, 64),) * 3, layout="TND", actual_seq_qlen=[2, 5], actual_seq_kvlen=[2, 6]),
        ValueError,
        "actual_seq_qlen must end at query's T = 6 tokens, got [2, 5]",
    ),
    (fa(_q, _k, _k, actual_seq_qlen=[8], actual_seq_kvlen=[8]), ValueError, "for input_layout='TND' only"),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_input_is_a_readable_error(i):
    assert_readable(BAD[i])


@pytest.mark.parametrize("i", fake_checkable(BAD, ()))
def test_fake_and_real_calls_raise_one_message(i):
    assert_fake_raises_the_same(BAD[i])


def test_forward_only():
    q = torch.randn(1, 2, 8, 64, requires_grad=True)
    out, _, _ = ascendc_ops.fusion_attention(q, q, q, 2, "BNSD")
    assert not out.requires_grad  # no autograd formula until the backward kernel: no fake gradient either
