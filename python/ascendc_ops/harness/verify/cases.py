"""Test case files in the msOpST style: parsing, validation and expansion into concrete cases.

A case file is a JSON list of cases (README, "Case files (msOpST style)"):

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
- ``case_name``, ``op`` (a torch.ops.custom op with an entry in verify.OPS, by its torch name
  ``rope_customer`` or its prototype's op type ``RopeCustomer``, in any case), ``input_desc`` and
  ``output_desc`` (one entry per op input / output, names as in op_proto/<family>/<op>.json) are required.
- Inputs need ``name``, ``format`` (only ND), ``type`` (float16 | bfloat16 | float32, alias float),
  ``shape`` (``typical_shape`` replaces a shape holding -1), and optionally ``value_range`` [[a, b]]
  (default [0.1, 1.0], msOpST's) with ``data_distribute`` (default uniform; its meaning of [a, b] per
  distribution: values.from_distribution, e.g. normal = mean a, std |b|) or ``value``: a (nested) list
  of exactly the input's shape, a ``.bin`` file of its dtype, or the name of a generator the op provides
  (our extension; RoPE: "rope_cos", "rope_sin": the tables at positions 0, 1, ... in the op's layout).
- Outputs need ``name``, ``format``, ``type`` and ``shape`` (checked against the result; -1 = any).
- ``attr``: ``[{name, type, value}]``; attributes not given take op_proto's defaults.
- ``error_threshold`` ``[diff_thd, pct_thd]``: judged by msOpST's rule (error_threshold.py).
- ``calc_expect_func_file`` ``"file.py:func"`` (path relative to the case file): a custom golden, called
  as msOpST calls it (verify.golden_arguments), returning one array or a list of arrays (one per output).
- ``fuzz_case_num`` N (our extension): N sub-cases with random input shapes drawn by the op's fuzzer
  (seeded from the case name and the optional integer ``fuzz_seed``); the tensors then give no shape.

Expansion, as msOpST's SubCaseDesignCross: each tensor crosses its own list fields in the order of
TENSOR_FIELDS, and sub-case i takes the i-th combination of every tensor, so the tensors list equally
many values of a field; one value beside several is shared by every sub-case (our extension, which
msOpST rejects). Each attribute with several values multiplies the sub-cases (our extension; msOpST
takes an attribute's value as one value). Sub-cases are named ``case_name#k`` (k from 0) when a case
expands; ``Case.msopst_name`` is msOpST's name for the same sub-case. docs/harness.md lists the
extensions and the form in which msOpST rejects each.

Everything wrong with a file raises CaseError with a one-line message naming the file, the case
and the field; the CLI prints it and exits non-zero.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...dtypes import torch_dtype
from .case_fields import (
    BIN,
    DTYPE_BYTES,
    KNOWN_KEYS,
    MAX_FUZZ,
    TENSOR_FIELDS,
    CaseError,
    TensorSpec,
    attr_candidates,
    candidates,
    is_generator,
    load_golden,
    pick,
    req,
    seed_of,
    tensor_spec,
    typed_default,
)


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
    msopst_name: str = ""  # the name msOpST gives this sub-case (same order; k counted from 1)
    given_attrs: tuple[str, ...] = ()  # the attrs the case file names (msOpST passes only these to a golden)
    meta: dict = field(default_factory=dict)
    # cann-bench's cases: its rule's control, (case, spec, tensors, PyTorch's outputs) -> outputs (default:
    # PyTorch's), and step 5's witness, (case, tensors) -> outputs or None (verify/cann_bench_rule.py)
    control: Callable | None = None
    witness: Callable | None = None
    spec: Any = None  # the op's verify spec when the families' table has none (the cann-bench preset's own)

    @property
    def dtype(self) -> str:
        return self.inputs[0].dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.inputs[0].shape


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
        raise CaseError(
            f"{path}: expected a JSON list of cases (msOpST style), got {type(data).__name__}"
            + (" (empty)" if data == [] else "")
        )
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


def expand(raw, ops: dict, where: str = "case", base_dir: Path = Path(".")) -> list[Case]:
    """One case-file entry -> validated concrete Cases (expanded, fuzzed)."""
    from ...op_proto import load_all, resolve

    if not isinstance(raw, dict):
        raise CaseError(f"{where}: a case must be a JSON object, got {type(raw).__name__}")
    name = req(raw, "case_name", where)
    if not isinstance(name, str) or not name:
        raise CaseError(f"{where}: 'case_name' must be a non-empty string")
    unknown = sorted(set(raw) - KNOWN_KEYS)
    if unknown:
        raise CaseError(
            f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(KNOWN_KEYS - {'_comment', 'comment'}))})"
        )
    given = req(raw, "op", where)
    protos = load_all()
    op = resolve(given, protos)
    if op not in ops:
        raise CaseError(
            f"{where}: unknown op {given!r} (known: {', '.join(ops)}, or their op types: "
            f"{', '.join(protos[o].op for o in ops)}; any case)"
        )
    proto = protos[op]
    spec = ops[op]

    fuzz_n = raw.get("fuzz_case_num", 0)
    if not isinstance(fuzz_n, int) or isinstance(fuzz_n, bool) or not 0 <= fuzz_n <= MAX_FUZZ:
        raise CaseError(f"{where}: 'fuzz_case_num' must be an integer in [0, {MAX_FUZZ}], got {json.dumps(fuzz_n)}")
    fuzz_seed = raw.get("fuzz_seed", 0)
    if not isinstance(fuzz_seed, int) or isinstance(fuzz_seed, bool):
        raise CaseError(f"{where}: 'fuzz_seed' must be an integer")

    descs = {}
    for key, want in (("input_desc", proto.inputs), ("output_desc", proto.outputs)):
        lst = req(raw, key, where)
        if not isinstance(lst, list) or not all(isinstance(d, dict) for d in lst):
            raise CaseError(f"{where}: {key!r} must be a list of objects")
        names = [d.get("name") for d in lst]
        expected = [t.name for t in want]
        required = {t.name for t in want if t.param_type != "optional"}  # an optional input may be left out
        if len(set(names)) != len(names) or not required <= set(names) <= set(expected):
            raise CaseError(
                f"{where}: {key} names {names} do not match {op}'s {expected} (op_proto/<family>/{op}.json)"
            )
        descs[key] = sorted(lst, key=lambda d: expected.index(d["name"]))

    # per-tensor candidate lists
    tensors = [("input", d) for d in descs["input_desc"]] + [("output", d) for d in descs["output_desc"]]
    cand: list[dict] = []
    for kind, d in tensors:
        tw = f"{where}: {kind} {d['name']!r}"
        c = {}
        required = ["format", "type"] + ([] if fuzz_n else ["shape"])
        for key in required:
            req(d, key, tw)
        if fuzz_n and "shape" in d:  # msOpST would ignore fuzz_case_num (no fuzz_impl) and run these shapes
            raise CaseError(
                f"{tw}: 'shape' given with 'fuzz_case_num': the fuzzer draws the shapes (msOpST would run "
                "the shapes and ignore fuzz_case_num); drop one of them"
            )
        for key in TENSOR_FIELDS:
            if key not in d or (kind == "output" and key in ("value_range", "data_distribute")):
                continue
            if key == "shape" and fuzz_n:
                continue
            v = d[key]
            if key == "shape" and any(-1 in s for s in candidates(key, v, tw) if isinstance(s, list)):
                v = req(d, "typical_shape", tw + " (shape has -1)") if kind == "input" else v
            c[key] = candidates(key, v, tw)
        if kind == "input" and not is_generator(d.get("value")) and "value" in d:
            several = [key for key, vals in c.items() if len(vals) > 1]
            if several:  # msOpST's rule for explicit data (a list or a .bin file)
                raise CaseError(
                    f"{tw}: {several[0]!r} lists several values beside an explicit 'value'; msOpST allows "
                    "one value per field of a tensor with 'value' (only a generator name may vary them)"
                )
        cand.append(c)
    groups = []
    for key in TENSOR_FIELDS:
        lengths = {len(c[key]) for c in cand if key in c} - {1}
        if len(lengths) > 1:
            raise CaseError(
                f"{where}: the {key!r} lists of the tensors differ in length ({sorted(lengths)}); "
                "the i-th values of every tensor form sub-case i, so give each tensor 1 or the same number"
            )
        groups.append((key, max(lengths) if lengths else 1))

    # attributes
    proto_attrs = {a.name: a for a in proto.attrs}
    attr_list = raw.get("attr", [])
    if not isinstance(attr_list, list) or not all(isinstance(a, dict) for a in attr_list):
        raise CaseError(f"{where}: 'attr' must be a list of {{name, type, value}} objects")
    attr_cands = {}
    for a in attr_list:
        an = req(a, "name", f"{where}: attr")
        if an not in proto_attrs:
            raise CaseError(f"{where}: unknown attr {an!r} for {op} (known: {', '.join(proto_attrs) or 'none'})")
        attr_cands[an] = attr_candidates(a, proto_attrs[an], f"{where}: attr {an!r}")
    for an, a in proto_attrs.items():
        if an not in attr_cands:
            if a.default is None and not a.nullable:  # a nullable attr (`int[]? name=None`) defaults to None
                raise CaseError(f"{where}: attr {an!r} has no default; give it in 'attr'")
            attr_cands[an] = [typed_default(a)]

    threshold = raw.get("error_threshold")
    if threshold is not None:
        ok = (
            isinstance(threshold, list)
            and len(threshold) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in threshold)
            and threshold[1] <= 1
        )
        if not ok:
            raise CaseError(
                f"{where}: 'error_threshold' must be [per-element bound >= 0, allowed failing share "
                f"in [0, 1]], got {json.dumps(threshold)}"
            )
        threshold = (float(threshold[0]), float(threshold[1]))
    golden = None
    golden_name = raw.get("calc_expect_func_file")
    if golden_name is not None:
        golden = load_golden(golden_name, base_dir, where)

    # msOpST names sub-cases <case>_case_001_<format>_<type> (<case>_sub_case_... when a field lists several)
    multi = any(len(v) > 1 for c in cand for v in c.values())
    msopst_prefix = f"{name.replace('/', '_')}_{'sub_case' if multi else 'case'}_"
    combos = list(itertools.product(*(range(n) for _, n in groups), *attr_cands.values()))
    total = len(combos) * max(fuzz_n, 1)
    out = []
    k = 0
    rng = np.random.default_rng([seed_of(name), fuzz_seed]) if fuzz_n else None
    for combo in combos:
        idx = dict(zip((g for g, _ in groups), combo[: len(groups)], strict=True))
        attrs = dict(zip(attr_cands, combo[len(groups) :], strict=True))
        for _ in range(max(fuzz_n, 1)):
            sub = name if total == 1 else f"{name}#{k}"
            k += 1
            fuzz_shapes = spec.fuzz(rng, attrs) if fuzz_n else None
            specs = []
            for (kind, d), c in zip(tensors, cand, strict=True):
                specs.append(tensor_spec(kind, d, c, idx, fuzz_shapes, f"{where}: {kind} {d['name']!r}", base_dir))
            n_in = len(descs["input_desc"])
            out0 = cand[n_in]
            case = Case(
                sub,
                op,
                specs[:n_in],
                specs[n_in:],
                attrs,
                threshold,
                golden,
                golden_name,
                seed=seed_of(sub),
                fuzz=bool(fuzz_n),
                msopst_name=f"{msopst_prefix}{k:03d}_{pick(out0, 'format', idx)}_{pick(out0, 'type', idx)}",
                given_attrs=tuple(a["name"] for a in attr_list),
            )
            validate(case, spec, where if total == 1 else f"{where} (sub-case {sub!r})")
            out.append(case)
    return out


def validate(case: Case, spec, where: str) -> None:
    """Explicit values fit their shapes, named generators exist, and the op accepts the shapes, dtypes
    and attrs (its own checks, run on meta tensors: no data is made)."""
    import torch

    for t in case.inputs:
        if isinstance(t.value, str) and t.value.endswith(BIN):
            path, want = Path(t.value), math.prod(t.shape) * DTYPE_BYTES[t.dtype]
            if not path.is_file() or path.stat().st_size != want:
                found = f"{path.stat().st_size} bytes" if path.is_file() else "no such file"
                raise CaseError(
                    f"{where}: input {t.name!r}: value file {str(path)!r} must hold {want} bytes "
                    f"({list(t.shape)} {t.dtype}), found {found}"
                )
        elif isinstance(t.value, str):
            if t.value not in spec.values:
                raise CaseError(
                    f"{where}: input {t.name!r}: unknown value generator {t.value!r} "
                    f"(this op has: {', '.join(spec.values) or 'none'})"
                )
        elif t.value is not None:
            try:
                arr = np.asarray(t.value, dtype=np.float64)
            except (ValueError, TypeError):
                arr = None
            if arr is None or arr.shape != t.shape:  # msOpST: the value's shape is the input's, no broadcasting
                got = "not a numeric array" if arr is None else f"of shape {list(arr.shape)}"
                raise CaseError(f"{where}: input {t.name!r}: 'value' is {got}, the input's shape is {list(t.shape)}")
    metas = {t.name: torch.empty(t.shape, dtype=torch_dtype(t.dtype), device="meta") for t in case.inputs}
    try:
        outs = spec.run(metas, case.attrs)
    except (ValueError, TypeError, RuntimeError, IndexError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CaseError(f"{where}: the op rejects this case: {msg}") from None
    if len(outs) != len(case.outputs):
        raise CaseError(f"{where}: {len(case.outputs)} outputs declared but {case.op} returns {len(outs)}")
    for t, o in zip(case.outputs, outs, strict=True):
        if str(o.dtype).removeprefix("torch.") != t.dtype:
            raise CaseError(
                f"{where}: output {t.name!r} is declared {t.dtype} but {case.op} returns "
                f"{str(o.dtype).removeprefix('torch.')} for these inputs"
            )
        if t.shape is not None and (
            len(t.shape) != o.dim() or any(a not in (-1, b) for a, b in zip(t.shape, o.shape, strict=True))
        ):
            raise CaseError(
                f"{where}: output {t.name!r} is declared with shape {list(t.shape)} but {case.op} "
                f"returns {list(o.shape)} for these inputs"
            )
