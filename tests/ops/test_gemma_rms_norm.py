"""gemma_rms_norm and gemma_rms_norm_grad (the weight 1 + gamma, Gemma's RMSNorm) against float64 NumPy goldens,
judged as test_rms_norm.py judges rms_norm (the CANN standard against the golden, the double benchmark against
PyTorch's same-dtype formula). The ops run rms_norm's kernels with the tiling's gammaOffset = 1."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from accuracy import assert_accurate, np64
from ascendc_ops import precision as P
from ascendc_ops.ops import rms_norm as N, rms_norm_reference as R
from test_rms_norm import EPS, PAIRS, ROWS, dgamma_bound, dname, dx_bound, make, pair_id, y_bound

HIDDEN = (1, 8, 769, 5125)


def weight(gamma) -> torch.Tensor:
    """1 + gamma in float64: the weight the op applies (formed in fp32 there, one rounding)."""
    return 1.0 + gamma.double()


def torch_gemma(x, gamma, eps=EPS):
    """PyTorch's own computation in x's dtype with the weight 1 + gamma formed in fp32."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + gamma.float()).to(x.dtype)


def torch_gemma_grads(dy, x, gamma, eps=EPS):
    x = x.detach().requires_grad_()
    g = gamma.detach().to(x.dtype).requires_grad_()
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1 + g)
    dx, dg = torch.autograd.grad(y, (x, g), dy)
    return dx, dg.to(gamma.dtype)


def check_forward(x, gamma, label):
    y, rstd = N.gemma_rms_norm(x, gamma, EPS)
    gy, grstd = R.gemma_rms_norm(np64(x), np64(gamma), EPS)
    assert y.dtype == x.dtype and rstd.dtype == torch.float32 and tuple(rstd.shape) == grstd.shape, label
    # one more fp32 rounding than rms_norm's: 1 + gamma
    bound = y_bound(x, weight(gamma)) + P.gamma(1) * np.abs(gy)
    assert_accurate(y, gy, torch_gemma(x, gamma), x.dtype, f"{label} y", bound=bound)
    _, plain_rstd = N.rms_norm(x, gamma, EPS)
    assert torch.equal(rstd, plain_rstd), f"{label}: rstd is rms_norm's (the weight does not enter it)"


@pytest.mark.parametrize("hidden", HIDDEN)
@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_gemma_rms_norm_forward(pair, rows, hidden):
    xd, gd = pair
    check_forward(make((rows, hidden), xd), make((hidden,), gd), f"gemma_rms_norm {pair_id(pair)} [{rows}, {hidden}]")


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_gemma_weight_near_zero(pair):
    """gamma near -1: the weight 1 + gamma cancels; formed in fp32 it is exact (Sterbenz), as HF's."""
    xd, gd = pair
    gamma = (-1.0 + torch.empty(769).uniform_(-(2.0**-8), 2.0**-8)).to(gd)
    check_forward(make((7, 769), xd), gamma, f"gemma_rms_norm near -1 {pair_id(pair)}")


def test_gemma_rms_norm_split_row():
    """A fp32 row longer than UB: the chunked path loads gamma chunk by chunk, each with the offset."""
    check_forward(make((3, 32768), torch.float32), make((32768,), torch.float32), "gemma_rms_norm split-row")


def check_backward(x, gamma, label, eps=EPS):
    dy = make(x.shape, x.dtype)
    _, rstd = N.gemma_rms_norm(x, gamma, eps)
    dx, dg = torch.ops.custom.gemma_rms_norm_grad(dy, x, rstd, gamma)
    assert dx.dtype == x.dtype and dg.dtype == gamma.dtype, label
    gdx, gdg = R.gemma_rms_norm_backward(np64(dy), np64(x), np64(gamma), eps)
    sdx, sdg = torch_gemma_grads(dy, x, gamma, eps)
    w = weight(gamma)
    bdx = dx_bound(dy, x, w, eps) * (1 + P.gamma(1))
    assert_accurate(dx, gdx, sdx, x.dtype, f"{label} dx", bound=bdx)
    bdg = dgamma_bound(dy, x, gamma, eps)
    assert_accurate(dg, gdg, sdg, gamma.dtype, f"{label} dgamma", bound=bdg, compute_dtype=x.dtype)


@pytest.mark.parametrize("hidden", HIDDEN)
@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_gemma_rms_norm_backward(pair, rows, hidden):
    """hidden 1 with epsilon 1, as test_rms_norm.py (at eps 1e-6 dx = dg*eps*rstd^3 is all cancellation)."""
    xd, gd = pair
    eps = 1.0 if hidden == 1 else EPS
    label = f"gemma_rms_norm_grad {pair_id(pair)} [{rows}, {hidden}]"
    check_backward(make((rows, hidden), xd), make((hidden,), gd), label, eps=eps)


@pytest.mark.parametrize("rows", (3, 37))
def test_gemma_rms_norm_backward_split_row(rows):
    check_backward(make((rows, 16384), torch.float32), make((16384,), torch.float32), f"split-row [{rows}, 16384]")


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_autograd_gemma_rms_norm(pair):
    xd, gd = pair
    x = make((2, 5, 96), xd).requires_grad_()
    g = make((96,), gd).requires_grad_()
    y, rstd = N.gemma_rms_norm(x, g)
    assert not rstd.requires_grad
    dy = make(y.shape, xd)
    dx, dg = torch.autograd.grad(y, (x, g), dy)
    want_dx, want_dg = torch.ops.custom.gemma_rms_norm_grad(dy, x.detach(), rstd, g.detach())
    assert torch.equal(dx, want_dx) and torch.equal(dg, want_dg)
    gdx, gdg = R.gemma_rms_norm_backward(np64(dy), np64(x.detach()), np64(g.detach()), EPS)
    sdx, sdg = torch_gemma_grads(dy, x.detach(), g.detach())
    w = weight(g.detach())
    assert_accurate(dx, gdx, sdx, xd, "autograd dx", bound=dx_bound(dy, x.detach(), w) * (1 + P.gamma(1)))
    bdg = dgamma_bound(dy.reshape(-1, 96), x.detach().reshape(-1, 96), g.detach())
    assert_accurate(dg, gdg, sdg, gd, "autograd dgamma", bound=bdg, compute_dtype=xd)


def hf_gemma_rms_norm(x, w, eps=EPS):
    """transformers' Gemma3RMSNorm.forward (Gemma, Gemma 2, Qwen3-Next and Qwen3.5's RMSNorm the same)."""
    out = x.float()
    out = out * torch.rsqrt(out.pow(2).mean(-1, keepdim=True) + eps)
    return (out * (1.0 + w.float())).type_as(x)


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16, torch.float32), ids=dname)
def test_hf_gemma_parity(dtype):
    """HF computes in fp32 and rounds once, as the kernel does: they differ only by the sum's order, so the
    results are within one unit in the last place of x's dtype (fp32: relative 2^-20 for the N-term sum)."""
    x, w = make((33, 1024), dtype), make((1024,), dtype) * 0.2
    ours = N.gemma_rms_norm(x, w)[0].double()
    hf = hf_gemma_rms_norm(x, w).double()
    if dtype == torch.float32:
        torch.testing.assert_close(ours, hf, rtol=2.0**-20 * 8, atol=0)
        return
    mant = {torch.float16: 10, torch.bfloat16: 7}[dtype]
    ulp = torch.exp2(torch.floor(torch.log2(torch.maximum(ours.abs(), hf.abs()).clamp_min(2.0**-14))) - mant)
    assert bool(((ours - hf).abs() <= ulp).all()), float(((ours - hf).abs() / ulp).max())


def test_opcheck():
    x, g = make((3, 5, 24), torch.float16), make((24,), torch.float32)
    xb, gb = make((4, 40), torch.bfloat16), make((40,), torch.bfloat16)
    _, rstd = torch.ops.custom.gemma_rms_norm(x, g, EPS)
    _, rstd_b = torch.ops.custom.gemma_rms_norm(xb, gb, EPS)
    op, grad = torch.ops.custom.gemma_rms_norm.default, torch.ops.custom.gemma_rms_norm_grad.default
    torch.library.opcheck(op, (x.clone().requires_grad_(), g.clone().requires_grad_(), EPS))
    torch.library.opcheck(op, (xb, gb, 1e-5))
    torch.library.opcheck(grad, (make(x.shape, x.dtype), x, rstd, g))
    torch.library.opcheck(grad, (make(xb.shape, xb.dtype), xb, rstd_b, gb))


def test_errors_are_clear():
    x, g = make((4, 8), torch.float16), make((8,), torch.float32)
    with pytest.raises(ValueError, match=r"gemma_rms_norm: gamma of shape \[7\] must equal the trailing dims of x"):
        N.gemma_rms_norm(x, make((7,), torch.float32))
    with pytest.raises(TypeError, match=r"gemma_rms_norm: unsupported dtypes \(x=float16, gamma=bfloat16\)"):
        N.gemma_rms_norm(x, make((8,), torch.bfloat16))
    with pytest.raises(ValueError, match=r"gemma_rms_norm: epsilon must be finite and >= 0"):
        N.gemma_rms_norm(x, g, float("inf"))
    _, rstd = N.gemma_rms_norm(x, g)
    with pytest.raises(ValueError, match=r"gemma_rms_norm_grad: rstd must have shape \[4, 1\]"):
        torch.ops.custom.gemma_rms_norm_grad(x, x, rstd.view(4), g)
    with pytest.raises(ValueError, match=r"gemma_rms_norm_grad: dy must have x's shape"):
        torch.ops.custom.gemma_rms_norm_grad(x[:2], x, rstd, g)
    xm, gm = torch.empty(4, 8, device="meta", dtype=torch.float16), torch.empty(7, device="meta")
    with pytest.raises(ValueError, match=r"gemma_rms_norm: gamma of shape \[7\] must equal the trailing dims"):
        torch.ops.custom.gemma_rms_norm(xm, gm)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_empty_tensors(pair):
    xd, gd = pair
    x, g = torch.empty(0, 16, dtype=xd), make((16,), gd)
    y, rstd = N.gemma_rms_norm(x, g)
    assert y.shape == (0, 16) and rstd.shape == (0, 1)
    dx, dg = torch.ops.custom.gemma_rms_norm_grad(x, x, rstd, g)
    assert dx.shape == (0, 16) and dg.dtype == gd and bool((dg == 0).all())
