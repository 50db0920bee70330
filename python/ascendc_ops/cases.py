"""Test case files in the msOpST style: parsing, validation and expansion into concrete cases.

A case file is a JSON list of cases (docs/precision-and-benchmarks.md, "Test case files"):

    {"case_name": "rotary_mul_small", "op": "rotary_mul",
     "input_desc": [{"name": "x", "format": "ND", "type": ["float16", "bfloat16"],
                     "shape": [[2, 3, 7, 40], [1, 32, 512, 128]],
                     "value_range": [[-2, 2]], "data_distribute": "uniform"},
                    {"name": "r1", "format": "ND", "type": ["float16", "bfloat16"],
                     "shape": [[1, 1, 7, 40], [1, 1, 512, 128]], "value": "rope_cos"}, ...],
     "output_desc": [{"name": "y", "format": "ND", "type": ["float16", "bfloat16"],
                      "shape": [[2, 3, 7, 40], [1, 32, 512, 128]]}],
     "attr": [{"name": "rotary_mode", "type": "string", "value": ["half", "interleave"]}],
     "error_threshold": [0.001, 0.001],
     "calc_expect_func_file": "my_golden.py:rotary_mul_golden",
     "fuzz_case_num": 4}

Fields
- ``case_name``, ``op`` (a torch.ops.custom op with an entry in verify.OPS), ``input_desc`` and
  ``output_desc`` (one entry per op input / output, names as in op_proto/<op>.json) are required.
- Inputs need ``name``, ``format`` (only ND), ``type`` (float16 | bfloat16 | float32, alias float),
  ``shape`` (``typical_shape`` replaces a shape holding -1), and either ``value_range`` [[min, max]]
  with ``data_distribute`` (uniform, the default | normal: mean (min+max)/2, std (max-min)/6 |
  truncated_normal: the same, redrawn until inside [min, max]) or ``value``: an explicit (nested)
  list of numbers, or the name of a generator the op provides (RoPE: "rope_cos", "rope_sin": the
  tables at positions 0, 1, ... in the op's layout).
- Outputs need ``name``, ``format``, ``type`` and ``shape`` (checked against the result; -1 = any).
- ``attr``: ``[{name, type, value}]``; attributes not given take op_proto's defaults.
- ``error_threshold`` ``[per-element bound, allowed failing share]``: the limits of the
  double-thousandth standard for this case (verify.check_double_thousandth).
- ``calc_expect_func_file`` ``"file.py:func"`` (path relative to the case file): a custom golden,
  called as ``func(**inputs, **attrs)`` with float64 NumPy arrays of the dtype-rounded inputs,
  returning one array or a list of arrays (one per output).
- ``fuzz_case_num`` N: N sub-cases with random input shapes drawn by the op's fuzzer (seeded from
  the case name and the optional integer ``fuzz_seed``); input/output shapes in the file are then
  not needed (and ignored).

Expansion: a per-tensor field (``format``, ``type``, ``shape``, ``value_range``,
``data_distribute``) holding several values varies in lockstep across the case's tensors (the i-th
values of every tensor form one combination; a single value is shared by all), since an op's
tensors must agree with each other. Distinct fields, and each attribute with several values, combine
as a cross product. Every sub-case is named ``case_name#k`` (k counting from 0) when a case expands.

Everything wrong with a file raises CaseError with a one-line message naming the file, the case
and the field; the CLI prints it and exits non-zero.
"""
from __future__ import annotations

import importlib.util
import itertools
import json
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import precision as P

FORMATS = ("ND",)
DISTRIBUTIONS = ("uniform", "normal", "truncated_normal")
TENSOR_FIELDS = ("format", "type", "shape", "value_range", "data_distribute")
MAX_ELEMENTS = 2**27  # per tensor: the float64 golden of a bigger one alone needs > 1 GiB
MAX_FUZZ = 1000
KNOWN_KEYS = {"case_name", "op", "input_desc", "output_desc", "attr", "error_threshold", "calc_expect_func_file",
              "fuzz_case_num", "fuzz_seed", "_comment", "comment"}


class CaseError(ValueError):
    """A malformed or impossible case; the message is one line."""


@dataclass(frozen=True)
class TensorSpec:
    name: str
    dtype: str  # float16 | bfloat16 | float32
    shape: tuple[int, ...] | None  # None: output shape not checked
    format: str = "ND"
    value_range: tuple[float, float] = (-1.0, 1.0)
    distribution: str = "uniform"
    value: Any = None  # explicit nested list, or a generator name the op provides


@dataclass
class Case:
    name: str
    op: str
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    attrs: dict
    error_threshold: tuple[float, float] | None = None
    golden: Callable | None = None  # custom golden (calc_expect_func_file)
    golden_name: str | None = None
    source: str = "default suite"
    seed: int = 0
    fuzz: bool = False
    meta: dict = field(default_factory=dict)

    @property
    def dtype(self) -> str:
        return self.inputs[0].dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.inputs[0].shape


def seed_of(name: str) -> int:
    return zlib.crc32(name.encode())


# ---------------------------------------------------------------- loading
def load_file(path: str | Path, ops: dict) -> list[Case]:
    """Parse, validate and expand one case file. `ops`: verify.OPS (the op table)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise CaseError(f"{path}: cannot read the case file ({e.strerror or e})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise CaseError(f"{path}: not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data:
        raise CaseError(f"{path}: expected a JSON list of cases (msOpST style), got {type(data).__name__}"
                        + (" (empty)" if data == [] else ""))
    cases, names = [], set()
    for i, raw in enumerate(data):
        where = f"{path}: case {i}"
        if isinstance(raw, dict) and isinstance(raw.get("case_name"), str):
            where = f"{path}: case {raw['case_name']!r}"
        for case in expand(raw, ops, where=where, base_dir=path.parent):
            if case.name in names:
                raise CaseError(f"{where}: case name {case.name!r} is used twice")
            names.add(case.name)
            case.source = str(path)
            cases.append(case)
    return cases


def _req(d: dict, key: str, where: str):
    if key not in d:
        raise CaseError(f"{where}: missing field {key!r}")
    return d[key]


def _is_shape(v) -> bool:
    return isinstance(v, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in v)


def _candidates(key: str, v, where: str) -> list:
    """The values a per-tensor field lists (one or several)."""
    if key == "shape":
        if _is_shape(v):
            return [v]
        if isinstance(v, list) and v and all(_is_shape(s) for s in v):
            return v
        raise CaseError(f"{where}: 'shape' must be a list of integers or a list of such lists, got {json.dumps(v)}")
    if key == "value_range":
        def is_pair(p):
            return (isinstance(p, list) and len(p) == 2
                    and all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in p))
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


def _dtype(v: str, where: str) -> str:
    try:
        return P.dtype_name(v)
    except ValueError:
        raise CaseError(f"{where}: unsupported type {v!r} (supported: float16, bfloat16, float32)") from None


def _attr_candidates(a: dict, proto_attr, where: str) -> list:
    value = _req(a, "value", where)
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


def _typed_default(a):
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


def _load_golden(spec: str, base_dir: Path, where: str) -> Callable:
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


def expand(raw, ops: dict, where: str = "case", base_dir: Path = Path(".")) -> list[Case]:
    """One case-file entry -> validated concrete Cases (expanded, fuzzed)."""
    from .op_proto import load_all

    if not isinstance(raw, dict):
        raise CaseError(f"{where}: a case must be a JSON object, got {type(raw).__name__}")
    name = _req(raw, "case_name", where)
    if not isinstance(name, str) or not name:
        raise CaseError(f"{where}: 'case_name' must be a non-empty string")
    unknown = sorted(set(raw) - KNOWN_KEYS)
    if unknown:
        raise CaseError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(KNOWN_KEYS - {'_comment', 'comment'}))})")
    op = _req(raw, "op", where)
    if op not in ops:
        raise CaseError(f"{where}: unknown op {op!r} (known: {', '.join(ops)})")
    proto = load_all()[op]
    spec = ops[op]

    fuzz_n = raw.get("fuzz_case_num", 0)
    if not isinstance(fuzz_n, int) or isinstance(fuzz_n, bool) or not 0 <= fuzz_n <= MAX_FUZZ:
        raise CaseError(f"{where}: 'fuzz_case_num' must be an integer in [0, {MAX_FUZZ}], got {json.dumps(fuzz_n)}")
    fuzz_seed = raw.get("fuzz_seed", 0)
    if not isinstance(fuzz_seed, int) or isinstance(fuzz_seed, bool):
        raise CaseError(f"{where}: 'fuzz_seed' must be an integer")

    descs = {}
    for key, want in (("input_desc", proto.inputs), ("output_desc", proto.outputs)):
        lst = _req(raw, key, where)
        if not isinstance(lst, list) or not all(isinstance(d, dict) for d in lst):
            raise CaseError(f"{where}: {key!r} must be a list of objects")
        names = [d.get("name") for d in lst]
        expected = [t.name for t in want]
        if sorted(map(str, names)) != sorted(expected):
            raise CaseError(f"{where}: {key} names {names} do not match {op}'s {expected} (op_proto/{op}.json)")
        descs[key] = sorted(lst, key=lambda d: expected.index(d["name"]))

    # per-tensor candidate lists
    tensors = [("input", d) for d in descs["input_desc"]] + [("output", d) for d in descs["output_desc"]]
    cand: list[dict] = []
    for kind, d in tensors:
        tw = f"{where}: {kind} {d['name']!r}"
        c = {}
        required = ["format", "type"] + ([] if fuzz_n else ["shape"])
        for key in required:
            _req(d, key, tw)
        for key in TENSOR_FIELDS:
            if key not in d or (kind == "output" and key in ("value_range", "data_distribute")):
                continue
            if key == "shape" and fuzz_n:
                continue
            v = d[key]
            if key == "shape" and any(-1 in s for s in _candidates(key, v, tw) if isinstance(s, list)):
                v = _req(d, "typical_shape", tw + " (shape has -1)") if kind == "input" else v
            c[key] = _candidates(key, v, tw)
        if kind == "input" and "value" not in d and "value_range" not in d:
            raise CaseError(f"{tw}: missing field 'value_range' (or 'value')")
        cand.append(c)
    groups = []
    for key in TENSOR_FIELDS:
        lengths = {len(c[key]) for c in cand if key in c} - {1}
        if len(lengths) > 1:
            raise CaseError(f"{where}: the {key!r} lists of the tensors differ in length ({sorted(lengths)}); "
                            "several values vary in lockstep, so give each tensor 1 or the same number")
        groups.append((key, max(lengths) if lengths else 1))

    # attributes
    proto_attrs = {a.name: a for a in proto.attrs}
    attr_list = raw.get("attr", [])
    if not isinstance(attr_list, list) or not all(isinstance(a, dict) for a in attr_list):
        raise CaseError(f"{where}: 'attr' must be a list of {{name, type, value}} objects")
    attr_cands = {}
    for a in attr_list:
        an = _req(a, "name", f"{where}: attr")
        if an not in proto_attrs:
            raise CaseError(f"{where}: unknown attr {an!r} for {op} (known: {', '.join(proto_attrs) or 'none'})")
        attr_cands[an] = _attr_candidates(a, proto_attrs[an], f"{where}: attr {an!r}")
    for an, a in proto_attrs.items():
        if an not in attr_cands:
            if a.default is None:
                raise CaseError(f"{where}: attr {an!r} has no default; give it in 'attr'")
            attr_cands[an] = [_typed_default(a)]

    threshold = raw.get("error_threshold")
    if threshold is not None:
        ok = (isinstance(threshold, list) and len(threshold) == 2
              and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in threshold)
              and threshold[1] <= 1)
        if not ok:
            raise CaseError(f"{where}: 'error_threshold' must be [per-element bound >= 0, allowed failing share "
                            f"in [0, 1]], got {json.dumps(threshold)}")
        threshold = (float(threshold[0]), float(threshold[1]))
    golden = None
    golden_name = raw.get("calc_expect_func_file")
    if golden_name is not None:
        golden = _load_golden(golden_name, base_dir, where)

    combos = list(itertools.product(*(range(n) for _, n in groups), *attr_cands.values()))
    total = len(combos) * max(fuzz_n, 1)
    out = []
    k = 0
    rng = np.random.default_rng([seed_of(name), fuzz_seed]) if fuzz_n else None
    for combo in combos:
        idx = dict(zip((g for g, _ in groups), combo[:len(groups)]))
        attrs = dict(zip(attr_cands, combo[len(groups):]))
        for _ in range(max(fuzz_n, 1)):
            sub = name if total == 1 else f"{name}#{k}"
            k += 1
            fuzz_shapes = spec.fuzz(rng, attrs) if fuzz_n else None
            specs = []
            for (kind, d), c in zip(tensors, cand):
                specs.append(_tensor_spec(kind, d, c, idx, fuzz_shapes, f"{where}: {kind} {d['name']!r}"))
            n_in = len(descs["input_desc"])
            case = Case(sub, op, specs[:n_in], specs[n_in:], attrs, threshold, golden, golden_name,
                        seed=seed_of(sub), fuzz=bool(fuzz_n))
            validate(case, spec, where if total == 1 else f"{where} (sub-case {sub!r})")
            out.append(case)
    return out


def _pick(c: dict, key: str, idx: dict):
    vals = c.get(key)
    if vals is None:
        return None
    return vals[0] if len(vals) == 1 else vals[idx[key]]


def _tensor_spec(kind, d, c, idx, fuzz_shapes, where) -> TensorSpec:
    fmt = _pick(c, "format", idx)
    if fmt not in FORMATS:
        raise CaseError(f"{where}: format {fmt!r} is not supported (only {', '.join(FORMATS)})")
    dtype = _dtype(_pick(c, "type", idx), where)
    if fuzz_shapes is not None:
        shape = fuzz_shapes.get(d["name"]) if kind == "input" else None
    else:
        shape = _pick(c, "shape", idx)
    if shape is not None:
        if kind == "input" and any(n < 0 for n in shape):
            raise CaseError(f"{where}: shape {shape} has a negative dim")
        shape = tuple(int(n) for n in shape)
        if kind == "input" and math.prod(shape) > MAX_ELEMENTS:
            raise CaseError(f"{where}: shape {list(shape)} has {math.prod(shape)} elements, more than the "
                            f"harness allows ({MAX_ELEMENTS})")
    if kind == "output":
        return TensorSpec(d["name"], dtype, shape, fmt)
    value = d.get("value")
    rng_ = _pick(c, "value_range", idx) or [-1.0, 1.0]
    lo, hi = float(rng_[0]), float(rng_[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        raise CaseError(f"{where}: value_range [{lo}, {hi}] must be finite with min <= max")
    dist = _pick(c, "data_distribute", idx) or "uniform"
    if dist not in DISTRIBUTIONS:
        raise CaseError(f"{where}: data_distribute {dist!r} is not one of {', '.join(DISTRIBUTIONS)}")
    return TensorSpec(d["name"], dtype, shape, fmt, (lo, hi), dist, value)


def validate(case: Case, spec, where: str) -> None:
    """Explicit values fit their shapes, named generators exist, and the op accepts the shapes, dtypes
    and attrs (its own checks, run on meta tensors: no data is made)."""
    import torch

    for t in case.inputs:
        if isinstance(t.value, str):
            if t.value not in spec.values:
                raise CaseError(f"{where}: input {t.name!r}: unknown value generator {t.value!r} "
                                f"(this op has: {', '.join(spec.values) or 'none'})")
        elif t.value is not None:
            try:
                arr = np.asarray(t.value, dtype=np.float64)
                np.broadcast_to(arr, t.shape)
            except (ValueError, TypeError):
                raise CaseError(f"{where}: input {t.name!r}: 'value' does not fit shape {list(t.shape)}") from None
    metas = {t.name: torch.empty(t.shape, dtype=getattr(torch, t.dtype), device="meta") for t in case.inputs}
    try:
        outs = spec.run(metas, case.attrs)
    except (ValueError, TypeError, RuntimeError, IndexError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CaseError(f"{where}: the op rejects this case: {msg}") from None
    for t, o in zip(case.outputs, outs):
        if str(o.dtype).removeprefix("torch.") != t.dtype:
            raise CaseError(f"{where}: output {t.name!r} is declared {t.dtype} but {case.op} returns "
                            f"{str(o.dtype).removeprefix('torch.')} for these inputs")
        if t.shape is not None and (len(t.shape) != o.dim() or any(a not in (-1, b) for a, b in zip(t.shape, o.shape))):
            raise CaseError(f"{where}: output {t.name!r} is declared with shape {list(t.shape)} but {case.op} "
                            f"returns {list(o.shape)} for these inputs")


# ---------------------------------------------------------------- data
def make_values(t: TensorSpec, rng: np.random.Generator, spec, attrs: dict) -> np.ndarray:
    """float64 values of one input (before rounding to its dtype)."""
    if isinstance(t.value, str):
        return np.asarray(spec.values[t.value](t.shape, attrs), dtype=np.float64).reshape(t.shape)
    if t.value is not None:
        return np.broadcast_to(np.asarray(t.value, dtype=np.float64), t.shape).copy()
    lo, hi = t.value_range
    if t.distribution == "uniform":
        return rng.uniform(lo, hi, t.shape)
    mean, std = (lo + hi) / 2, (hi - lo) / 6
    v = rng.normal(mean, std, t.shape)
    if t.distribution == "truncated_normal":
        for _ in range(100):
            out = (v < lo) | (v > hi)
            if not out.any():
                break
            v[out] = rng.normal(mean, std, int(out.sum()))
        v = np.clip(v, lo, hi)
    return v
