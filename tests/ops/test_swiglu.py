"""SwiGLU ops (torch.ops.custom.swiglu / swiglu_grad) against float64 NumPy goldens.

Accuracy is judged by the Ascend standards in ascendc_ops.precision: the CANN MERE/MARE standard
against the golden (computed from the dtype-rounded inputs), and the double benchmark against
PyTorch's own ``silu(a) * b`` (and its autograd) in the same dtype.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import ascendc_ops  # noqa: F401  (loads the library)
import ascendc_ops.ops.swiglu as S
from accuracy import assert_accurate, np64
from ascendc_ops import op_proto, precision as P
from ascendc_ops.ops import swiglu_reference as R

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
ROWS = (1, 7, 83, 4096)
INNER = (1, 8, 769, 5125, 11008)
MAX_OUT = 1 << 20  # the sweep skips (rows, inner) with more output elements: modest sizes, fast tests
SWEEP = [(r, i) for r in ROWS for i in INNER if r * i <= MAX_OUT]


def dname(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def torch_swiglu(x: torch.Tensor, dim: int) -> torch.Tensor:
    """PyTorch's step-by-step SwiGLU in x's dtype (the double benchmark's second implementation)."""
    a, b = x.chunk(2, dim=dim)
    return F.silu(a) * b


def torch_swiglu_grad(dy: torch.Tensor, x: torch.Tensor, dim: int) -> torch.Tensor:
    """PyTorch autograd of silu(a) * b in x's dtype."""
    x = x.detach().requires_grad_()
    (dx,) = torch.autograd.grad(torch_swiglu(x, dim), x, dy)
    return dx


# ---- fp32 evaluation error bounds (for precision.mare_within_rounding) ----
# The kernel's fp32 steps, each one rounding (u = 2^-24), Exp assumed within 1 ulp (2u, two roundings):
#   forward  e = exp(-a), d = 1 + e, silu = a / d, y = silu * b: relative error <= gamma(5), no cancellation.
#   backward s = 1 / (1 + exp(-a)) has relative error <= gamma(4); t = 1 + a * (1 - s) is evaluated as
#   s + (1 + a) * (1 - s): |1 - s error| <= gamma(5) (s + (1 - s) = 1), so |t' - t| <= gamma(7) |1 + a| +
#   gamma(4) s + u |t|, and dA = ((t * s) * b) * dy adds three roundings and s's error:
#   |dA' - dA| <= |dy * b * s| * (gamma(8) |t| + gamma(7) |1 + a| + gamma(4)), within the bound below,
#   gamma(10) |dy * b * s| (1 + |a| + 2 |t|) (a < -0.3: |1 + a| <= 1 + |a| - 0.6; a >= -0.3: t >= 0.8).
#   dB = (a * s) * dy: relative error <= gamma(6).
def fwd_bound(x: torch.Tensor, dim: int) -> np.ndarray:
    return P.gamma(5) * np.abs(R.swiglu(np64(x), dim))


def bwd_bound(dy: torch.Tensor, x: torch.Tensor, dim: int) -> np.ndarray:
    a, b = np.split(np64(x), 2, axis=dim)
    dy = np64(dy)
    with np.errstate(over="ignore", invalid="ignore"):
        s = 1.0 / (1.0 + np.exp(-a))
        t = 1.0 + a * (1.0 - s)
        bound_da = P.gamma(10) * np.abs(dy * b * s) * (1.0 + np.abs(a) + 2.0 * np.abs(t))
        bound_db = P.gamma(6) * np.abs(dy * a * s)
    return np.concatenate((bound_da, bound_db), axis=dim)


# ---------------------------------------------------------------- accuracy
@pytest.mark.parametrize("rows,inner", SWEEP, ids=lambda v: str(v))
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_forward_sweep(dtype, rows, inner):
    x = torch.randn(rows, 2 * inner).to(dtype)
    y = S.swiglu(x)
    assert tuple(y.shape) == (rows, inner)
    assert_accurate(
        y,
        R.swiglu(np64(x), -1),
        torch_swiglu(x, -1),
        dtype,
        f"swiglu {dname(dtype)} [{rows}, 2*{inner}]",
        bound=fwd_bound(x, -1),
    )


# A last dim of 2 (inner 1) takes the packed forward tiling (swiglu_packed.h): rows are (a, b) pairs in one run.
# 4099 / 100003 rows: tiles ending short, several per block (cann-bench SwiGlu case 12 is [1000003, 2] bf16).
@pytest.mark.parametrize("shape", ((1, 2), (7, 2), (83, 2), (4099, 2), (100003, 2), (3, 37, 2)), ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_forward_packed_pairs(dtype, shape):
    x = torch.randn(shape).to(dtype)
    x[0, ..., 0] = float("nan") if len(shape) > 2 else x[0, ..., 0]  # one NaN a in the 3-d case
    y = S.swiglu(x)
    assert tuple(y.shape) == (*shape[:-1], 1)
    golden = R.swiglu(np64(x), -1)
    g = np64(y)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(golden), err_msg="NaN positions")
    finite = np.isfinite(golden)
    assert_accurate(
        y[torch.from_numpy(finite)],
        golden[finite],
        torch_swiglu(x, -1)[torch.from_numpy(finite)],
        dtype,
        f"swiglu {dname(dtype)} {list(shape)}",
        bound=fwd_bound(x, -1)[finite],
    )


@pytest.mark.parametrize("rows,inner", SWEEP, ids=lambda v: str(v))
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_backward_sweep(dtype, rows, inner):
    x = torch.randn(rows, 2 * inner).to(dtype)
    dy = torch.randn(rows, inner).to(dtype)
    dx = torch.ops.custom.swiglu_grad(dy, x, -1)
    assert_accurate(
        dx,
        R.swiglu_backward(np64(dy), np64(x), -1),
        torch_swiglu_grad(dy, x, -1),
        dtype,
        f"swiglu_grad {dname(dtype)} [{rows}, 2*{inner}]",
        bound=bwd_bound(dy, x, -1),
    )


SHAPES_3D = {  # dim -> x shape (the split dim even); inner = half of it times the dims after it
    -1: (5, 7, 2 * 769),
    2: (3, 4, 16),
    1: (6, 2 * 83, 9),
    0: (2 * 7, 13, 11),
    -3: (2 * 1, 5, 1025),
    -2: (83, 2, 5),
}


@pytest.mark.parametrize("dim", SHAPES_3D)
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_split_dims_forward_and_autograd(dtype, dim):
    """Any split dim on 3-D x: forward vs golden, and autograd through register_autograd vs golden and torch."""
    shape = SHAPES_3D[dim]
    x = torch.randn(shape).to(dtype).requires_grad_()
    y = S.swiglu(x, dim)
    want_shape = list(shape)
    want_shape[dim] //= 2
    assert list(y.shape) == want_shape and y.dtype == dtype
    assert_accurate(
        y, R.swiglu(np64(x), dim), torch_swiglu(x.detach(), dim), dtype, f"swiglu dim={dim}", bound=fwd_bound(x, dim)
    )
    dy = torch.randn(want_shape).to(dtype)
    y.backward(dy)
    assert_accurate(
        x.grad,
        R.swiglu_backward(np64(dy), np64(x), dim),
        torch_swiglu_grad(dy, x, dim),
        dtype,
        f"autograd dim={dim}",
        bound=bwd_bound(dy, x, dim),
    )
    torch.testing.assert_close(x.grad, torch.ops.custom.swiglu_grad(dy, x.detach(), dim), rtol=0, atol=0)


def test_default_dim_is_last():
    x = torch.randn(3, 4, 10)
    torch.testing.assert_close(S.swiglu(x), S.swiglu(x, -1), rtol=0, atol=0)
    torch.testing.assert_close(torch.ops.custom.swiglu(x), S.swiglu(x, 2), rtol=0, atol=0)
    dy = torch.randn(3, 4, 5)
    torch.testing.assert_close(
        torch.ops.custom.swiglu_grad(dy, x), torch.ops.custom.swiglu_grad(dy, x, 2), rtol=0, atol=0
    )


def test_fp32_bounds_hold_where_silu_prime_cancels():
    """The fp32 bounds are sound where they matter: A packed around silu'(a) = 0 (a ~ -1.2785), where
    1 + a * (1 - s) cancels and no fp32 evaluation meets the literal MARE. Every element must sit
    inside its bound, forward and backward."""
    a = torch.empty(256, 1024).uniform_(-1.2795, -1.2775)
    x = torch.cat((a, torch.randn(256, 1024)), dim=-1)
    dy = torch.randn(256, 1024)
    for got, golden, bound in (
        (S.swiglu(x), R.swiglu(np64(x)), fwd_bound(x, -1)),
        (torch.ops.custom.swiglu_grad(dy, x), R.swiglu_backward(np64(dy), np64(x)), bwd_bound(dy, x, -1)),
    ):
        err = np.abs(np64(got) - golden)
        assert (err <= bound).all(), f"worst error / bound = {(err / bound).max():.3g}"
    assert not P.check_mere_mare(
        np64(torch.ops.custom.swiglu_grad(dy, x)), R.swiglu_backward(np64(dy), np64(x)), torch.float32
    ).passed  # the literal MARE is out of reach here
    # the kernel's s + (1 + a) * (1 - s) form: fewer small-value errors than PyTorch's 1 + a * (1 - s) (~0.55x here)
    golden = R.swiglu_backward(np64(dy), np64(x))
    ours, theirs = (
        P.metrics(np64(r), golden, "float32")["small_err_count"]
        for r in (torch.ops.custom.swiglu_grad(dy, x), torch_swiglu_grad(dy, x, -1))
    )
    assert ours < 0.7 * theirs, (ours, theirs)


def test_extreme_finite_a():
    """|A| up to 3e38: exp(-a) overflows or vanishes, silu' goes to 0 / 1 without NaN, as in the golden."""
    a = torch.tensor([-3e38, -1e30, -1e5, -100.0, -50.0, 50.0, 100.0, 1e5, 1e30, 3e38])
    x, dy = torch.cat((a, torch.full_like(a, 1.5))), torch.ones_like(a)
    got, golden = np64(torch.ops.custom.swiglu_grad(dy, x)), R.swiglu_backward(np64(dy), np64(x))
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, golden, rtol=1e-6, atol=1e-20)


def test_reference_backward_matches_float64_autograd():
    """The hand-derived reference gradient agrees with float64 torch autograd of silu(a) * b."""
    for dim, shape in SHAPES_3D.items():
        x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
        y = torch_swiglu(x, dim)
        np.testing.assert_allclose(R.swiglu(x.detach().numpy(), dim), y.detach().numpy(), rtol=1e-13, atol=1e-15)
        dy = torch.randn(y.shape, dtype=torch.float64)
        (dx,) = torch.autograd.grad(y, x, dy)
        np.testing.assert_allclose(
            R.swiglu_backward(dy.numpy(), x.detach().numpy(), dim), dx.numpy(), rtol=1e-12, atol=1e-14
        )


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_nan_inf_propagate_like_reference(dtype):
    x = torch.randn(6, 2 * 40).to(dtype)
    specials = (float("nan"), float("inf"), -float("inf"))
    for k, v in enumerate(specials):
        x[k, 3 + k] = v  # in A
        x[k + 3, 40 + 5 + k] = v  # in B
    x[5, 10], x[5, 50] = float("inf"), 0.0  # silu(inf) * 0 -> NaN
    dy = torch.randn(6, 40).to(dtype)
    dy[0, 20] = float("inf")
    y = S.swiglu(x)
    dx = torch.ops.custom.swiglu_grad(dy, x)
    for got, golden, what in ((y, R.swiglu(np64(x)), "y"), (dx, R.swiglu_backward(np64(dy), np64(x)), "dx")):
        g = np64(got)
        assert not np.isfinite(golden).all(), what
        np.testing.assert_array_equal(np.isnan(g), np.isnan(golden), err_msg=f"{what}: NaN positions")
        np.testing.assert_array_equal(np.isposinf(g), np.isposinf(golden), err_msg=f"{what}: +Inf positions")
        np.testing.assert_array_equal(np.isneginf(g), np.isneginf(golden), err_msg=f"{what}: -Inf positions")
    finite = np.isfinite(R.swiglu(np64(x)))
    assert P.check_mere_mare(np64(y)[finite], R.swiglu(np64(x))[finite], dtype).passed


def test_precision_checks_detect_errors():
    """The accuracy helper is not vacuous: a one-ulp-class bias in every element fails it."""
    x = torch.randn(83, 2 * 769)
    y = S.swiglu(x)
    with pytest.raises(AssertionError):
        assert_accurate(
            y * (1 + 2**-11),
            R.swiglu(np64(x), -1),
            torch_swiglu(x, -1),
            torch.float32,
            "biased",
            bound=fwd_bound(x, -1),
        )


# ---------------------------------------------------------------- layouts in memory, empty tensors
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_non_contiguous_inputs(dtype):
    base = torch.randn(2 * 9, 7, 33).to(dtype)
    x = base.transpose(0, 2)  # [33, 7, 18], split along the last dim
    assert not x.is_contiguous()
    y = S.swiglu(x, -1)
    torch.testing.assert_close(y, S.swiglu(x.contiguous(), -1), rtol=0, atol=0)
    sliced = torch.randn(10, 4 * 769).to(dtype)[:, 769 : 3 * 769]  # row stride 4*769
    torch.testing.assert_close(S.swiglu(sliced), S.swiglu(sliced.contiguous()), rtol=0, atol=0)
    dy = torch.randn(9, 7, 33).to(dtype).permute(2, 1, 0)
    assert not dy.is_contiguous()
    torch.testing.assert_close(
        torch.ops.custom.swiglu_grad(dy, x, -1),
        torch.ops.custom.swiglu_grad(dy.contiguous(), x.contiguous(), -1),
        rtol=0,
        atol=0,
    )
    # expanded dy (stride 0), as y.sum().backward() produces
    xg = x.detach().requires_grad_()
    S.swiglu(xg, -1).sum().backward()
    torch.testing.assert_close(
        xg.grad, torch.ops.custom.swiglu_grad(torch.ones(33, 7, 9, dtype=dtype), x, -1), rtol=0, atol=0
    )


EMPTY_CASES = {"rows0": ((0, 16), -1), "split0": ((4, 0), -1), "inner0": ((3, 4, 0), 1), "mid0": ((0, 6, 5), 1)}


@pytest.mark.parametrize("case", EMPTY_CASES)
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_empty_tensors(dtype, case):
    shape, dim = EMPTY_CASES[case]
    x = torch.empty(shape, dtype=dtype).requires_grad_()
    y = S.swiglu(x, dim)
    half = list(shape)
    half[dim] //= 2
    assert list(y.shape) == half and y.dtype == dtype
    y.backward(torch.empty_like(y))
    assert tuple(x.grad.shape) == shape
    assert tuple(torch.ops.custom.swiglu_grad(y.detach(), x.detach(), dim).shape) == shape


# ---------------------------------------------------------------- torch.library integration
def _opcheck_samples():
    def s(op, shape, dim, dtype=torch.float32, grad=False):
        x = torch.randn(shape).to(dtype).requires_grad_(grad)
        if op == "swiglu":
            return (op, (x, dim))
        half = list(shape)
        half[dim] //= 2
        return (op, (torch.randn(half).to(dtype), x, dim))

    return [
        s("swiglu", (3, 4, 10), -1, grad=True),
        s("swiglu", (6, 5, 7), 0, torch.float16, grad=True),
        s("swiglu", (4, 8, 3), 1, torch.bfloat16),
        s("swiglu", (2, 2 * 769), -1, grad=True),
        s("swiglu_grad", (3, 4, 10), -1),
        s("swiglu_grad", (6, 5, 7), 0, torch.float16),
        s("swiglu_grad", (4, 8, 3), 1, torch.bfloat16),
    ]


@pytest.mark.parametrize("op,args", _opcheck_samples(), ids=lambda v: v if isinstance(v, str) else "")
def test_opcheck(op, args):
    torch.library.opcheck(getattr(torch.ops.custom, op).default, args)


def test_fake_and_meta_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(4, 6, 10, dtype=torch.bfloat16)
        for dim, want in ((-1, (4, 6, 5)), (1, (4, 3, 10)), (0, (2, 6, 10))):
            y = S.swiglu(x, dim)
            assert tuple(y.shape) == want and y.dtype == torch.bfloat16
            dx = torch.ops.custom.swiglu_grad(y, x, dim)
            assert tuple(dx.shape) == (4, 6, 10) and dx.is_contiguous()
        with pytest.raises(ValueError, match=r"must be even"):
            S.swiglu(torch.empty(4, 7), -1)
    xm = torch.empty(8, 2 * 769, device="meta", dtype=torch.float16)
    y = torch.ops.custom.swiglu(xm)
    assert y.device.type == "meta" and tuple(y.shape) == (8, 769) and y.dtype == torch.float16
    dx = torch.ops.custom.swiglu_grad(y, xm)
    assert dx.device.type == "meta" and tuple(dx.shape) == (8, 2 * 769)


def test_torch_compile_fullgraph_matches_eager():
    def mlp(h, w_gate_up, w_down):
        return S.swiglu(h @ w_gate_up, -1) @ w_down

    h, wgu, wd = torch.randn(7, 32), torch.randn(32, 2 * 48), torch.randn(48, 32)
    compiled = torch.compile(mlp, fullgraph=True, backend="inductor")
    torch.testing.assert_close(compiled(h, wgu, wd), mlp(h, wgu, wd), rtol=1e-5, atol=1e-5)


def test_torch_compile_dynamic_backward_matches_eager():
    def f(x):
        return S.swiglu(x, 1) * 2.0

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager", dynamic=True)
    for rows in (5, 9):  # symbolic sizes: one graph for both
        x = torch.randn(rows, 2 * 6, 3)
        (gc,) = torch.autograd.grad(compiled(x.requires_grad_()).sum(), x)
        (ge,) = torch.autograd.grad(f(x).sum(), x)
        torch.testing.assert_close(gc, ge, rtol=0, atol=0)


def test_registered_schemas_match_op_proto():
    protos = op_proto.load_all()
    for name in ("swiglu", "swiglu_grad"):
        registered = str(getattr(torch.ops.custom, name).default._schema)
        assert registered.removeprefix("custom::") == protos[name].schema(), registered
    assert protos["swiglu"].schema() == "swiglu(Tensor x, int dim=-1) -> Tensor"
    assert protos["swiglu_grad"].schema() == "swiglu_grad(Tensor dy, Tensor x, int dim=-1) -> Tensor"


# ---------------------------------------------------------------- argument errors
CALLS = {
    "wrapper": lambda x, dim: S.swiglu(x, dim),
    "raw": lambda x, dim: torch.ops.custom.swiglu(x, dim),
    "grad": lambda x, dim: torch.ops.custom.swiglu_grad(torch.zeros(_halved(x, dim), dtype=x.dtype), x, dim),
}


def _halved(x, dim):
    shape = list(x.shape)
    if x.dim() and -x.dim() <= dim < x.dim():
        shape[dim] //= 2
    return shape


BAD_INPUTS = {
    # name: (x, dim, exception, regexes the message must match)
    "odd_split": (
        lambda: torch.randn(4, 7),
        -1,
        ValueError,
        [r"swiglu", r"x\.size\(-1\) must be even", r"got 7", r"\[4, 7\]"],
    ),
    "odd_split_dim0": (lambda: torch.randn(5, 8), 0, ValueError, [r"x\.size\(0\) must be even", r"got 5"]),
    "dim_too_big": (lambda: torch.randn(4, 8), 2, ValueError, [r"dim must be in \[-2, 1\]", r"\[4, 8\]", r"got 2"]),
    "dim_too_small": (lambda: torch.randn(4, 8), -3, ValueError, [r"dim must be in \[-2, 1\]", r"got -3"]),
    "scalar": (lambda: torch.tensor(1.0), -1, ValueError, [r"at least 1 dim"]),
    "int_x": (
        lambda: torch.ones(4, 8, dtype=torch.int32),
        -1,
        TypeError,
        [r"x must be one of", r"float16", r"bfloat16", r"got (int32|Int)\b"],
    ),
    "double_x": (
        lambda: torch.ones(4, 8, dtype=torch.float64),
        -1,
        TypeError,
        [r"x must be one of", r"got (float64|Double)\b"],
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
@pytest.mark.parametrize("call", CALLS)
def test_bad_inputs_raise_clear_errors(call, case):
    make, dim, exc, patterns = BAD_INPUTS[case]
    with pytest.raises(exc) as info:
        CALLS[call](make(), dim)
    msg = str(info.value)
    for pattern in patterns:
        assert re.search(pattern, msg), f"{call}/{case}: message {msg!r} does not match {pattern!r}"
    assert ("swiglu_grad" in msg) == (call == "grad"), msg
    assert "Exception raised from" not in msg, f"{call}/{case}: C++ stack trace in the message: {msg!r}"


def test_bad_grad_inputs():
    call = torch.ops.custom.swiglu_grad
    x = torch.randn(4, 8)
    with pytest.raises(ValueError, match=r"swiglu_grad: dy must have shape \[4, 4\] .*got \[4, 8\]"):
        call(torch.randn(4, 8), x, -1)
    with pytest.raises(TypeError, match=r"swiglu_grad: unsupported dtypes \(dy=float16, x=float32\)"):
        call(torch.randn(4, 4, dtype=torch.float16), x, -1)
    with pytest.raises(
        ValueError, match=r"swiglu_grad: x is on cpu but dy is on meta; all inputs must be on one device"
    ):
        call(torch.empty(4, 4, device="meta"), x, -1)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():  # the fake kernel enforces the same rules
        with pytest.raises(ValueError, match=r"dy must have shape \[4, 4\]"):
            call(torch.empty(4, 8), torch.empty(4, 8), -1)
