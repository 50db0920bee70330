"""cross_entropy_loss / cross_entropy_loss_grad (torch.ops.custom.*, ascendc_ops.npu's npu_cross_entropy_loss and
its backward) against the float64 NumPy golden (python/ascendc_ops/ops/cross_entropy_loss_reference.py), judged with
tests/accuracy.py: the CANN MERE/MARE standard of each output's dtype and the double benchmark against PyTorch's own
log_softmax / F.cross_entropy (and their autograd) in the same dtype. Shapes: rows 1/7/83, C 1021/32000/152064/262144
(rows in UB-sized chunks with a shorter tail), weights, ignore_index (all rows too), label smoothing, logits far
from 0, the z-loss, every reduction; readable errors, empty tensors, opcheck. Big C: few rows (fast suite)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import ascendc_ops
from accuracy import assert_accurate, np64
from ascendc_ops import npu, op_proto
from ascendc_ops.harness.families.cross_entropy import torch_cross_entropy_grad
from ascendc_ops.ops import cross_entropy_loss_reference as R
from bad_inputs import assert_fake_raises_the_same, assert_readable

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
CE = ascendc_ops.cross_entropy_loss


def dname(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def make(rows, classes, dtype, seed=0, scale=2.0, ignore=None, ignore_share=0.0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(rows, classes, generator=g) * scale).to(dtype)
    t = torch.randint(0, classes, (rows,), generator=g)
    if ignore is not None:
        t[torch.rand(rows, generator=g) < ignore_share] = ignore
    return x, t


def golden(x, t, weight=None, **kw):
    return R.cross_entropy_loss(np64(x), t.numpy(), None if weight is None else np64(weight), **kw)


def torch_loss(x, t, weight=None, reduction="none", ignore_index=-100, label_smoothing=0.0):
    w = None if weight is None else weight.to(x.dtype)
    out = F.cross_entropy(x, t, w, reduction=reduction, ignore_index=ignore_index, label_smoothing=label_smoothing)
    return out if reduction == "none" else out.reshape(1)


def torch_autograd(x, t, g, weight=None, **kw):
    xg = x.detach().requires_grad_()
    (dx,) = torch.autograd.grad(torch_loss(xg, t, weight, **kw), xg, g)
    return dx


# ---------------------------------------------------------------- forward
SHAPES = [(1, 1021), (7, 1021), (83, 1021), (7, 32000), (1, 152064)]


@pytest.mark.parametrize("rows,classes", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_forward_per_row_loss_and_log_prob(dtype, rows, classes):
    """reduction 'none': every row's loss and log_prob (C 32000 / 152064: several chunks with a tail)."""
    x, t = make(rows, classes, dtype, seed=rows + classes)
    loss, logp, zloss, lse = CE(x, t, reduction="none")
    g_loss, g_logp, _, _ = golden(x, t, reduction="none")
    assert zloss.shape == (0,) and lse.shape == (0,) and loss.dtype == dtype
    label = f"{dname(dtype)} [{rows}, {classes}]"
    assert_accurate(loss, g_loss, torch_loss(x, t), dtype, f"loss {label}")
    assert_accurate(logp, g_logp, F.log_softmax(x, -1), dtype, f"log_prob {label}")


def test_forward_c_262144_fp32():
    """A row of 262,144 classes (29 chunks) in fp32: log_prob and the loss."""
    x, t = make(1, 262144, torch.float32, seed=3)
    loss, logp, _, _ = CE(x, t, reduction="sum")
    g_loss, g_logp, _, _ = golden(x, t, reduction="sum")
    assert loss.shape == (1,)
    assert_accurate(loss, g_loss, torch_loss(x, t, reduction="sum"), torch.float32, "loss sum")
    assert_accurate(logp, g_logp, F.log_softmax(x, -1), torch.float32, "log_prob")


@pytest.mark.parametrize("reduction", ("mean", "sum", "none"))
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_weight_ignore_index_smoothing(dtype, reduction):
    """Class weights, ignore_index (a class index: 3) and label smoothing as F.cross_entropy weighs them."""
    x, t = make(83, 1021, dtype, seed=5, ignore=3, ignore_share=0.2)
    w = torch.rand(1021, generator=torch.Generator().manual_seed(6)) * 0.75 + 0.25
    kw = dict(reduction=reduction, ignore_index=3, label_smoothing=0.1)
    loss, logp, _, _ = CE(x, t, w, **kw)
    g_loss, g_logp, _, _ = golden(x, t, w, **kw)
    # PyTorch's fp16 'sum' / 'mean' overflow here (the smoothing term's fp16 partial sums pass 65504: inf), so the
    # reduced loss is compared with its fp32 result rounded once to the dtype, the per-row loss with its own
    second = torch_loss(x, t, w, **kw) if reduction == "none" else torch_loss(x.float(), t, w, **kw).to(dtype)
    assert_accurate(loss, g_loss, second, dtype, f"loss {reduction}")
    assert_accurate(logp, g_logp, F.log_softmax(x, -1), dtype, "log_prob")


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_smoothing_with_weight_in_chunks(dtype):
    """Label smoothing with a weight over chunked rows (the weight goes through UB in chunks too)."""
    x, t = make(3, 32000, dtype, seed=9, ignore=-100, ignore_share=0.3)
    w = torch.rand(32000, generator=torch.Generator().manual_seed(10)) + 0.5
    kw = dict(reduction="none", label_smoothing=0.2)
    loss, _, _, _ = CE(x, t, w, **kw)
    assert_accurate(loss, golden(x, t, w, **kw)[0], torch_loss(x, t, w, **kw), dtype, "loss")


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_large_magnitude_logits(dtype):
    """Logits far from 0 (exp would overflow unless shifted by the row's max): finite, accurate lse and loss."""
    big = {torch.float32: 3e4, torch.float16: 6e4, torch.bfloat16: 1e30}[dtype]
    x, t = make(7, 4099, torch.float32, seed=11)
    x = (x * (big / 20) + big / 2).to(dtype)
    _, logp, _, lse = CE(x, t, reduction="none", lse_square_scale_for_zloss=1e-6)
    _, g_logp, _, g_lse = golden(x, t, reduction="none", lse_square_scale_for_zloss=1e-6)
    assert torch.isfinite(lse).all() and np.isfinite(g_lse).all()
    no_z = golden(x, t, reduction="none")[0]
    assert_accurate(CE(x, t, reduction="none")[0], no_z, torch_loss(x, t), dtype, "loss")
    assert_accurate(logp, g_logp, F.log_softmax(x, -1), dtype, "log_prob")
    assert_accurate(lse, g_lse, torch.logsumexp(x, -1), dtype, "lse")


@pytest.mark.parametrize("reduction", ("mean", "sum", "none"))
def test_all_ignored(reduction):
    """Every target ignored: 'mean' is 0 / 0 = NaN as torch's; the gradient is 0, never NaN."""
    x, _ = make(7, 1021, torch.float32, seed=2)
    t = torch.full((7,), -100)
    xg = x.clone().requires_grad_()
    loss, _, _, _ = CE(xg, t, reduction=reduction, label_smoothing=0.1, lse_square_scale_for_zloss=1e-3)
    want = torch_loss(x, t, reduction=reduction, label_smoothing=0.1)
    torch.testing.assert_close(loss, want, equal_nan=True)
    if reduction == "mean":
        assert torch.isnan(loss).all()
    loss.sum().backward()
    assert torch.equal(xg.grad, torch.zeros_like(x))


# ---------------------------------------------------------------- z-loss
@pytest.mark.parametrize("reduction", ("mean", "sum", "none"))
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_zloss_forward_and_backward(dtype, reduction):
    """zloss = s * lse^2 per counted row, reduced as the loss (mean: over the count) and part of the loss; the
    gradient of loss + 2 * zloss through autograd against the golden's."""
    s = 1e-2
    x, t = make(7, 1021, dtype, seed=13, ignore=-100, ignore_share=0.3)
    t[0] = 5  # at least one row counted
    kw = dict(reduction=reduction, lse_square_scale_for_zloss=s)
    xg = x.clone().requires_grad_()
    loss, logp, zloss, lse = CE(xg, t, **kw, return_zloss=True)
    g_loss, _, g_z, g_lse = golden(x, t, **kw, return_zloss=True)
    assert zloss.shape == loss.shape and lse.shape == (7,) and zloss.dtype == dtype == lse.dtype
    no_z = torch_loss(x, t, reduction=reduction)
    counted = (t != -100).to(torch.float32)
    z_torch = s * torch.logsumexp(x.float(), -1).square() * counted
    z_torch = {"none": z_torch, "sum": z_torch.sum().reshape(1), "mean": (z_torch.sum() / counted.sum()).reshape(1)}
    z_torch = z_torch[reduction].to(dtype)
    assert_accurate(zloss, g_z, z_torch, dtype, "zloss")
    assert_accurate(loss, g_loss, no_z + z_torch, dtype, "loss with z")
    assert_accurate(lse, g_lse, torch.logsumexp(x, -1), dtype, "lse")
    gl = torch.rand(loss.shape).to(dtype) + 0.5
    (loss * gl).sum().add((2 * zloss.float()).sum()).backward()
    gz = torch.full(zloss.shape, 2.0)
    want = R.cross_entropy_loss_backward(np64(gl), np64(logp), t.numpy(), None, np64(gz.to(dtype)), np64(lse), **kw)
    # PyTorch's: its own autograd of F.cross_entropy plus the z term's, in the same dtype
    xt = x.detach().float().requires_grad_()
    zt = s * torch.logsumexp(xt, -1).square() * counted
    zt = zt if reduction == "none" else zt.sum() / (counted.sum() if reduction == "mean" else 1)
    (dz,) = torch.autograd.grad((zt * (gl.float() + 2)).sum(), xt)
    second = torch_autograd(x, t, gl, reduction=reduction) + dz.to(dtype)
    assert_accurate(xg.grad, want, second, dtype, "x_grad with z", compute_dtype=dtype)


def test_zloss_off_by_default_and_lse_empty():
    x, t = make(3, 100, torch.float32)
    loss, _, zloss, lse = CE(x, t, return_zloss=True)
    assert zloss.shape == (1,) and zloss.item() == 0.0 and lse.shape == (0,)
    torch.testing.assert_close(loss, torch_loss(x, t, reduction="mean"))


# ---------------------------------------------------------------- backward
@pytest.mark.parametrize("reduction", ("mean", "sum", "none"))
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_autograd(dtype, reduction):
    """loss.backward() through register_autograd: the golden from the log_prob the forward saved (the backward's
    input, as torch_npu's), PyTorch's own autograd of F.cross_entropy in the same dtype as the comparison."""
    x, t = make(83, 1021, dtype, seed=17, ignore=7, ignore_share=0.1)
    w = torch.rand(1021, generator=torch.Generator().manual_seed(18)) + 0.25
    kw = dict(reduction=reduction, ignore_index=7, label_smoothing=0.05)
    xg = x.clone().requires_grad_()
    loss, logp, _, _ = CE(xg, t, w, **kw)
    gl = (torch.rand(loss.shape) + 0.5).to(dtype)
    loss.backward(gl)
    want = R.cross_entropy_loss_backward(np64(gl), np64(logp), t.numpy(), np64(w), **kw)
    second = torch_autograd(x, t, gl, w, **kw)
    assert_accurate(xg.grad, want, second, dtype, f"x_grad {reduction}")
    # the same through torch_npu's backward name
    direct = npu.npu_cross_entropy_loss_backward(
        gl, logp, t, w, reduction=reduction, ignore_index=7, label_smoothing=0.05
    )
    assert torch.equal(direct, xg.grad)


@pytest.mark.parametrize("rows,classes", [(1, 1021), (7, 32000), (1, 152064)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_backward_from_log_prob(dtype, rows, classes):
    """npu_cross_entropy_loss_backward on a log_prob (chunked rows with tails), against the golden and PyTorch's
    step-by-step gradient in the same dtype."""
    x, t = make(rows, classes, torch.float32, seed=19)
    logp = F.log_softmax(x.double(), -1).to(dtype)
    gl = torch.tensor([1.5]).to(dtype)
    dx = npu.npu_cross_entropy_loss_backward(gl, logp, t, reduction="sum")
    want = R.cross_entropy_loss_backward(np64(gl), np64(logp), t.numpy(), reduction="sum")
    second = torch_cross_entropy_grad(gl, logp, t, None, {"reduction": "sum"})
    assert_accurate(dx, want, second, dtype, f"x_grad [{rows}, {classes}]")


def test_reference_matches_float64_autograd():
    """The hand-derived reference gradient (weights, ignore_index, smoothing, z-loss, every reduction) agrees with
    float64 torch autograd of the reference's own forward formula."""
    x, t = make(9, 37, torch.float64, seed=23, ignore=2, ignore_share=0.3)
    w = torch.rand(37, dtype=torch.float64) + 0.1
    for reduction in ("mean", "sum", "none"):
        kw = dict(reduction=reduction, ignore_index=2, label_smoothing=0.15)
        xg = x.clone().requires_grad_()
        ce = F.cross_entropy(xg, t, w, **kw)
        counted = (t != 2).double()
        z = 0.01 * torch.logsumexp(xg, -1).square() * counted
        z = z if reduction == "none" else z.sum() / (counted.sum() if reduction == "mean" else 1)
        gl = torch.rand(ce.shape, dtype=torch.float64) + 0.5
        gz = torch.rand(ce.shape, dtype=torch.float64)
        ((ce + z) * gl + z * gz).sum().backward()
        loss, logp, zl, lse = R.cross_entropy_loss(
            x.numpy(), t.numpy(), w.numpy(), **kw, lse_square_scale_for_zloss=0.01, return_zloss=True
        )
        np.testing.assert_allclose(loss, (ce + z).detach().numpy().reshape(loss.shape), rtol=1e-12)
        np.testing.assert_allclose(zl, z.detach().numpy().reshape(zl.shape), rtol=1e-12)
        got = R.cross_entropy_loss_backward(
            gl.numpy(), logp, t.numpy(), w.numpy(), gz.numpy(), lse, **kw, lse_square_scale_for_zloss=0.01
        )
        np.testing.assert_allclose(got, xg.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_precision_checks_detect_errors():
    """The judgement is not vacuous: log_prob off by a relative 2^-11 fails the fp32 standard."""
    x, t = make(7, 1021, torch.float32)
    _, logp, _, _ = CE(x, t)
    with pytest.raises(AssertionError):
        assert_accurate(logp * (1 + 2**-11), golden(x, t)[1], F.log_softmax(x, -1), torch.float32, "biased")


# ---------------------------------------------------------------- layouts, empty tensors, torch.library
def test_non_contiguous_and_npu_forward_name():
    base, _ = make(33, 2 * 1021, torch.float32, seed=29)
    x, t = base[:, ::2], make(33, 1021, torch.float32, seed=30)[1]
    assert not x.is_contiguous()
    got = npu.npu_cross_entropy_loss(x, t, reduction="none")
    want = CE(x.contiguous(), t, reduction="none")
    for a, b in zip(got, want, strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("reduction", ("mean", "sum", "none"))
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_empty_rows(dtype, reduction):
    x = torch.empty(0, 10, dtype=dtype).requires_grad_()
    loss, logp, zloss, lse = CE(x, torch.empty(0, dtype=torch.long), reduction=reduction, return_zloss=True)
    assert loss.shape == ((0,) if reduction == "none" else (1,)) and logp.shape == (0, 10)
    want = torch_loss(x.detach().float(), torch.empty(0, dtype=torch.long), reduction=reduction)
    torch.testing.assert_close(loss.float(), want, equal_nan=True)
    loss.sum().backward()
    assert x.grad.shape == (0, 10)


def _opcheck_samples():
    x, t = make(5, 77, torch.float32, seed=31)
    w = torch.rand(77) + 0.5
    logp = F.log_softmax(x, -1)
    return [
        ("cross_entropy_loss", (x.clone().requires_grad_(), t, None, "mean", -100, 0.0, 0.0, False)),
        ("cross_entropy_loss", (x.to(torch.bfloat16).requires_grad_(), t, w, "none", 3, 0.1, 0.01, True)),
        ("cross_entropy_loss", (x.to(torch.float16), t, w, "sum", -100, 0.0, 0.0, False)),
        ("cross_entropy_loss_grad", (torch.ones(1), logp, t, None, None, None, "mean", -100, 0.0, 0.0)),
        ("cross_entropy_loss_grad", (torch.ones(5), logp, t, w, torch.ones(5), torch.ones(5), "none", -100, 0.1, 0.01)),
    ]


@pytest.mark.parametrize("op,args", _opcheck_samples(), ids=lambda v: v if isinstance(v, str) else "")
def test_opcheck(op, args):
    torch.library.opcheck(getattr(torch.ops.custom, op).default, args)


def test_registered_schemas_match_op_proto():
    protos = op_proto.load_all()
    for name in ("cross_entropy_loss", "cross_entropy_loss_grad"):
        registered = str(getattr(torch.ops.custom, name).default._schema)
        assert registered == str(torch._C.parse_schema("custom::" + protos[name].schema())), registered
    assert protos["cross_entropy_loss"].schema() == (
        "cross_entropy_loss(Tensor input, Tensor target, Tensor? weight=None, str reduction='mean', "
        "int ignore_index=-100, float label_smoothing=0.0, float lse_square_scale_for_zloss=0.0, "
        "bool return_zloss=False) -> (Tensor loss, Tensor log_prob, Tensor zloss, Tensor lse_for_zloss)"
    )


def test_torch_compile_fullgraph():
    def f(x, t):
        loss, _, _, _ = CE(x, t)
        return loss * 2

    x, t = make(6, 50, torch.float32)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    xg = x.clone().requires_grad_()
    (gc,) = torch.autograd.grad(compiled(xg, t).sum(), xg)
    (ge,) = torch.autograd.grad(f(xg, t).sum(), xg)
    torch.testing.assert_close(gc, ge, rtol=0, atol=0)


# ---------------------------------------------------------------- argument errors
def X():
    return torch.randn(4, 10)


def T():
    return torch.arange(1, 5)


BAD = [
    (
        lambda: CE(torch.randn(4, 10, 2), T()),
        ValueError,
        "cross_entropy_loss: input must be 2-D [N, C], got shape [4, 10, 2]",
    ),
    (lambda: CE(X(), T()[:3]), ValueError, "target must have shape [N] = [4] (input shape [4, 10]), got [3]"),
    (lambda: CE(X(), T().int()), TypeError, "cross_entropy_loss: target must be one of int64, got int32"),
    (lambda: CE(X().double(), T()), TypeError, "input must be one of float16, float32, bfloat16, got float64"),
    (
        lambda: CE(X(), T(), torch.ones(9)),
        ValueError,
        "weight must have shape [C] = [10] (input shape [4, 10]), got [9]",
    ),
    (lambda: CE(X(), T(), torch.ones(10).half()), TypeError, "weight must be one of float32, got float16"),
    (lambda: CE(X(), T(), reduction="avg"), ValueError, "reduction must be one of 'mean', 'sum', 'none', got 'avg'"),
    (lambda: CE(X(), T(), ignore_index=10), ValueError, "ignore_index must be < C = 10, got 10"),
    (lambda: CE(X(), T(), label_smoothing=1.0), ValueError, "label_smoothing must be in [0.0, 1.0), got 1"),
    (
        lambda: CE(X(), T(), lse_square_scale_for_zloss=2.0),
        ValueError,
        "lse_square_scale_for_zloss must be in [0.0, 1.0), got 2",
    ),
    (lambda: CE(torch.randn(4, 0), T()), ValueError, "input must have C = input.size(1) > 0, got shape [4, 0]"),
    (
        lambda: npu.npu_cross_entropy_loss_backward(torch.ones(4), X(), T()),
        ValueError,
        "grad_loss must have shape [] or [1] for reduction 'mean', got [4]",
    ),
    (
        lambda: npu.npu_cross_entropy_loss_backward(torch.ones(1).half(), X(), T()),
        TypeError,
        "grad_loss must have log_prob's dtype float32, got float16",
    ),
    (
        lambda: npu.npu_cross_entropy_loss_backward(torch.ones(1), X(), T(), lse_square_scale_for_zloss=0.1),
        ValueError,
        "lse_for_zloss (the forward's lse_for_zloss, [N]) is required when lse_square_scale_for_zloss != 0",
    ),
    (
        lambda: CE(X(), torch.tensor([1, 2, 10, 4])),
        ValueError,
        "cross_entropy_loss: target values must be in [0, C) = [0, 10) or ignore_index (-100), got target[2] = 10",
    ),
    (
        lambda: npu.npu_cross_entropy_loss_backward(torch.ones(1), X(), torch.tensor([1, -1, 3, 4])),
        ValueError,
        "cross_entropy_loss_grad: target values must be in [0, C) = [0, 10) or ignore_index (-100), got target[1] = -1",
    ),
]


@pytest.mark.parametrize("entry", BAD, ids=lambda e: e[2][:40])
def test_bad_inputs_are_readable(entry):
    assert_readable(entry)


@pytest.mark.parametrize("entry", [e for e in BAD if "target values" not in e[2]], ids=lambda e: e[2][:40])
def test_fake_tensors_raise_the_same(entry):
    assert_fake_raises_the_same(entry)


@pytest.mark.parametrize("rows", (1, 5))
@pytest.mark.parametrize("reduction", ("mean", "none"))
def test_outputs_have_unit_strides(reduction, rows):
    """Every output owns its memory with unit strides (the per-row values are columns of one [N, 4] buffer inside;
    a [1] view of it has stride 4, which contiguous() keeps)."""
    x, t = make(rows, 64, torch.float32)
    for out in CE(x, t, reduction=reduction, lse_square_scale_for_zloss=0.01, return_zloss=True):
        assert out.stride() == torch.empty(out.shape).stride() and out.storage_offset() == 0
