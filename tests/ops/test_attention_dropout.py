"""Attention dropout with an explicit mask (docs/attention.md, "Dropout"): torch_npu's bit packing of the mask,
and the float64 reference's forward and backward against brute-force torch autograd of
out = (softmax(S) * keep / keep_prob) V, whose statistics stay the undropped softmax's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ascendc_ops.ops import attention_reference as R
from ascendc_ops.ops.attention_args import TOCKENS_MAX, compressed_mask, pack_dropout_mask, unpack_dropout_mask

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
        sparse_mode=mode, dropout_mask=drop, keep_prob=keep_prob,
    )  # fmt: skip
    np.testing.assert_allclose(got[0], to_layout(out, layout).detach().numpy(), **TOL)
    np.testing.assert_allclose(got[1][..., 0], row_max.detach().numpy(), **TOL)  # the undropped softmax's
    np.testing.assert_allclose(got[2][..., 0], row_sum.detach().numpy(), **TOL)
    assert np.isfinite(got[0]).all()
    dy = torch.randn(out.shape, dtype=torch.float64, generator=gen)
    to_layout(out, layout).backward(to_layout(dy, layout))
    grads = R.fusion_attention_grad_reference(
        ql.detach(), kl.detach(), vl.detach(), to_layout(dy, layout), n, layout, mask, 0.3, TOCKENS_MAX,
        TOCKENS_MAX, sparse_mode=mode, dropout_mask=drop, keep_prob=keep_prob,
    )  # fmt: skip
    for g, t in zip(grads, (ql, kl, vl), strict=True):
        np.testing.assert_allclose(g, t.grad.numpy(), **TOL)


def test_a_dropped_row_gives_zero_output():
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 1, 5, 8, dtype=torch.float64, generator=gen) for _ in range(3))
    keep = torch.ones(1, 1, 5, 5, dtype=torch.bool)
    keep[0, 0, 2] = False
    out, row_max, _ = R.fusion_attention_reference(
        q, k, v, 1, "BNSD", dropout_mask=pack_dropout_mask(keep), keep_prob=0.5
    )
    assert not out[0, 0, 2].any() and out[0, 0, 1].any()
    undropped = R.fusion_attention_reference(q, k, v, 1, "BNSD")
    np.testing.assert_array_equal(row_max, undropped[1])


def test_keep_prob_one_reads_no_mask():
    gen = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, 2, 6, 8, dtype=torch.float64, generator=gen) for _ in range(3))
    zeros = np.zeros(16, np.uint8)  # would drop everything, were it read
    for got, want in zip(
        R.fusion_attention_reference(q, k, v, 2, "BNSD", dropout_mask=zeros, keep_prob=1.0),
        R.fusion_attention_reference(q, k, v, 2, "BNSD"),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)


def test_bad_dropout_arguments():
    q = k = v = torch.randn(1, 1, 4, 8, dtype=torch.float64)
    mask = pack_dropout_mask(np.ones((1, 1, 4, 4), bool))
    with pytest.raises(NotImplementedError, match="keep_prob 0.5 needs an explicit dropout_mask"):
        R.fusion_attention_reference(q, k, v, 1, "BNSD", keep_prob=0.5)
    with pytest.raises(ValueError, match=r"keep_prob must be in \(0, 1\]"):
        R.fusion_attention_reference(q, k, v, 1, "BNSD", dropout_mask=mask, keep_prob=0.0)
    with pytest.raises(TypeError, match="fusion_attention: dropout_mask must be uint8"):
        R.fusion_attention_reference(q, k, v, 1, "BNSD", dropout_mask=mask.astype(bool), keep_prob=0.5)
    with pytest.raises(
        ValueError, match=r"dropout_mask must hold 16 bits \(2 bytes\) for the scores \[1, 1, 4, 4\], got 1 bytes"
    ):
        R.fusion_attention_reference(q, k, v, 1, "BNSD", dropout_mask=np.ones(1, np.uint8), keep_prob=0.5)
    t = torch.randn(4, 1, 8, dtype=torch.float64)
    with pytest.raises(NotImplementedError, match="dropout_mask with input_layout TND"):
        R.fusion_attention_grad_reference(
            t, t, t, t, 1, "TND", actual_seq_qlen=[4], actual_seq_kvlen=[4], dropout_mask=mask, keep_prob=0.5
        )
