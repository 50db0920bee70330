"""cann-bench's cross-entropy tasks on our ops: level2 cross_entropy_loss (tasks/level2/cross_entropy_loss: logits
[N, C] or channel-first [N, C, d1, ...], int64 targets, reduction, ignore_index; measured 910B2 times) on our
cross_entropy_loss, and level4 linear_cross_entropy (bench_lab/kernel_bench/level4/linear_cross_entropy: hidden
[T, H], weight [V, H], int32 labels, reduction mean | sum, ignore_index -> an fp32 loss [1]; spec only, no time) on
our linear_cross_entropy kernel with the loss composed from its statistics. The semantics are the tasks' desc.md
and golden.py (written here from them); so are the controls of their accuracy rule (verify/cann_bench_rule.py).

linear_cross_entropy has its own verify spec (LOSS_OP, registered by the preset): cann-bench judges the loss,
which our kernel leaves to torch ops on [T] vectors (ops/linear_cross_entropy.py), so the spec runs the kernel
and that composition and judges the loss first and the kernel's four statistics beside it."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ...ops import linear_cross_entropy_reference as LR
from ...ops.linear_cross_entropy import loss_from_statistics
from ..families.base import OpSpec
from ..families.cross_entropy import LCE_STATS
from ..pipeline import estimate
from ..pipeline.launch import combined, model_launches
from ..verify.case_fields import TensorSpec

CE_TASK, LCE_TASK = "cross_entropy_loss", "linear_cross_entropy"
TASKS = (CE_TASK, LCE_TASK)
LOSS_OP = "linear_cross_entropy_loss"  # the preset's verify op: the kernel, then the loss from its statistics
CE_SEMANTICS = (
    "loss = F.cross_entropy(input, target, reduction, ignore_index) in the input's dtype, as cann-bench's golden; "
    "logits [N, C] with the classes last (our op's, torch_npu's npu_cross_entropy_loss's layout); int64 targets "
    "drawn as cann-bench draws ints (randint over value_range, both ends included); a mean or sum loss is our [1] "
    "tensor where cann-bench's is a scalar; ours also writes log_prob [N, C] (judged too) and the empty z-loss outputs"
)
LCE_SEMANTICS = (
    "loss = F.cross_entropy(hidden @ weight^T, labels, reduction, ignore_index) with fp32 logits, as cann-bench's "
    "golden: our linear_cross_entropy kernel (the four per-token statistics over the whole vocabulary, no T x V "
    "logits) and the loss composed from them by ascendc_ops.linear_cross_entropy's torch ops on [T] vectors "
    "(untimed: the model times the kernel's launch); int32 labels passed as the int64 ids our op takes (randint "
    "over value_range, both ends included); the statistics are judged too"
)


def channel_first(case: dict) -> str | None:
    """Why our cross_entropy_loss cannot run a case, or None: it takes [N, C] logits with the classes last."""
    if len(case["input_shape"][0]) == 2:
        return None
    return (
        f"channel-first logits {list(case['input_shape'][0])} (classes in dim 1): our op takes [N, C] with the "
        "classes last, and the built-in's time includes the Transpose that makes them so (its note's Transpose x1)"
    )


class IntValues:
    """Integers as cann-bench draws them (DataGenerator.generate_input_tensor: torch.randint(lo, hi + 1)), seeded
    here with NumPy: uniform over [lo, hi], both ends included. An array-like made when asked."""

    def __init__(self, lo: float, hi: float, shape: tuple, seed: int):
        self.lo, self.hi, self.shape, self.seed = int(lo), int(hi), tuple(shape), seed

    def __array__(self, dtype=None, copy=None):
        v = np.random.default_rng(self.seed).integers(self.lo, self.hi + 1, self.shape).astype(np.float64)
        return v if dtype is None else v.astype(dtype)


def specs(task: str, case: dict, tensor, ranges, seed: int, dtype_of) -> tuple[list, list, dict]:
    """(input TensorSpecs, declared output TensorSpecs, attrs) of our op for one case; `tensor` makes a float input
    as the preset draws cann-bench's data: (name, shape, dtype, [lo, hi], seed offset)."""
    shapes, attrs = case["input_shape"], case.get("attrs") or {}
    dtypes = [dtype_of(d) for d in case["dtype"]]
    kw = {"reduction": str(attrs.get("reduction", "mean")), "ignore_index": int(attrs.get("ignore_index", -100))}
    n = shapes[0][0]
    if task == CE_TASK:
        ins = [tensor("input", shapes[0], dtypes[0], 0)]
        ins.append(TensorSpec("target", "int64", (n,), value=IntValues(*ranges[1], (n,), seed + 1)))
        loss = (n,) if kw["reduction"] == "none" else (1,)
        return ins, [TensorSpec("loss", dtypes[0], loss)], kw
    (t, h), (v, _) = shapes[0], shapes[1]
    ins = [tensor("hidden", (t, h), dtypes[0], 0), tensor("weight", (v, h), dtypes[1], 1)]
    ins.append(TensorSpec("target", "int64", (t,), value=IntValues(*ranges[2], (t,), seed + 2)))
    outs = [TensorSpec("loss", "float32", (1,)), *(TensorSpec(k, "float32", (t,)) for k in LCE_STATS)]
    return ins, outs, kw


# ---------------------------------------------------------------- linear_cross_entropy's verify spec
def run_loss(t: dict, a: dict) -> tuple:
    """Our kernel's statistics, then the loss from them (ascendc_ops.linear_cross_entropy's composition; the
    target's value check it makes in eager mode is left out, so meta tensors run too)."""
    stats = torch.ops.custom.linear_cross_entropy(t["hidden"], t["weight"], t["target"])
    v = t["weight"].shape[0]
    loss, _ = loss_from_statistics(stats, t["target"], v, a["ignore_index"], 0.0, 0.0, a["reduction"], None)
    return (loss.reshape(1), *stats)


def cann_bench_loss(t: dict, a: dict) -> tuple:
    """cann-bench's golden.py (its plain golden: the logits in fp32, then F.cross_entropy) and the four statistics
    from the same fp32 logits: its control, and PyTorch's own computation here."""
    x = t["hidden"].float() @ t["weight"].float().T
    loss = F.cross_entropy(x, t["target"].long(), reduction=a["reduction"], ignore_index=a["ignore_index"])
    m = x.amax(1)
    inside = (t["target"] >= 0) & (t["target"] < x.shape[1])
    picked = x.gather(1, t["target"].long().clamp(0, x.shape[1] - 1)[:, None])[:, 0] * inside
    return loss.reshape(1), m, torch.exp(x - m[:, None]).sum(1), picked, x.sum(1)


def golden_loss(g: dict, a: dict) -> tuple:
    """float64: the statistics of ops/linear_cross_entropy_reference.py, the loss lse - target logit per kept token,
    summed or averaged over them (cann-bench's mean divides by the kept tokens)."""
    m, s, picked, total = LR.linear_cross_entropy_reference(g["hidden"], g["weight"], g["target"])
    keep = g["target"] != a["ignore_index"]
    per = np.where(keep, m + np.log(s) - picked, 0.0)
    loss = per.sum() / (keep.sum() if a["reduction"] == "mean" else 1)
    return np.array([loss]), m, s, picked, total


def _no_fuzz(rng, attrs):
    raise ValueError(f"{LOSS_OP}: the cann-bench preset's spec has no fuzzer (its cases are cann-bench's)")


LOSS_SPEC = OpSpec(run_loss, cann_bench_loss, golden_loss, _no_fuzz, default_cases=lambda quick: [])


# ---------------------------------------------------------------- the estimates
def forward_model(tensors: dict, plat):
    """The forward's model (pipeline OpModel) from its distinct launches, each run alone on the twin: the first, one
    chained launch of a whole range standing for every other but the last, and the last (its range may be shorter).
    Exact as the model goes: it times each launch from an empty L2 (pipeline/l2.py: no state crosses launches), the
    middle launches share one plan (PlanForwardRange of launchRows rows, chained) and differ only in their weight
    rows' addresses and in which targets fall in their range (a few scalar picks). Each case's forward thus costs
    the twin at most three launches, not its whole vocabulary."""
    h, w, t = tensors["hidden"], tensors["weight"], tensors["target"]
    ops = torch.ops.ascendc_ops
    with estimate.tiling_platform(plat):
        n = ops.linear_cross_entropy_launches(h, w, t)
    if n == 0:  # no launch: what the op records (nothing)
        return model_launches(
            estimate.record_packed(lambda: torch.ops.custom.linear_cross_entropy(h, w, t), plat), plat
        )
    return from_stand_ins(n, lambda k: ops.linear_cross_entropy_launch(h, w, t, k), plat)


def backward_model(args: tuple, plat):
    """The backward's model (grad op inputs `args`, backward_inputs') from its distinct launches, as the forward's:
    a launch takes a vocabulary range (its vocab tasks and every token task over it), the first starts
    grad_hidden's fp32 sums, the middle ones add to them, the last casts them; each run alone on the twin."""
    h, w, t, *grads = args
    ops = torch.ops.ascendc_ops
    with estimate.tiling_platform(plat):
        n = ops.linear_cross_entropy_grad_launches(h, w, t, grads)
    if n == 0:
        return model_launches(
            estimate.record_packed(lambda: torch.ops.custom.linear_cross_entropy_grad(*args), plat), plat
        )
    return from_stand_ins(n, lambda k: ops.linear_cross_entropy_grad_launch(h, w, t, grads, k), plat)


def from_stand_ins(launches: int, run_launch, plat):
    """The model of `launches` launches from their stand-ins, each stand-in recorded once (`run_launch(k)`)."""
    stands_for = stand_ins(launches)
    models = {}
    for k in sorted(set(stands_for)):
        models[k] = model_launches(estimate.record_packed(lambda k=k: run_launch(k), plat), plat).launches[0]
    return combined([models[k] for k in stands_for], plat)


def stand_ins(launches: int) -> list[int]:
    """Per launch of the forward, the launch run in its stead: itself for the first and the last, launch 1 for
    the ones between."""
    return [k if k in (0, launches - 1) else 1 for k in range(launches)]


def token_lse(hidden: torch.Tensor, weight: torch.Tensor, rows: int = 4096) -> torch.Tensor:
    """lse per token by torch, fp32 logits of `rows` vocabulary rows at a time (no [T, V] tensor)."""
    lse = torch.full((hidden.shape[0],), -torch.inf)
    h = hidden.float()
    for v0 in range(0, weight.shape[0], rows):
        lse = torch.logaddexp(lse, torch.logsumexp(h @ weight[v0 : v0 + rows].float().T, dim=1))
    return lse


def backward_inputs(tensors: dict, attrs: dict) -> tuple:
    """The grad op's inputs after the forward of a case: the loss's coefficients (a = b = 1 per kept token, over
    their count for mean; c = 0) and lse (torch's: the forward's estimate runs only some of its launches)."""
    keep = (tensors["target"] != attrs["ignore_index"]).float()
    a = keep / keep.sum().clamp(min=1.0) if attrs["reduction"] == "mean" else keep
    lse = token_lse(tensors["hidden"], tensors["weight"])
    return tensors["hidden"], tensors["weight"], tensors["target"], lse, a, a, torch.zeros_like(a)
