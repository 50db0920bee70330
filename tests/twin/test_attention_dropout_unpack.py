"""The attention kernels' unpacking of torch_npu's bit-packed dropout mask (csrc/kernels/attention_dropout.h),
run on the twin through tests/cpp/twin_attention_dropout_kernels.cpp, against the mask's packing in NumPy
(ops/attention_args.py, docs/attention.md "Dropout"): every block's keep / keep_prob, exactly."""

import numpy as np
import pytest
import torch

import ascendc_ops  # noqa: F401  (loads the twin the test kernels link against)
from ascendc_ops.ops.attention_args import dropout_mask_bytes, pack_dropout_mask
from conftest import kernel_library

factors = kernel_library("twin_faults", "twin_attention_dropout").factors

SHAPE = (2, 3, 77, 133)  # odd S2: rows start at every bit shift


def keep_matrix(shape, keep_prob, seed):
    keep = np.random.default_rng(seed).random(shape) < keep_prob
    keep[0, 1, 5] = False  # a row that drops every key
    return keep


def expected(keep, b, n, row0, rows, j0, cols, keep_prob):
    inv = np.float32(1.0) / np.float32(keep_prob)  # the kernel's 1.0f / keep_prob
    return keep[b, n, row0 : row0 + rows, j0 : j0 + cols].astype(np.float32) * inv


BLOCKS = [  # b, n, first row, rows, first key, keys
    (0, 0, 0, 64, 0, 128),
    (0, 1, 0, 13, 128, 5),  # the last keys, the dropped row among the rows
    (1, 2, 64, 13, 0, 133),  # the mask's last rows: the copies end at its last byte
    (1, 0, 31, 7, 64, 64),
    (0, 2, 40, 1, 3, 1),
]


@pytest.mark.parametrize("keep_prob", [0.9, 0.5])
@pytest.mark.parametrize("b,n,row0,rows,j0,cols", BLOCKS)
def test_factors_match_the_packing(keep_prob, b, n, row0, rows, j0, cols):
    keep = keep_matrix(SHAPE, keep_prob, seed=rows * cols)
    packed = pack_dropout_mask(keep)[: dropout_mask_bytes(keep.size)]  # no byte past the last element's
    first_bit = ((b * SHAPE[1] + n) * SHAPE[2] + row0) * SHAPE[3] + j0
    got = factors(torch.from_numpy(packed), first_bit, SHAPE[3], rows, cols, keep_prob).numpy()
    assert got.shape == (rows, (cols + 7) // 8 * 8)
    np.testing.assert_array_equal(got[:, :cols], expected(keep, b, n, row0, rows, j0, cols, keep_prob))


def test_aligned_rows():
    shape = (1, 2, 16, 64)  # S2 % 8 == 0: every row starts at bit 0 of a byte
    keep = keep_matrix(shape, 0.5, seed=7)
    got = factors(torch.from_numpy(pack_dropout_mask(keep)), 64 * 16 + 3 * 64, 64, 9, 64, 0.5).numpy()
    np.testing.assert_array_equal(got, expected(keep, 0, 1, 3, 9, 0, 64, 0.5))
