"""Readable argument errors: every message names the op, the argument, what was expected and what came."""

from __future__ import annotations

from typing import NoReturn

import torch

from ..op_proto import OpProto


def fail(kind: type[Exception], op: str, message: str) -> NoReturn:
    raise kind(f"{op}: {message}")


def check_same_device(proto: OpProto, *tensors: torch.Tensor) -> None:
    first = tensors[0].device
    for desc, t in zip(proto.inputs, tensors, strict=False):
        if t.device != first:
            fail(
                ValueError,
                proto.name,
                f"{desc.name} is on {t.device} but {proto.inputs[0].name} is on {first}; "
                "all inputs must be on one device",
            )


def check_dtype(proto: OpProto, index: int, tensor: torch.Tensor) -> None:
    """Input `index` must have a dtype that some combination in op_proto/<op>.json allows."""
    allowed = list(dict.fromkeys(c[index] for c in proto.dtype_combos()))
    got = str(tensor.dtype).removeprefix("torch.")
    if got not in allowed:
        fail(TypeError, proto.name, f"{proto.inputs[index].name} must be one of {', '.join(allowed)}, got {got}")


def check_dtypes(proto: OpProto, *tensors: torch.Tensor) -> None:
    """The dtypes must form one of the combinations op_proto/<op>.json lists."""
    got = tuple(str(t.dtype).removeprefix("torch.") for t in tensors)
    combos = {c[: len(tensors)] for c in proto.dtype_combos()}
    if got not in combos:
        names = ", ".join(f"{d.name}={g}" for d, g in zip(proto.inputs, got, strict=False))
        supported = " ".join("(" + ", ".join(c) + ")" for c in sorted(combos))
        fail(TypeError, proto.name, f"unsupported dtypes ({names}); supported: {supported}")


def check_same_dtype(op: str, name: str, t: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    """`name` must have `ref_name`'s dtype."""
    if t.dtype != ref.dtype:
        fail(
            TypeError,
            op,
            f"{name} must have {ref_name}'s dtype {str(ref.dtype).removeprefix('torch.')}, "
            f"got {str(t.dtype).removeprefix('torch.')}",
        )
