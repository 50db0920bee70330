"""An op's inputs and its calls, made one way for everything that runs an op from its family's bench entry
(families/*.py BENCH): the bench times the calls, the estimate records them for the pipeline model and the
host profile measures them on the twin."""

from __future__ import annotations

import torch

from ..dtypes import torch_dtype
from .families import BENCH_OPS as OPS


def first(out):
    """The output that is compared and differentiated: an op returning several gives its first."""
    return out[0] if isinstance(out, (tuple, list)) else out


def check_shape(name: str, shape: tuple) -> None:
    """ValueError naming the op, the shape and what its shape means, when the op cannot take it."""
    op = OPS[name]
    try:
        op.check_shape(shape)
    except ValueError as e:
        raise ValueError(f"{name}: shape {','.join(map(str, shape))}: {e} ({op.shape_help})") from None


def make_inputs(name: str, shape, dtype: str) -> tuple[tuple, tuple]:
    """(shape, inputs) of op `name`: `shape`, or the op's first default one; seeded, so every run alike."""
    shape = tuple(shape or OPS[name].default_shapes[0])
    check_shape(name, shape)
    return shape, OPS[name].make_inputs(shape, torch_dtype(dtype), torch.Generator().manual_seed(0))


def forward(name: str):
    """The op with every output (a bench entry's `ours` returns only the compared ones)."""
    op = OPS[name]
    return op.all_outputs or op.ours


def output_shapes(value) -> list:
    items = value if isinstance(value, (tuple, list)) else (value,)
    return [list(t.shape) for t in items if isinstance(t, torch.Tensor)]


def calls(name: str, inputs: tuple, pass_: str):
    """A factory of zero-argument calls of the op, as the bench times them: fwd; bwd (dx for a fixed dy,
    the forward run by the factory, outside the call); full (forward with grad + that backward)."""
    if pass_ == "fwd":
        fwd = forward(name)
        return lambda: lambda: fwd(*inputs)
    op = OPS[name]
    x, rest = inputs[0], inputs[1:]
    y0 = first(op.ours(x, *rest))
    dy = torch.randn(y0.shape, generator=torch.Generator().manual_seed(1)).to(y0.dtype)

    def make():
        xg = x.clone().requires_grad_()
        if pass_ == "full":
            return lambda: torch.autograd.grad(first(op.ours(xg, *rest)), xg, dy)[0]
        y = first(op.ours(xg, *rest))
        return lambda: torch.autograd.grad(y, xg, dy)[0]

    return make
