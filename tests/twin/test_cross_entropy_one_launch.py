"""The op package's one-launch cross-entropy entries on the twin (csrc/kernels/op_package/cross_entropy/: the row
kernel, SyncAll, then the reduction over rows on the device; the grad: per-row coefficients and the blocks' partial
sums, SyncAll, the row kernel), against the torch path (torch.ops.custom.*, which does those [N]-sized steps in
torch). Both tiled for the same chip, so log_prob and every per-row value come from the same arithmetic: bit-identical;
the reduced loss (a compensated scalar sum here, torch's sum there) and the gradient (the op package multiplies by
1 / D where torch divides by D) within a rounding. One-launch outputs start as NaN, the workspace as 0xFF bytes
(tests/cpp/twin_one_launch_kernels.cpp), under the sanitizer (conftest)."""

from __future__ import annotations

import pytest
import torch

import ascendc_ops  # noqa: F401  (loads torch.ops.custom)
from conftest import kernel_library

one = kernel_library("twin_one_launch")
UB = torch.ops.ascendc_ops.twin_ub_bytes()
CORES = 48
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
ULP = {torch.float32: 2.0**-22, torch.float16: 2.0**-9, torch.bfloat16: 2.0**-6}  # two units in the last place


def torch_path(fn, *args, **kw):
    torch.ops.ascendc_ops.set_tiling_platform("Ascend910B", CORES, 0, UB)
    try:
        return fn(*args, **kw)
    finally:
        torch.ops.ascendc_ops.reset_tiling_platform()


def data(rows, classes, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(rows, classes, generator=g) * 2).to(dtype)
    t = torch.randint(0, classes, (rows,), generator=g)
    t[torch.rand(rows, generator=g) < 0.2] = -100
    return x, t, torch.rand(classes, generator=g) + 0.5


@pytest.mark.parametrize("reduction", ("none", "mean", "sum"))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_one_launch_matches_the_torch_path(dtype, reduction):
    rows, classes = 83, 12000  # 48 blocks share the rows; 16-bit rows take two chunks
    x, t, w = data(rows, classes, dtype, seed=rows)
    attrs = (reduction, -100, 0.1, 1e-3)
    got = one.cross_entropy_loss(x, t, w, *attrs, True, CORES)
    want = torch_path(torch.ops.custom.cross_entropy_loss, x, t, w, *attrs, True)
    assert torch.equal(got[1], want[1]), "log_prob"
    assert torch.equal(got[3], want[3]), "lse_for_zloss"
    for k, name in ((0, "loss"), (2, "zloss")):
        if reduction == "none":
            assert torch.equal(got[k], want[k]), name
        else:
            torch.testing.assert_close(got[k].float(), want[k].float(), rtol=ULP[dtype], atol=0, msg=name)
    gl = (torch.rand(want[0].shape) + 0.5).to(dtype)
    gz = torch.rand(want[2].shape).to(dtype)
    dx = one.cross_entropy_loss_grad(gl, want[1], t, w, gz, want[3], *attrs, CORES)
    ref = torch_path(torch.ops.custom.cross_entropy_loss_grad, gl, want[1], t, w, gz, want[3], *attrs)
    assert not dx.isnan().any(), "x_grad left unwritten"
    scale = ref.float().abs().max().item()
    torch.testing.assert_close(dx.float(), ref.float(), rtol=ULP[dtype], atol=ULP[dtype] * scale, msg="x_grad")


def test_one_launch_every_row_ignored():
    """'mean' with every target ignored: loss NaN (0 / 0, as torch) and a zero gradient, on the device too."""
    x, _, _ = data(5, 300, torch.float32, seed=1)
    t = torch.full((5,), -100)
    loss = one.cross_entropy_loss(x, t, None, "mean", -100, 0.0, 0.0, False, CORES)[0]
    assert torch.isnan(loss).all()
    logp = torch.log_softmax(x, -1)
    dx = one.cross_entropy_loss_grad(torch.ones(1), logp, t, None, None, None, "mean", -100, 0.0, 0.0, CORES)
    assert torch.equal(dx, torch.zeros_like(dx))
