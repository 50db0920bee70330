"""The fields of a case-file entry: one parser per field, each raising CaseError with a one-line
message naming the file, the case and the field (the format: cases.py)."""

from __future__ import annotations

import importlib.util
import json
import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import precision as P

FORMATS = ("ND",)
# msOpST's data_distribute values (its st/config/white_list_config.json), then our extension
MSOPST_DISTRIBUTIONS = ("uniform", "normal", "beta", "laplace", "triangular", "relu", "sigmoid", "softmax", "tanh")
DISTRIBUTIONS = (*MSOPST_DISTRIBUTIONS, "truncated_normal")
# msOpST crosses a tensor's list fields in this order (its INPUT_CROSS_LIST); outputs have the first three
TENSOR_FIELDS = ("format", "shape", "type", "data_distribute", "value_range")
DEFAULT_VALUE_RANGE = (0.1, 1.0)  # msOpST's, for an input with neither value_range nor value
MAX_ELEMENTS = 2**27  # per tensor: the float64 golden of a bigger one alone needs > 1 GiB
MAX_FUZZ = 1000
BIN = ".bin"
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "int32": 4, "int64": 8, "bool": 1, "uint8": 1}
KNOWN_KEYS = {
    "case_name",
    "op",
    "input_desc",
    "output_desc",
    "attr",
    "error_threshold",
    "calc_expect_func_file",
    "fuzz_case_num",
    "fuzz_seed",
    "_comment",
    "comment",
}


class CaseError(ValueError):
    """A malformed or impossible case; the message is one line."""


@dataclass(frozen=True)
class TensorSpec:
    name: str
    dtype: str  # float16 | bfloat16 | float32
    shape: tuple[int, ...] | None  # None: output shape not checked
    format: str = "ND"
    value_range: tuple[float, float] = DEFAULT_VALUE_RANGE
    distribution: str = "uniform"
    value: Any = None  # explicit nested list, a .bin file's path, or a generator name the op provides


def seed_of(name: str) -> int:
    return zlib.crc32(name.encode())


def is_generator(value) -> bool:
    """A string `value` that is not a .bin file: the name of a value generator (our extension)."""
    return isinstance(value, str) and not value.endswith(BIN)


def req(d: dict, key: str, where: str):
    if key not in d:
        raise CaseError(f"{where}: missing field {key!r}")
    return d[key]


def is_shape(v) -> bool:
    return isinstance(v, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in v)


def candidates(key: str, v, where: str) -> list:
    """The values a per-tensor field lists (one or several)."""
    if key == "shape":
        if is_shape(v):
            return [v]
        if isinstance(v, list) and v and all(is_shape(s) for s in v):
            return v
        raise CaseError(f"{where}: 'shape' must be a list of integers or a list of such lists, got {json.dumps(v)}")
    if key == "value_range":

        def is_pair(p):
            return (
                isinstance(p, list)
                and len(p) == 2
                and all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in p)
            )

        if is_pair(v):
            return [v]
        if isinstance(v, list) and v and all(is_pair(p) for p in v):
            return v
        raise CaseError(f"{where}: 'value_range' must be [[min, max]] (or several such pairs), got {json.dumps(v)}")
    if isinstance(v, str):
        return [v]
    if isinstance(v, list) and v and all(isinstance(s, str) for s in v):
        return v
    raise CaseError(f"{where}: {key!r} must be a string or a list of strings, got {json.dumps(v)}")


def parse_dtype(v: str, where: str) -> str:
    if v in ("int32", "int64", "bool", "uint8"):  # index tensors (MoE group_list, ...) and masks (attention)
        return v
    try:
        return P.dtype_name(v)
    except ValueError:
        raise CaseError(f"{where}: unsupported type {v!r} (supported: float16, bfloat16, float32)") from None


def attr_candidates(a: dict, proto_attr, where: str) -> list:
    value = req(a, "value", where)
    kind = a.get("type", proto_attr.type if proto_attr else None)
    if kind in ("list_int", "list_float", "listInt", "listFloat"):
        several = isinstance(value, list) and value and all(isinstance(v, list) for v in value)
        return value if several else [value]
    vals = value if isinstance(value, list) else [value]
    if not vals:
        raise CaseError(f"{where}: 'value' lists no values")
    checks = {"string": str, "str": str, "int": int, "float": (int, float), "bool": bool}
    want = checks.get(kind)
    for v in vals:
        if want and (not isinstance(v, want) or (want is int and isinstance(v, bool))):
            raise CaseError(f"{where}: value {json.dumps(v)} is not of type {kind!r}")
    return vals


def typed_default(a):
    """op_proto default_value (often a string) as the attribute's Python type."""
    v = a.default
    try:
        if a.type == "float":
            return float(v)
        if a.type == "int":
            return int(v)
        if a.type == "bool":
            return v if isinstance(v, bool) else str(v).lower() == "true"
    except (TypeError, ValueError):
        pass
    return v


def load_golden(spec: str, base_dir: Path, where: str) -> Callable:
    if not isinstance(spec, str) or spec.count(":") < 1:
        raise CaseError(f"{where}: 'calc_expect_func_file' must be \"file.py:function\", got {json.dumps(spec)}")
    file, func = spec.rsplit(":", 1)
    p = Path(file)
    p = p if p.is_absolute() else base_dir / p
    if not p.is_file():
        raise CaseError(f"{where}: calc_expect_func_file {str(p)!r} does not exist")
    try:
        module_spec = importlib.util.spec_from_file_location(f"_ascendc_ops_golden_{seed_of(str(p))}", p)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    except Exception as e:  # any error in user code: one line
        raise CaseError(f"{where}: cannot load {str(p)!r}: {type(e).__name__}: {e}") from None
    fn = getattr(module, func, None)
    if not callable(fn):
        raise CaseError(f"{where}: {str(p)!r} has no function {func!r}")
    return fn


def pick(c: dict, key: str, idx: dict):
    vals = c.get(key)
    if vals is None:
        return None
    return vals[0] if len(vals) == 1 else vals[idx[key]]


def tensor_spec(kind, d, c, idx, fuzz_shapes, where, base_dir: Path = Path(".")) -> TensorSpec:
    fmt = pick(c, "format", idx)
    if fmt not in FORMATS:
        raise CaseError(f"{where}: format {fmt!r} is not supported (only {', '.join(FORMATS)})")
    dtype = parse_dtype(pick(c, "type", idx), where)
    if fuzz_shapes is not None:
        shape = fuzz_shapes.get(d["name"]) if kind == "input" else None
    else:
        shape = pick(c, "shape", idx)
    if shape is not None:
        if kind == "input" and any(n < 0 for n in shape):
            raise CaseError(f"{where}: shape {shape} has a negative dim")
        shape = tuple(int(n) for n in shape)
        if kind == "input" and math.prod(shape) > MAX_ELEMENTS:
            raise CaseError(
                f"{where}: shape {list(shape)} has {math.prod(shape)} elements, more than the "
                f"harness allows ({MAX_ELEMENTS})"
            )
    if kind == "output":
        return TensorSpec(d["name"], dtype, shape, fmt)
    value = d.get("value")
    if isinstance(value, str) and value.endswith(BIN):  # msOpST: a raw file of the input's dtype
        value = str(base_dir / value)
    rng_ = pick(c, "value_range", idx) or DEFAULT_VALUE_RANGE
    lo, hi = float(rng_[0]), float(rng_[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        raise CaseError(f"{where}: value_range [{lo}, {hi}] must be finite with min <= max")
    dist = pick(c, "data_distribute", idx) or "uniform"
    if dist not in DISTRIBUTIONS:
        raise CaseError(f"{where}: data_distribute {dist!r} is not one of {', '.join(DISTRIBUTIONS)}")
    return TensorSpec(d["name"], dtype, shape, fmt, (lo, hi), dist, value)
