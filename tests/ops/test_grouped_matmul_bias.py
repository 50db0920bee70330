"""grouped_matmul with a bias [E, N] (y[rows of e] = x_e @ w[e] + bias[e]) against the float64 golden of
ascendc_ops.ops.grouped_matmul_reference: the Ascend standards per dtype (the bias in x's dtype, float32 for
bfloat16 as op_proto says), rows 1/7/83 with an empty group, both weight layouts; an exact check that the
bias enters the fp32 accumulation before the one rounding (with a control showing it tells the orders
apart); the bias gradient; opcheck; readable errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.library import opcheck

import ascendc_ops
from accuracy import assert_accurate, np64
from ascendc_ops import precision as P
from ascendc_ops.ops import grouped_matmul_reference as R

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
BIAS_DTYPE = {torch.float32: torch.float32, torch.float16: torch.float16, torch.bfloat16: torch.float32}
ROWS = (1, 7, 83)
ops = torch.ops.custom


def dname(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def counts_with_empty(m: int, e: int) -> torch.Tensor:
    """m rows over e groups, group 1 empty, two rows past the last group when m allows."""
    covered = m - 2 if m > 4 else m
    picks = torch.tensor([0, 2, 3])[torch.randint(0, 3, (covered,))]
    return torch.bincount(picks, minlength=e).to(torch.int64)


def torch_gmm_bias(x, w, bias, counts):
    """PyTorch in x's dtype: per-expert addmm with the bias cast to x's dtype (the double benchmark)."""
    outs, s = [], 0
    for e, c in enumerate(counts.tolist()):
        outs.append(torch.addmm(bias[e].to(x.dtype), x[s : s + c], w[e]))
        s += c
    y = torch.cat(outs)
    return torch.cat([y, y.new_zeros(x.shape[0] - s, y.shape[1])])


@pytest.mark.parametrize("m", ROWS)
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_bias_accuracy(dtype, m):
    k, n, e = 69, 37, 4
    x = torch.randn(m, k).to(dtype)
    w = (torch.randn(e, k, n) / k**0.5).to(dtype)
    bias = torch.randn(e, n).to(BIAS_DTYPE[dtype])
    counts = counts_with_empty(m, e)
    golden = R.grouped_matmul(np64(x), np64(w), counts.numpy(), 1, False, np64(bias))
    bound = P.gamma(k + 1) * (
        R.grouped_matmul(np.abs(np64(x)), np.abs(np64(w)), counts.numpy(), 1, False, np.abs(np64(bias)))
    )
    second = torch_gmm_bias(x, w, bias, counts)
    for glt, gl in ((1, counts), (0, torch.cumsum(counts, 0))):
        y = ascendc_ops.grouped_matmul(x, w, gl, glt, False, bias)
        assert_accurate(y, golden, second, dtype, f"gmm+bias m={m} {dname(dtype)} type={glt}", bound=bound)
    yt = ascendc_ops.grouped_matmul(x, w.transpose(1, 2).contiguous(), counts, 1, True, bias)  # [E, N, K]
    assert_accurate(yt, golden, second, dtype, f"gmm+bias m={m} {dname(dtype)} transposed", bound=bound)
    covered = int(counts.sum())
    assert (yt[covered:] == 0).all()  # rows past the groups have no bias either


def test_bias_enters_the_fp32_sum_before_the_one_rounding():
    """Integer data: every fp32 sum is exact, so the kernel's float16 output must equal the float64 golden
    rounded once, bit for bit. The control: adding the bias after rounding x @ w to float16 (or leaving it
    out) gives other values, so this test fails for either mistake."""
    m, k, n, e = 83, 16, 40, 3
    x = torch.randint(-8, 9, (m, k)).half()
    w = torch.randint(-8, 9, (e, k, n)).half()
    bias = (torch.randint(-1000, 1000, (e, n)) + 0.5).half()  # fp16 spacing is 0.5 below 1024: x.5 exact
    x[:, 0], w[:, 0, :] = 64, 40  # sums above 2048, where fp16 spacing is 2: rounding order matters
    counts = torch.tensor([30, 0, 53])
    exact = R.grouped_matmul(np64(x), np64(w), counts.numpy(), 1, False, np64(bias))
    right = torch.from_numpy(exact).half()
    products = torch.from_numpy(R.grouped_matmul(np64(x), np64(w), counts.numpy())).half()
    rows = torch.repeat_interleave(bias.double(), counts, dim=0)
    bias_after_rounding = (products.double() + rows).half()
    assert not torch.equal(bias_after_rounding, right) and not torch.equal(products, right)  # the control
    y = ascendc_ops.grouped_matmul(x, w, counts, 1, False, bias)
    assert torch.equal(y, right), f"{int((y != right).sum())} of {y.numel()} elements differ from one rounding"


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_bias_grad_is_the_group_row_sum(dtype):
    m, k, n, e = 83, 24, 19, 4
    x = torch.randn(m, k).to(dtype).requires_grad_()
    w = (torch.randn(e, k, n) / k**0.5).to(dtype).requires_grad_()
    bias = torch.randn(e, n).to(BIAS_DTYPE[dtype]).requires_grad_()
    counts = counts_with_empty(m, e)
    y = ascendc_ops.grouped_matmul(x, w, counts, 1, False, bias)
    dy = torch.randn(m, n).to(dtype)
    y.backward(dy)
    ends = torch.cumsum(counts, 0).tolist()
    starts = [0] + ends[:-1]
    golden = np.stack([np64(dy)[s:t].sum(0) for s, t in zip(starts, ends, strict=True)])
    absum = np.stack([np.abs(np64(dy)[s:t]).sum(0) for s, t in zip(starts, ends, strict=True)])
    assert bias.grad.dtype == bias.dtype and (bias.grad[1] == 0).all()  # the empty group's grad is 0
    # fp32 accumulation, then one rounding to the bias's dtype
    limit = P.gamma(m) * absum + float(torch.finfo(bias.dtype).eps) / 2 * np.abs(golden)
    assert (np.abs(np64(bias.grad) - golden) <= limit).all()
    # dx and dw are the bias-free op's: the bias changes no other gradient
    x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    ascendc_ops.grouped_matmul(x2, w2, counts, 1, False).backward(dy)
    assert torch.equal(x.grad, x2.grad) and torch.equal(w.grad, w2.grad)


def test_opcheck_with_bias():
    x, w, gl = torch.randn(10, 6), torch.randn(3, 6, 5), torch.tensor([3, 0, 5])
    opcheck(
        ops.grouped_matmul, (x.requires_grad_(), w.requires_grad_(), gl, torch.randn(3, 5).requires_grad_(), 1, False)
    )
    xb, wb = torch.randn(10, 6).bfloat16(), torch.randn(3, 5, 6).bfloat16()
    opcheck(ops.grouped_matmul, (xb, wb, torch.tensor([3, 3, 8]), torch.randn(3, 5), 0, True))


BAD = [
    (lambda: ascendc_ops.grouped_matmul(torch.randn(4, 3), torch.randn(2, 3, 5), torch.tensor([1, 1]), 1, False,
                                        torch.randn(2, 4)),
     ValueError, "grouped_matmul: bias must be 2-D [E, N] = [2, 5] (group_list entries, weight's N), got shape [2, 4]"),
    (lambda: ascendc_ops.grouped_matmul(torch.randn(4, 3), torch.randn(2, 3, 5), torch.tensor([1, 1]), 1, False,
                                        torch.randn(5)),
     ValueError, "bias must be 2-D [E, N] = [2, 5]"),
    (lambda: ascendc_ops.grouped_matmul(torch.randn(4, 3).bfloat16(), torch.randn(2, 3, 5).bfloat16(),
                                        torch.tensor([1, 1]), 1, False, torch.randn(2, 5).bfloat16()),
     TypeError, "grouped_matmul: bias must be one of float16, float32, got bfloat16"),
    (lambda: ascendc_ops.grouped_matmul(torch.randn(4, 3).half(), torch.randn(2, 3, 5).half(), torch.tensor([1, 1]),
                                        1, False, torch.randn(2, 5)),
     TypeError, "unsupported dtypes (x=float16, weight=float16, group_list=int64, bias=float32)"),
]  # fmt: skip


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_bias_is_a_readable_error(i):
    call, kind, text = BAD[i]
    with pytest.raises(kind) as info:
        call()
    assert text in str(info.value)
    with torch._subclasses.fake_tensor.FakeTensorMode(), pytest.raises(kind) as fake:
        call()
    assert str(fake.value) == str(info.value)  # the Meta kernel runs the same problem function
