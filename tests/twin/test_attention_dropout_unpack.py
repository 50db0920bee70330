"""The attention kernels' unpacking of torch_npu's bit-packed dropout mask (csrc/kernels/attention_dropout.h),
run on the twin through tests/cpp/twin_attention_dropout_kernels.cpp, against the mask's packing in NumPy
(ops/attention_args.py, docs/attention.md "Dropout"): every block's keep / keep_prob, exactly, in both modes
(tiling/attention_buffers.h AttentionDropoutMode): rows at any bit, and rows of whole bytes (S2 % 8 == 0)."""

import numpy as np
import pytest
import torch

import ascendc_ops  # noqa: F401  (loads the twin the test kernels link against)
from ascendc_ops.ops.attention_args import dropout_mask_bytes, pack_dropout_mask
from conftest import kernel_library

factors = kernel_library("twin_faults", "twin_attention_dropout").factors

SHAPE = (2, 3, 77, 133)  # odd S2: rows start at every bit shift
BYTES_SHAPE = (2, 3, 70, 520)  # S2 % 8 == 0: every row starts at bit 0 of a byte
BITS, BYTES = 1, 2  # AttentionDropoutMode


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
    pitch = (cols + 7) // 8 * 8 + 8  # tables wider than the block
    got = factors(torch.from_numpy(packed), first_bit, SHAPE[3], rows, cols, keep_prob, pitch, BITS).numpy()
    assert got.shape == (rows, (cols + 7) // 8 * 8)
    np.testing.assert_array_equal(got[:, :cols], expected(keep, b, n, row0, rows, j0, cols, keep_prob))


@pytest.mark.parametrize("mode", [BITS, BYTES])
def test_aligned_rows(mode):
    shape = (1, 2, 16, 64)  # S2 % 8 == 0: every row starts at bit 0 of a byte
    keep = keep_matrix(shape, 0.5, seed=7)
    got = factors(torch.from_numpy(pack_dropout_mask(keep)), 64 * 16 + 3 * 64, 64, 9, 64, 0.5, 128, mode).numpy()
    np.testing.assert_array_equal(got, expected(keep, 0, 1, 3, 9, 0, 64, 0.5))


BYTE_BLOCKS = [  # b, n, first row, rows, first key, keys, the tables' keys (the tiling's S2 block)
    (0, 0, 0, 16, 0, 512, 512),  # 64 bytes a row: one Brcb for the block
    (0, 1, 0, 32, 256, 256, 256),  # the same at 256 keys, the dropped row among the rows
    (0, 1, 0, 64, 128, 128, 128),  # 16 bytes a row, padded to 32 in UB: packed, then one Brcb
    (1, 1, 40, 30, 384, 128, 256),  # narrower than the tables
    (0, 0, 10, 20, 64, 200, 256),  # rows not whole blocks of fp32: a Brcb a row, each running into the next
    (1, 2, 64, 6, 512, 8, 512),  # the mask's last byte: the copy ends there
    (0, 2, 40, 1, 8, 8, 128),
]


@pytest.mark.parametrize("keep_prob", [0.9, 0.5])
@pytest.mark.parametrize("b,n,row0,rows,j0,cols,pitch", BYTE_BLOCKS)
def test_whole_byte_rows_match_the_packing(keep_prob, b, n, row0, rows, j0, cols, pitch):
    keep = keep_matrix(BYTES_SHAPE, keep_prob, seed=rows * cols)
    packed = pack_dropout_mask(keep)[: dropout_mask_bytes(keep.size)]
    first_bit = ((b * BYTES_SHAPE[1] + n) * BYTES_SHAPE[2] + row0) * BYTES_SHAPE[3] + j0
    got = factors(torch.from_numpy(packed), first_bit, BYTES_SHAPE[3], rows, cols, keep_prob, pitch, BYTES).numpy()
    np.testing.assert_array_equal(got, expected(keep, b, n, row0, rows, j0, cols, keep_prob))
