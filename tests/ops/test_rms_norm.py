"""RMSNorm ops (torch.ops.custom.rms_norm / add_rms_norm and their grads) against float64 NumPy goldens.

Accuracy is judged by the Ascend standards in ascendc_ops.precision: the CANN MERE/MARE standard
against the golden (computed from the dtype-rounded inputs), and the double benchmark against
PyTorch's own computation of the same formula in the same dtype. The one allowance is
precision.mare_within_rounding (as in test_rope.py). Rows that do not fit in UB (hidden 16384 and
32768 in fp32) take the split-row tiling; the other sizes the single-pass tiling.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ascendc_ops  # noqa: F401  (loads the library)
from accuracy import assert_accurate, np64
from ascendc_ops import precision as P
from ascendc_ops.ops import rms_norm as N, rms_norm_reference as R
from conftest import proto_dtypes

EPS = 1e-6
PAIRS = proto_dtypes("rms_norm", "x", "gamma")
ROWS = (1, 7, 83)
HIDDEN = (1, 8, 769, 5125)
SPLIT_HIDDEN = (16384, 32768)


def dname(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def pair_id(pair) -> str:
    return f"{dname(pair[0])}-{dname(pair[1])}"


# ---------------------------------------------------------------- PyTorch's own same-dtype computation
def torch_rms_norm(x, gamma, eps=EPS):
    """The double benchmark's second implementation: the formula step by step in x's dtype."""
    g = gamma.to(x.dtype)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


def torch_rms_norm_grads(dy, x, gamma, eps=EPS):
    """dx, dgamma of torch_rms_norm by PyTorch autograd, in x's dtype."""
    x = x.detach().requires_grad_()
    g = gamma.detach().to(x.dtype).requires_grad_()
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g
    dx, dg = torch.autograd.grad(y, (x, g), dy)
    return dx, dg.to(gamma.dtype)


# ---------------------------------------------------------------- fp32 evaluation bounds (for mare_within_rounding)
gamma_k = P.gamma


def y_bound(x, gamma) -> np.ndarray:
    """fp32 error bound of y = x*rstd*g: N-term sum of squares, scale, eps, sqrt, divide, two products."""
    n = gamma.numel()
    y, _ = R.rms_norm(np64(x), np64(gamma), EPS)
    return gamma_k(n + 8) * np.abs(y)


def dx_bound(dy, x, gamma, eps=EPS) -> np.ndarray:
    """fp32 error bound of dx = rstd*(dg - xhat*sum(dg*xhat)/N), summed over |terms|."""
    n = gamma.numel()
    dy, x, g = np64(dy), np64(x), np64(gamma)
    rstd = 1 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    xh, dg = x * rstd, dy * g
    mean_abs = np.sum(np.abs(dg * xh), axis=-1, keepdims=True) / n
    return gamma_k(n + 12) * rstd * (np.abs(dg) + np.abs(xh) * mean_abs)


def dgamma_bound(dy, x, gamma, eps=EPS) -> np.ndarray:
    """fp32 error bound of dgamma = sum over rows of dy*x*rstd (rstd itself carries gamma(N + 6))."""
    n, rows = gamma.numel(), x.numel() // max(gamma.numel(), 1)
    dy, x = np64(dy), np64(x)
    rstd = 1 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return gamma_k(rows + n + 10) * np.sum(np.abs(dy * x * rstd), axis=0)


def make(shape, dtype, scale=1.0):
    return (torch.randn(shape) * scale).to(dtype)


# ---------------------------------------------------------------- forward accuracy
def check_forward(x, gamma, label):
    y, rstd = N.rms_norm(x, gamma, EPS)
    gy, grstd = R.rms_norm(np64(x), np64(gamma), EPS)
    assert rstd.dtype == torch.float32 and tuple(rstd.shape) == grstd.shape, label
    assert_accurate(y, gy, torch_rms_norm(x, gamma), x.dtype, f"{label} y", bound=y_bound(x, gamma))
    second_rstd = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + EPS)
    assert_accurate(
        rstd,
        grstd,
        second_rstd,
        torch.float32,
        f"{label} rstd",
        bound=gamma_k(x.shape[-1] + 6) * grstd,
        compute_dtype=x.dtype,
    )


@pytest.mark.parametrize("hidden", HIDDEN)
@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_rms_norm_forward(pair, rows, hidden):
    xd, gd = pair
    check_forward(make((rows, hidden), xd), make((hidden,), gd), f"rms_norm {pair_id(pair)} [{rows}, {hidden}]")


@pytest.mark.parametrize("hidden", (8, 769))
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_rms_norm_forward_4096_rows(pair, hidden):
    xd, gd = pair
    check_forward(make((4096, hidden), xd), make((hidden,), gd), f"rms_norm {pair_id(pair)} [4096, {hidden}]")


# Power-of-two rows of 8..128 floats with no UB padding take the short-rows tiling (whole-tile folds and a
# Gather). 4099 rows: blocks of many tiles ending in a tile that is not a whole block of 8 rows.
@pytest.mark.parametrize("hidden", (16, 64, 128))
@pytest.mark.parametrize("rows", (3, 83, 4099))
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_rms_norm_forward_short_rows(pair, rows, hidden):
    xd, gd = pair
    check_forward(make((rows, hidden), xd), make((hidden,), gd), f"rms_norm {pair_id(pair)} [{rows}, {hidden}]")


# Rows shorter than a 32-byte block (hidden 1, 2, 4; 8 in fp16/bf16) take the packed tiling (rms_norm_packed.h):
# a tile of rows is one unpadded run. 4099 rows: tiles ending in one that is not a whole block of 8 rows;
# 100003 rows: several tiles per block (cann-bench RmsNorm case 15 is [1000003, 2] bf16).
@pytest.mark.parametrize("hidden", (2, 4, 8))
@pytest.mark.parametrize("rows", (1, 7, 83, 4099, 100003))
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_rms_norm_forward_packed_rows(pair, rows, hidden):
    xd, gd = pair
    check_forward(make((rows, hidden), xd), make((hidden,), gd), f"rms_norm {pair_id(pair)} [{rows}, {hidden}]")


@pytest.mark.parametrize("hidden", (1, 2, 4))
@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16), ids=dname)
def test_packed_rows_nan_inf_and_zero_rows(dtype, hidden):
    """A NaN or Inf stays in its row, and an all-zero row gives rstd = 1 / sqrt(eps) and y = 0."""
    x = make((37, hidden), dtype)
    x[3, hidden - 1] = float("nan")
    x[9, 0] = float("inf")
    x[20] = 0
    g = make((hidden,), dtype)
    y, rstd = N.rms_norm(x, g, EPS)
    with np.errstate(all="ignore"):
        gy, grstd = R.rms_norm(np64(x), np64(g), EPS)
    for name, got, want in (("y", y, gy), ("rstd", rstd, grstd)):
        assert P.metrics(np64(got), want, got.dtype)["nan_inf_match"], f"{name}: NaN/Inf positions differ"
    assert torch.all(y[20] == 0) and rstd[20].item() == pytest.approx(EPS**-0.5, rel=1e-6)
    clean = [r for r in range(37) if r not in (3, 9)]
    assert_accurate(y[clean], gy[clean], torch_rms_norm(x[clean], g), dtype, "clean rows", bound=y_bound(x[clean], g))


@pytest.mark.parametrize("hidden", (8, 128))
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_add_rms_norm_forward_short_rows(pair, hidden):
    check_add_forward(pair, 1027, hidden)


def check_add_forward(pair, rows: int, hidden: int):
    """add_rms_norm's y, rstd and x = x1 + x2 against the golden; returns (label, gamma) for the backward."""
    xd, gd = pair
    x1, x2, g = make((rows, hidden), xd), make((rows, hidden), xd), make((hidden,), gd)
    label = f"add_rms_norm {pair_id(pair)} [{rows}, {hidden}]"
    y, rstd, xo = N.add_rms_norm(x1, x2, g, EPS)
    gy, grstd, gx = R.add_rms_norm(np64(x1), np64(x2), np64(g), EPS)
    assert_accurate(xo, gx, x1 + x2, xd, f"{label} x", bound=gamma_k(1) * np.abs(gx))
    assert_accurate(
        y, gy, torch_rms_norm(x1 + x2, g), xd, f"{label} y", bound=y_bound(x1 + x2, g) + gamma_k(3) * np.abs(gy)
    )
    np.testing.assert_allclose(np64(rstd), grstd, rtol=2**-6 if xd != torch.float32 else 1e-5)
    return label, g


@pytest.mark.parametrize("hidden", SPLIT_HIDDEN)
def test_rms_norm_forward_split_row(hidden):
    check_forward(make((3, hidden), torch.float32), make((hidden,), torch.float32), f"rms_norm split [3, {hidden}]")


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_rms_norm_forward_split_row_pairs(pair):
    xd, gd = pair
    check_forward(make((2, 16384), xd), make((16384,), gd), f"rms_norm split {pair_id(pair)}")


def test_rms_norm_multi_dim_gamma_and_leading_dims():
    """gamma may span several trailing dims; rstd is keepdim with all of them set to 1."""
    x, g = make((2, 3, 4, 10), torch.float32), make((4, 10), torch.float32)
    y, rstd = N.rms_norm(x, g)
    gy, grstd = R.rms_norm(np64(x), np64(g))
    assert tuple(rstd.shape) == (2, 3, 1, 1)
    np.testing.assert_allclose(np64(y), gy, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np64(rstd), grstd, rtol=1e-6)


def test_non_contiguous_input():
    x = make((16, 64), torch.float32).t()  # [64, 16] view
    g = make((16,), torch.float32)
    y, _ = N.rms_norm(x, g)
    np.testing.assert_allclose(np64(y), R.rms_norm(np64(x), np64(g))[0], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- backward accuracy
def check_backward(x, gamma, label, add=False, eps=EPS):
    dy = make(x.shape, x.dtype)
    if add:
        x2 = make(x.shape, x.dtype)
        x1 = x
        xs = (x1.float() + x2.float()).to(x.dtype)  # what the kernel normalizes: the rounded sum
        dx_out = make(x.shape, x.dtype)
        y, rstd, xo = N.add_rms_norm(x1, x2, gamma, eps)
        assert torch.equal(xo, xs), f"{label}: x output is not round(x1 + x2)"
        dx, dg = torch.ops.custom.add_rms_norm_grad(dy, xo, rstd, gamma, dx_out)
        gdx, gdg = R.rms_norm_backward(np64(dy), np64(xo), np64(gamma), eps)
        gdx = gdx + np64(dx_out)
        sdx, sdg = torch_rms_norm_grads(dy, xo, gamma, eps)
        sdx = sdx + dx_out
        xb = xo
    else:
        _, rstd = N.rms_norm(x, gamma, eps)
        dx, dg = torch.ops.custom.rms_norm_grad(dy, x, rstd, gamma)
        gdx, gdg = R.rms_norm_backward(np64(dy), np64(x), np64(gamma), eps)
        sdx, sdg = torch_rms_norm_grads(dy, x, gamma, eps)
        xb = x
    bdx = dx_bound(dy, xb, gamma, eps) + (gamma_k(1) * np.abs(np64(dx_out)) if add else 0)
    assert_accurate(dx, gdx, sdx, x.dtype, f"{label} dx", bound=bdx)
    assert_accurate(
        dg, gdg, sdg, gamma.dtype, f"{label} dgamma", bound=dgamma_bound(dy, xb, gamma, eps), compute_dtype=x.dtype
    )


@pytest.mark.parametrize("hidden", HIDDEN)
@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_rms_norm_backward(pair, rows, hidden):
    """hidden 1: dx = rstd*dg*(1 - xhat^2) = dg*eps*rstd^3, whose condition number is x^2/eps; the sweep
    covers the 1-element row path with epsilon 1 (a well-conditioned dx of order 1), and
    test_hidden_1_dx_is_cancellation covers eps 1e-6 with |x| ~ 1, where no fp32 evaluation meets the
    literal standard."""
    xd, gd = pair
    eps = 1.0 if hidden == 1 else EPS
    check_backward(
        make((rows, hidden), xd), make((hidden,), gd), f"rms_norm_grad {pair_id(pair)} [{rows}, {hidden}]", eps=eps
    )


def test_hidden_1_dx_is_cancellation():
    """With hidden 1 and |x| ~ 1, dx = rstd*dg*(1 - xhat^2) is a difference of nearly equal numbers: no fp32
    evaluation meets the literal standard (PyTorch's own fp32 formula fails it too), but the kernel stays within
    the fp32 evaluation bound."""
    x, g, dy = make((64, 1), torch.float32), make((1,), torch.float32), make((64, 1), torch.float32)
    _, rstd = N.rms_norm(x, g)
    dx, _ = torch.ops.custom.rms_norm_grad(dy, x, rstd, g)
    gdx, _ = R.rms_norm_backward(np64(dy), np64(x), np64(g), EPS)
    sdx, _ = torch_rms_norm_grads(dy, x, g)
    assert not P.check_mere_mare(np64(sdx), gdx, torch.float32).passed
    assert bool(np.all(np.abs(np64(dx) - gdx) <= dx_bound(dy, x, g)))


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_rms_norm_backward_4096_rows(pair):
    xd, gd = pair
    check_backward(make((4096, 769), xd), make((769,), gd), f"rms_norm_grad {pair_id(pair)} [4096, 769]")


@pytest.mark.parametrize("rows", (3, 37))  # 37 rows: more than one split-row group per block
@pytest.mark.parametrize("hidden", SPLIT_HIDDEN)
def test_rms_norm_backward_split_row(hidden, rows):
    if rows == 37 and hidden == 32768:
        pytest.skip("one many-group case is enough (time)")
    check_backward(
        make((rows, hidden), torch.float32), make((hidden,), torch.float32), f"rms_norm_grad split [{rows}, {hidden}]"
    )


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_rms_norm_backward_split_row_pairs(pair):
    xd, gd = pair
    check_backward(make((2, 16384), xd), make((16384,), gd), f"rms_norm_grad split {pair_id(pair)}")


@pytest.mark.parametrize("add", (False, True), ids=("rms_norm_grad", "add_rms_norm_grad"))
def test_backward_8192_fp32(add):
    """fp32 hidden 8192: rms_norm_grad computes on dy and x where they landed, so a whole row fits in UB
    single-buffered (single-pass tiling); add_rms_norm_grad fits too with dx_out loaded into x's buffer
    after x's last read (tiling dxOutLate)."""
    check_backward(make((5, 8192), torch.float32), make((8192,), torch.float32), f"add={add} [5, 8192]", add=add)


@pytest.mark.parametrize("hidden", (8, 769, 5125, 16384))
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_add_rms_norm_forward_backward(pair, hidden):
    rows = 2 if hidden == 16384 else 7
    label, g = check_add_forward(pair, rows, hidden)
    check_backward(make((rows, hidden), pair[0]), g, label, add=True)


# ---------------------------------------------------------------- autograd
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_autograd_rms_norm(pair):
    xd, gd = pair
    x = make((5, 3, 40), xd).requires_grad_()
    g = make((40,), gd).requires_grad_()
    dy = make((5, 3, 40), xd)
    y, rstd = N.rms_norm(x, g)
    assert not rstd.requires_grad
    dx, dg = torch.autograd.grad(y, (x, g), dy)
    gdx, gdg = R.rms_norm_backward(np64(dy), np64(x), np64(g), EPS)
    sdx, sdg = torch_rms_norm_grads(dy, x, g)
    assert_accurate(dx, gdx, sdx, xd, "autograd dx", bound=dx_bound(dy, x, g))
    assert_accurate(dg, gdg, sdg, gd, "autograd dgamma", bound=dgamma_bound(dy, x, g), compute_dtype=xd)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_autograd_add_rms_norm(pair):
    """Loss through both y and the x output: dx1 = dx2 = rms_norm's dx + the x output's gradient."""
    xd, gd = pair
    x1, x2 = make((6, 96), xd).requires_grad_(), make((6, 96), xd).requires_grad_()
    g = make((96,), gd).requires_grad_()
    dy, dxo = make((6, 96), xd), make((6, 96), xd)
    y, _, xo = N.add_rms_norm(x1, x2, g)
    dx1, dx2, dg = torch.autograd.grad((y, xo), (x1, x2, g), (dy, dxo))
    gdx1, gdx2, gdg = R.add_rms_norm_backward(np64(dy), np64(dxo), np64(xo), np.zeros(xo.shape), np64(g), EPS)
    sdx, sdg = torch_rms_norm_grads(dy, xo, g)
    bound = dx_bound(dy, xo, g) + gamma_k(1) * np.abs(np64(dxo))
    assert_accurate(dx1, gdx1, sdx + dxo, xd, "autograd dx1", bound=bound)
    assert_accurate(dx2, gdx2, sdx + dxo, xd, "autograd dx2", bound=bound)
    assert_accurate(dg, gdg, sdg, gd, "autograd dgamma", bound=dgamma_bound(dy, xo, g), compute_dtype=xd)


def test_dgamma_is_deterministic():
    x, g, dy = make((300, 769), torch.float32), make((769,), torch.float32), make((300, 769), torch.float32)
    _, rstd = N.rms_norm(x, g)
    first = torch.ops.custom.rms_norm_grad(dy, x, rstd, g)[1]
    for _ in range(3):
        assert torch.equal(torch.ops.custom.rms_norm_grad(dy, x, rstd, g)[1], first)


# ---------------------------------------------------------------- NaN / Inf
@pytest.mark.parametrize("hidden", (8, 769, 16384))
@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16), ids=dname)
def test_nan_inf_propagate_like_reference(dtype, hidden):
    x = make((4, hidden), dtype)
    x[0, hidden // 2] = float("nan")
    x[1, 0] = float("inf")
    x[2, -1] = -float("inf")
    g = make((hidden,), torch.float32 if dtype != torch.float32 else dtype)
    y, rstd = N.rms_norm(x, g)
    with np.errstate(all="ignore"):
        gy, grstd = R.rms_norm(np64(x), np64(g))
        dy = make((4, hidden), dtype)
        dx, dg = torch.ops.custom.rms_norm_grad(dy, x, rstd, g)
        gdx, gdg = R.rms_norm_backward(np64(dy), np64(x), np64(g))
    for name, got, want in (("y", y, gy), ("rstd", rstd, grstd), ("dx", dx, gdx), ("dgamma", dg, gdg)):
        m = P.metrics(np64(got), want, got.dtype)
        assert m["nan_inf_match"], f"{name}: NaN/Inf positions differ"
    # the clean row is unaffected
    assert_accurate(y[3:], gy[3:], torch_rms_norm(x[3:], g), dtype, "clean row", bound=y_bound(x[3:], g))


# ---------------------------------------------------------------- HF LlamaRMSNorm parity
def hf_llama_rms_norm(hidden_states, weight, eps=EPS):
    """transformers' LlamaRMSNorm.forward (Qwen2/3, Mistral the same), written out:
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)
    It casts before the weight multiply; torch_npu (and this op) multiply by gamma in fp32 and cast once."""
    input_dtype = hidden_states.dtype
    h = hidden_states.to(torch.float32)
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + eps)
    return weight * h.to(input_dtype)


def bf16_ulp(v: torch.Tensor) -> torch.Tensor:
    """One bf16 ulp at |v| (8 significant bits), floored at the smallest normal's ulp."""
    a = v.double().abs().clamp_min(2.0**-126)
    return torch.ldexp(torch.ones_like(a), torch.frexp(a).exponent - 8)


@pytest.mark.parametrize("hidden", (128, 4096))
def test_hf_llama_rms_norm_parity_bf16(hidden):
    x = make((64, hidden), torch.bfloat16)
    w = (1 + 0.1 * torch.randn(hidden)).to(torch.bfloat16)
    ours, _ = N.rms_norm(x, w, EPS)
    hf = hf_llama_rms_norm(x, w, EPS)
    assert hf.dtype == ours.dtype == torch.bfloat16
    diff = (ours.double() - hf.double()).abs()
    ulp = torch.maximum(bf16_ulp(hf), bf16_ulp(ours))
    assert bool((diff <= ulp).all()), f"max diff in ulps {float((diff / ulp).max())}"


# ---------------------------------------------------------------- opcheck, fake / meta (the schemas: test_op_proto.py)
def _opcheck_samples():
    x, g = make((3, 5, 24), torch.float16), make((24,), torch.float32)
    xb, gb = make((4, 40), torch.bfloat16), make((40,), torch.bfloat16)
    x2 = make((3, 5, 24), torch.float16)
    y, rstd = torch.ops.custom.rms_norm(x, g, EPS)
    _, rstd_b = torch.ops.custom.rms_norm(xb, gb, EPS)
    _, rstd_a, xo = torch.ops.custom.add_rms_norm(x, x2, g, EPS)
    return [
        ("rms_norm", (x, g, EPS)),
        ("rms_norm", (xb, gb, 1e-5)),
        ("rms_norm_grad", (make(x.shape, x.dtype), x, rstd, g)),
        ("rms_norm_grad", (make(xb.shape, xb.dtype), xb, rstd_b, gb)),
        ("add_rms_norm", (x, x2, g, EPS)),
        ("add_rms_norm_grad", (make(x.shape, x.dtype), xo, rstd_a, g, make(x.shape, x.dtype))),
    ]


@pytest.mark.parametrize("op,args", _opcheck_samples(), ids=lambda v: v if isinstance(v, str) else "")
def test_opcheck(op, args):
    if op in ("rms_norm", "add_rms_norm"):
        args = tuple(
            a.clone().requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args
        )
    torch.library.opcheck(getattr(torch.ops.custom, op).default, args)


def test_fake_and_meta_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x, g = torch.empty(2, 7, 4, 16, dtype=torch.bfloat16), torch.empty(4, 16, dtype=torch.float32)
        y, rstd = N.rms_norm(x, g)
        assert y.shape == x.shape and y.dtype == torch.bfloat16
        assert tuple(rstd.shape) == (2, 7, 1, 1) and rstd.dtype == torch.float32
        y, rstd, xo = N.add_rms_norm(x, x, g)
        assert xo.shape == x.shape and xo.dtype == x.dtype and tuple(rstd.shape) == (2, 7, 1, 1)
    xm, gm = torch.empty(3, 9, device="meta", dtype=torch.float16), torch.empty(9, device="meta", dtype=torch.float16)
    rm = torch.empty(3, 1, device="meta")
    y, rstd = torch.ops.custom.rms_norm(xm, gm)
    assert y.device.type == "meta" and tuple(rstd.shape) == (3, 1)
    dx, dg = torch.ops.custom.rms_norm_grad(xm, xm, rm, gm)
    assert tuple(dx.shape) == (3, 9) and tuple(dg.shape) == (9,) and dg.dtype == torch.float16
    dx, dg = torch.ops.custom.add_rms_norm_grad(xm, xm, rm, gm, xm)
    assert tuple(dx.shape) == (3, 9)


def test_torch_compile_dynamic_shapes():
    def f(x, g):
        y, rstd = N.rms_norm(x, g)
        return y * 2, rstd

    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    for rows in (3, 11):
        x, g = make((rows, 32), torch.float32), make((32,), torch.float32)
        for got, want in zip(compiled(x, g), f(x, g), strict=True):
            torch.testing.assert_close(got, want, rtol=0, atol=0)


# ---------------------------------------------------------------- errors and edge cases
def test_errors_are_clear():
    x, g = make((4, 8), torch.float16), make((8,), torch.float32)
    with pytest.raises(ValueError, match=r"rms_norm: gamma of shape \[7\] must equal the trailing dims of x"):
        N.rms_norm(x, make((7,), torch.float32))
    with pytest.raises(ValueError, match=r"rms_norm: gamma of shape \[7\] must equal the trailing dims of x"):
        torch.ops.custom.rms_norm(x, make((7,), torch.float32))
    with pytest.raises(TypeError, match=r"rms_norm: unsupported dtypes \(x=float16, gamma=bfloat16\); supported:"):
        N.rms_norm(x, make((8,), torch.bfloat16))
    with pytest.raises(TypeError, match=r"unsupported dtypes \(x=float16, gamma=bfloat16\)"):
        torch.ops.custom.rms_norm(x, make((8,), torch.bfloat16))
    with pytest.raises(TypeError, match=r"unsupported dtypes \(x=float64, gamma=float32\)"):
        N.rms_norm(x.double(), g)
    with pytest.raises(ValueError, match=r"epsilon must be finite and >= 0"):
        N.rms_norm(x, g, -1.0)
    with pytest.raises(ValueError, match=r"x1 and x2 must have one shape"):
        N.add_rms_norm(x, make((4, 9), torch.float16), g)
    with pytest.raises(TypeError, match=r"add_rms_norm: unsupported dtypes \(x1=float16, x2=bfloat16, gamma=float32\)"):
        N.add_rms_norm(x, x.bfloat16(), g)
    _, rstd = N.rms_norm(x, g)
    with pytest.raises(ValueError, match=r"rstd must have shape \[4, 1\]"):
        torch.ops.custom.rms_norm_grad(x, x, rstd.view(4), g)
    with pytest.raises(ValueError, match=r"dy must have x's shape"):
        torch.ops.custom.rms_norm_grad(x[:2], x, rstd, g)
    with pytest.raises(ValueError, match=r"add_rms_norm_grad: dx_out must have x's shape \[4, 8\], got \[2, 8\]"):
        torch.ops.custom.add_rms_norm_grad(x, x, rstd, g, x[:2])
    with pytest.raises(TypeError, match=r"rms_norm_grad: unsupported dtypes \(dy=float16, x=float16, rstd=float16, "):
        torch.ops.custom.rms_norm_grad(x, x, rstd.half(), g)
    with pytest.raises(
        ValueError, match=r"rms_norm: x must have rank 1\.\.8 \(its trailing dims are gamma's\), got shape \[\]"
    ):
        N.rms_norm(torch.tensor(1.0), make((1,), torch.float32))


def test_meta_errors_match_the_binding():
    """The Meta kernels (FakeTensor, torch.compile) run the same problem functions as the bindings."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    def meta(*shapes_dtypes):
        return [torch.empty(s, dtype=d, device="meta") for s, d in shapes_dtypes]

    x, g7, gb = meta(((4, 8), torch.float16), ((7,), torch.float32), ((8,), torch.bfloat16))
    with pytest.raises(
        ValueError, match=r"rms_norm: gamma of shape \[7\] must equal the trailing dims of x of shape \[4, 8\]"
    ):
        torch.ops.custom.rms_norm(x, g7)
    with pytest.raises(TypeError, match=r"rms_norm: unsupported dtypes \(x=float16, gamma=bfloat16\)"):
        torch.ops.custom.rms_norm(x, gb)
    with pytest.raises(ValueError, match=r"add_rms_norm: epsilon must be finite and >= 0, got nan"):
        torch.ops.custom.add_rms_norm(x, x, gb.float(), float("nan"))
    with FakeTensorMode():
        xf, gf, rf = torch.empty(4, 8), torch.empty(8), torch.empty(4, 2)
        with pytest.raises(
            ValueError,
            match=r"rms_norm_grad: rstd must have shape \[4, 1\] \(x's with the normalized dims set to 1\), "
            r"got \[4, 2\]",
        ):
            torch.ops.custom.rms_norm_grad(xf, xf, rf, gf)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_empty_tensors(pair):
    xd, gd = pair
    x, g = torch.empty(0, 16, dtype=xd), make((16,), gd)
    y, rstd = N.rms_norm(x, g)
    assert y.shape == (0, 16) and rstd.shape == (0, 1)
    y, rstd, xo = N.add_rms_norm(x, x, g)
    assert xo.shape == (0, 16)
    dx, dg = torch.ops.custom.rms_norm_grad(x, x, rstd, g)
    assert dx.shape == (0, 16) and dg.dtype == gd and bool((dg == 0).all())
    dx, dg = torch.ops.custom.add_rms_norm_grad(x, x, rstd, g, x)
    assert dx.shape == (0, 16) and bool((dg == 0).all())
    x3 = torch.empty(2, 0, 16, dtype=xd)
    y, rstd = N.rms_norm(x3, g)
    assert y.shape == (2, 0, 16) and rstd.shape == (2, 0, 1)
