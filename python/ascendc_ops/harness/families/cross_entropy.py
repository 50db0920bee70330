"""The cross_entropy family's harness knowledge: cross_entropy_loss and its grad for `verify` (how to run each,
PyTorch's own computation in the same dtype, the float64 golden, the fuzzer, the default suite, the target and
log_prob generators) and cross_entropy_loss for `bench`."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

import ascendc_ops

from ...ops import cross_entropy_reference as R, linear_cross_entropy_reference as LR
from ..values import GenContext
from ..verify import linear_cross_entropy_bounds as LB
from ..verify.attention_grad_standard import check_cancelling
from .base import DTYPES, Moved, OpBench, OpSpec, Targets, case_tensor, per_pass


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


# ---------------------------------------------------------------- verify: linear_cross_entropy and its grad
def lce_target(shape, attrs, ctx: GenContext | None = None):
    """Token ids uniform over the shard [start, start + V) (V: weight's rows), one in eight outside it (half of those
    -100, the loss's ignored id; half the next shard's ids): the kernels' target logit and onehot are 0 there."""
    v, start = ctx.made["weight"].shape[0], int(attrs.get("vocab_start_index", 0))
    t = ctx.rng.integers(start, start + max(v, 1), shape)
    beyond = np.where(ctx.rng.random(shape) < 0.5, -100, t + v)
    return np.where(ctx.rng.random(shape) < 0.125, beyond, t).astype(np.float64)


def lce_weight(shape, attrs, ctx: GenContext | None = None):
    """N(0, 1 / H) [V, H]: with hidden N(0, 1), logits of unit size at every H (as the ops' test draws them; the
    double benchmark's RMSE floor is absolute, so the logits' scale is part of the case)."""
    return ctx.rng.normal(0.0, 1.0 / max(shape[1], 1) ** 0.5, shape)


def lce_lse(shape, attrs, ctx: GenContext | None = None):
    """The exact log-sum-exp of each token's logits (float64 from the dtype-rounded hidden and weight), as the
    forward leaves it: p = exp(logit - lse) is then a real softmax."""
    m, s, _, _ = LR.linear_cross_entropy_reference(
        ctx.made["hidden"], ctx.made["weight"], np.zeros(shape), 0, float(attrs.get("softcap", 0.0)),
        ctx.made.get("bias"),
    )  # fmt: skip
    return m + np.log(s)


def lce_grad_softmax(shape, attrs, ctx: GenContext | None = None):
    """a: a 'none' reduction's upstream gradient, uniform in [0.5, 1.5] / T, 0 where the token is ignored (-100)."""
    return np.where(ctx.made["target"] == -100, 0.0, ctx.rng.uniform(0.5, 1.5, shape) / max(shape[0], 1))


def _smoothed(share: float, uniform: bool):
    def make(shape, attrs, ctx: GenContext | None = None):
        a = ctx.made["grad_softmax"]
        return a * share / max(ctx.made["weight"].shape[0], 1) if uniform else a * (1 - share)

    what = f"c = a * {share:g} / V" if uniform else f"b = a * (1 - {share:g})"
    make.__doc__ = f"{what}: cross-entropy's coefficients with label smoothing {share:g}."
    return make


LCE_STATS = ("logits_max", "sum_exp", "target_logit", "logit_sum")  # the forward's outputs, fp32 [T] each
LCE_VALUES = {
    "lce_weight": lce_weight,
    "lce_target": lce_target,
    "lce_lse": lce_lse,
    "lce_grad_softmax": lce_grad_softmax,
    "lce_grad_target": _smoothed(0.0, False),  # b = a: plain cross-entropy, G's rows sum to 0 (they cancel)
    "lce_grad_target_ls": _smoothed(0.1, False),
    "lce_grad_uniform_ls": _smoothed(0.1, True),
}


def _lce_attrs(a) -> tuple[int, float]:
    return int(a.get("vocab_start_index", 0)), float(a.get("softcap", 0.0))


def _hf_logits(hidden, weight, softcap: float, bias=None):
    """Hugging Face's logits: the LM head (a Linear, its bias if any) in the dtype, then .float() (ForCausalLMLoss),
    softcap in fp32."""
    x = F.linear(hidden, weight, bias).float()
    return softcap * torch.tanh(x / softcap) if softcap else x


def _onehot(target, start: int, vocab: int, dtype):
    local = target.long() - start
    inside = (local >= 0) & (local < vocab)
    return F.one_hot(local.clamp(0, max(vocab - 1, 0)), vocab).to(dtype) * inside[:, None], inside


def torch_linear_cross_entropy(t, a):
    """The four statistics from HF's logits (in the dtype, then fp32): max, sum of exp(x - max), the target's logit
    (0 outside the shard), the sum of the logits (each times its class weight when given)."""
    start, cap = _lce_attrs(a)
    x = _hf_logits(t["hidden"], t["weight"], cap, t.get("bias"))
    m = x.amax(1)
    onehot, _ = _onehot(t["target"], start, x.shape[1], x.dtype)
    weighed = x if t.get("class_weight") is None else x * t["class_weight"].float()[None, :]
    return m, torch.exp(x - m[:, None]).sum(1), (x * onehot).sum(1), weighed.sum(1)


def torch_linear_cross_entropy_grad(t, a):
    """PyTorch's backward as HF's path runs it: G = a p - b onehot - c from the fp32 logits of the dtype's matmul
    (softcap's 1 - tanh^2 on top), cast back to the dtype (the .float()'s backward), then G W, G^T h and (a Linear's
    bias) G summed over the tokens there."""
    start, cap = _lce_attrs(a)
    h, w = t["hidden"], t["weight"]
    raw = F.linear(h, w, t.get("bias")).float()
    x = cap * torch.tanh(raw / cap) if cap else raw
    onehot, _ = _onehot(t["target"], start, x.shape[1], x.dtype)
    coef = [t[k].float()[:, None] for k in ("grad_softmax", "grad_target", "grad_uniform")]
    uniform = coef[2] if t.get("class_weight") is None else coef[2] * t["class_weight"].float()[None, :]
    g = coef[0] * torch.exp(x - t["lse"].float()[:, None]) - coef[1] * onehot - uniform
    if cap:
        g = g * (1 - torch.tanh(raw / cap).square())
    g = g.to(h.dtype)
    return g @ w, g.T @ h, g.sum(0)


def _optional(t) -> tuple:
    """The ops' optional inputs, bias [V] and class_weight [V], in their order (None when the case draws none)."""
    return t.get("bias"), t.get("class_weight")


def _golden_lce(g, a):
    return LR.linear_cross_entropy_reference(g["hidden"], g["weight"], g["target"], *_lce_attrs(a), *_optional(g))


def _logits_grad(g, a):
    names = ("hidden", "weight", "target", "lse", "grad_softmax", "grad_target", "grad_uniform")
    return LR.logits_grad_reference(*(g[n] for n in names), *_lce_attrs(a), *_optional(g))


def _golden_lce_grad(g, a):
    return LR.grads_reference(g["hidden"], g["weight"], _logits_grad(g, a))


LCE_GRAD_BOUND = "linear cross-entropy grad bound"


def check_lce_grad(t, a, ours, second, golden) -> tuple:
    """grad_hidden, grad_weight and grad_bias cancel as attention's gradients do (G's rows sum to about 0): each is
    judged by attention_grad_standard.check_cancelling with its fp32 evaluation bound (linear_cross_entropy_bounds)."""
    g64 = {k: v.double().numpy() for k, v in t.items()}
    logits_grad = _logits_grad(g64, a)
    bounds = LB.grad_bounds(t["hidden"], t["weight"], logits_grad, t["hidden"].dtype)
    bounds += (LB.bias_grad_bound(t["hidden"], t["weight"], logits_grad),)
    return tuple(
        check_cancelling(y.double().numpy(), gold, s.double().numpy(), t["hidden"].dtype, b, LCE_GRAD_BOUND)
        for y, s, gold, b in zip(ours, second, golden, bounds, strict=True)
    )


def fuzz_lce(grad: bool):
    def fuzz(rng, attrs):
        t, h, v = int(rng.integers(1, 100)), int(rng.integers(1, 300)), int(rng.integers(1, 5000))
        shapes = {"hidden": (t, h), "weight": (v, h), "target": (t,)}
        if grad:
            shapes |= dict.fromkeys(("lse", "grad_softmax", "grad_target", "grad_uniform"), (t,))
        return shapes

    return fuzz


def lce_suite(grad: bool):
    """linear_cross_entropy / its grad in fp16, bf16 and fp32 on odd shapes (T, H, V): tokens 1 / 7 / 83, hidden 40 /
    80 / 769, vocabularies no multiple of 128 (1021, 1100, 4099, 32000 with its tail; Qwen2's 152064 + 7), a shard
    (vocab_start_index 1000), softcap 30 (the forward in every dtype; its grad in fp16 / bf16: docs/cross_entropy.md
    says why fp32 is left out), a Linear's bias with class weights. hidden N(0, 1), weight N(0, 1 / H) (logits of
    unit size); one target in eight outside the shard. The grad: lse the exact one, a uniform in [0.5, 1.5] / T (0
    where ignored), b = a, c = 0 (plain cross-entropy), and label smoothing 0.1's coefficients in two cases (one with
    bias and class weights). T x V x H stays under 1e8 a case (the twin computes the GEMMs on the CPU)."""
    op = "linear_cross_entropy_grad" if grad else "linear_cross_entropy"

    def entry(name, shapes, attrs=(), dtypes=DTYPES, smoothing=False, optional=False):  # shapes: (T, H, V) each
        f = list(dtypes)
        n = len(f)
        h_dist = {"value_range": [[0.0, 1.0]], "data_distribute": "normal"}
        ins = [case_tensor("hidden", [[t, h] for t, h, _ in shapes], f, **h_dist)]
        ins.append(case_tensor("weight", [[v, h] for _, h, v in shapes], f, value="lce_weight"))
        if optional:  # a Linear's bias N(0, 1) (the logits' own size) and class weights in [0.25, 1]
            ins.append(case_tensor("bias", [[v] for *_, v in shapes], f, **h_dist))
            weights = {"value_range": [[0.25, 1.0]]}
            ins.append(case_tensor("class_weight", [[v] for *_, v in shapes], ["float32"] * n, **weights))
        ins.append(case_tensor("target", [[t] for t, _, _ in shapes], ["int64"] * n, value="lce_target"))
        vec = [[t] for t, _, _ in shapes]
        if grad:
            ls = "_ls" if smoothing else ""
            ins += [
                case_tensor("lse", vec, ["float32"] * n, value="lce_lse"),
                case_tensor("grad_softmax", vec, ["float32"] * n, value="lce_grad_softmax"),
                case_tensor("grad_target", vec, ["float32"] * n, value=f"lce_grad_target{ls}"),
                case_tensor("grad_uniform", vec, ["float32"] * n, **(
                    {"value": "lce_grad_uniform_ls"} if smoothing else {"value_range": [[0.0, 0.0]]}
                )),
            ]  # fmt: skip
            outs = [
                case_tensor("grad_hidden", [[t, h] for t, h, _ in shapes], f),
                case_tensor("grad_weight", [[v, h] for _, h, v in shapes], f),
                case_tensor("grad_bias", [[v] for _, _, v in shapes], f),
            ]
        else:
            outs = [case_tensor(k, vec, ["float32"] * n) for k in LCE_STATS]
        attr = [{"name": k, "type": ty, "value": v} for k, ty, v in attrs]
        return {"case_name": f"{op}_{name}", "op": op, "input_desc": ins, "output_desc": outs, "attr": attr}

    def cases(quick: bool) -> list[dict]:
        if quick:
            return [entry("default_quick", [(7, 80, 1100)])]
        odd = [(1, 769, 32000), (7, 80, 1100), (83, 40, 4099), (83, 769, 1021)]
        out = [entry("default", odd), entry("vocab152071", [(2, 64, 152071)])]
        out.append(entry("shard", [(7, 80, 1100)], [("vocab_start_index", "int", 1000)]))
        softcap = [("softcap", "float", 30.0)]
        out.append(entry("softcap", [(29, 48, 777)], softcap, DTYPES if not grad else ("float16", "bfloat16")))
        out.append(entry("bias_class_weight", [(7, 80, 1100), (83, 40, 4099)], optional=True))
        if grad:
            out.append(entry("label_smoothing", [(29, 48, 777)], smoothing=True))
            out.append(entry("bias_class_weight_ls", [(29, 48, 777)], smoothing=True, optional=True))
        return out

    return cases


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
    "linear_cross_entropy": OpSpec(
        run=lambda t, a: torch.ops.custom.linear_cross_entropy(
            t["hidden"], t["weight"], t["target"], *_optional(t), *_lce_attrs(a)
        ),
        second=torch_linear_cross_entropy,
        golden=_golden_lce,
        fuzz=fuzz_lce(False),
        default_cases=lce_suite(False),
        values=LCE_VALUES,
    ),
    "linear_cross_entropy_grad": OpSpec(
        # without a bias in the case, grad_bias is a zero bias's gradient (G summed over the tokens all the same)
        run=lambda t, a: torch.ops.custom.linear_cross_entropy_grad(
            *(t[n] for n in ("hidden", "weight", "target", "lse", "grad_softmax", "grad_target", "grad_uniform")),
            *_optional(t),
            *_lce_attrs(a),
        ),
        second=torch_linear_cross_entropy_grad,
        golden=_golden_lce_grad,
        fuzz=fuzz_lce(True),
        default_cases=lce_suite(True),
        values=LCE_VALUES,
        check=check_lce_grad,
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
    return per_pass(Moved(x, x), Moved(x, x))[pass_]


# ---------------------------------------------------------------- bench: linear_cross_entropy
# The LM head and its loss at T tokens, H hidden, V vocabulary ("T,H,V") against HF's path (the logits made in the
# dtype, then F.cross_entropy on them in fp32). The default shape is twin-sized: the twin computes the GEMMs on
# the CPU (256 x 512 x 8192 takes ~0.1 s forward, ~0.3 s backward on 2 cores); a model's runs when asked:
# `--shape 4096,4096,128256` (LLaMA3-8B's head). bwd rows time grad_hidden through linear_cross_entropy_grad,
# which writes grad_weight too (one launch makes both).
def lce_inputs(shape, dtype, gen):
    """hidden N(0, 1) [T, H] (the gradient goes to it), weight N(0, 1 / H) [V, H] (logits of unit size), targets
    uniform in [0, V)."""
    t, h, v = shape
    weight = (torch.randn(v, h, generator=gen) / h**0.5).to(dtype)
    return torch.randn(t, h, generator=gen).to(dtype), weight, torch.randint(0, v, (t,), generator=gen)


def lce_torch(hidden, weight, target):
    """Hugging Face's causal-LM loss: the LM head in the dtype, .float(), F.cross_entropy (mean)."""
    return F.cross_entropy((hidden @ weight.T).float(), target)


def check_lce_shape(shape) -> None:
    if len(shape) != 3 or min(shape) < 1:
        raise ValueError(f"needs 3 positive dims T,H,V, got {','.join(map(str, shape))}")


def lce_bytes(inputs, out, pass_) -> int:
    """fwd: hidden, weight and the targets read once, four fp32 statistics per token written; bwd: the same inputs
    and four fp32 vectors per token (lse and the three coefficients) read, grad_hidden and grad_weight written;
    full: both."""
    hidden, weight, target = inputs
    inputs_read, stats = hidden.nbytes + weight.nbytes + target.nbytes, 16 * target.numel()
    return per_pass(Moved(inputs_read, stats), Moved(inputs_read + stats, hidden.nbytes + weight.nbytes))[pass_]


def lce_flops(inputs, pass_) -> int:
    """The least cube work without keeping the logits: the forward's scores, 2THV; the backward's scores once more
    and the two gradient GEMMs, 3 x 2THV (ours recomputes the scores in each of its two walks: 4 x 2THV)."""
    t, h = inputs[0].shape
    return {"fwd": 1, "bwd": 3, "full": 4}[pass_] * 2 * t * h * inputs[1].shape[0]


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
    "linear_cross_entropy": OpBench(
        lambda h, w, t: ascendc_ops.linear_cross_entropy(h, w, t),
        lce_torch,
        lce_inputs,
        check_lce_shape,
        lambda m, seq: [],  # the LM head is not a per-layer shape: no preset shapes
        lce_bytes,
        "T,H,V",
        ((256, 512, 8192),),
        {p: Targets(1.0, None, None) for p in ("fwd", "bwd", "full")},
        flops=lce_flops,
    ),
}
