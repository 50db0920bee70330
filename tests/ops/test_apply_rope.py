"""torch.ops.custom.apply_rotary_pos_emb (torch_npu npu_apply_rotary_pos_emb): query and key rotated in place
by one launch, and its functional, differentiable form, against the float64 goldens in rope_reference.

Layouts BSND / SBND / BNSD / TND, both rotary modes, GQA head counts, partial rotary (the rotated part is
judged with the Ascend standards; the pass-through part must come back bit for bit), odd head dims, empty
tensors, the in-place contract (same storage, non-contiguous views written back), errors, opcheck,
gradcheck and the backward against the hand-derived float64 gradients.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ascendc_ops
import ascendc_ops.npu as torch_npu
from accuracy import assert_accurate, np64
from ascendc_ops.harness.twin_record import recording
from ascendc_ops.ops import rope_reference as R
from test_rope import DTYPES, MODES, dname, dx_bound, fwd_bound, make_x, rope_tables, torch_rope, torch_rotate

B, S, NQ, NK = 2, 7, 4, 2


def shapes(layout: str, D: int, R_: int):
    """(query, key, cos) shapes of `layout` with NQ query and NK key heads, cos with rotary dim R_."""
    return {
        "BSND": ((B, S, NQ, D), (B, S, NK, D), (1, S, 1, R_)),
        "SBND": ((S, B, NQ, D), (S, B, NK, D), (S, B, 1, R_)),
        "BNSD": ((B, NQ, S, D), (B, NK, S, D), (B, 1, S, R_)),
        "TND": ((S * B, NQ, D), (S * B, NK, D), (S * B, 1, R_)),
    }[layout]


def inputs(layout, D, R_, mode, dtype, table="rope"):
    qs, ks, cs = shapes(layout, D, R_)
    cos, sin = rope_tables(cs, mode, table, dtype)
    return make_x(qs, dtype), make_x(ks, dtype), cos, sin


def judge(out, x, cos, sin, mode, dtype, label, golden):
    """The rotated part by the accuracy standards (vs golden and PyTorch in dtype); the rest unchanged."""
    r = cos.shape[-1]
    second = torch_rope(x[..., :r], cos, sin, mode)
    assert_accurate(
        out[..., :r].contiguous(), golden[..., :r], second, dtype, label, bound=fwd_bound(x[..., :r], cos, sin, mode)
    )
    assert torch.equal(out[..., r:], x[..., r:]), f"{label}: the pass-through part changed"


# ---------------------------------------------------------------- forward
@pytest.mark.parametrize("D, R_", [(128, 128), (40, 40), (80, 80), (128, 64), (80, 40), (40, 24)])
@pytest.mark.parametrize("layout", ("BSND", "SBND", "BNSD", "TND"))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_in_place_accuracy(dtype, mode, layout, D, R_):
    q, k, cos, sin = inputs(layout, D, R_, mode, dtype)
    q0, k0 = q.clone(), k.clone()
    ptr = (q.data_ptr(), k.data_ptr())
    out = ascendc_ops.apply_rotary_pos_emb_(q, k, cos, sin, layout, mode)
    assert out[0] is q and out[1] is k and (q.data_ptr(), k.data_ptr()) == ptr
    gq, gk = R.apply_rotary_pos_emb(np64(q0), np64(k0), np64(cos), np64(sin), mode)
    label = f"apply_rotary_pos_emb {mode} {layout} D={D} R={R_}"
    judge(q, q0, cos, sin, mode, dtype, label + " query", gq)
    judge(k, k0, cos, sin, mode, dtype, label + " key", gk)


def test_one_launch():
    """q and k in one kernel launch (the twin's record holds one launch of the fused entry)."""
    q, k, cos, sin = inputs("BSND", 64, 64, "half", torch.float16)
    with recording() as records:
        torch.ops.custom.apply_rotary_pos_emb(q, k, cos, sin, "BSND", "half")
    assert [r["kernel"] for r in records] == ["apply_rope_half"]


def test_non_contiguous_views_are_written_back():
    """HF's q/k: BNSD views of BSND projections. The op writes the caller's tensors, whatever their strides."""
    dtype, mode = torch.bfloat16, "half"
    q = make_x((B, S, NQ, 64), dtype).transpose(1, 2)
    k = make_x((B, S, NK, 64), dtype).transpose(1, 2)
    cos, sin = rope_tables((B, 1, S, 64), mode, "rope", dtype)
    q0, k0 = q.clone(), k.clone()
    torch_npu.npu_apply_rotary_pos_emb(q, k, cos, sin, "BNSD")
    gq, gk = R.apply_rotary_pos_emb(np64(q0), np64(k0), np64(cos), np64(sin), mode)
    judge(q, q0, cos, sin, mode, dtype, "view query", gq)
    judge(k, k0, cos, sin, mode, dtype, "view key", gk)


def test_table_dtype_is_cast():
    q, k, cos, sin = inputs("BSND", 32, 32, "half", torch.bfloat16)
    q2, k2 = q.clone(), k.clone()
    ascendc_ops.apply_rotary_pos_emb_(q, k, cos.float(), sin.float())
    ascendc_ops.apply_rotary_pos_emb_(q2, k2, cos, sin)
    assert torch.equal(q, q2) and torch.equal(k, k2)


@pytest.mark.parametrize("case", ("both", "key"))
def test_empty(case):
    q, k, cos, sin = inputs("BSND", 16, 16, "half", torch.float32)
    if case == "both":
        q, k, cos, sin = q[:, :0], k[:, :0], cos[:, :0], sin[:, :0]
        ascendc_ops.apply_rotary_pos_emb_(q, k, cos, sin)
        assert q.numel() == 0
    else:  # no key heads: query alone is rotated
        k = k[:, :, :0]
        q0 = q.clone()
        ascendc_ops.apply_rotary_pos_emb_(q, k, cos, sin)
        gq, _ = R.apply_rotary_pos_emb(np64(q0), np64(k), np64(cos), np64(sin), "half")
        judge(q, q0, cos, sin, "half", torch.float32, "no key heads", gq)


# ---------------------------------------------------------------- backward
@pytest.mark.parametrize("D, R_", [(64, 64), (40, 40), (80, 40)])
@pytest.mark.parametrize("layout", ("BSND", "BNSD", "TND"))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_backward(dtype, mode, layout, D, R_):
    q, k, cos, sin = inputs(layout, D, R_, mode, dtype, "random")
    q.requires_grad_(), k.requires_grad_()
    oq, ok = ascendc_ops.apply_rotary_pos_emb(q, k, cos, sin, layout, mode)
    dq, dk = make_x(oq.shape, dtype), make_x(ok.shape, dtype)
    torch.autograd.backward((oq, ok), (dq, dk))
    gq, gk = R.apply_rotary_pos_emb_backward(np64(dq), np64(dk), np64(cos), np64(sin), mode)
    r = R_
    for got, dy, golden, name in ((q.grad, dq, gq, "dquery"), (k.grad, dk, gk, "dkey")):
        label = f"apply_rotary_pos_emb {mode} {layout} D={D} R={R_} {name}"
        part = dy[..., :r]
        second = part * cos + _torch_rotate_t(part * sin, mode)
        assert_accurate(
            got[..., :r].contiguous(), golden[..., :r], second, dtype, label, bound=dx_bound(part, cos, sin, mode)
        )
        assert torch.equal(got[..., r:], dy[..., r:]), label


def _torch_rotate_t(u, mode):
    """rotate^T in PyTorch: rotate applied three times (a quarter turn's inverse is three quarter turns)."""
    return torch_rotate(torch_rotate(torch_rotate(u, mode), mode), mode)


@pytest.mark.parametrize("mode", MODES)
def test_table_grads(mode):
    """dcos/dsin, when asked for: sum over query's and key's heads of dy*x and dy*rotate(x) (fp32)."""
    q, k, cos, sin = inputs("BSND", 16, 16, mode, torch.float32, "random")
    for t in (q, k, cos, sin):
        t.requires_grad_()
    oq, ok = ascendc_ops.apply_rotary_pos_emb(q, k, cos, sin, "BSND", mode)
    dq, dk = torch.randn_like(oq), torch.randn_like(ok)
    torch.autograd.backward((oq, ok), (dq, dk))
    _, dcq, dsq = R.rotary_mul_backward(np64(dq), np64(q), np64(cos), np64(sin), mode)
    _, dck, dsk = R.rotary_mul_backward(np64(dk), np64(k), np64(cos), np64(sin), mode)
    np.testing.assert_allclose(np64(cos.grad), dcq + dck, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np64(sin.grad), dsq + dsk, rtol=1e-5, atol=1e-5)


def test_one_output_used():
    q, k, cos, sin = inputs("BSND", 16, 16, "half", torch.float32, "random")
    q.requires_grad_(), k.requires_grad_()
    oq, _ = ascendc_ops.apply_rotary_pos_emb(q, k, cos, sin)
    oq.sum().backward()
    assert torch.equal(k.grad, torch.zeros_like(k))
    gq, _ = R.apply_rotary_pos_emb_backward(np.ones(q.shape), np.zeros(k.shape), np64(cos), np64(sin), "half")
    np.testing.assert_allclose(np64(q.grad), gq, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_gradcheck(mode):
    """fp32 kernel, so gradcheck's finite differences get fp32 tolerances (eps large enough to dominate rounding)."""
    q, k, cos, sin = inputs("BSND", 8, 8, mode, torch.float32, "random")
    q.requires_grad_(), k.requires_grad_()
    fn = lambda a, b: ascendc_ops.apply_rotary_pos_emb(a, b, cos, sin, "BSND", mode)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (q, k), eps=1e-2, atol=1e-3, rtol=1e-3)


def test_opcheck():
    q, k, cos, sin = inputs("BSND", 40, 40, "half", torch.float32)
    torch.library.opcheck(torch.ops.custom.apply_rotary_pos_emb.default, (q, k, cos, sin, "BSND", "interleave"))
    q, k, cos, sin = inputs("TND", 80, 40, "half", torch.float16)
    torch.library.opcheck(torch.ops.custom.apply_rotary_pos_emb_grad.default, (q, k, cos, sin, "TND", "half"))


def test_torch_compile_matches_eager():
    q, k, cos, sin = inputs("BNSD", 32, 32, "half", torch.float32)
    fn = torch.compile(ascendc_ops.apply_rotary_pos_emb, fullgraph=True, backend="aot_eager")
    eager = ascendc_ops.apply_rotary_pos_emb(q, k, cos, sin, "BNSD")
    for got, want in zip(fn(q, k, cos, sin, "BNSD"), eager, strict=True):
        assert torch.equal(got, want)


# ---------------------------------------------------------------- errors
def _bad(**over):
    q, k, cos, sin = inputs("BSND", 16, 16, "half", torch.float32)
    args = {"query": q, "key": k, "cos": cos, "sin": sin, "layout": "BSND", "rotary_mode": "half"}
    args.update(over)
    return args


ERRORS = [
    ({"layout": "NSD"}, ValueError, r"apply_rotary_pos_emb: layout must be 'BSND', 'SBND', 'BNSD' or 'TND', got 'NSD'"),
    ({"rotary_mode": "quarter"}, ValueError, r"rotary_mode must be 'half' or 'interleave', got 'quarter'"),
    ({"query": torch.zeros(2, 7, 16)}, ValueError, r"query must have rank 4 \(BSND\), got shape \[2, 7, 16\]"),
    ({"key": torch.zeros(2, 6, 2, 16)}, ValueError, r"key must match query in every dim but N"),
    ({"cos": torch.zeros(1, 7, 1, 18), "sin": torch.zeros(1, 7, 1, 18)}, ValueError, r"rotary dim.*\[2, 16\].*got 18"),
    ({"cos": torch.zeros(1, 7, 1, 15), "sin": torch.zeros(1, 7, 1, 15)}, ValueError, r"must be even.*got 15"),
    ({"cos": torch.zeros(1, 7, 2, 16), "sin": torch.zeros(1, 7, 2, 16)}, ValueError, r"dim 2 is 2, expected 1"),
    ({"sin": torch.zeros(1, 7, 1, 8)}, ValueError, r"cos and sin must have one shape"),
    ({"key": torch.zeros(2, 7, 2, 16, dtype=torch.float16)}, TypeError, r"key must have query's dtype float32"),
    ({"query": torch.zeros(2, 7, 4, 16, dtype=torch.float64)}, TypeError, r"query must be one of .*got float64"),
]


@pytest.mark.parametrize("over, kind, match", ERRORS, ids=range(len(ERRORS)))
@pytest.mark.parametrize("device", ("cpu", "meta"))
def test_errors(over, kind, match, device):
    args = {n: (v.to(device) if torch.is_tensor(v) else v) for n, v in _bad(**over).items()}
    with pytest.raises(kind, match=match):
        torch.ops.custom.apply_rotary_pos_emb(*args.values())


def test_same_tensor_twice_is_refused():
    q, _, cos, sin = inputs("BSND", 16, 16, "half", torch.float32)
    with pytest.raises(ValueError, match="query and key must not share memory"):
        torch.ops.custom.apply_rotary_pos_emb(q, q, cos, sin)
