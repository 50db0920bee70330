"""apply_adam_w (torch.ops.custom.apply_adam_w) against its float64 NumPy golden
(python/ascendc_ops/ops/optimizer_reference.py), judged with tests/accuracy.py; in place, its readable errors,
opcheck, empty tensors, and NaN / inf gradients as torch.optim.AdamW has them.

The states m and v are fp32 for every parameter dtype and are judged by the fp32 standard; the parameter by its
own dtype's (a bf16 parameter rounded once cannot meet the fp32 limits). The double benchmark's second
implementation is torch.optim.AdamW itself on fp32 copies, seeded with the same states and step.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ascendc_ops  # noqa: F401  (loads the library)
from accuracy import assert_accurate, np64
from ascendc_ops import precision as P
from ascendc_ops.ops import optimizer as O, optimizer_reference as R

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
SIZES = (1, 7, 83, 769, 5125)
HYPER = dict(lr=1e-2, beta1=0.9, beta2=0.999, weight_decay=0.01, eps=1e-8)


def dname(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def make(n, dtype, amsgrad=False, seed=0):
    """A parameter, its grad and states after some steps (v >= 0, the maximum >= v)."""
    gen = torch.Generator().manual_seed(seed)
    var = torch.randn(n, generator=gen).to(dtype)
    grad = torch.randn(n, generator=gen).to(dtype)
    m = 0.1 * torch.randn(n, generator=gen)
    v = 0.01 * torch.rand(n, generator=gen)
    vmax = v + 0.01 * torch.rand(n, generator=gen) * (torch.rand(n, generator=gen) < 0.5) if amsgrad else None
    return var, m, v, grad, vmax


def torch_adamw(var, m, v, grad, vmax, step, amsgrad, maximize, **hyper):
    """torch.optim.AdamW's step on fp32 copies seeded with the states; the parameter rounded to var's dtype."""
    p = var.float().clone().requires_grad_()
    p.grad = grad.float().clone()
    opt = torch.optim.AdamW(
        [p], lr=hyper["lr"], betas=(hyper["beta1"], hyper["beta2"]), eps=hyper["eps"],
        weight_decay=hyper["weight_decay"], amsgrad=amsgrad, maximize=maximize, foreach=False,
    )  # fmt: skip
    state = {"step": torch.tensor(float(step - 1)), "exp_avg": m.clone(), "exp_avg_sq": v.clone()}
    if amsgrad:
        state["max_exp_avg_sq"] = vmax.clone()
    opt.state[p] = state
    opt.step()
    return p.detach().to(var.dtype), state["exp_avg"], state["exp_avg_sq"], state.get("max_exp_avg_sq")


# ---- fp32 evaluation error bounds (for precision.mare_within_rounding) ----
# m = m + w (g - m) (from w >= 0.5 on, torch's lerp's g - (1 - w)(g - m)): three roundings on terms of size
# |m| + w (|g| + |m|) (|g| + (1 - w)(|g| + |m|)), which may cancel. p = p d - s m / denom:
# denom has relative error gamma(4), m the error above, the decay and the add one rounding each; so
# |p' - p| <= gamma(12) (|p d| + s |m_terms| / denom). v has no cancellation (all terms >= 0).
def bounds(var, m, v, grad, step, **hyper):
    p, m, g = np64(var), np64(m), np64(grad)
    w = 1.0 - hyper["beta1"]
    m_terms = np.abs(m) + w * (np.abs(g) + np.abs(m)) if w < 0.5 else np.abs(g) + (1 - w) * (np.abs(g) + np.abs(m))
    _, m1, v1, _ = R.adam_w(p, m, np64(v), g, step=step, **hyper)
    denom = np.sqrt(v1) / np.sqrt(1.0 - hyper["beta2"] ** step) + hyper["eps"]
    s = hyper["lr"] / (1.0 - hyper["beta1"] ** step)
    bound_p = P.gamma(12) * (np.abs(p) + s * m_terms / denom)
    return bound_p, P.gamma(4) * m_terms, P.gamma(4) * np.abs(v1)


def check_step(var, m, v, grad, vmax, step, amsgrad=False, maximize=False, **hyper):
    golden = R.adam_w(np64(var), np64(m), np64(v), np64(grad), None if vmax is None else np64(vmax),
                      step=step, amsgrad=amsgrad, maximize=maximize, **hyper)  # fmt: skip
    second = torch_adamw(var, m, v, grad, vmax, step, amsgrad, maximize, **hyper)
    bound_p, bound_m, bound_v = bounds(var, m, v, -grad if maximize else grad, step, **hyper)
    out = [t.clone() for t in (var, m, v)] + [None if vmax is None else vmax.clone()]
    torch.ops.custom.apply_adam_w(*out[:3], grad, out[3], step=float(step), amsgrad=amsgrad, maximize=maximize,
                                  **hyper)  # fmt: skip
    label = f"apply_adam_w {dname(var.dtype)} n={var.numel()} step={step} amsgrad={amsgrad} maximize={maximize}"
    assert_accurate(out[0], golden[0], second[0], var.dtype, label + " var", bound_p)
    assert_accurate(out[1], golden[1], second[1], torch.float32, label + " m", bound_m)
    assert_accurate(out[2], golden[2], second[2], torch.float32, label + " v", bound_v)
    if amsgrad:
        assert_accurate(out[3], golden[3], second[3], torch.float32, label + " max", bound_v)


# ---------------------------------------------------------------- accuracy
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_one_step_against_golden(dtype, n):
    check_step(*make(n, dtype), step=1 if n % 2 else 10, **HYPER)


@pytest.mark.parametrize("amsgrad,maximize", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_amsgrad_and_maximize(dtype, amsgrad, maximize):
    var, m, v, grad, vmax = make(769, dtype, amsgrad=True, seed=1)
    check_step(var, m, v, grad, vmax if amsgrad else None, step=7, amsgrad=amsgrad, maximize=maximize, **HYPER)


@pytest.mark.parametrize("beta1", [0.0, 0.3, 0.5])
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_small_beta1_takes_torchs_other_lerp_form(dtype, beta1):
    """1 - beta1 >= 0.5: m is formed as torch's lerp forms it there, g - beta1 (g - m); beta1 0 gives m = g exactly
    (cann-bench's apply_adam_w case 9)."""
    var, m, v, grad, _ = make(769, dtype, seed=3)
    check_step(var, m, v, grad, None, step=3, **{**HYPER, "beta1": beta1})
    if beta1 == 0.0:
        out = [t.clone() for t in (var, m, v)]
        torch.ops.custom.apply_adam_w(*out, grad, None, step=3.0, **{**HYPER, "beta1": 0.0})
        assert torch.equal(out[1], grad.float())


def test_large_step_and_no_decay():
    """Bias corrections near 1 and weight_decay 0; a tensor spread over several blocks and tiles."""
    check_step(*make(70001, torch.float32, seed=2), step=5000, **{**HYPER, "weight_decay": 0.0})


def test_precision_checks_detect_errors():
    """The judgement is not vacuous: m off by 2^-10 in every element fails it."""
    var, m, v, grad, _ = make(5125, torch.float32, seed=3)
    golden = R.adam_w(np64(var), np64(m), np64(v), np64(grad), step=3, **HYPER)
    second = torch_adamw(var, m, v, grad, None, 3, False, False, **HYPER)
    out = [t.clone() for t in (var, m, v)]
    torch.ops.custom.apply_adam_w(*out, grad, None, step=3.0, **HYPER)
    bound_m = bounds(var, m, v, grad, 3, **HYPER)[1]
    assert_accurate(out[1], golden[1], second[1], torch.float32, "m", bound_m)
    with pytest.raises(AssertionError):
        assert_accurate(out[1] * (1 + 2**-10), golden[1], second[1], torch.float32, "m off", bound_m)


# ---------------------------------------------------------------- semantics
def test_updates_in_place_and_returns_inputs():
    var, m, v, grad, _ = make(83, torch.bfloat16)
    ids = [t.data_ptr() for t in (var, m, v)]
    before = var.clone()
    out = O.apply_adam_w_(var, m, v, grad, lr=0.1, step=1.0)
    assert all(a is b for a, b in zip(out, (var, m, v), strict=True))
    assert [t.data_ptr() for t in (var, m, v)] == ids
    assert not torch.equal(var, before)


def test_non_contiguous_tensors_are_written_back():
    var, m, v, grad, _ = make(2 * 83, torch.float32)
    cols = [t.view(83, 2)[:, 0] for t in (var, m, v, grad)]
    want = [t.clone() for t in cols[:3]]
    torch.ops.custom.apply_adam_w(*want, cols[3].clone(), None, step=2.0, **HYPER)
    torch.ops.custom.apply_adam_w(*cols, None, step=2.0, **HYPER)
    for got, ref in zip(cols[:3], want, strict=True):
        assert torch.equal(got, ref)
    assert torch.equal(var.view(83, 2)[:, 1], make(2 * 83, torch.float32)[0].view(83, 2)[:, 1])


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_empty_tensors(dtype):
    var, m, v, grad, _ = make(0, dtype)
    torch.ops.custom.apply_adam_w(var, m, v, grad, None, **HYPER)
    assert var.numel() == 0


@pytest.mark.parametrize("amsgrad", [False, True])
def test_nan_and_inf_gradients_follow_torch(amsgrad):
    """A NaN or inf gradient poisons that element's parameter and states as torch.optim.AdamW's step does."""
    var, m, v, grad, vmax = make(769, torch.float32, amsgrad=True, seed=4)
    grad[3], grad[100], grad[700] = float("nan"), float("inf"), float("-inf")
    vmax = vmax if amsgrad else None
    ref = torch_adamw(var, m, v, grad, vmax, 2, amsgrad, False, **HYPER)
    out = [t.clone() for t in (var, m, v)] + [vmax.clone() if amsgrad else None]
    torch.ops.custom.apply_adam_w(*out[:3], grad, out[3], step=2.0, amsgrad=amsgrad, **HYPER)
    for got, want in zip(out, ref, strict=True):
        if want is None:
            continue
        assert torch.equal(torch.isnan(got), torch.isnan(want))
        assert torch.equal(torch.isinf(got), torch.isinf(want))
        fine = torch.isfinite(want)
        torch.testing.assert_close(got[fine], want[fine], rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- torch.library integration
def _opcheck_samples():
    out = []
    for dtype, amsgrad in ((torch.float32, False), (torch.float16, True), (torch.bfloat16, False)):
        var, m, v, grad, vmax = make(83, dtype, amsgrad=True)
        out.append(((var, m, v, grad, vmax), dict(lr=1e-3, step=3.0, amsgrad=amsgrad)))
    return out


@pytest.mark.parametrize("args,kwargs", _opcheck_samples())
def test_opcheck(args, kwargs):
    torch.library.opcheck(torch.ops.custom.apply_adam_w.default, args, kwargs)


def test_meta_checks():
    var = torch.empty(4, 6, device="meta", dtype=torch.bfloat16)
    st = torch.empty(4, 6, device="meta")
    torch.ops.custom.apply_adam_w(var, st, st.clone(), var.clone(), None)
    with pytest.raises(ValueError, match=r"apply_adam_w: v must have var's shape \[4, 6\], got \[4, 5\]"):
        torch.ops.custom.apply_adam_w(var, st, torch.empty(4, 5, device="meta"), var.clone(), None)


# ---------------------------------------------------------------- readable errors
def _bad(kind):
    var, m, v, grad, vmax = make(7, torch.float32, amsgrad=True)
    cases = {
        "sparse grad": ((var, m, v, grad.to_sparse(), None), {}, ValueError,
                        r"apply_adam_w: grad must be a dense \(strided\) tensor, got layout Sparse"),
        "shape": ((var, m[:6], v, grad, None), {}, ValueError,
                  r"apply_adam_w: m must have var's shape \[7\], got \[6\]"),
        "state dtype": ((var, m.half(), v, grad, None), {}, TypeError,
                        r"apply_adam_w: m must be one of float32, got float16"),
        "grad dtype": ((var, m, v, grad.bfloat16(), None), {}, TypeError,
                       r"apply_adam_w: grad must have var's dtype float32, got bfloat16"),
        "param dtype": ((var.double(), m, v, grad.double(), None), {}, TypeError,
                        r"apply_adam_w: var must be one of float32, float16, bfloat16, got float64"),
        "negative lr": ((var, m, v, grad, None), {"lr": -1e-3}, ValueError,
                        r"apply_adam_w: lr must be a finite number >= 0, got -0.001"),
        "beta1": ((var, m, v, grad, None), {"beta1": 1.0}, ValueError,
                  r"apply_adam_w: beta1 must be in \[0, 1\), got 1"),
        "beta2": ((var, m, v, grad, None), {"beta2": -0.5}, ValueError,
                  r"apply_adam_w: beta2 must be in \[0, 1\), got -0.5"),
        "amsgrad": ((var, m, v, grad, None), {"amsgrad": True}, ValueError,
                    r"apply_adam_w: max_grad_norm must be given when amsgrad=True"),
        "step": ((var, m, v, grad, None), {"step": 0.0}, ValueError,
                 r"apply_adam_w: step must be a finite number >= 1"),
    }  # fmt: skip
    return cases[kind]


@pytest.mark.parametrize(
    "kind", ["sparse grad", "shape", "state dtype", "grad dtype", "param dtype", "negative lr", "beta1", "beta2",
             "amsgrad", "step"],
)  # fmt: skip
def test_bad_inputs_raise_clear_errors(kind):
    args, kwargs, exc, pattern = _bad(kind)
    with pytest.raises(exc, match=pattern):
        torch.ops.custom.apply_adam_w(*args, **kwargs)
