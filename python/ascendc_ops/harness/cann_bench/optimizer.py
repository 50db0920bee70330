"""cann-bench's optimizer tasks on our ops: level2 apply_adam_w (tasks/level2/apply_adam_w: var, grad, m, v of one
dtype, lr, beta1, beta2, weight_decay, epsilon, maximize at step 1 -> the updated var; built-in npu_apply_adam_w,
in place on var, m, v) on our apply_adam_w, and level1 foreach_norm (tasks/level1/foreach_norm: a list of tensors
and the norm's order `scalar` -> one norm per tensor; built-in torch._foreach_norm) on our foreach_norm. The
semantics are the tasks' desc.md and golden.py (written here from them); both goldens widen 16-bit inputs to
float32, compute there and round once, which is what the preset's control does with our ops' PyTorch computations.

foreach_norm has its own verify spec here (NORM_SPEC, registered by the preset): the optimizer family benches it
but verifies no case of it; its inputs are x0, x1, ... (the list in order) and its outputs y0, y1, ... (0-dim)."""

from __future__ import annotations

import math

import numpy as np
import torch

from ...ops import optimizer_reference as R
from ..families.base import OpSpec
from ..pipeline.calibration import Work, tensor_bytes
from ..verify.case_fields import TensorSpec

ADAM_TASK, NORM_TASK = "apply_adam_w", "foreach_norm"
TASKS = (ADAM_TASK, NORM_TASK)
NORM_ORDERS = (1.0, 2.0, math.inf)  # the orders our foreach_norm computes (op_proto/optimizer/foreach_norm.json)
ADAM_SEMANTICS = (
    "y = var after one AdamW step at step 1 (m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, bias-corrected, "
    "var -= lr (m^ / (sqrt(v^) + epsilon) + weight_decay var), maximize negates g) as cann-bench's golden; our op "
    "updates var, m, v in place and keeps m and v in fp32, so a 16-bit case's m and v are passed as the fp32 "
    "values they equal (drawn in the case's dtype; the model's time reads and writes them at 4 bytes, the "
    "built-in at 2); the updated m and v are judged too"
)
NORM_SEMANTICS = (
    "y[i] = (sum |x_i|^p)^(1/p) per tensor, p = scalar, as cann-bench's golden (torch.norm after widening 16-bit "
    "inputs to fp32, rounded once to the dtype); the list's tensors are our inputs x0, x1, ..., one launch; our op "
    "computes p = 1, 2 and inf"
)


def adam_unsupported(case: dict) -> str | None:
    """Why our apply_adam_w cannot run a case, or None: cann-bench's golden maximizes by the minimizing update's
    opposite, var + lr * (m^ / (sqrt(v^) + epsilon) + weight_decay * var) with m from the gradient as given,
    where torch.optim.AdamW (our op) negates the gradient: m takes -g and the weight decay still shrinks var."""
    if not (case.get("attrs") or {}).get("maximize"):
        return None
    return (
        "maximize: cann-bench's golden adds lr * (m^ / (sqrt(v^) + eps) + weight_decay * var) with m from +grad; "
        "our op (torch.optim.AdamW's maximize) negates grad, so m and the weight decay's sign differ"
    )


def norm_order(case: dict) -> float:
    return float((case.get("attrs") or {}).get("scalar", 2.0))


def norm_unsupported(case: dict) -> str | None:
    """Why our foreach_norm cannot run a case, or None: it computes the 1-, 2- and inf-norms only."""
    p = norm_order(case)
    if p in NORM_ORDERS:
        return None
    where = "op_proto/optimizer/foreach_norm.json"
    return f"norm order scalar={p:g}: our foreach_norm computes p = 1, 2 and inf only ({where})"


def norm_shapes(case: dict) -> list[list[int]]:
    """The shapes of the case's tensor list (cann-bench's input_shape holds one entry: the list)."""
    return [list(s) for s in case["input_shape"][0]]


class Rounded:
    """Values of `inner` (an array-like) rounded to a 16-bit `dtype`, as float64: a 16-bit optimizer state as the
    fp32 value our op keeps. An array-like made when asked, so a case holds no data."""

    def __init__(self, inner, dtype: str):
        self.inner, self.dtype = inner, dtype
        self.shape = tuple(getattr(inner, "shape", ()))

    def __array__(self, dtype=None, copy=None):
        v = torch.from_numpy(np.asarray(self.inner, dtype=np.float64)).to(getattr(torch, self.dtype)).double().numpy()
        return v if dtype is None else v.astype(dtype)


class Uniform:
    """Uniform in [lo, hi] (seeded): float64, before any rounding."""

    def __init__(self, lo: float, hi: float, shape: tuple, seed: int):
        self.lo, self.hi, self.shape, self.seed = float(lo), float(hi), tuple(shape), seed

    def __array__(self, dtype=None, copy=None):
        v = np.random.default_rng(self.seed).uniform(self.lo, self.hi, self.shape)
        return v if dtype is None else v.astype(dtype)


def _drawn(rng_pair, shape, seed: int, special):
    """The array-like of one input's data: uniform for a finite range, cann-bench's special values otherwise
    (each tensor of a list its own seed, as cann-bench draws each)."""
    lo, hi = (float(v) for v in rng_pair)
    if math.isfinite(lo) and math.isfinite(hi):
        return Uniform(lo, hi, tuple(shape), seed)
    return special(lo, hi, tuple(shape), seed)


def specs(task: str, case: dict, tensor, ranges, seed: int, dtype_of, special) -> tuple[list, list, dict]:
    """(input TensorSpecs, declared output TensorSpecs, attrs) of our op for one case; `tensor` makes an input as
    the preset draws cann-bench's data: (name, shape, dtype, [lo, hi], seed offset); `special`: the preset's
    array-like of a non-finite range (lo, hi, shape, seed)."""
    attrs = case.get("attrs") or {}
    dtypes = [dtype_of(d) for d in case["dtype"]]
    if task == NORM_TASK:
        shapes = norm_shapes(case)
        ins = [TensorSpec(f"x{i}", dtypes[0], tuple(s), value=_drawn(ranges[0], s, seed + i, special))
               for i, s in enumerate(shapes)]  # fmt: skip
        outs = [TensorSpec(f"y{i}", dtypes[0], ()) for i in range(len(shapes))]
        return ins, outs, {"scalar": norm_order(case)}
    # cann-bench's order: var, grad, m, v; ours: var, m, v, grad (m and v fp32)
    shape = tuple(case["input_shape"][0])
    var, grad = tensor("var", shape, dtypes[0], 0), tensor("grad", shape, dtypes[1], 1)
    states = []
    for i, name in ((2, "m"), (3, "v")):
        if dtypes[i] == "float32":
            states.append(tensor(name, shape, "float32", i))
            continue
        inner = _drawn(ranges[i], shape, seed + i, special)
        states.append(TensorSpec(name, "float32", shape, value=Rounded(inner, dtypes[i])))
    hyper = {
        "lr": float(attrs["lr"]),
        "beta1": float(attrs["beta1"]),
        "beta2": float(attrs["beta2"]),
        "weight_decay": float(attrs["weight_decay"]),
        "eps": float(attrs.get("epsilon", 1e-8)),
        "step": float(attrs.get("step", 1)),
        "amsgrad": False,  # cann-bench's cases do not expose it (its baseline passes False)
        "maximize": bool(attrs.get("maximize", False)),
    }
    return [var, *states, grad], [TensorSpec("y", dtypes[0], shape)], hyper


# ---------------------------------------------------------------- foreach_norm's verify spec
def _listed(t: dict, prefix: str) -> list:
    return [t[k] for k in sorted((k for k in t if k.startswith(prefix) and k[1:].isdigit()), key=lambda k: int(k[1:]))]


def run_norm(t: dict, a: dict) -> tuple:
    return tuple(torch.ops.custom.foreach_norm(_listed(t, "x"), float(a["scalar"])))


def torch_norm(t: dict, a: dict) -> tuple:
    """torch.norm per tensor in its dtype: cann-bench's golden once the preset's control widens the inputs."""
    return tuple(torch.norm(x, p=float(a["scalar"])) for x in _listed(t, "x"))


def golden_norm(g: dict, a: dict) -> tuple:
    """ops/optimizer_reference.py's float64 p-norms, one 0-dim array each."""
    return tuple(np.array(v) for v in R.foreach_norm(_listed(g, "x"), float(a["scalar"])))


def _no_fuzz(rng, attrs):
    raise ValueError(f"{NORM_TASK}: the cann-bench preset's spec has no fuzzer (its cases are cann-bench's)")


NORM_SPEC = OpSpec(run_norm, torch_norm, golden_norm, _no_fuzz, default_cases=lambda quick: [])


# ---------------------------------------------------------------- the built-in's least work
def builtin_work(task: str, case: dict) -> Work | None:
    """The least work of cann-bench's built-in (scripts/baseline/refs): npu_apply_adam_w reads var, grad, m, v
    and writes var, m, v back in place in their dtype; torch._foreach_norm reads every tensor once and writes one
    norm each. No FLOPs on the cube."""
    dtypes = [("float32" if d == "float" else d) for d in case["dtype"]]
    if task == ADAM_TASK:
        shapes = case["input_shape"]
        read = sum(tensor_bytes(s, d) for s, d in zip(shapes, dtypes, strict=True))
        written = read - tensor_bytes(shapes[1], dtypes[1])  # all but grad
        return Work(read + written, 0, dtypes[0], False, written, in_place=True)
    if task == NORM_TASK:
        shapes = norm_shapes(case)
        read = sum(tensor_bytes(s, dtypes[0]) for s in shapes)
        written = len(shapes) * tensor_bytes([1], dtypes[0])
        return Work(read + written, 0, dtypes[0], False, written)
    return None
