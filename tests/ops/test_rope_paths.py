"""Which instructions the RoPE kernel rotates with, read from the twin's instruction record: rotate_half
is two strided UB->UB copies where half a row of fp32 is whole 32-byte blocks (D % 16 == 0), a
Gather otherwise and in fp32's pair modes, ShiftLeft/ShiftRight/Or on 16-bit pairs; both directions,
results checked against the reference."""

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
    swaps = [i["op"] for i in ops if i["op"] in ("ShiftLeft", "ShiftRight", "Or")]
    if by_copy:  # no Gather at all: the tables need none either
        assert not gathers and copies and not swaps
    elif mode == "half" or dtype == torch.float32:  # the Gather path: one per x tile (plus one per table load backward)
        assert gathers and not swaps
    else:  # 16-bit pair swap: shifts and Or per x tile; Gather only for the table backward
        assert swaps and swaps.count("Or") == swaps.count("ShiftLeft") == swaps.count("ShiftRight")
        assert bool(gathers) == backward
    want = (
        R.rotary_mul_backward(np64(x), np64(x), np64(cos), np64(sin), mode)[0]
        if backward
        else R.rotary_mul(np64(x), np64(cos), np64(sin), mode)
    )
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    np.testing.assert_allclose(np64(y), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("backward", (False, True))
def test_heads_share_a_tile_on_the_910b_tiling(backward):
    """910B tiling of 97 rows over 48 cores: 3-row tiles (the last 1 row) and UB for 33 rows, so the 34
    heads sharing each cos/sin tile go through UB 9 at a time (9, 9, 9, 7): one pair swap per 9 heads.
    Output bit for bit that of the CPU twin's tiling (one head per tile there), and the reference's."""
    from ascendc_ops.harness.pipeline import load_platform
    from ascendc_ops.harness.pipeline.estimate import tiling_platform

    x = torch.randn(1, 34, 97, 128).to(torch.bfloat16)
    cos, sin = (torch.rand(97, 128) * 2 - 1).to(torch.bfloat16), (torch.rand(97, 128) * 2 - 1).to(torch.bfloat16)
    op = torch.ops.custom.rope_customer_grad if backward else torch.ops.custom.rope_customer
    mine = op(x, cos, sin)
    with tiling_platform(load_platform("910B")), recording() as records:
        y = op(x, cos, sin)
    gathers = sorted({i["count"] for i in v_ops(records) if i["op"] == "Gather"})
    swaps = sorted({i["count"] for i in v_ops(records) if i["op"] == "Or"})
    assert gathers == [128, 384]  # the tables' 1 or 3 rows (the tutorial's even-lane reads)
    # the x pairs swapped by ShiftLeft/ShiftRight/Or: 7 or 9 heads of 1 or 3 rows
    assert swaps == [7 * 128, 9 * 128, 7 * 3 * 128, 9 * 3 * 128]
    assert torch.equal(y, mine)
    xf, c, s = np64(x), np64(cos), np64(sin)
    want = R.rope_tutorial_backward(xf, xf, c, s)[0] if backward else R.rope_tutorial(xf, c, s)
    np.testing.assert_allclose(np64(y), want, rtol=1e-2, atol=1e-2)
