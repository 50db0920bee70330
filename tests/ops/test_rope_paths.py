"""Which instructions the RoPE kernel rotates with, read from the twin's instruction record: rotate_half
is two strided UB->UB copies where half a row of fp32 is whole 32-byte blocks (D % 16 == 0), a
Gather otherwise and in the pair modes; both directions, results checked against the reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from accuracy import np64
from ascendc_ops.harness.twin_record import recording
from ascendc_ops.ops import rope_reference as R


def v_ops(records) -> list[dict]:
    return [ins for rec in records for block in rec["blocks"] for ins in block if ins["pipe"] == "V"]


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16))
@pytest.mark.parametrize("backward", (False, True))
@pytest.mark.parametrize(
    "mode, D, by_copy", [("half", 128, True), ("half", 80, True), ("half", 40, False), ("interleave", 128, False)]
)
def test_rotation_instructions(mode, D, by_copy, backward, dtype):
    x = torch.randn(2, 3, 7, D).to(dtype)
    cos, sin = (torch.rand(1, 1, 7, D) * 2 - 1).to(dtype), (torch.rand(1, 1, 7, D) * 2 - 1).to(dtype)
    op = torch.ops.custom.rotary_mul_grad if backward else torch.ops.custom.rotary_mul
    with recording() as records:
        y = op(x, cos, sin, mode)
    ops = v_ops(records)
    gathers = [i for i in ops if i["op"] == "Gather"]
    copies = [i for i in ops if i["op"] == "DataCopy"]
    if by_copy:  # no Gather at all: the tables need none either
        assert not gathers and copies
    else:  # the Gather path: one per x tile (plus one per table load backward)
        assert gathers
    want = (
        R.rotary_mul_backward(np64(x), np64(x), np64(cos), np64(sin), mode)[0]
        if backward
        else R.rotary_mul(np64(x), np64(cos), np64(sin), mode)
    )
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    np.testing.assert_allclose(np64(y), want, rtol=tol, atol=tol)
