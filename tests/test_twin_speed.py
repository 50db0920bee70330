"""Twin speed (issue 12): fused execution of element-wise runs (csrc/twin/twin_fuse.h) gives bit-identical
results to instruction-by-instruction execution (ASCENDC_TWIN_FUSE=0), forward and backward, on every op and
dtype, on the tile paths the kernels take (multi-row tiles with per-row views, split rows, odd widths)."""
from __future__ import annotations

import pytest
import torch

import ascendc_ops

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
        "rotary_mul half": (lambda x, c, s: _rotary(x, c, s, "half"), [r(2, 3, 7, 128), r(1, 1, 7, 128), r(1, 1, 7, 128)]),
        "rotary_mul interleave": (lambda x, c, s: _rotary(x, c, s, "interleave"), [r(2, 3, 7, 40), r(1, 1, 7, 40), r(1, 1, 7, 40)]),
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
        for k, (a, b) in enumerate(zip(plain, fused)):
            assert a.dtype == b.dtype and a.shape == b.shape, (name, k)
            same = torch.equal(a.view(torch.int16 if a.element_size() == 2 else torch.int32),
                               b.view(torch.int16 if b.element_size() == 2 else torch.int32))
            assert same, f"{name} output {k} ({dtype}): fused result differs from instruction-by-instruction"

