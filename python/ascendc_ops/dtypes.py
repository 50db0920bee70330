"""Dtype names, once for the package: the float dtypes the ops take, the other spellings of them, element
sizes (also of the twin's recorded C++ names) and the torch dtype of a name. Only the standard library is
imported here, so precision.py stays NumPy-only; torch is imported when a torch dtype is asked for."""

from __future__ import annotations

FLOATS = ("float16", "bfloat16", "float32")  # what verify's cases and the family suites are made in
# Other spellings -> the name above: short names, C++ names (the twin's record), msopgen's "float".
ALIASES = {"fp16": "float16", "half": "float16", "bf16": "bfloat16", "fp32": "float32", "float": "float32"}
BYTES = {
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
}


def canonical(name: str) -> str:
    """'float16' for 'fp16', 'half' or 'torch.float16'; any other name unchanged."""
    name = str(name).removeprefix("torch.")
    return ALIASES.get(name, name)


def torch_dtype(name: str):
    """The torch dtype of a name ('bfloat16', 'bf16', 'int32', ...)."""
    import torch  # here, not at the top: see the module docstring

    dtype = getattr(torch, canonical(name), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"not a torch dtype: {name!r}")
    return dtype
