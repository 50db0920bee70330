"""What a family module declares: one OpSpec per op for `verify` and one OpBench per op for `bench`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from ...dtypes import FLOATS as DTYPES  # noqa: F401  (re-exported: the dtypes every family runs)


@dataclass(frozen=True)
class OpSpec:
    """How `verify` drives one op. Tensors are passed by their op_proto input names."""

    run: Callable[[dict, dict], tuple]  # ours: (inputs, attrs) -> outputs (also run on meta tensors)
    second: Callable[[dict, dict], tuple]  # PyTorch's own computation in the same dtype
    golden: Callable[[dict, dict], tuple]  # float64 NumPy reference: (float64 inputs, attrs) -> outputs
    fuzz: Callable  # (rng, attrs) -> random input shapes by name
    default_cases: Callable[[bool], list[dict]]  # (quick) -> the default suite as case-file entries
    values: dict = field(default_factory=dict)  # named value generators: name -> fn(shape, attrs, ctx: GenContext)
    # The op's own criterion, replacing `auto`'s MERE/MARE or ratio where it has one: (inputs, attrs, ours,
    # PyTorch's, golden) -> one precision.Check per output (fusion_attention_grad's cancelling gradients)
    check: Callable | None = None


@dataclass(frozen=True)
class Targets:
    """What an op must reach (None: no target), from its issue."""

    step: float | None  # x the PyTorch step-by-step code
    compile: float | None  # x torch.compile of it
    copy_pct: float | None  # % of same-size copy bandwidth

    def with_twin_floor(self, op: str, pass_: str, dtype: str) -> Targets:
        """The twin's speed floor (a user running our ops on a CPU loses no time by them) raises every row to
        >= 1.5x eager and >= 1.0x torch.compile, and the streaming ops (RoPE, the norms' and SwiGLU's forward)
        to >= 70% of copy bandwidth in fp32 and >= 50% in 16-bit; the op's own target may ask for more."""

        def floor(own, least):
            return least if own is None else max(own, least)

        copy = self.copy_pct
        if op in STREAMING and pass_ in STREAMING[op]:
            copy = floor(copy, 70.0 if dtype == "float32" else 50.0)
        return Targets(floor(self.step, 1.5), floor(self.compile, 1.0), copy)


# The streaming ops (bandwidth-bound: held to a share of copy bandwidth) and the passes that count as streaming.
STREAMING = {
    "rope_customer": ("fwd", "bwd", "full"),
    "rotary_mul": ("fwd", "bwd", "full"),
    "rms_norm": ("fwd",),
    "add_rms_norm": ("fwd",),
    "swiglu": ("fwd",),
}


class Moved(NamedTuple):
    """The bytes a call must move: inputs read once, outputs written once. The split matters to the model's
    roofline: reads come cold from HBM, the write-back L2 keeps writes up to its capacity (pipeline/l2.py)."""

    read: int
    written: int

    @property
    def total(self) -> int:
        return self.read + self.written


def per_pass(fwd: Moved, bwd: Moved) -> dict[str, Moved]:
    """{fwd, bwd, full}: full moves both passes' bytes."""
    return {"fwd": fwd, "bwd": bwd, "full": Moved(fwd.read + bwd.read, fwd.written + bwd.written)}


@dataclass(frozen=True)
class OpBench:
    """How `bench` times one op."""

    ours: Callable  # (*inputs) -> output, or a tuple of outputs whose first is compared and differentiated
    step: Callable  # the PyTorch step-by-step code it replaces (the same outputs)
    make_inputs: Callable  # (shape, dtype, generator) -> inputs; inputs[0] gets the gradient in bwd/full
    check_shape: Callable  # (shape) -> None, or ValueError saying what is wrong
    preset_shapes: Callable  # (bench.ops.LayerShapes, seq) -> shapes
    bytes_moved: Callable  # (inputs, output, pass) -> Moved: the bytes that must be read and written
    shape_help: str  # what --shape means for this op, e.g. "B,H,L,D"
    default_shapes: tuple  # shapes timed without --shape/--preset
    targets: dict  # pass -> Targets
    all_outputs: Callable | None = None  # (*inputs) -> every output, when `ours` returns only some
    flops: Callable | None = None  # (inputs, pass) -> the cube's floating-point operations (cube ops only)
    autograd_op: str = ""  # the torch op whose autograd formula the bwd / full rows need ("": registered with it)


def case_tensor(name: str, shape, types, **fields) -> dict:
    """One input_desc/output_desc entry of a case file (verify/cases.py), as a family's default suite writes it."""
    return {"name": name, "format": "ND", "type": types, "shape": shape, **fields}
