"""Gated RMSNorm y = rms_norm(x, gamma) * silu(z) (transformers' silu-gated RMSNorm): the float64 golden
(rms_norm_reference.gated_rms_norm[_backward]) against transformers' RMSNormGated modules, PyTorch's
same-dtype computation (the double benchmark's second implementation, shared with the harness), and the
gated_rms_norm op and its grad (direct and through autograd) against the golden, judged as test_rms_norm.py judges
rms_norm.

The modules compute in fp32; in fp32 they, and the second implementation, must be within the fp32
evaluation bound of the golden (each bound sums the magnitudes of the terms it rounds, as test_rms_norm.py's)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ascendc_ops
from accuracy import assert_accurate, np64
from ascendc_ops import precision as P
from ascendc_ops.harness.families.rms_norm import torch_gated, torch_gated_grads  # the second implementation
from ascendc_ops.ops import rms_norm as N, rms_norm_reference as R
from test_rms_norm import EPS, PAIRS, make, pair_id

# transformers' silu-gated RMSNorms (KimiLinearRMSNormGated gates by sigmoid: not this op), module.class
HF_SILU_GATED = ("qwen3_next.Qwen3NextRMSNormGated", "qwen3_5.Qwen3_5RMSNormGated")
HF_KIMI = "kimi_linear.KimiLinearRMSNormGated"
SHAPES = ((7, 769), (2, 3, 128), (1, 1))
# the gate z (scaled by 3): both signs, saturation, and silu' changing sign near z = -1.28
GATE_SCALE = 3.0
# fp32 roundings of the gate: exp (torch's vectorized expf, within 1 ulp), add, divide, multiplies
GATE_ROUNDINGS = 8


def hf_module(name, gamma, eps=EPS):
    """transformers' module `name` ("<model>.<class>") with weight gamma; the test skips without transformers."""
    model, cls = name.split(".")
    m = getattr(pytest.importorskip(f"transformers.models.{model}.modeling_{model}"), cls)(gamma.numel(), eps=eps)
    with torch.no_grad():
        m.weight.copy_(gamma)
    return m


def inputs(shape):
    x, z = make(shape, torch.float32), make(shape, torch.float32, GATE_SCALE)
    return x, (1 + 0.3 * torch.randn(shape[-1])), z


# ---------------------------------------------------------------- fp32 evaluation bounds of the golden
def y_bound(x, gamma, z) -> np.ndarray:
    """rms_norm's gamma(N + 8) (test_rms_norm.y_bound) plus the gate's roundings, relative to |y|."""
    y, _ = R.gated_rms_norm(np64(x), np64(gamma), np64(z), EPS)
    return P.gamma(gamma.numel() + 8 + GATE_ROUNDINGS) * np.abs(y)


def grad_bounds(dy, x, gamma, z) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bounds of (dx, dgamma, dz): rms_norm_grad's terms with dy * silu(z) as the upstream gradient, and
    dz = dy * normed * s * (1 + z * (1 - s)) summed over |terms| (it cancels where silu' crosses 0)."""
    n, rows = gamma.numel(), x.numel() // gamma.numel()
    dy, x, g, z = np64(dy), np64(x).reshape(-1, n), np64(gamma).reshape(-1), np64(z)  # gamma's dims flattened
    s = R.sigmoid(z)
    dyg = (dy * z * s).reshape(-1, n)
    rstd = 1 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS)
    xh, dg = x * rstd, dyg * g
    mean_abs = np.sum(np.abs(dg * xh), axis=-1, keepdims=True) / n
    extra = n + 12 + GATE_ROUNDINGS
    bdx = (P.gamma(extra) * rstd * (np.abs(dg) + np.abs(xh) * mean_abs)).reshape(dy.shape)
    bdg = (P.gamma(rows + n + 10 + GATE_ROUNDINGS) * np.sum(np.abs(dyg * xh), axis=0)).reshape(gamma.shape)
    normed = (xh * g).reshape(dy.shape)
    bdz = P.gamma(extra) * np.abs(dy * normed) * s * (1 + np.abs(z) * (1 - s))
    return bdx, bdg, bdz


def assert_within(actual, golden, bound, label):
    err = np.abs(np64(actual) - golden)
    worst = float(np.max(err / np.maximum(bound, np.finfo(np.float64).tiny)))
    assert bool(np.all(err <= bound)), f"{label}: error up to {worst:.3g} x the fp32 bound"


# ---------------------------------------------------------------- the golden against transformers
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("module", HF_SILU_GATED)
def test_golden_matches_hf_forward(module, shape):
    x, gamma, z = inputs(shape)
    gy, grstd = R.gated_rms_norm(np64(x), np64(gamma), np64(z), EPS)
    assert grstd.shape == (*shape[:-1], 1)
    assert_within(hf_module(module, gamma)(x, z).detach(), gy, y_bound(x, gamma, z), f"{module} {shape}")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("module", HF_SILU_GATED)
def test_golden_matches_hf_backward(module, shape):
    x, gamma, z = inputs(shape)
    dy = make(shape, torch.float32)
    m = hf_module(module, gamma)
    xr, zr = x.clone().requires_grad_(), z.clone().requires_grad_()
    dx, dg, dz = torch.autograd.grad(m(xr, zr), (xr, m.weight, zr), dy)
    golden = R.gated_rms_norm_backward(np64(dy), np64(x), np64(gamma), np64(z), EPS)
    for name, got, want, bound in zip(
        ("dx", "dgamma", "dz"), (dx, dg, dz), golden, grad_bounds(dy, x, gamma, z), strict=True
    ):
        assert_within(got, want, bound, f"{module} {shape} {name}")


def test_sigmoid_gate_is_outside_the_bound():
    """The check discriminates: Kimi's sigmoid-gated module (and an ungated rms_norm) fail it."""
    x, gamma, z = inputs((7, 769))
    gy, _ = R.gated_rms_norm(np64(x), np64(gamma), np64(z), EPS)
    bound = y_bound(x, gamma, z)
    kimi = hf_module(HF_KIMI, gamma)(x, z).detach()
    ungated, _ = R.rms_norm(np64(x), np64(gamma), EPS)
    for other in (kimi, ungated):
        assert not bool(np.all(np.abs(np64(other) - gy) <= bound))


# ---------------------------------------------------------------- the second implementation
@pytest.mark.parametrize("shape", SHAPES)
def test_second_implementation_in_fp32(shape):
    """torch_gated(_grads) compute the golden's formula: in fp32 within the same bounds."""
    x, gamma, z = inputs(shape)
    dy = make(shape, torch.float32)
    assert_within(
        torch_gated(x, gamma, z),
        R.gated_rms_norm(*map(np64, (x, gamma, z)), EPS)[0],
        y_bound(x, gamma, z),
        f"torch_gated {shape}",
    )
    golden = R.gated_rms_norm_backward(*map(np64, (dy, x, gamma, z)), EPS)
    for name, got, want, bound in zip(
        ("dx", "dgamma", "dz"), torch_gated_grads(dy, x, gamma, z), golden, grad_bounds(dy, x, gamma, z), strict=True
    ):
        assert_within(got, want, bound, f"torch_gated_grads {shape} {name}")


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16))
def test_second_implementation_keeps_the_dtype(dtype):
    x, gamma, z = (t.to(dtype) for t in inputs((3, 64)))
    grads = torch_gated_grads(make(x.shape, dtype), x, gamma.float(), z)
    assert torch_gated(x, gamma, z).dtype == dtype
    assert [t.dtype for t in grads] == [dtype, torch.float32, dtype]


# ---------------------------------------------------------------- the reference's own edges
def test_sigmoid_is_stable_and_exact():
    z = np.array([-1000.0, -40.0, -1.0, 0.0, 1.0, 40.0, 1000.0])
    with np.errstate(over="raise", divide="raise", invalid="raise"):
        s = R.sigmoid(z)
    assert s[0] == 0.0 and s[-1] == 1.0 and s[3] == 0.5
    np.testing.assert_allclose(s[1:-1], 1 / (1 + np.exp(-z[1:-1])), rtol=4 * np.finfo(np.float64).eps)


def test_gate_shape_must_be_x_shape():
    with pytest.raises(ValueError, match=r"z of shape \(4, 7\) must have x's shape \(4, 8\)"):
        R.gated_rms_norm(np.ones((4, 8)), np.ones(8), np.ones((4, 7)))


# ---------------------------------------------------------------- the op (forward) against the golden
MANTISSA = {torch.float16: 10, torch.bfloat16: 7, torch.float32: 23}


def kernel_bound(x, gamma, z) -> np.ndarray:
    """The fp32 bound plus the roundings to x's dtype HF makes before the last (x * rstd; gamma * h when
    gamma is x's narrow dtype): each within half an ulp, relative 2^-(mantissa + 1)."""
    roundings = (x.dtype != torch.float32) * (1 + (gamma.dtype == x.dtype))
    gy, _ = R.gated_rms_norm(np64(x), np64(gamma), np64(z), EPS)
    return y_bound(x, gamma, z) + roundings * 2.0 ** -(MANTISSA[x.dtype] + 1) * np.abs(gy)


def check_op_forward(x, gamma, z, label):
    y, rstd = N.gated_rms_norm(x, gamma, z, EPS)
    gy, grstd = R.gated_rms_norm(np64(x), np64(gamma), np64(z), EPS)
    assert y.dtype == x.dtype and rstd.dtype == torch.float32 and tuple(rstd.shape) == grstd.shape, label
    assert_accurate(y, gy, torch_gated(x, gamma, z), x.dtype, f"{label} y", bound=kernel_bound(x, gamma, z))
    # rstd is rms_norm's (the gate does not enter it); rms_norm's short-rows path sums in another order: both
    # within gamma(N + 6) of the exact rstd
    _, plain_rstd = N.rms_norm(x, gamma, EPS)
    torch.testing.assert_close(rstd, plain_rstd, rtol=2 * P.gamma(gamma.numel() + 6), atol=0, msg=label)


@pytest.mark.parametrize("hidden", (1, 8, 64, 769, 5125))
@pytest.mark.parametrize("rows", (1, 7, 83))
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_gated_rms_norm_forward(pair, rows, hidden):
    xd, gd = pair
    x, gamma, z = make((rows, hidden), xd), make((hidden,), gd), make((rows, hidden), xd, GATE_SCALE)
    check_op_forward(x, gamma, z, f"gated_rms_norm {pair_id(pair)} [{rows}, {hidden}]")


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_gated_rms_norm_split_row(pair):
    """Rows longer than UB: the split-row mode loads z chunk by chunk in pass 2 only."""
    xd, gd = pair
    hidden = 32768 if xd == torch.float32 else 65536
    x, gamma, z = make((3, hidden), xd), make((hidden,), gd), make((3, hidden), xd, GATE_SCALE)
    check_op_forward(x, gamma, z, f"gated_rms_norm split-row {pair_id(pair)}")


def test_gated_rms_norm_leading_dims_and_non_contiguous():
    x = make((4, 3, 2, 96), torch.bfloat16).transpose(0, 1)
    z = make((3, 4, 2, 96), torch.bfloat16, GATE_SCALE)
    check_op_forward(x, make((2, 96), torch.float32), z, "gated_rms_norm [3, 4, *[2, 96]] non-contiguous x")


def test_gate_extremes():
    """silu(z) = z / (1 + exp(-z)): -0 where exp overflows (z -> -inf), z where it vanishes, as torch's."""
    x, gamma = make((2, 64), torch.float32), torch.ones(64)
    z = torch.tensor([-1e4, -100.0, -30.0, 0.0, 30.0, 100.0, 1e4, 0.5]).repeat(16).reshape(2, 64)
    y, _ = N.gated_rms_norm(x, gamma, z, EPS)
    want = hf_module(HF_SILU_GATED[0], gamma)(x, z).detach()
    assert bool(torch.isfinite(y).all())
    torch.testing.assert_close(y, want, rtol=P.gamma(64 + 16), atol=0)


@pytest.mark.parametrize("wdtype", (torch.float32, torch.bfloat16), ids=lambda d: str(d).removeprefix("torch."))
def test_hf_qwen3_next_parity_bf16(wdtype):
    """HF's module in bf16 (weight fp32, or bf16 as in a bf16 model) against the op: both round h = x * rstd and
    (bf16 weight) gamma * h to bf16; they differ only by rstd's sum order and exp's last bits, which can move
    h one bf16 ulp: then y by at most one bf16 ulp of h's relative size besides y's own rounding."""
    x, z = make((64, 128), torch.bfloat16), make((64, 128), torch.bfloat16, GATE_SCALE)
    gamma = (1 + 0.1 * torch.randn(128)).to(wdtype)
    hf = hf_module(HF_SILU_GATED[0], gamma.float()).to(wdtype)(x, z).detach()
    ours, _ = N.gated_rms_norm(x, gamma, z, EPS)
    assert hf.dtype == ours.dtype == torch.bfloat16
    a = ours.double()
    ulp = torch.ldexp(torch.ones_like(a), torch.frexp(a.abs().clamp_min(2.0**-126)).exponent - 8)
    diff = (a - hf.double()).abs()
    assert bool((diff <= 2 * ulp).all()), f"max diff in ulps {float((diff / ulp).max())}"


def test_gated_errors_are_clear():
    x, g = make((4, 8), torch.float16), make((8,), torch.float32)
    with pytest.raises(ValueError, match=r"gated_rms_norm: z must have x's shape \[4, 8\], got \[4, 7\]"):
        N.gated_rms_norm(x, g, make((4, 7), torch.float16))
    with pytest.raises(TypeError, match=r"gated_rms_norm: unsupported dtypes \(x=float16, gamma=float32, z=float32\)"):
        N.gated_rms_norm(x, g, make((4, 8), torch.float32))
    with pytest.raises(ValueError, match=r"gated_rms_norm: epsilon must be finite and >= 0"):
        N.gated_rms_norm(x, g, x, float("nan"))
    xm, zm = (
        torch.empty(4, 8, device="meta", dtype=torch.float16),
        torch.empty(4, 9, device="meta", dtype=torch.float16),
    )
    with pytest.raises(ValueError, match=r"gated_rms_norm: z must have x's shape"):
        torch.ops.custom.gated_rms_norm(xm, torch.empty(8, device="meta"), zm)


def test_gated_opcheck():
    op = torch.ops.custom.gated_rms_norm.default
    torch.library.opcheck(
        op, (make((3, 5, 24), torch.float16), make((24,), torch.float32), make((3, 5, 24), torch.float16), EPS)
    )
    torch.library.opcheck(
        op, (make((4, 40), torch.bfloat16), make((40,), torch.bfloat16), make((4, 40), torch.bfloat16), 1e-5)
    )


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_gated_empty_tensors(pair):
    xd, gd = pair
    x = torch.empty(0, 16, dtype=xd)
    y, rstd = N.gated_rms_norm(x, make((16,), gd), x)
    assert y.shape == (0, 16) and rstd.shape == (0, 1)


# ---------------------------------------------------------------- the backward op against the golden
def kernel_grad_bounds(dy, x, gamma, z) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """grad_bounds, and for dz the roundings of h the forward made (dz = dy * h * silu'(z) with h as the forward
    multiplied it): each within half an ulp of x's dtype, relative u = 2^-(mantissa + 1), compounding to
    k u / (1 - k u). dx and dgamma take dy * silu(z) in fp32: no rounding beyond their last."""
    bdx, bdg, bdz = grad_bounds(dy, x, gamma, z)
    k = (x.dtype != torch.float32) * (1 + (gamma.dtype == x.dtype))
    u = 2.0 ** -(MANTISSA[x.dtype] + 1)
    golden_terms = np.abs(np64(dy) * R.rms_norm(np64(x), np64(gamma), EPS)[0]) * R.sigmoid(np64(z))
    golden_terms = golden_terms * (1 + np.abs(np64(z)) * (1 - R.sigmoid(np64(z))))
    return bdx, bdg, bdz + k * u / (1 - k * u) * golden_terms


def check_op_backward(dy, x, gamma, z, label, grads=None):
    """gated_rms_norm_grad (or `grads`, the same from autograd) against the golden and torch_gated_grads."""
    _, rstd = N.gated_rms_norm(x, gamma, z, EPS)
    if grads is None:
        grads = torch.ops.custom.gated_rms_norm_grad(dy, x, rstd, gamma, z)
    golden = R.gated_rms_norm_backward(*map(np64, (dy, x, gamma, z)), EPS)
    second = torch_gated_grads(dy, x, gamma, z)
    dtypes = (x.dtype, gamma.dtype, x.dtype)
    for name, got, want, sec, dtype, bound in zip(
        ("dx", "dgamma", "dz"), grads, golden, second, dtypes, kernel_grad_bounds(dy, x, gamma, z), strict=True
    ):
        compute = x.dtype if name == "dgamma" else None
        assert_accurate(got, want, sec, dtype, f"{label} {name}", bound=bound, compute_dtype=compute)


@pytest.mark.parametrize("hidden", (8, 769, 5125))
@pytest.mark.parametrize("rows", (1, 7, 83))
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_gated_rms_norm_backward(pair, rows, hidden):
    xd, gd = pair
    x, gamma, z = make((rows, hidden), xd), make((hidden,), gd), make((rows, hidden), xd, GATE_SCALE)
    check_op_backward(make((rows, hidden), xd), x, gamma, z, f"gated_rms_norm_grad {pair_id(pair)} [{rows}, {hidden}]")


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_gated_rms_norm_backward_split_row(pair):
    """Rows longer than UB: pass 1 gates dy for sum(dg * x), pass 2 gates it again and writes dz chunk by chunk."""
    xd, gd = pair
    hidden = 32768 if xd == torch.float32 else 65536
    x, gamma, z = make((3, hidden), xd), make((hidden,), gd), make((3, hidden), xd, GATE_SCALE)
    check_op_backward(make((3, hidden), xd), x, gamma, z, f"gated_rms_norm_grad split-row {pair_id(pair)}")


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_gated_autograd(pair):
    """ascendc_ops.gated_rms_norm trains: autograd reaches x, gamma and z through gated_rms_norm_grad, leading
    dims and a multi-dim gamma included; rstd has no gradient."""
    xd, gd = pair
    x, z = make((5, 3, 2, 40), xd).requires_grad_(), make((5, 3, 2, 40), xd, GATE_SCALE).requires_grad_()
    gamma = make((2, 40), gd).requires_grad_()
    dy = make(x.shape, xd)
    y, rstd = ascendc_ops.gated_rms_norm(x, gamma, z)
    assert not rstd.requires_grad and y.requires_grad
    grads = torch.autograd.grad(y, (x, gamma, z), dy)
    check_op_backward(dy, x.detach(), gamma.detach(), z.detach(), f"autograd {pair_id(pair)}", grads)
    direct = torch.ops.custom.gated_rms_norm_grad(dy, x.detach(), rstd, gamma.detach(), z.detach())
    assert all(torch.equal(a, b) for a, b in zip(grads, direct, strict=True))


def test_gated_autograd_only_what_is_needed():
    x, z = make((4, 24), torch.float32).requires_grad_(), make((4, 24), torch.float32)
    gamma = make((24,), torch.float32)
    (dx,) = torch.autograd.grad(ascendc_ops.gated_rms_norm(x, gamma, z)[0].sum(), x)
    assert dx.shape == x.shape and bool(torch.isfinite(dx).all())


def test_gated_grad_gate_extremes():
    """dz at a saturated gate: silu'(z) -> 1 (z -> +inf) and -> 0 (z -> -inf, exp overflowing), finite, as
    autograd of HF's module gives it."""
    x, gamma, dy = make((2, 64), torch.float32), torch.ones(64), make((2, 64), torch.float32)
    z = torch.tensor([-1e4, -100.0, -30.0, 0.0, 30.0, 100.0, 1e4, 0.5]).repeat(16).reshape(2, 64)
    _, rstd = N.gated_rms_norm(x, gamma, z, EPS)
    dx, dg, dz = torch.ops.custom.gated_rms_norm_grad(dy, x, rstd, gamma, z)
    m = hf_module(HF_SILU_GATED[0], gamma)
    xr, zr = x.clone().requires_grad_(), z.clone().requires_grad_()
    want = torch.autograd.grad(m(xr, zr), (xr, m.weight, zr), dy)
    for got, ref in zip((dx, dg, dz), want, strict=True):
        assert bool(torch.isfinite(got).all())
        torch.testing.assert_close(got, ref, rtol=P.gamma(2 * 64 + 32), atol=P.gamma(64) * float(ref.abs().max()))


def test_gated_grad_errors_are_clear():
    x, g, r = make((4, 8), torch.float16), make((8,), torch.float32), torch.ones(4, 1)
    grad = torch.ops.custom.gated_rms_norm_grad
    with pytest.raises(ValueError, match=r"gated_rms_norm_grad: z must have x's shape \[4, 8\], got \[4, 7\]"):
        grad(x, x, r, g, make((4, 7), torch.float16))
    with pytest.raises(TypeError, match=r"gated_rms_norm_grad: unsupported dtypes"):
        grad(x, x, r, g, make((4, 8), torch.float32))
    with pytest.raises(ValueError, match=r"gated_rms_norm_grad: rstd must have shape \[4, 1\]"):
        grad(x, x, torch.ones(4), g, x)
    xm = torch.empty(4, 8, device="meta", dtype=torch.float16)
    with pytest.raises(ValueError, match=r"gated_rms_norm_grad: z must have x's shape"):
        grad(xm, xm, torch.empty(4, 1, device="meta"), torch.empty(8, device="meta"), xm[:, :7])


def test_gated_grad_opcheck():
    op = torch.ops.custom.gated_rms_norm_grad.default
    for xd, gd, shape in ((torch.float16, torch.float32, (3, 5, 24)), (torch.bfloat16, torch.bfloat16, (4, 40))):
        x, g, z = make(shape, xd), make(shape[-1:], gd), make(shape, xd, GATE_SCALE)
        _, rstd = N.gated_rms_norm(x, g, z, EPS)
        torch.library.opcheck(op, (make(shape, xd), x, rstd, g, z))
    # the forward with inputs that need a gradient: opcheck also checks the autograd registration
    x = make((3, 24), torch.float32).requires_grad_()
    torch.library.opcheck(
        torch.ops.custom.gated_rms_norm.default,
        (x, make((24,), torch.float32).requires_grad_(), make((3, 24), torch.float32).requires_grad_(), EPS),
    )


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_gated_grad_empty_tensors(pair):
    xd, gd = pair
    x = torch.empty(0, 16, dtype=xd)
    dx, dg, dz = torch.ops.custom.gated_rms_norm_grad(x, x, torch.empty(0, 1), make((16,), gd), x)
    assert dx.shape == dz.shape == (0, 16) and dg.shape == (16,) and dg.dtype == gd and not bool(dg.any())
