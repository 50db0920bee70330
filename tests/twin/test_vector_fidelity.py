"""The twin's vector arithmetic in Atlas A2's documented order, bit for bit.

ReduceSum, count form (asc-devkit docs/zh/api/SIMD-API/基础API/Memory矢量计算/归约计算/ReduceSum.md,
关键特性说明: the count form on Atlas A2 uses 方式一): inside each 256-byte repeat (64 float / 128 half
lanes) a binary tree of adjacent pairs, lanes past count as 0; the repeats' sums added in order; every
addition rounded to the operand type. count 0 is a no-op: dst is not written. The reference below
computes that order in NumPy, independently of the twin's C++ (tests/cpp/twin_vector_kernels.cpp).
"""

import numpy as np
import pytest
import torch

import ascendc_ops  # noqa: F401  (loads the twin the test kernels link against)
from conftest import BUILD

torch.ops.load_library(str(BUILD / "tests" / "libtwin_faults.so"))
reduce_sum = torch.ops.twin_vector.reduce_sum

COUNTS = [1, 7, 64, 65, 127, 128, 129, 1000, 4097]
DTYPES = {torch.float32: np.float32, torch.float16: np.float16}


def a2_reduce_sum(x: np.ndarray) -> np.ndarray:
    """ReduceSum's count form on A2: a pairwise tree per repeat, then the repeats in order, in x's dtype."""
    lanes = 256 // x.itemsize
    acc = None
    for start in range(0, len(x), lanes):
        level = np.zeros(lanes, dtype=x.dtype)
        chunk = x[start : start + lanes]
        level[: len(chunk)] = chunk
        while len(level) > 1:
            level = level[0::2] + level[1::2]  # NumPy rounds each sum to x's dtype
        acc = level[0] if acc is None else (acc + level[0]).astype(x.dtype)
    return np.asarray(acc, dtype=x.dtype)


def sentinel(dtype):
    """One 32-byte block of values ReduceSum must leave alone (all but dst[0], or all for count 0)."""
    n = 32 // (4 if dtype == torch.float32 else 2)
    return torch.arange(1, n + 1, dtype=dtype) * -7


def awkward(count: int, dtype, seed: int) -> torch.Tensor:
    """Values whose rounded sums depend on the order: mixed signs and magnitudes, a few large ones."""
    g = torch.Generator().manual_seed(seed * 7919 + count)
    x = torch.randn(count, generator=g) * torch.exp2(torch.randint(-6, 7, (count,), generator=g).float())
    if dtype == torch.float16:
        x = x.clamp(-4, 4)  # sums stay far below half's 65504
    return x.to(dtype)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reduce_sum_order_bit_exact(count, dtype, seed):
    x = awkward(count, dtype, seed)
    dst = sentinel(dtype)
    out = reduce_sum(x, count, dst)
    expected = a2_reduce_sum(x.numpy())
    assert out[0].numpy().view(np.uint32 if dtype == torch.float32 else np.uint16) == expected.view(
        np.uint32 if dtype == torch.float32 else np.uint16
    ), (float(out[0]), float(expected))
    torch.testing.assert_close(out[1:], dst[1:], rtol=0, atol=0)  # only dst[0] is written


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_reduce_sum_count_zero_leaves_dst(dtype):
    dst = sentinel(dtype)
    out = reduce_sum(torch.ones(64, dtype=dtype), 0, dst)
    assert torch.equal(out, dst)


def test_reduce_sum_reference_is_not_a_plain_sum():
    """The order matters for these inputs: the reference differs from a left-to-right float32 sum, and the
    twin follows the reference, so a twin summing in another order would fail the tests above."""
    differs = 0
    for seed in range(3):
        x = awkward(4097, torch.float32, seed).numpy()
        sequential = np.float32(0)
        for v in x:
            sequential = np.float32(sequential + v)
        differs += int(a2_reduce_sum(x) != sequential)
    assert differs > 0


def test_reduce_sum_masked_lanes_are_plus_zero():
    """A partial repeat of -0.0 sums with the +0 of its masked lanes: +0 (a full repeat keeps -0)."""
    neg = torch.full((7,), -0.0)
    assert torch.signbit(reduce_sum(neg, 7, sentinel(torch.float32))[0]).item() is False
    assert torch.signbit(reduce_sum(torch.full((64,), -0.0), 64, sentinel(torch.float32))[0]).item() is True
