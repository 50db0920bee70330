"""foreach_norm (torch.ops.custom.foreach_norm) against its float64 golden, torch._foreach_norm as the double
benchmark's second implementation, over lists of mixed sizes (pieces of one tensor in several blocks combined), and
ascendc_ops.clip_grad_norm_ against torch.nn.utils.clip_grad_norm_."""

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
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(n, generator=gen) * (1 + k)).to(dtype) for k, n in enumerate(sizes)]


# fp32 bound: |x| sums of n terms, folded pairwise: gamma(log2(n) + 2) relative (all terms >= 0); the square root
# halves it and adds one rounding; the max is exact.
def bound(xs, p):
    out = []
    for x in xs:
        n = max(x.numel(), 1)
        out.append(P.gamma(int(math.log2(n)) + 4))
    return np.array(out) * R.foreach_norm([np64(x) for x in xs], p)


@pytest.mark.parametrize("p", PS, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_against_golden(dtype, p):
    xs = make(dtype, SIZES if p != math.inf else tuple(n for n in SIZES if n))  # inf: no empty tensor (torch's rule)
    got = O.foreach_norm(xs, p)
    assert len(got) == len(xs) and all(g.dim() == 0 and g.dtype == dtype for g in got)
    golden = R.foreach_norm([np64(x) for x in xs], p)
    second = torch.stack(torch._foreach_norm(xs, p))
    assert_accurate(torch.stack(got), golden, second, dtype, f"foreach_norm {dname(dtype)} p={p}", bound(xs, p))


def test_nan_and_inf_propagate_as_torch():
    xs = make(torch.float32, (83, 769, 5))
    xs[0][3], xs[1][100] = float("nan"), float("inf")
    for p in (1.0, 2.0):
        got, want = torch.stack(O.foreach_norm(xs, p)), torch.stack(torch._foreach_norm(xs, p))
        assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.isinf(), want.isinf())


def test_opcheck():
    torch.library.opcheck(torch.ops.custom.foreach_norm.default, (make(torch.bfloat16, (5, 0, 70)), 2.0))


@pytest.mark.parametrize(
    "args,exc,pattern",
    [
        (([torch.ones(3)], 3.0), ValueError, r"foreach_norm: scalar \(the norm's p\) must be 1, 2 or inf, got 3"),
        (([torch.ones(3), torch.ones(2).half()], 2.0), TypeError,
         r"foreach_norm: x\[1\] must have x\[0\]'s dtype float32, got float16"),
        (([torch.ones(3).double()], 2.0), TypeError, r"foreach_norm: x must be one of .*got float64"),
        (([torch.ones(3), torch.ones(0)], math.inf), ValueError,
         r"foreach_norm: x\[1\] is empty, and the inf norm of no element is undefined"),
    ],
)  # fmt: skip
def test_bad_inputs_raise_clear_errors(args, exc, pattern):
    with pytest.raises(exc, match=pattern):
        torch.ops.custom.foreach_norm(*args)


# ---------------------------------------------------------------- clip_grad_norm_
def params_with_grads(seed=0, dtype=torch.float32, scale=1.0):
    gen = torch.Generator().manual_seed(seed)
    ps = [torch.nn.Parameter(torch.zeros(n, dtype=dtype)) for n in (7, 769, 5125)]
    for p in ps:
        p.grad = (torch.randn(p.shape, generator=gen) * scale).to(dtype)
    return ps


@pytest.mark.parametrize("norm_type", [1.0, 2.0, math.inf, 3.0], ids=str)
@pytest.mark.parametrize("max_norm", [0.5, 1e4])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    ours, ref = params_with_grads(), params_with_grads()
    total = ascendc_ops.clip_grad_norm_(ours, max_norm, norm_type)
    want = torch.nn.utils.clip_grad_norm_(ref, max_norm, norm_type)
    torch.testing.assert_close(total, want, rtol=1e-5, atol=0)
    for p, q in zip(ours, ref, strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_contract():
    assert float(ascendc_ops.clip_grad_norm_([torch.nn.Parameter(torch.ones(2))], 1.0)) == 0.0  # no grads
    one = params_with_grads()[1]
    assert ascendc_ops.clip_grad_norm_(one, 1.0, foreach=True).dim() == 0  # a tensor, foreach accepted
    bad = params_with_grads()
    bad[1].grad[5] = float("nan")
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        ascendc_ops.clip_grad_norm_(bad, 1.0, error_if_nonfinite=True)
    assert ascendc_ops.clip_grad_norm_(bad, 1.0).isnan()  # without the check: torch scales by the NaN norm too
