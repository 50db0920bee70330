"""Twin speed (the ops must not cost a CPU user time): fused execution of element-wise runs
(csrc/twin/twin_fuse.h) gives bit-identical results to instruction-by-instruction execution
(ASCENDC_TWIN_FUSE=0, the default), forward and backward, on every op and dtype, on the tile paths the kernels
take (multi-row tiles with per-row views, split rows, odd widths)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ascendc_ops
from conftest import kernel_library

fuse_kernels = kernel_library("twin_fuse_kernels")
N, SHIFT = 4096, 64

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _norm(x, g):
    y, rstd = ascendc_ops.rms_norm(x, g, 1e-6)
    return y, rstd


def _add_norm(x, g):
    y, rstd, xs = ascendc_ops.add_rms_norm(x, x.flip(0), g, 1e-6)
    return y, rstd, xs


def _rotary(x, c, s, mode):
    return ascendc_ops.rotary_mul(x, c, s, rotary_mode=mode)


def _run(fn, inputs):
    """Forward outputs and the gradients of every float input under a fixed upstream gradient."""
    leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
    outs = fn(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    diff = [o for o in outs if o.requires_grad]
    dys = [torch.linspace(-1, 1, o.numel(), dtype=torch.float32).reshape(o.shape).to(o.dtype) for o in diff]
    grads = torch.autograd.grad(diff, leaves, dys, allow_unused=True)
    return [o.detach() for o in outs] + [g for g in grads if g is not None]


def _cases(dtype):
    r = lambda *s: torch.randn(*s).to(dtype)  # noqa: E731
    return {
        "rms_norm multi-row": (_norm, [r(37, 200), torch.rand(200).to(dtype)]),
        "rms_norm wide": (_norm, [r(4, 4096), torch.rand(4096).to(dtype)]),
        "rms_norm split-row": (_norm, [r(3, 30000), torch.rand(30000).to(dtype)]),
        "add_rms_norm": (_add_norm, [r(19, 136), torch.rand(136).to(dtype)]),
        "add_rms_norm split-row": (_add_norm, [r(2, 30000), torch.rand(30000).to(dtype)]),
        "swiglu": (lambda x: ascendc_ops.swiglu(x, -1), [r(9, 2 * 1105)]),
        "swiglu dim0": (lambda x: ascendc_ops.swiglu(x, 0), [r(6, 83)]),
        "rotary_mul half": (
            lambda x, c, s: _rotary(x, c, s, "half"),
            [r(2, 3, 7, 128), r(1, 1, 7, 128), r(1, 1, 7, 128)],
        ),
        "rotary_mul interleave": (
            lambda x, c, s: _rotary(x, c, s, "interleave"),
            [r(2, 3, 7, 40), r(1, 1, 7, 40), r(1, 1, 7, 40)],
        ),
        "rope_customer": (ascendc_ops.rope_customer, [r(1, 4, 33, 64), r(33, 64), r(33, 64)]),
    }


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).split(".")[1])
def test_fused_and_unfused_agree_bit_for_bit(monkeypatch, dtype):
    for name, (fn, inputs) in _cases(dtype).items():
        monkeypatch.setenv("ASCENDC_TWIN_FUSE", "0")
        plain = _run(fn, inputs)
        monkeypatch.setenv("ASCENDC_TWIN_FUSE", "1")
        fused = _run(fn, inputs)
        assert len(plain) == len(fused), name
        for k, (a, b) in enumerate(zip(plain, fused, strict=True)):
            assert a.dtype == b.dtype and a.shape == b.shape, (name, k)
            same = torch.equal(
                a.view(torch.int16 if a.element_size() == 2 else torch.int32),
                b.view(torch.int16 if b.element_size() == 2 else torch.int32),
            )
            assert same, f"{name} output {k} ({dtype}): fused result differs from instruction-by-instruction"


def _expected(name, x):
    """What tests/cpp/twin_fuse_kernels.cpp computes, instruction by instruction, in NumPy float32."""
    two, c = np.float32(2) * x, np.zeros(N, np.float32)
    if name == "shifted_read":
        c[:-SHIFT] = two[SHIFT:] + np.float32(1)
    elif name == "shifted_write":
        c[:] = two
        c[SHIFT:] = x[:-SHIFT] + np.float32(1)
    elif name == "war_shift":
        b = np.float32(3) * x
        c = b + np.float32(1)
        b[SHIFT:] = two[:-SHIFT]
        c = c + b
    elif name == "self_overlap":  # element i reads element i + 64 before it is overwritten
        c = two.copy()
        c[:-SHIFT] = two[SHIFT:] + x[:-SHIFT]
    elif name == "retyped":
        c[: N // 2] = x.astype(np.float16).view(np.float32)
    elif name == "gm_roundtrip":
        c[:-SHIFT] = two[SHIFT:] + np.float32(1)
    elif name == "scalar_read":
        c = two[100] + two
    elif name == "scalar_write":
        a = x.copy()
        a[3] = 100
        c[5] = 9
        c = c + two + a
    elif name == "pad_rows":  # y itself: rows of [7, 7, x row + 1 ..., 7 x 4] + 1, 128 apart
        rows = np.full((32, 106), np.float32(8))
        rows[:, 2:102] = x.reshape(32, 128)[:, :100] + np.float32(1)
        c.reshape(32, 128)[:, :106] = rows
    elif name == "pad_roundtrip":
        c[: 31 * 96] = (two.reshape(32, 128)[1:, 4:100] + np.float32(1)).ravel()
    return c


@pytest.mark.parametrize("name", sorted(fuse_kernels.names()))
def test_aliased_views_inside_a_run(monkeypatch, name):
    """Shifted and re-typed views of one buffer (UB or GM) inside a run: fused == unfused == NumPy."""
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "0")  # these kernels test execution order, not pipe sync
    x = torch.linspace(-3, 3, N, dtype=torch.float32)
    out = {}
    for fuse in ("0", "1"):
        monkeypatch.setenv("ASCENDC_TWIN_FUSE", fuse)
        out[fuse] = fuse_kernels.run(name, x).numpy()
    want = _expected(name, x.numpy())
    assert np.array_equal(out["0"].view(np.int32), want.view(np.int32)), f"{name}: unfused differs from NumPy"
    assert np.array_equal(out["1"].view(np.int32), out["0"].view(np.int32)), f"{name}: fused differs from unfused"
