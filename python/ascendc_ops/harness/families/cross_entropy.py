"""The cross_entropy family's harness knowledge: cross_entropy_loss and its grad for `verify` (how to run each,
PyTorch's own computation in the same dtype, the float64 golden, the fuzzer, the default suite, the target and
log_prob generators) and cross_entropy_loss for `bench`."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

import ascendc_ops

from ...ops import cross_entropy_reference as R
from ..values import GenContext
from .base import DTYPES, OpBench, OpSpec, Targets, case_tensor


# ---------------------------------------------------------------- value generators
def ce_target(shape, attrs, ctx: GenContext | None = None):
    """Classes uniform in [0, C) (C: the logits' or log_prob's last dim), about one row in eight ignore_index."""
    logits = ctx.made.get("input", ctx.made.get("log_prob"))
    classes = logits.shape[-1]
    t = ctx.rng.integers(0, classes, shape)
    ignore = int(attrs.get("ignore_index", -100))
    return np.where(ctx.rng.random(shape) < 0.125, ignore, t).astype(np.float64)


def ce_log_prob(shape, attrs, ctx: GenContext | None = None):
    """A real log_softmax of normal logits (std 2), so exp(log_prob) sums to 1 per row as the forward leaves it."""
    logp, _ = R.log_softmax(ctx.rng.normal(0.0, 2.0, shape))
    return logp


VALUES = {"ce_target": ce_target, "ce_log_prob": ce_log_prob}


# ---------------------------------------------------------------- verify
def _attrs(a) -> dict:
    """The attributes both ops take (the case's, else the prototype's defaults)."""
    return {
        "reduction": a.get("reduction", "mean"),
        "ignore_index": int(a.get("ignore_index", -100)),
        "label_smoothing": float(a.get("label_smoothing", 0.0)),
        "lse_square_scale_for_zloss": float(a.get("lse_square_scale_for_zloss", 0.0)),
    }


def _forward_attrs(a) -> dict:
    return {**_attrs(a), "return_zloss": bool(a.get("return_zloss", False))}


def torch_cross_entropy(x, target, weight, a):
    """PyTorch's F.cross_entropy, log_softmax and logsumexp in x's dtype (weight cast to it, as F.cross_entropy
    requires); the z-loss, which torch has no op for, from logsumexp in fp32 rounded once to the dtype."""
    k = _forward_attrs(a)
    s, reduction = k["lse_square_scale_for_zloss"], k["reduction"]
    w = None if weight is None else weight.to(x.dtype)
    loss = F.cross_entropy(
        x, target.long(), w, reduction=reduction, ignore_index=k["ignore_index"], label_smoothing=k["label_smoothing"]
    )
    loss = loss.reshape(-1) if reduction != "none" else loss
    counted = (target != k["ignore_index"]).float()
    z = s * torch.logsumexp(x.float(), -1).square() * counted
    z = z if reduction == "none" else (z.sum() / (counted.sum() if reduction == "mean" else 1)).reshape(1)
    empty = x.new_empty(0)
    return (
        loss + z.to(x.dtype) if s else loss,
        F.log_softmax(x, dim=-1),
        z.to(x.dtype) if k["return_zloss"] else empty,
        torch.logsumexp(x, -1) if s else empty,
    )


def torch_cross_entropy_grad(grad_loss, log_prob, target, weight, a):
    """The gradient from log_prob in its dtype, step by step as torch's nll / log_softmax backward forms it."""
    k = _attrs(a)
    c = log_prob.shape[-1]
    t = target.long()
    counted = (t != k["ignore_index"]).to(log_prob.dtype)
    w = torch.ones(c, dtype=log_prob.dtype) if weight is None else weight.to(log_prob.dtype)
    wt = w[t.clamp(0, c - 1)] * counted
    g = grad_loss.reshape(-1).expand(log_prob.shape[0])
    d = wt.sum() if k["reduction"] == "mean" else torch.ones((), dtype=log_prob.dtype)
    onehot = F.one_hot(t.clamp(0, c - 1), c).to(log_prob.dtype)
    ls = k["label_smoothing"]
    grad_logp = -((g * (1 - ls) * wt / d)[:, None] * onehot + (g * ls / c * counted / d)[:, None] * w)
    return grad_logp - log_prob.exp() * grad_logp.sum(-1, keepdim=True)


def _weight(t):
    return t.get("weight")


def fuzz_ce(grad: bool):
    def fuzz(rng, attrs):
        n, c = int(rng.integers(1, 40)), int(rng.integers(2, 40000))
        shapes = {"log_prob" if grad else "input": (n, c), "target": (n,)}
        if grad:
            shapes["grad_loss"] = (n,) if attrs.get("reduction", "mean") == "none" else (1,)
        return shapes

    return fuzz


def ce_suite(grad: bool):
    """cross_entropy_loss / its grad in fp16, bf16 and fp32: rows 1/7/83 x C 1021/32000 (the latter in chunks with a
    tail), 2 rows of C 152064 (Qwen's vocabulary), a class weight with label smoothing and reduction 'none', and
    logits of magnitude up to 1000 (an exp that would overflow unless shifted by the row's max). Targets uniform
    in [0, C), one row in eight ignore_index; logits normal (std 2); the forward with the z-loss (all four outputs)."""
    op = "cross_entropy_loss_grad" if grad else "cross_entropy_loss"
    f = list(DTYPES)

    def entry(name, shapes, weight=False, attrs=(), logits_range=(0.0, 2.0), dist="normal"):
        # the forward's suite asks for every output: the z-loss (scale 1e-4) and zloss on
        z = () if grad else (("lse_square_scale_for_zloss", "float", 1e-4), ("return_zloss", "bool", True))
        attr_list = [{"name": k, "type": t, "value": v} for k, t, v in (*attrs, *z)]
        reduction = next((v for k, _, v in attrs if k == "reduction"), "mean")
        if grad:
            ins = [
                case_tensor(
                    "grad_loss", [[n] if reduction == "none" else [1] for n, _ in shapes], f, value_range=[[0.5, 1.5]]
                ),
                case_tensor("log_prob", [list(s) for s in shapes], f, value="ce_log_prob"),
            ]
            outs = [case_tensor("x_grad", [list(s) for s in shapes], f)]
        else:
            ins = [
                case_tensor(
                    "input", [list(s) for s in shapes], f, value_range=[list(logits_range)], data_distribute=dist
                )
            ]
            loss = [[n] if reduction == "none" else [1] for n, _ in shapes]
            outs = [
                case_tensor("loss", loss, f),
                case_tensor("log_prob", [list(s) for s in shapes], f),
                case_tensor("zloss", loss, f),
                case_tensor("lse_for_zloss", [[n] for n, _ in shapes], f),
            ]
        ins.append(case_tensor("target", [[n] for n, _ in shapes], ["int64"] * 3, value="ce_target"))
        if weight:
            ins.append(case_tensor("weight", [[c] for _, c in shapes], ["float32"] * 3, value_range=[[0.25, 1.0]]))
        return {"case_name": f"{op}_{name}", "op": op, "input_desc": ins, "output_desc": outs, "attr": attr_list}

    def cases(quick: bool) -> list[dict]:
        if quick:
            return [entry("default_quick", [(7, 1021)])]
        weighted = (("reduction", "string", "none"), ("label_smoothing", "float", 0.1))
        return [
            entry("default", [(r, c) for c in (1021, 32000) for r in (1, 7, 83)]),
            entry("vocab152064", [(2, 152064)]),
            entry("weight_smoothing_none", [(7, 1021), (83, 32000)], weight=True, attrs=weighted),
            entry("large_logits", [(7, 4099)], logits_range=(-1000.0, 1000.0), dist="uniform"),
        ]

    return cases


def _golden(g, a):
    out = R.cross_entropy_loss(g["input"], g["target"].astype(np.int64), g.get("weight"), **_forward_attrs(a))
    return tuple(np.zeros(0) if o is None else o for o in out)  # zloss / lse_for_zloss: [0] where not asked for


def _golden_grad(g, a):
    return (
        R.cross_entropy_loss_backward(
            g["grad_loss"], g["log_prob"], g["target"].astype(np.int64), g.get("weight"), **_attrs(a)
        ),
    )


VERIFY: dict[str, OpSpec] = {
    "cross_entropy_loss": OpSpec(
        run=lambda t, a: ascendc_ops.cross_entropy_loss(t["input"], t["target"], _weight(t), **_forward_attrs(a)),
        second=lambda t, a: torch_cross_entropy(t["input"], t["target"], _weight(t), a),
        golden=_golden,
        fuzz=fuzz_ce(False),
        default_cases=ce_suite(False),
        values=VALUES,
    ),
    "cross_entropy_loss_grad": OpSpec(
        run=lambda t, a: (
            torch.ops.custom.cross_entropy_loss_grad(
                t["grad_loss"], t["log_prob"], t["target"], _weight(t), None, None, *_attrs(a).values()
            ),
        ),
        second=lambda t, a: (torch_cross_entropy_grad(t["grad_loss"], t["log_prob"], t["target"], _weight(t), a),),
        golden=_golden_grad,
        fuzz=fuzz_ce(True),
        default_cases=ce_suite(True),
        values=VALUES,
    ),
}


# ---------------------------------------------------------------- bench
def ce_inputs(shape, dtype, gen):
    """logits [N, C] (the gradient goes to them) and targets uniform in [0, C)."""
    n, c = shape
    return torch.randn(n, c, generator=gen).to(dtype), torch.randint(0, c, (n,), generator=gen)


def ce_torch(x, target):
    """The LM loss as HF computes it: F.cross_entropy (log_softmax + nll_loss) in the logits' dtype."""
    return F.cross_entropy(x, target)


def check_logits(shape) -> None:
    if len(shape) != 2 or min(shape) < 1:
        raise ValueError(f"needs 2 positive dims N,C, got {','.join(map(str, shape))}")


def ce_bytes(inputs, out, pass_) -> int:
    """What must move at least: fwd, the logits read once and log_prob written; bwd, log_prob read and the gradient
    written; full: both (a row longer than one chunk reads its logits twice: 3 x where 2 x is counted)."""
    x = inputs[0].nbytes
    return {"fwd": 2 * x, "bwd": 2 * x, "full": 4 * x}[pass_]


BENCH: dict[str, OpBench] = {
    "cross_entropy_loss": OpBench(
        lambda x, t: ascendc_ops.cross_entropy_loss(x, t)[0].reshape(()),  # [1] -> a scalar, as F.cross_entropy's
        ce_torch,
        ce_inputs,
        check_logits,
        lambda m, seq: [],  # the LM loss is not a per-layer shape: no preset shapes
        ce_bytes,
        "N,C",
        ((1024, 32000), (4096, 32000)),  # the main job times the first: the twin takes ~1 s a call at 4096
        {p: Targets(1.0, None, None) for p in ("fwd", "bwd", "full")},
    ),
}
