"""cann-bench's cases as a harness preset (`verify --preset cann-bench`, `bench --preset cann-bench`): each case
of a cann-bench task mapped to our op with cann-bench's semantics (its desc.md and golden.py), as a verify Case
judged against our float64 golden, and its 910B estimate (the pipeline model) beside the built-in kernel's
time and HAP (data.py has the facts and the score)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..families import VERIFY_OPS
from ..verify.case_fields import TensorSpec, seed_of
from ..verify.cases import Case, validate
from . import (
    attention,
    attention_grad as ag,
    attention_grad_enhance as age,
    attention_sink_rows as sink_rows,
    cross_entropy as ce,
    data as D,
    optimizer as opt,
)
from .judge import controls, witnesses

QUICK_ELEMENTS = 1 << 22  # --quick: cases whose largest tensor holds at most this many elements


# ---------------------------------------------------------------- which cases our ops run
@dataclass(frozen=True)
class Mapping:
    op: str | None  # our verify op, None: the task has no op of ours yet
    semantics: str  # how the task's semantics map to our op
    unsupported: object = None  # (case) -> reason the op cannot run it, or None
    op_of: object = None  # (case) -> our verify op for the case where it is not `op`


MAPPINGS = {
    "rms_norm": Mapping(
        "rms_norm",
        "y = x / sqrt(mean(x^2 over the last dim) + epsilon) * gamma, as cann-bench's golden "
        "(torch.nn.functional.rms_norm); cann-bench's output is y, ours also writes rstd (fp32, one per row), "
        "judged too",
    ),
    "swi_glu": Mapping(
        "swiglu",
        "silu(x0) * x1 with x0, x1 = input.chunk(2, dim): the first half activated, as our swiglu(x, dim)",
    ),
    "grouped_matmul": Mapping(
        "grouped_matmul",
        "y[rows of group g] = x[rows] @ weight[g] (transposed when transpose_weight), group_list cumulative "
        "(our group_list_type 0); ours returns one [M, N] tensor: split_item 0/1's per-group list holds the "
        "same rows in order, 2/3 is that tensor; bias [E, N] in the kernel's fp32 accumulation (a bfloat16 "
        "bias, drawn as cann-bench draws it, is passed as the float32 it equals: A2's Matmul takes no bfloat16 bias)",
    ),
    "apply_rotary_pos_emb": Mapping(
        "apply_rotary_pos_emb",
        "query and key rotated as cann-bench's golden: its half-width cos/sin ([S, D/2] or [B, S, D/2]) "
        "widened to our op's [.., D] tables (half: [c, c]; interleaved: each value twice, as its golden and "
        "its baseline's ConcatD / RepeatInterleaveV2 do), layout 0 -> BSND, 1 -> BNSD; widening not timed",
    ),
}
MAPPINGS |= {task: Mapping(attention.OP, attention.SEMANTICS) for task in attention.TASKS}
MAPPINGS |= {task: Mapping(attention.OP, attention.LAB_SEMANTICS) for task in attention.LAB_TASKS}
MAPPINGS |= {
    ce.CE_TASK: Mapping("cross_entropy_loss", ce.CE_SEMANTICS, ce.channel_first),
    ce.LCE_TASK: Mapping(ce.LOSS_OP, ce.LCE_SEMANTICS),
    opt.ADAM_TASK: Mapping("apply_adam_w", opt.ADAM_SEMANTICS, opt.adam_unsupported),
    opt.NORM_TASK: Mapping("foreach_norm", opt.NORM_SEMANTICS, opt.norm_unsupported),
    ag.TASK: Mapping(ag.BWD_OP, ag.SEMANTICS),
    age.TASK: Mapping(age.OP, age.SEMANTICS, age.unsupported, age.op_of),
}
# How many of a case's first declared outputs cann-bench's op writes (default: all declared; linear_cross_entropy
# declares its kernel's statistics beside cann-bench's loss)
CANN_OUTPUTS = {ce.LCE_TASK: 1}
# ops no harness family verifies
_PRESET_SPECS = {attention.OP: attention.SPEC, ce.LOSS_OP: ce.LOSS_SPEC, "foreach_norm": opt.NORM_SPEC,
                 ag.BWD_OP: ag.SPEC, sink_rows.OP: sink_rows.SPEC}  # fmt: skip


class WideTable:
    """A cos/sin table as our op takes it from cann-bench's half-width one: the half table drawn uniform in
    [lo, hi] (seeded), widened along the last dim (half: cat(t, t); interleave: each value twice) and
    reshaped to `shape`. An array-like made when asked, so a case holds no data."""

    def __init__(self, lo: float, hi: float, half_shape: tuple, shape: tuple, mode: str, seed: int):
        lo, hi = float(lo), float(hi)
        self.lo, self.hi, self.half_shape, self.shape, self.mode, self.seed = lo, hi, half_shape, shape, mode, seed

    def __array__(self, dtype=None, copy=None):
        if all(math.isfinite(v) for v in (self.lo, self.hi)):
            t = np.random.default_rng(self.seed).uniform(self.lo, self.hi, self.half_shape)
        else:  # cann-bench's special values (NaN, infinities) in the half table
            t = np.asarray(SpecialValues(self.lo, self.hi, self.half_shape, self.seed))
        t = np.repeat(t, 2, axis=-1) if self.mode == "interleave" else np.concatenate((t, t), axis=-1)
        v = t.reshape(self.shape)
        return v if dtype is None else v.astype(dtype)


def support(task: str, case: dict) -> str | None:
    """None when our op runs the case, else why not."""
    m = MAPPINGS.get(task)
    if m is None or m.op is None:
        return "not implemented yet" if m else "no op of ours"
    return m.unsupported(case) if m.unsupported else None


def mapping_doc(facts: dict) -> dict:
    """The mapping as the data file records it: per task our op and its semantics, the cases not run."""
    out = {}
    for task, t in D.all_tasks(facts).items():
        m = MAPPINGS[task]
        out[task] = {
            "ours": m.op,
            "semantics": m.semantics,
            "not_run": {str(c["case_id"]): support(task, c) for c in t["cases"] if support(task, c)},
        }
    return out


# ---------------------------------------------------------------- input data as cann-bench draws it
class SpecialValues:
    """Data of a non-finite value_range as cann-bench's DataGenerator._gen_special draws it
    (src/kernel_eval/data/data_generator.py; our code, its rule): uniform in [-1, 1), then for a range with
    an infinite end the first and the last max(1, n // 20) elements (flat order) -inf and +inf; for
    [nan, nan] each element NaN with probability 1/2. An array-like made when asked, so a case holds no data."""

    def __init__(self, lo: float, hi: float, shape: tuple, seed: int):
        self.lo, self.hi, self.shape, self.seed = lo, hi, tuple(shape), seed

    def __array__(self, dtype=None, copy=None):
        rng = np.random.default_rng(self.seed)
        v = rng.uniform(-1.0, 1.0, self.shape)
        flat = v.reshape(-1)
        if math.isnan(self.lo) and math.isnan(self.hi):
            flat[rng.random(flat.size) < 0.5] = np.nan
        elif math.isinf(self.lo) or math.isinf(self.hi):
            n = max(1, flat.size // 20)
            flat[:n], flat[-n:] = -np.inf, np.inf
        return v if dtype is None else v.astype(dtype)


def input_ranges(case: dict, n: int) -> list:
    """One [lo, hi] per input: cann-bench broadcasts a single range to every input and repeats the last of
    a shorter list (DataGenerator._normalize_value_ranges)."""
    vr = case.get("value_range")
    if not vr:
        return [[0.0, 1.0]] * n  # cann-bench's default for a float input without a range
    if not isinstance(vr[0], list):
        return [vr] * n
    return list(vr) + [vr[-1]] * (n - len(vr))


def _tensor(name, shape, dtype, rng_pair, seed) -> TensorSpec:
    lo, hi = (float(v) for v in rng_pair)
    if all(math.isfinite(v) for v in (lo, hi)):
        return TensorSpec(name, dtype, tuple(shape), value_range=(lo, hi))
    return TensorSpec(name, dtype, tuple(shape), value=SpecialValues(lo, hi, shape, seed))


class Bf16Values:
    """bfloat16 data uniform in [lo, hi] (seeded) as float32: a bfloat16 bias as our kernel takes it."""

    def __init__(self, lo: float, hi: float, shape: tuple, seed: int):
        self.lo, self.hi, self.shape, self.seed = float(lo), float(hi), tuple(shape), seed

    def __array__(self, dtype=None, copy=None):
        import torch

        v = np.random.default_rng(self.seed).uniform(self.lo, self.hi, self.shape)
        v = torch.from_numpy(v).to(torch.bfloat16).double().numpy()
        return v if dtype is None else v.astype(dtype)


def _gmm_bias(shape, dtype, rng_pair, seed) -> TensorSpec:
    if dtype != "bfloat16":
        return _tensor("bias", shape, dtype, rng_pair, seed)
    return TensorSpec("bias", "float32", tuple(shape), value=Bf16Values(*rng_pair, shape, seed))


def _dtype(name: str) -> str:
    return "float32" if name == "float" else name


# ---------------------------------------------------------------- cases
def case_name(task: str, case_id) -> str:
    return f"cann_bench_{task}_{case_id}"


def _specs(task: str, case: dict, name: str):
    """(input TensorSpecs, declared output TensorSpecs, attrs) of our op for one cann-bench case."""
    shapes, dtypes, attrs = case["input_shape"], [_dtype(d) for d in case["dtype"]], case.get("attrs") or {}
    ranges = input_ranges(case, len(shapes))
    seed = seed_of(name)
    if task == "rms_norm":
        ins = [_tensor(n, shapes[i], dtypes[i], ranges[i], seed + i) for i, n in enumerate(("x", "gamma"))]
        return ins, [TensorSpec("y", dtypes[0], tuple(shapes[0]))], {"epsilon": float(attrs.get("epsilon", 1e-6))}
    if task == "swi_glu":
        dim = int(attrs.get("dim", -1))
        half = list(shapes[0])
        half[dim] //= 2
        return (
            [_tensor("x", shapes[0], dtypes[0], ranges[0], seed)],
            [TensorSpec("y", dtypes[0], tuple(half))],
            {"dim": dim},
        )
    if task == "grouped_matmul":
        trans = bool(attrs.get("transpose_weight", False))
        ends = [int(v) for v in attrs["group_list"]]
        x, w = shapes[0], shapes[1]
        ins = [
            _tensor("x", x, dtypes[0], ranges[0], seed),
            _tensor("weight", w, dtypes[1], ranges[1], seed + 1),
            TensorSpec("group_list", "int64", (len(ends),), value=ends),
        ]
        n = w[1] if trans else w[2]
        if len(shapes) > 2 and shapes[2] is not None:
            ins.append(_gmm_bias(shapes[2], dtypes[2], ranges[2], seed + 2))
        return ins, [TensorSpec("y", dtypes[0], (x[0], n))], {"group_list_type": 0, "transpose_weight": trans}
    if task == "apply_rotary_pos_emb":
        mode = "interleave" if attrs.get("rotaryMode", "half") == "interleaved" else "half"
        layout = "BNSD" if int(attrs.get("layout", 0)) == 1 else "BSND"
        q, k, half = shapes[0], shapes[1], tuple(shapes[2])
        b, s_, d = (1, *half) if len(half) == 2 else half
        wide = (b, 1, s_, 2 * d) if layout == "BNSD" else (b, s_, 1, 2 * d)
        ins = [_tensor(n, shapes[i], dtypes[i], ranges[i], seed + i) for i, n in enumerate(("query", "key"))]
        ins += [
            TensorSpec(n, dtypes[i], wide, value=WideTable(*ranges[i], half, wide, mode, seed + i))
            for i, n in ((2, "cos"), (3, "sin"))
        ]
        outs = [TensorSpec("query", dtypes[0], tuple(q)), TensorSpec("key", dtypes[1], tuple(k))]
        return ins, outs, {"layout": layout, "rotary_mode": mode}
    if task in (*attention.TASKS, *attention.LAB_TASKS):
        return attention.specs(case, lambda n, s, d, i: _tensor(n, s, d, ranges[i], seed + i), _dtype)
    if task in ce.TASKS:
        return ce.specs(task, case, lambda n, s, d, i: _tensor(n, s, d, ranges[i], seed + i), ranges, seed, _dtype)
    if task == ag.TASK:
        return ag.specs(case, lambda n, s, d, i: _tensor(n, s, d, ranges[i], seed + i), _dtype)
    if task == age.TASK:
        return age.specs(case, lambda n, s, d, i: _tensor(n, s, d, ranges[i], seed + i), _dtype)
    if task in opt.TASKS:
        tensor = lambda n, s, d, i: _tensor(n, s, d, ranges[i], seed + i)  # noqa: E731
        return opt.specs(task, case, tensor, ranges, seed, _dtype, SpecialValues)
    raise ValueError(f"{task}: no op of ours")


def shapes_of(case: dict) -> list:
    """The case's tensor shapes, a tensor list's (foreach_norm's input_shape [[shape, ...]]) one by one."""
    out = []
    for s in case["input_shape"]:
        if s is None:
            continue
        out += [list(t) for t in s] if s and isinstance(s[0], list) else [s]
    return out


def largest(case: dict) -> int:
    return max(math.prod(s) for s in shapes_of(case))


def to_case(task: str, case: dict, facts_source: str) -> Case:
    """Our verify Case of one cann-bench case (validated: our op accepts its shapes, dtypes and attrs)."""
    m = MAPPINGS[task]
    op = m.op_of(case) if m.op_of else m.op
    name = case_name(task, case["case_id"])
    ins, outs, attrs = _specs(task, case, name)
    spec = spec_of(op)
    meta = {"cann_bench": case, "task": task, "cann_outputs": CANN_OUTPUTS.get(task, len(outs))}
    c = Case(name, op, ins, outs, attrs, source=facts_source, seed=seed_of(name), meta=meta)
    c.control, c.witness, c.spec = controls, witnesses, spec  # its rule's control and witness (cann_bench/judge.py)
    # outputs our op writes beyond cann-bench's (RMSNorm's rstd) are declared as our op makes them
    metas = _meta_outputs(spec, ins, attrs)
    names = _output_names(op) if len(metas) > len(outs) else []
    c.outputs += [TensorSpec(names[i], d, s) for i, (d, s) in enumerate(metas) if i >= len(outs)]
    validate(c, spec, name)
    return c


def spec_of(op: str):
    """The verify spec of our op: a harness family's when one declares it, else the preset's own
    (fusion_attention's in cann_bench/attention.py, linear_cross_entropy's loss in cann_bench/cross_entropy.py);
    the cases carry it, so the families' table stays what the families declare."""
    return VERIFY_OPS.get(op) or _PRESET_SPECS[op]


def _meta_outputs(spec, ins, attrs) -> list:
    import torch

    from ...dtypes import torch_dtype

    metas = {t.name: torch.empty(t.shape, dtype=torch_dtype(t.dtype), device="meta") for t in ins}
    return [(str(o.dtype).removeprefix("torch."), tuple(o.shape)) for o in spec.run(metas, attrs)]


def _output_names(op: str) -> list[str]:
    from ...op_proto import load_all

    return [t.name for t in load_all()[op].outputs]


def select(facts: dict, only: dict | None = None, quick: bool = False) -> list[tuple[str, dict]]:
    """(task, case) of every case, in file order; `only`: task -> case ids (empty: all of the task)."""
    out = []
    for task, t in D.all_tasks(facts).items():
        if only is not None and task not in only:
            continue
        for c in t["cases"]:
            if only and only[task] and c["case_id"] not in only[task]:
                continue
            if quick and largest(c) > QUICK_ELEMENTS:
                continue
            out.append((task, c))
    return out


def source_of(facts: dict, task: str) -> str:
    s = facts["source"]
    return f"{s['repository']}@{s['commit'][:12]}:{D.all_tasks(facts)[task]['files']['cases']}"


def verify_cases(facts: dict, only=None, quick: bool = False) -> tuple[list[Case], list[str]]:
    """(our Cases of the selected cases our ops run, one line per case not run and why)."""
    cases, skipped = [], []
    for task, c in select(facts, only, quick):
        why = support(task, c)
        if why:
            skipped.append(f"{case_name(task, c['case_id'])}: {why}")
            continue
        cases.append(to_case(task, c, source_of(facts, task)))
    return cases, skipped


def _ids(part: str) -> range:
    """One comma-separated part of --cann-case's ids: an id, or an inclusive range FIRST-LAST."""
    first, dash, last = part.partition("-")
    lo, hi = int(first), int(last if dash else first)
    if hi < lo:
        raise ValueError(part)
    return range(lo, hi + 1)


def parse_only(items) -> dict | None:
    """--cann-case TASK[:ID,FIRST-LAST...] ... -> {task: {ids}} (None: every case)."""
    if not items:
        return None
    only: dict = {}
    for item in items:
        task, _, ids = item.partition(":")
        if task not in MAPPINGS:
            raise ValueError(f"--cann-case {item!r}: unknown task {task!r} (known: {', '.join(MAPPINGS)})")
        try:
            only.setdefault(task, set()).update(i for v in ids.split(",") if v for i in _ids(v))
        except ValueError:
            raise ValueError(
                f"--cann-case {item!r}: case ids are integers or ranges FIRST-LAST, e.g. rms_norm:1,5 mha:7-18"
            ) from None
    return only
