"""foreach_clip_by_total_norm (torch.ops.custom.foreach_clip_by_total_norm: clipping's second launch, the total of
the per-tensor norms and the coefficient formed on the device) against its float64 golden, torch's own scaling
(clip_grad_norm_'s foreach path) as the double benchmark's second implementation; NaN / inf totals as torch treats
them; error_if_nonfinite; and ascendc_ops.clip_grad_norm_ in 16-bit and mixed dtypes against torch's."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ascendc_ops
from accuracy import assert_accurate, np64
from ascendc_ops import precision as P
from ascendc_ops.ops import optimizer as O, optimizer_reference as R

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
SIZES = (1, 7, 0, 83, 769, 5125, 70001, 2)  # 70001 spans several blocks; an empty tensor among them
PS = (1.0, 2.0, math.inf)


def dname(dtype):
    return str(dtype).removeprefix("torch.")


def make(dtype, sizes=SIZES, seed=0):
    """Tensors of growing scale; fp16's sixteen times smaller, so that every 1-norm and their total fit its range."""
    gen = torch.Generator().manual_seed(seed)
    scale = 1 / 16 if dtype == torch.float16 else 1.0
    return [(torch.randn(n, generator=gen) * (1 + k) * scale).to(dtype) for k, n in enumerate(sizes)]


def torch_clip(xs, norms, max_norm, p):
    """torch.nn.utils.clip_grad_norm_'s foreach path from the same norms, in x's dtype: the second implementation."""
    total = torch.linalg.vector_norm(torch.stack(norms), p)
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    out = [x.clone() for x in xs]
    torch._foreach_mul_(out, coef)
    return out, total


# fp32 bound of x * coef: the total of N norms summed in order (gamma(N) relative, all terms >= 0), its square root,
# the + 1e-6, the division and the product: gamma(N + 4) of each element.
def bound(golden, count):
    return P.gamma(count + 4) * np.abs(golden)


@pytest.mark.parametrize("p", PS, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_against_golden(dtype, p):
    xs = make(dtype, SIZES if p != math.inf else tuple(n for n in SIZES if n))  # foreach_norm: no empty inf norm
    norms = O.foreach_norm(xs, p)
    before = [np64(x) for x in xs]
    max_norm = 0.3 * float(R.clip_by_total_norm([], [np64(n) for n in norms], 1.0, p)[1])  # a coefficient well below 1
    second, second_total = torch_clip(xs, norms, max_norm, p)
    total = O.foreach_clip_by_total_norm_(xs, norms, max_norm, p)
    want, want_total = R.clip_by_total_norm(before, [np64(n) for n in norms], max_norm, p)
    assert total.dim() == 0 and total.dtype == dtype
    # the total: fp32 sums in order (gamma(N + 1)), 16-bit rounded once more
    tol = P.gamma(len(norms) + 2) if dtype == torch.float32 else 2.0 ** -(8 if dtype == torch.bfloat16 else 11)
    assert abs(float(total) - want_total) <= tol * want_total, (float(total), want_total, float(second_total))
    flat = torch.cat([x.flatten() for x in xs])
    golden = np.concatenate([w.ravel() for w in want])
    label = f"foreach_clip_by_total_norm {dname(dtype)} p={p}"
    assert_accurate(flat, golden, torch.cat([s.flatten() for s in second]), dtype, label, bound(golden, len(norms)))


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_a_coefficient_of_one_leaves_x_as_it_is(dtype):
    xs = make(dtype)
    before = [x.clone() for x in xs]
    total = O.foreach_clip_by_total_norm_(xs, O.foreach_norm(xs, 2.0), 1e9)
    assert all(torch.equal(x, b) for x, b in zip(xs, before, strict=True))
    assert float(total) > 0


def test_norms_of_other_lists_count_in_the_total():
    """x one list, norms those of every list clipped together: x scaled by the coefficient of all of them."""
    xs, others = make(torch.float32, (83, 769)), make(torch.float32, (5125, 7), seed=1)
    norms = O.foreach_norm(xs + others, 2.0)
    before = [np64(x) for x in xs]
    total = O.foreach_clip_by_total_norm_(xs, norms, 1.0)
    want, want_total = R.clip_by_total_norm(before, [np64(n) for n in norms], 1.0, 2.0)
    assert math.isclose(float(total), want_total, rel_tol=P.gamma(len(norms) + 2))
    for x, w in zip(xs, want, strict=True):
        np.testing.assert_allclose(np64(x), w, rtol=P.gamma(len(norms) + 4), atol=0)


def test_strided_x_and_norms_at_any_address():
    """x non-contiguous (scaled on a copy, written back); norms views of one tensor, 4 bytes apart in GM."""
    base = torch.randn(70, 90, generator=torch.Generator().manual_seed(3))
    xs = [base.t(), torch.randn(769)]
    norms = list(torch.stack(O.foreach_norm(xs, 2.0)).unbind(0))
    before = [np64(x) for x in xs]
    O.foreach_clip_by_total_norm_(xs, norms, 2.0)
    want, _ = R.clip_by_total_norm(before, [np64(n) for n in norms], 2.0, 2.0)
    for x, w in zip(xs, want, strict=True):
        np.testing.assert_allclose(np64(x), w, rtol=P.gamma(len(norms) + 4), atol=0)
    assert torch.equal(base.t(), xs[0])  # the view's storage holds the scaled values


@pytest.mark.parametrize("bad,p", [(float("nan"), 2.0), (float("inf"), 2.0), (float("nan"), math.inf)])
def test_non_finite_totals_scale_as_torch(bad, p):
    """A NaN norm: a NaN total and coefficient, every x NaN; an inf norm: coefficient 0, as torch's scaling."""
    xs = make(torch.float32, (83, 769, 5))
    norms = O.foreach_norm(xs, p)
    norms[1] = torch.tensor(bad)
    second, second_total = torch_clip(xs, norms, 1.0, p)
    total = O.foreach_clip_by_total_norm_(xs, norms, 1.0, p)
    assert torch.equal(total.isnan(), second_total.isnan()) and torch.equal(total.isinf(), second_total.isinf())
    for x, s in zip(xs, second, strict=True):
        assert torch.equal(x.isnan(), s.isnan()) and torch.equal(x.nan_to_num(), s.nan_to_num())


def test_error_if_nonfinite_leaves_x_unscaled():
    xs = make(torch.float32, (83, 769))
    xs[0][3] = float("inf")
    before = [x.clone() for x in xs]
    total = O.foreach_clip_by_total_norm_(xs, O.foreach_norm(xs, 2.0), 1.0, error_if_nonfinite=True)
    assert total.isinf() and all(torch.equal(x, b) for x, b in zip(xs, before, strict=True))


def test_opcheck():
    xs = make(torch.bfloat16, (5, 0, 70))
    norms = O.foreach_norm(xs, 2.0)
    args = (xs, norms, torch.empty((), dtype=torch.bfloat16), 0.5)
    torch.library.opcheck(torch.ops.custom.foreach_clip_by_total_norm.default, args, {"norm_type": 2.0})


def _call(x, norms, total=None, **kw):
    total = torch.empty(()) if total is None else total
    torch.ops.custom.foreach_clip_by_total_norm(x, norms, total, 1.0, **kw)


@pytest.mark.parametrize(
    "args,kw,exc,pattern",
    [
        (([torch.ones(3)], [torch.ones(())]), {"norm_type": 3.0}, ValueError,
         r"foreach_clip_by_total_norm: norm_type must be 1, 2 or inf, got 3"),
        (([torch.ones(3), torch.ones(2).half()], [torch.ones(())]), {}, TypeError,
         r"foreach_clip_by_total_norm: x\[1\] must have x\[0\]'s dtype float32, got float16"),
        (([torch.ones(3).double()], [torch.ones(())], torch.empty((), dtype=torch.float64)), {}, TypeError,
         r"foreach_clip_by_total_norm: total_norm must be one of .*got float64"),
        (([torch.ones(3)], [torch.ones(()).half()]), {}, TypeError,
         r"foreach_clip_by_total_norm: norms\[0\] must have x\[0\]'s dtype float32, got float16"),
        (([torch.ones(3)], [torch.ones(2)]), {}, ValueError,
         r"foreach_clip_by_total_norm: norms\[0\] must hold one element \(a tensor's norm\), got shape \[2\]"),
        (([torch.ones(3)], [torch.ones(())], torch.empty(2)), {}, ValueError,
         r"foreach_clip_by_total_norm: total_norm must hold one element .*got shape \[2\]"),
        (([torch.ones(3).half()], [torch.ones(()).half()]), {}, TypeError,
         r"foreach_clip_by_total_norm: total_norm must have x's dtype float16, got float32"),
    ],
)  # fmt: skip
def test_bad_inputs_raise_clear_errors(args, kw, exc, pattern):
    with pytest.raises(exc, match=pattern):
        _call(*args, **kw)


def test_wrapper_needs_a_tensor():
    with pytest.raises(ValueError, match="foreach_clip_by_total_norm: x and norms are both empty"):
        O.foreach_clip_by_total_norm_([], [], 1.0)


# ---------------------------------------------------------------- clip_grad_norm_ on it
def params(sizes, dtypes, seed=0):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for n, dtype in zip(sizes, dtypes, strict=True):
        p = torch.nn.Parameter(torch.zeros(n, dtype=dtype))
        p.grad = torch.randn(n, generator=gen).to(dtype)
        out.append(p)
    return out


@pytest.mark.parametrize("norm_type", PS, ids=str)
@pytest.mark.parametrize(
    "dtypes",
    [(torch.bfloat16,) * 3, (torch.float16,) * 3, (torch.float32, torch.bfloat16, torch.float32)],
    ids=["bf16", "fp16", "mixed"],
)
def test_clip_grad_norm_against_golden_and_torch(dtypes, norm_type):
    """The golden follows clip_grad_norm_'s contract: each gradient's norm in its own dtype (torch._foreach_norm's),
    the total and the scaling in float64 from those."""
    sizes = (7, 70001, 5125)
    ours, ref = params(sizes, dtypes), params(sizes, dtypes)
    grads = [np64(p.grad) for p in ours]
    norms = [np64(torch.tensor(n).to(d)) for n, d in zip(R.foreach_norm(grads, norm_type), dtypes, strict=True)]
    scaled, golden_total = R.clip_by_total_norm(grads, norms, 1.0, norm_type)
    total = ascendc_ops.clip_grad_norm_(ours, 1.0, norm_type)
    want = torch.nn.utils.clip_grad_norm_(ref, 1.0, norm_type)
    assert total.dtype == want.dtype
    tol = P.gamma(len(sizes) + 2) if total.dtype == torch.float32 else torch.finfo(total.dtype).eps
    assert math.isclose(float(total), golden_total, rel_tol=tol), (float(total), golden_total, float(want))
    for p, q, g in zip(ours, ref, scaled, strict=True):
        assert_accurate(p.grad, g, q.grad, p.grad.dtype, f"clip_grad_norm_ {p.grad.dtype} p={norm_type}",
                        bound(g, len(sizes) + int(math.log2(max(sizes))) + 4))  # and foreach_norm's  # fmt: skip
