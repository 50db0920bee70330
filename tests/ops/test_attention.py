"""fusion_attention (forward) against the float64 golden (ops/attention_reference.py) under the accuracy
standard -- MERE/MARE for attention_out in its dtype with the double benchmark against PyTorch's own
attention in the same dtype, softmax_max / softmax_sum under the fp32 standard -- for fp16/bf16/fp32, every
layout, GQA groups, head dims 64/128/80, Sq != Skv, the causal modes in both alignments, bands, fully
masked rows; bad inputs, empty tensors, opcheck. The twin's sanitizer is on (tests/conftest.py)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch
from torch.library import opcheck

import ascendc_ops
from accuracy import assert_accurate, np64
from ascendc_ops import precision as P
from ascendc_ops.harness.families.attention import softcapped
from ascendc_ops.harness.verify.attention_grad_standard import SOFTCAP_ULPS, U32
from ascendc_ops.ops import attention_reference as R
from ascendc_ops.ops.attention_args import (
    COMPRESSED_MASK_SIZE as SIDE,
    TOCKENS_MAX,
    AttentionAttrs,
    compressed_mask,
    merge_heads,
    split_heads,
)
from bad_inputs import bad_input_tests

DTYPES = [torch.float16, torch.bfloat16, torch.float32]
COMPRESSED = torch.from_numpy(compressed_mask())  # sparse modes 2-4


def dname(d) -> str:
    return str(d).removeprefix("torch.")


def to_layout(x: torch.Tensor, layout: str) -> torch.Tensor:
    """[B, N, S, D] -> the fixed layout, contiguous."""
    return merge_heads(x, layout).contiguous()


def with_sink(s, sink):
    """Scores [B, N, S1, S2] with each head's sink logit as one more key (gpt-oss's eager attention), or as they are."""
    return s if sink is None else torch.cat([s, sink.to(s.dtype).view(1, -1, 1, 1).expand(*s.shape[:-1], 1)], -1)


def torch_attention(q, k, v, scale, keep, softcap=0.0, sink=None):
    """PyTorch's eager attention in the inputs' dtype ([B, N, S, D], GQA by repeat; keep: True = attend), a fully
    masked row 0 as the golden's."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = softcapped((q @ k.transpose(-1, -2)) * scale, softcap)
    if keep is not None:
        s = s.masked_fill(~keep, float("-inf"))
    p = torch.softmax(with_sink(s, sink), dim=-1).nan_to_num(0.0)[..., : s.shape[-1]]
    return p @ v


def torch_stats(q, k, scale, keep, softcap=0.0, sink=None):
    """softmax_max / softmax_sum in fp32 from the dtype-rounded inputs (the double benchmark's second); a row
    with no key holds -FLT_MAX / FLT_MAX as CANN writes it."""
    g = q.shape[1] // k.shape[1]
    s = softcapped((q.float() @ k.float().repeat_interleave(g, 1).transpose(-1, -2)) * scale, softcap)
    if keep is not None:
        s = s.masked_fill(~keep, float("-inf"))
    s = with_sink(s, sink)
    m = s.amax(-1, keepdim=True)
    rowkept = torch.isfinite(m)
    total = torch.exp(s - torch.where(rowkept, m, torch.zeros_like(m))).sum(-1, keepdim=True)
    m = torch.where(rowkept, m, torch.full_like(m, -R.FLT_MAX))
    return m.squeeze(-1), torch.where(rowkept, total, torch.full_like(total, R.FLT_MAX)).squeeze(-1)


# P goes to the cube in the input dtype (the kernel's design, as CANN's and FlashAttention's): its rounding
# is part of how the output is evaluated.
P_ROUNDING = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: 0.0}


def score_error(q, k, scale, softcap=0.0):
    """Per row [B, N, S1]: the fp32 evaluation bound of its scores, gamma(D) * scale * max_j |q| . |k_j| (tanh is
    1-Lipschitz: softcapping adds only its own evaluation, SOFTCAP_ULPS units of softcap)."""
    g = q.shape[1] // k.shape[1]
    qa, ka = np.abs(np64(q)), np.repeat(np.abs(np64(k)), g, axis=1)
    dot = P.gamma(q.shape[-1]) * scale * np.einsum("bnid,bnjd->bnij", qa, ka).max(axis=-1, initial=0.0)
    return dot + SOFTCAP_ULPS * U32 * softcap


def bounds(q, k, v, scale, dtype, golden_abs, g_sum, softcap=0.0):
    """The forward's evaluation bounds: out (P rounded to the dtype, fp32 exp / sums / division, the scores'
    error twice: in the max and in the sum), softmax_max (the scores' error) and softmax_sum."""
    es = score_error(q, k, scale, softcap)
    s2 = k.shape[2]
    out = (P_ROUNDING[dtype] + P.gamma(s2 + 16) + 2 * es[..., None]) * golden_abs
    return out, es + 1e-30, (2 * es + P.gamma(s2 + 16)) * np.abs(g_sum)


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
    pre=TOCKENS_MAX,
    nxt=TOCKENS_MAX,
    label="",
    data=None,
    softcap=0.0,
    sink=None,
):
    dv = dv or d
    # A stable seed: hash() of a str is salted per process, which made the data (and the verdict) vary by run.
    torch.manual_seed(zlib.crc32(repr((layout, b, n1, n2, s1, s2, d, dv, sparse_mode)).encode()))
    q, k, v = data or (torch.randn(b, n1, s1, d), torch.randn(b, n2, s2, d), torch.randn(b, n2, s2, dv))
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    scale = 1.0 / d**0.5
    m64 = None if mask is None else mask.numpy()
    golden_attrs = AttentionAttrs(n1, "BNSD", m64, scale, pre, nxt, sparse_mode=sparse_mode, softcap=softcap)  # BNSD
    golden_attrs = golden_attrs._replace(sink=None if sink is None else sink.double().numpy())
    out, smax, ssum = ascendc_ops.fusion_attention(
        *(to_layout(t, layout) for t in (q, k, v)),
        *golden_attrs._replace(input_layout=layout, atten_mask=mask, sink=sink),
    )
    g_out, g_max, g_sum = R.fusion_attention_reference(np64(q), np64(k), np64(v), *golden_attrs)
    dense = None if mask is None else R.expand_mask([s1] * b, [s2] * b, n1, mask.numpy(), sparse_mode, pre, nxt)
    keep = keep_of(dense, b, n1, s1, s2)
    name = f"{label or layout} {dname(dtype)} b{b} n{n1}/{n2} s{s1}x{s2} d{d}/{dv} mode{sparse_mode} cap{softcap}"
    name += "" if sink is None else " sink"
    got = out if layout == "BNSD" else split_heads(out, layout, n1)
    g_abs = R.fusion_attention_reference(np64(q), np64(k), np.abs(np64(v)), *golden_attrs)[0]
    g_max, g_sum = g_max[..., 0], g_sum[..., 0]
    b_out, b_max, b_sum = bounds(q, k, v, scale, dtype, g_abs, g_sum, softcap)
    second = torch_attention(q, k, v, scale, keep, softcap, sink)
    assert_accurate(got, g_out, second, dtype, name + " out", bound=b_out)
    t_max, t_sum = torch_stats(q, k, scale, keep, softcap, sink)
    assert smax.shape == (b, n1, s1, 8) and ssum.shape == (b, n1, s1, 8), name
    assert (smax == smax[..., :1]).all() and (ssum == ssum[..., :1]).all(), name + ": 8 equal lanes"
    assert_accurate(smax[..., 0], g_max, t_max, torch.float32, name + " max", bound=b_max)
    assert_accurate(ssum[..., 0], g_sum, t_sum, torch.float32, name + " sum", bound=b_sum)
    return out, smax, ssum


# ---------------------------------------------------------------- accuracy
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH", "SBH"])
def test_layouts_and_dtypes(dtype, layout):
    check(dtype, layout, 2, 4, 2, 100, 150, 64)


# Prefill with GQA: on two core groups these tile to bundles of 4 query heads per kv head whose first task
# keeps K and V in L1 for the other three (tests/cpp/test_attention_tiling.cpp checks the tiling): every S2
# block at S2 300, the first 3 of 8 at S2 1000 (the rest streamed per head).
@pytest.mark.parametrize("s2", [300, 1000])
@pytest.mark.parametrize("mode", [0, 3])
def test_gqa_bundles_share_k_and_v(s2, mode):
    torch.ops.ascendc_ops.set_tiling_platform("Ascend910B", 4, 2, 196352)
    try:
        mask = COMPRESSED if mode else None
        check(torch.bfloat16, "BSND", 1, 8, 2, 200, s2, 128, mask=mask, sparse_mode=mode, label="bundles")
    finally:
        torch.ops.ascendc_ops.reset_tiling_platform()


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("d", [64, 128, 80, 40, 256])
def test_head_dims(dtype, d):
    check(dtype, "BNSD", 1, 2, 1, 130, 257, d)


@pytest.mark.parametrize("groups", [1, 2, 8])
def test_gqa_groups(groups):
    check(torch.float16, "BSND", 1, 2 * groups, 2, 40, 300, 64)


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("mask,mode", [(None, 0), (COMPRESSED, 3)], ids=["no mask", "causal"])
def test_softcap(dtype, mask, mode):
    """Gemma 2/3's attention logit softcapping, small enough to bend N(0, 1) scores x 3: keys 83 (the padding keys
    of a partial block must stay masked after tanh), D 40, GQA."""
    gen = torch.Generator().manual_seed(5)
    data = tuple(c * torch.randn(2, n, s, 40, generator=gen) for c, n, s in ((3, 4, 77), (3, 2, 83), (1, 2, 83)))
    check(dtype, "BSND", 2, 4, 2, 77, 83, 40, mask=mask, sparse_mode=mode, data=data, softcap=1.5)


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("layout,mask,mode", [("BNSD", None, 0), ("BSH", COMPRESSED, 3), ("BNSD", COMPRESSED, 3)])
def test_sink(dtype, layout, mask, mode):
    """gpt-oss's attention sinks (torch_npu's `sink`, fp32 [N1]): one more logit per head in every row's softmax
    with no value. Sq > Skv under bottom-right causal leaves rows with no key: they give 0, max = sink, sum = 1."""
    gen = torch.Generator().manual_seed(11)
    sink = torch.tensor([-2.0, 0.0, 1.5, 4.0])
    s1, s2 = (70, 50) if mask is not None else (33, 90)
    check(dtype, layout, 2, 4, 2, s1, s2, 64, mask=mask, sparse_mode=mode, sink=sink,
          data=tuple(torch.randn(2, n, s, 64, generator=gen) for n, s in ((4, s1), (2, s2), (2, s2))))  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("s1", [1, 3])
def test_sink_with_decodes_stacked_heads(dtype, s1):
    """Decode stacks a kv head's query heads as one task's rows, so a task's rows change head and sink row by row
    (the forward writes each row's start one by one there; one head's rows take it by two Duplicates)."""
    check(dtype, "BSND", 2, 4, 2, s1, 90, 64, sink=torch.tensor([-2.0, 0.0, 1.5, 4.0]))


@pytest.mark.parametrize("s1", [1, 3])
def test_decode_rows(s1):
    """A query block of one row: the cube's Mmad takes 16-aligned rows (m = 1 would be its vector form)."""
    check(torch.float16, "BSND", 2, 8, 2, s1, 300, 128)


# Decode with GQA stacks a kv head's query heads as one task's rows (row r: query row r // G of head
# n0 + r % G), so runs of rows change head, not row; the two AIVs split the rows mid-run when G x S1 is odd.
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH", "SBH"])
@pytest.mark.parametrize("n1,s1", [(6, 1), (6, 5), (32, 4)])
def test_decode_stacks_the_group(dtype, layout, n1, s1):
    check(dtype, layout, 2, n1, 2, s1, 200, 64)


@pytest.mark.parametrize("mode", [2, 3, 4])
def test_decode_stacked_under_the_band(mode):
    check(torch.float16, "BSND", 1, 12, 4, 5, 150, 64, mask=COMPRESSED, sparse_mode=mode, pre=20, nxt=0)


@pytest.mark.parametrize("shape", [(2, 6, 3, 140), (3, 140)])
def test_decode_stacked_with_a_full_mask(shape):
    torch.manual_seed(5)
    check(torch.bfloat16, "BNSD", 2, 6, 2, 3, 140, 64, mask=torch.rand(shape) < 0.3)


@pytest.mark.parametrize("d,dv", [(128, 64), (192, 128), (24, 16)])
def test_value_dim_below_key_dim(d, dv):
    check(torch.float16, "BNSD", 1, 2, 2, 64, 96, d, dv=dv)


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


def test_uint8_mask_is_the_bool_mask():
    """A uint8 mask masks where it is non-zero, whatever the byte."""
    torch.manual_seed(4)
    q, k = torch.randn(1, 2, 40, 64).half(), torch.randn(1, 2, 70, 64).half()
    mask = torch.rand(40, 70) < 0.3
    as_bool = ascendc_ops.fusion_attention(q, k, k, 2, "BNSD", atten_mask=mask)
    as_bytes = ascendc_ops.fusion_attention(q, k, k, 2, "BNSD", atten_mask=mask.to(torch.uint8) * 7)
    assert all(torch.equal(a, b) for a, b in zip(as_bool, as_bytes, strict=True))


def test_a_full_chip_of_core_groups():
    """24 core groups (24 AICs, 48 AIVs resident, the twin's cross-core scheduler), causal, under the sanitizer."""
    torch.ops.ascendc_ops.set_tiling_platform("Ascend910B", 48, 24, 196352)
    try:
        check(torch.float16, "BSH", 2, 8, 2, 300, 500, 64, mask=COMPRESSED, sparse_mode=3, label="24 groups")
    finally:
        torch.ops.ascendc_ops.reset_tiling_platform()


def test_fully_masked_rows():
    """Rows whose every key is masked: out 0, softmax_max -FLT_MAX, softmax_sum FLT_MAX (as the golden)."""
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
def tnd_data(lens_q, lens_k, n1, n2, d, dtype=torch.float16):
    torch.manual_seed(11)
    q = torch.randn(sum(lens_q), n1, d).to(dtype)
    k, v = torch.randn(sum(lens_k), n2, d).to(dtype), torch.randn(sum(lens_k), n2, d).to(dtype)
    return q, k, v, np.cumsum(lens_q).tolist(), np.cumsum(lens_k).tolist()


@pytest.mark.parametrize("mode", [0, 2, 3, 4])
def test_tnd_against_the_golden(mode):
    """Packed sequences (lengths 1..300, an empty one, trailing zeros) under each mask mode."""
    lens_q, lens_k = [5, 130, 0, 1, 64, 300], [7, 130, 0, 3, 64, 310]
    q, k, v, cq, ck = tnd_data(lens_q, lens_k, 4, 2, 64)
    cq, ck = cq + [0], ck + [0]  # a trailing zero drops a batch
    mask = None if mode == 0 else COMPRESSED
    pre, nxt = (TOCKENS_MAX, TOCKENS_MAX) if mode != 4 else (20, 3)
    if mode == 0:
        torch.manual_seed(5)
        mask = torch.rand(max(lens_q), max(lens_k)) < 0.2
    args = dict(atten_mask=mask, scale=0.125, pre_tockens=pre, next_tockens=nxt, sparse_mode=mode)
    out, smax, ssum = ascendc_ops.fusion_attention(q, k, v, 4, "TND", actual_seq_qlen=cq, actual_seq_kvlen=ck, **args)
    g = R.fusion_attention_reference(
        np64(q),
        np64(k),
        np64(v),
        4,
        "TND",
        actual_seq_qlen=cq,
        actual_seq_kvlen=ck,
        **{**args, "atten_mask": mask.numpy()},
    )
    second = torch_tnd(q, k, v, lens_q, lens_k, 0.125, mask, mode, pre, nxt)
    g_abs = R.fusion_attention_reference(
        np64(q),
        np64(k),
        np.abs(np64(v)),
        4,
        "TND",
        actual_seq_qlen=cq,
        actual_seq_kvlen=ck,
        **{**args, "atten_mask": mask.numpy()},
    )[0]
    es = score_error(q.transpose(0, 1)[None], k.transpose(0, 1)[None], 0.125).max()  # every pair: an upper bound
    bound = (P_ROUNDING[torch.float16] + P.gamma(max(lens_k) + 16) + 2 * es) * g_abs
    assert_accurate(out, g[0], second, torch.float16, f"TND mode {mode} out", bound=bound)
    assert smax.shape == g[1].shape and ssum.shape == g[2].shape
    assert np.allclose(np64(smax), g[1], rtol=2**-13, atol=0) and np.allclose(np64(ssum), g[2], rtol=2**-11, atol=0)


def test_tnd_lengths_up_to_2048():
    """One packed batch of sequences of 1 to 2048 tokens, causal (bottom-right), against the golden."""
    lens = [1, 2048, 17, 640]
    q, k, v, cq, ck = tnd_data(lens, lens, 2, 1, 64)
    out, smax, _ = ascendc_ops.fusion_attention(
        q, k, v, 2, "TND", atten_mask=COMPRESSED, scale=0.125, actual_seq_qlen=cq, actual_seq_kvlen=ck, sparse_mode=3
    )
    kw = dict(atten_mask=COMPRESSED.numpy(), scale=0.125, actual_seq_qlen=cq, actual_seq_kvlen=ck, sparse_mode=3)
    g = R.fusion_attention_reference(np64(q), np64(k), np64(v), 2, "TND", **kw)
    g_abs = R.fusion_attention_reference(np64(q), np64(k), np.abs(np64(v)), 2, "TND", **kw)[0]
    es = score_error(q.transpose(0, 1)[None], k.transpose(0, 1)[None], 0.125).max()
    bound = (P_ROUNDING[torch.float16] + P.gamma(max(lens) + 16) + 2 * es) * g_abs
    second = torch_tnd(q, k, v, lens, lens, 0.125, COMPRESSED, 3, TOCKENS_MAX, TOCKENS_MAX)
    assert_accurate(out, g[0], second, torch.float16, "TND up to 2048 out", bound=bound)
    assert np.allclose(np64(smax), g[1], rtol=2**-13, atol=0)


def torch_tnd(q, k, v, lens_q, lens_k, scale, mask, mode, pre, nxt):
    """PyTorch's eager attention per sequence in fp16 (the double benchmark's second)."""
    outs, sq, sk = [], 0, 0
    for a, b in zip(lens_q, lens_k, strict=True):
        qs, ks, vs = (t.transpose(0, 1)[None] for t in (q[sq : sq + a], k[sk : sk + b], v[sk : sk + b]))
        own = mask.numpy() if mode >= 2 else mask.numpy()[:a, :b]  # a sequence reads the mask's top-left corner
        dense = R.expand_mask([a], [b], q.shape[1], own, mode, pre, nxt, varlen=True)
        outs.append(torch_attention(qs, ks, vs, scale, keep_of(dense, 1, q.shape[1], a, b))[0].transpose(0, 1))
        sq, sk = sq + a, sk + b
    return torch.cat(outs)


def test_tnd_matches_each_sequence_alone():
    """A packed TND batch gives each sequence bit for bit what TND gives it alone (BSND may tile a short
    sequence differently: decode stacks heads); softmax_max / softmax_sum hold one [N, s, 8] block per
    sequence (torch_npu's default layout)."""
    lens_q, lens_k = [5, 130, 1, 64], [7, 130, 3, 64]
    q, k, v, cq, ck = tnd_data(lens_q, lens_k, 4, 2, 64)
    out, smax, ssum = ascendc_ops.fusion_attention(
        q, k, v, 4, "TND", atten_mask=COMPRESSED, scale=0.125, actual_seq_qlen=cq, actual_seq_kvlen=ck, sparse_mode=3
    )
    sq, sk = 0, 0
    for a, b in zip(lens_q, lens_k, strict=True):
        alone = ascendc_ops.fusion_attention(
            q[sq : sq + a],
            k[sk : sk + b],
            v[sk : sk + b],
            4,
            "TND",
            atten_mask=COMPRESSED,
            scale=0.125,
            actual_seq_qlen=[a],
            actual_seq_kvlen=[b],
            sparse_mode=3,
        )
        assert torch.equal(out[sq : sq + a], alone[0]), f"sequence at {sq}"
        assert torch.equal(smax.reshape(-1)[sq * 32 : (sq + a) * 32], alone[1].reshape(-1)), f"max at {sq}"
        assert torch.equal(ssum.reshape(-1)[sq * 32 : (sq + a) * 32], alone[2].reshape(-1)), f"sum at {sq}"
        sq, sk = sq + a, sk + b


# ---------------------------------------------------------------- API
def test_opcheck():
    q, k, v = torch.randn(1, 4, 20, 64), torch.randn(1, 2, 30, 64), torch.randn(1, 2, 30, 64)
    opcheck(torch.ops.custom.fusion_attention, (q, k, v, 4, "BNSD", None, 0.125))
    opcheck(torch.ops.custom.fusion_attention, (q, k, v, 4, "BNSD", COMPRESSED, 0.125, TOCKENS_MAX, 0, None, None, 3))
    t = torch.randn(12, 2, 64)
    tnd = (t, t, t, 2, "TND", None, 1.0, TOCKENS_MAX, TOCKENS_MAX, [5, 12], [5, 12])
    opcheck(torch.ops.custom.fusion_attention, tnd)
    sink = torch.randn(4, requires_grad=True)  # softcap and sink: the autograd's d_sink too
    opcheck(torch.ops.custom.fusion_attention, (q, k, v, 4, "BNSD"), {"softcap": 2.0, "sink": sink})


def test_torch_compile_fullgraph():
    q, k = torch.randn(1, 4, 20, 64), torch.randn(1, 2, 30, 64)

    def f(q, k):
        return ascendc_ops.fusion_attention(q, k, k, 4, "BNSD", atten_mask=COMPRESSED, scale=0.125, sparse_mode=3)[0]

    torch.testing.assert_close(torch.compile(f, fullgraph=True, backend="aot_eager")(q, k), f(q, k), rtol=0, atol=0)


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
    assert (out == 0).all() and (ssum == R.FLT_MAX).all() and (smax == -R.FLT_MAX).all()


def fa(make, heads=2, layout="BNSD", mask=None, **kw):
    """A bad call whose tensors are made inside it (so FakeTensorMode sees fakes): make() -> (q, k, v)."""
    sink = kw.pop("sink", None)  # made inside the call too
    return lambda: ascendc_ops.fusion_attention(
        *make(), heads, layout, atten_mask=None if mask is None else mask(), sink=None if sink is None else sink(), **kw
    )


def qkv(q=(1, 2, 8, 64), k=(1, 2, 8, 64), v=(1, 2, 8, 64), dtypes=(torch.float32,) * 3):
    return lambda: tuple(torch.randn(*s).to(t) for s, t in zip((q, k, v), dtypes, strict=True))


def tnd(*shapes):
    return qkv(*(shapes or ((6, 2, 64),) * 3))


BAD = [
    (fa(qkv(), layout="BNS"), ValueError, "input_layout must be one of 'BSH', 'SBH', 'BSND', 'BNSD', 'TND'"),
    (fa(qkv(q=(2, 8, 64))), ValueError, "query must be 4-D [B, N, S, D] for input_layout='BNSD', got shape [2, 8, 64]"),
    (fa(qkv(q=(1, 3, 8, 64)), heads=3), ValueError, "must be a multiple of key's heads N2 = 2"),
    (fa(qkv(k=(1, 2, 8, 32))), ValueError, "key's head dim Dk must equal query's Dq = 64, got 32"),
    (fa(qkv(v=(1, 2, 8, 80))), ValueError, "value's head dim Dv must be at most Dk = 64, got 80"),
    (fa(qkv(v=(1, 2, 9, 64))), ValueError, "value must have key's S = 8 rows, got 9"),
    (fa(qkv(), heads=4), ValueError, "head_num must equal query's N = 2, got 4"),
    (fa(qkv(), softcap=-1.0), ValueError, "softcap must be 0 (none) or a positive finite number, got -1"),
    (
        fa(qkv(), sink=lambda: torch.zeros(3)),
        ValueError,
        "sink must be [N1] = [2] (one logit per query head), got shape [3]",
    ),
    (
        fa(qkv(), sink=lambda: torch.zeros(2, dtype=torch.bfloat16)),
        TypeError,
        "sink must be one of float32, got bfloat16",
    ),
    (fa(qkv(), softcap=float("nan")), ValueError, "softcap must be 0 (none) or a positive finite number, got nan"),
    (
        fa(qkv((1, 8, 6 * 64), (1, 8, 128), (1, 8, 128)), heads=5, layout="BSH"),
        ValueError,
        "head_num = 5 must divide query's H = 384",
    ),
    (
        fa(qkv(dtypes=(torch.float32, torch.float16, torch.float32))),
        TypeError,
        "key must have query's dtype float32, got float16",
    ),
    (fa(qkv(dtypes=(torch.float64,) * 3)), TypeError, "query must be one of float16, float32, bfloat16"),
    (fa(qkv(), sparse_mode=5), ValueError, "sparse_mode 5 (prefix) is not supported"),
    (fa(qkv(), sparse_mode=6), ValueError, "sparse_mode 6 (prefix) is not supported"),
    (fa(qkv(), sparse_mode=8), ValueError, "sparse_mode 8 (varlen split across cards) is not supported"),
    (fa(qkv(), mask=lambda: torch.zeros(8, 8)), TypeError, "atten_mask must be one of bool, uint8, got float32"),
    (
        fa(qkv(), mask=lambda: torch.zeros(8, 7, dtype=torch.bool)),
        ValueError,
        "atten_mask must be [B, N, S1, S2], [B, 1, S1, S2], [1, 1, S1, S2] or [S1, S2] = [8, 8]",
    ),
    (
        fa(qkv(), mask=lambda: torch.zeros(8, 8, dtype=torch.bool), sparse_mode=2),
        ValueError,
        "atten_mask must be the compressed [2048, 2048] causal mask for sparse_mode 2, got shape [8, 8]",
    ),
    (
        fa(qkv(), mask=lambda: torch.zeros(SIDE, SIDE, dtype=torch.bool), sparse_mode=3),
        ValueError,
        "atten_mask must be triu(ones(2048, 2048), 1) for sparse_mode 3",
    ),
    (
        fa(qkv(), mask=lambda: torch.zeros(8, 8, dtype=torch.bool), pre_tockens=-10, next_tockens=20),
        ValueError,
        "pre_tockens = -10, next_tockens = 20 leave no valid block for sparse_mode 0 with S1 = 8, S2 = 8",
    ),
    (fa(tnd(), layout="TND"), ValueError, "input_layout='TND' needs actual_seq_qlen and actual_seq_kvlen"),
    (
        fa(tnd(), layout="TND", actual_seq_qlen=[4, 2, 6], actual_seq_kvlen=[2, 4, 6]),
        ValueError,
        "actual_seq_qlen must be cumulative sequence ends (non-decreasing, from >= 0, no leading 0, trailing 0s "
        "allowed), got [4, 2, 6]",
    ),
    (
        fa(tnd(), layout="TND", actual_seq_qlen=[2, 5], actual_seq_kvlen=[2, 6]),
        ValueError,
        "actual_seq_qlen must end at query's T = 6 tokens, got [2, 5]",
    ),
    (
        fa(
            tnd(),
            layout="TND",
            actual_seq_qlen=[2, 6],
            actual_seq_kvlen=[4, 6],
            mask=lambda: torch.ones(SIDE, SIDE, dtype=torch.bool).triu(1),  # made in FakeTensorMode too
            sparse_mode=3,
        ),
        ValueError,
        "sparse_mode 3 with input_layout='TND' needs S1 <= S2 in every sequence, got S1 = 4, S2 = 2 in sequence 1",
    ),
    (fa(qkv(), actual_seq_qlen=[8], actual_seq_kvlen=[8]), ValueError, "for input_layout='TND' only"),
]


# Checked on the values on the host (the compressed mask's content): no fake sees them.
DATA_DEPENDENT = ("triu(ones(2048, 2048), 1)",)


test_bad_input_is_a_readable_error, test_fake_and_real_calls_raise_one_message = bad_input_tests(BAD, DATA_DEPENDENT)
