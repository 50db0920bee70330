"""The RMSNorm family's harness knowledge: rms_norm, add_rms_norm, gemma_rms_norm, gated_rms_norm and their grads
(how to run each op, PyTorch's own same-dtype computation, the float64 golden, the shape fuzzer, the default suite,
the named value generators) and the benchmark setup of the forward ops."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

import ascendc_ops

from ...ops import rms_norm_reference as R
from ...ops.rms_norm import EPSILON
from ..values import GenContext, signed_uniform
from .base import Moved, OpBench, OpSpec, Targets, per_pass


# ---------------------------------------------------------------- value generators
def _trailing_unit_axes(shape) -> tuple[int, ...]:
    k = len(shape)
    while k > 0 and shape[k - 1] == 1:
        k -= 1
    return tuple(range(k, len(shape)))


def rstd_of_x(epsilon: float) -> Callable:
    """rstd = 1/sqrt(mean(x^2) + epsilon) of the input x made before it (float64, rounded to the declared
    dtype by the harness), over the trailing dims where the rstd shape has 1 (keepdim): the forward's rstd."""

    def make(shape, attrs, ctx: GenContext | None = None):
        if ctx is None or "x" not in ctx.made:
            raise ValueError("'rstd_of_x' needs the input x before it")
        x = ctx.made["x"]
        axes = _trailing_unit_axes(shape)
        keep = tuple(1 if k in axes else n for k, n in enumerate(x.shape))
        if len(shape) != x.ndim or keep != tuple(shape):
            raise ValueError(f"rstd shape {list(shape)} is not x's shape {list(x.shape)} with trailing dims set to 1")
        return 1.0 / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + epsilon)

    return make


def signed_like_dx(shape, attrs, ctx: GenContext | None = None):
    """add_rms_norm_grad's dx_out: magnitudes uniform in value_range [lo, hi] (0 <= lo) with the sign of the
    rms_norm part of dx (from dy, x, rstd, gamma made before it; + where it is 0), so dx + dx_out adds
    same-sign terms and never cancels (with independent signs it would, to ~1e-7 of terms ~1)."""
    if ctx is None or not {"dy", "x", "rstd", "gamma"} <= set(ctx.made):
        raise ValueError("'signed_like_dx' needs the inputs dy, x, rstd and gamma before it")
    m = ctx.made
    dx, _ = golden_rms_norm_grad(m["dy"], m["x"], m["rstd"], m["gamma"])
    if tuple(dx.shape) != tuple(shape):
        raise ValueError(f"'signed_like_dx': shape {list(shape)} is not dx's {list(dx.shape)}")
    return np.where(dx < 0, -1.0, 1.0) * np.abs(signed_uniform(shape, attrs, ctx))


def minus_x1(shape, attrs, ctx: GenContext | None = None):
    """add_rms_norm's x2 = -x1 + noise uniform in value_range: x1 + x2 cancels to the noise."""
    if ctx is None or "x1" not in ctx.made or tuple(ctx.made["x1"].shape) != tuple(shape):
        raise ValueError(f"'minus_x1' needs the input x1 of shape {list(shape)} before it")
    lo, hi = ctx.tensor.value_range
    return -ctx.made["x1"] + ctx.rng.uniform(lo, hi, shape)


NORM_VALUES = {
    "signed_uniform": signed_uniform,
    "signed_like_dx": signed_like_dx,
    "minus_x1": minus_x1,
    "rstd_of_x": rstd_of_x(1e-6),
    "rstd_of_x_eps1": rstd_of_x(1.0),
}


# ---------------------------------------------------------------- verify
def _gamma_axes(x, gamma) -> tuple[int, ...]:
    return tuple(range(x.dim() - gamma.dim(), x.dim()))


def torch_rms_norm(x, gamma, eps):
    """PyTorch's formula step by step in x's dtype (gamma cast to it): (y, rstd in fp32)."""
    axes = _gamma_axes(x, gamma)
    y = x * torch.rsqrt(x.pow(2).mean(axes, keepdim=True) + eps) * gamma.to(x.dtype)
    return y, torch.rsqrt(x.float().pow(2).mean(axes, keepdim=True) + eps)


def torch_rms_norm_grad(dy, x, rstd, gamma, dx_out=None):
    """The backward formula with the given rstd, in x's dtype (rstd and gamma cast to it):
    dx = r*dg - x*r^3*sum(dg*x)/N (+ dx_out), dgamma = sum over the leading dims of dy*x*r in gamma's dtype."""
    axes = _gamma_axes(x, gamma)
    r, g = rstd.to(x.dtype), gamma.to(x.dtype)
    dg = dy * g
    dx = r * dg - x * r.pow(3) * (dg * x).sum(axes, keepdim=True) / gamma.numel()
    if dx_out is not None:
        dx = dx + dx_out
    lead = tuple(range(x.dim() - gamma.dim()))
    dgamma = (dy * x * r).sum(lead) if lead else dy * x * r
    return dx, dgamma.to(gamma.dtype)


def torch_gemma_rms_norm(x, gamma, eps):
    """torch_rms_norm with the weight 1 + gamma (formed in fp32, as Gemma's RMSNorm does)."""
    return torch_rms_norm(x, 1.0 + gamma.float(), eps)


def torch_gemma_rms_norm_grad(dy, x, rstd, gamma):
    """torch_rms_norm_grad with the weight 1 + gamma in dx; dgamma (in gamma's dtype) is rms_norm's."""
    dx, dgamma = torch_rms_norm_grad(dy, x, rstd, 1.0 + gamma.float())
    return dx, dgamma.to(gamma.dtype)


def torch_gated(x, gamma, z, eps=1e-6):
    """gated_rms_norm's second implementation (also tests/ops/test_gated_rms_norm.py's): the formula step by step in
    x's dtype, normalizing over gamma's dims."""
    dims = tuple(range(-gamma.dim(), 0))
    return x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps) * gamma.to(x.dtype) * F.silu(z)


def torch_gated_grads(dy, x, gamma, z, eps=1e-6):
    """dx, dgamma (gamma's dtype), dz of torch_gated by PyTorch autograd, in x's dtype."""
    x, z = x.detach().requires_grad_(), z.detach().requires_grad_()
    g = gamma.detach().to(x.dtype).requires_grad_()
    dx, dg, dz = torch.autograd.grad(torch_gated(x, g, z, eps), (x, g, z), dy)
    return dx, dg.to(gamma.dtype), dz


def golden_gated_rms_norm_grad(dy, x, rstd, gamma, z):
    """float64 (dx, dgamma, dz) of gated_rms_norm for the given rstd (as golden_rms_norm_grad): rms_norm's of
    dy * silu(z), and dz = dy * x * rstd * gamma * silu'(z); with the exact rstd, reference.gated_rms_norm_backward."""
    s = R.sigmoid(z)
    dx, dgamma = golden_rms_norm_grad(dy * z * s, x, rstd, gamma)
    return dx, dgamma, dy * x * rstd * gamma * s * (1.0 + z * (1.0 - s))


def golden_rms_norm_grad(dy, x, rstd, gamma, dx_out=None):
    """float64 (dx, dgamma) of torch_npu's npu_rms_norm_backward (ops/rms_norm_reference.py) for the given rstd:
    dx = rstd*dy*g - x*rstd^3*sum(dy*g*x)/N (+ dx_out), dgamma = sum over rows of dy*x*rstd. With the exact
    rstd this is reference.rms_norm_backward (tests/harness/test_cli.py checks it); taking rstd as given keeps the
    golden exact for the (fp32-rounded) rstd the op receives."""
    k = gamma.ndim
    axes = tuple(range(x.ndim - k, x.ndim))
    dg = dy * gamma
    dx = rstd * dg - x * rstd**3 * np.sum(dg * x, axis=axes, keepdims=True) / gamma.size
    if dx_out is not None:
        dx = dx + dx_out
    dgamma = np.sum(dy * x * rstd, axis=tuple(range(x.ndim - k))).reshape(gamma.shape)
    return dx, dgamma


NORM_PAIRS = (
    ("float16", "float32"),
    ("bfloat16", "float32"),
    ("float16", "float16"),
    ("bfloat16", "bfloat16"),
    ("float32", "float32"),
)
NORM_ROWS, NORM_HIDDEN, NORM_MODEL = (1, 7, 83), (1, 8, 769, 5125), (256, 4096)
QUICK_NORM_ROWS, QUICK_NORM_HIDDEN = (1, 7), (8, 769)
X_RANGE, GAMMA_RANGE = [-2.0, 2.0], [-1.5, 1.5]
CANCEL_SHAPES = ((83, 8), (7, 769))
SMALL_GAMMA, X2_NOISE = [-(2.0**-8), 2.0**-8], [-(2.0**-6), 2.0**-6]
GEMMA_SMALL_WEIGHT = [-1.0 - 2.0**-8, -1.0 + 2.0**-8]  # gemma_rms_norm: 1 + gamma in [-2^-8, 2^-8]
# gated_rms_norm's gate z: both signs, silu saturating (|z| ~ 6) and silu' crossing 0 near z = -1.28
Z_RANGE = [-6.0, 6.0]


def norm_suite(op: str) -> Callable:
    """The default suite of an RMSNorm op, per (x, gamma) dtype pair of op_proto: rows 1/7/83 x hidden
    1/8/769/5125 ([rows, hidden], gamma [hidden]) and the model shape [256, 4096] (LLaMA-7B's hidden size).
    Data: uniform in [-2, 2] for x, x1, x2, dy and dx_out, [-1.5, 1.5] for gamma; outputs near zero are
    judged in the small-value domain (precision.py). Backward ops get rstd = 1/sqrt(mean(x^2) + eps) of their
    x ("rstd_of_x", rounded to fp32), the forward's rstd. At hidden 1 the backward's dx = dg*eps*rstd^3 is
    all cancellation (condition number x^2/eps for every element, no dtype evaluation comes near it): the
    hidden-1 backward cases use eps 1 ("rstd_of_x_eps1"), as tests/ops/test_rms_norm.py does.
    Cancellation-prone cases ("_cancel", rows x hidden 83x8 and 7x769): rms_norm, gamma in [-2^-8, 2^-8]
    (y mostly small values); gemma_rms_norm, gamma in -1 + [-2^-8, 2^-8] (1 + gamma cancels); add_rms_norm,
    x2 = -x1 + uniform [-2^-6, 2^-6] ("minus_x1": x1 + x2 cancels);
    the grads, the default data at small hidden, where rstd*dg and x*rstd^3*mean(dg*x) (and dx_out) are of
    one size and cancel element by element.
    gated_rms_norm[_grad] add the gate z (x's shape and dtype, uniform in Z_RANGE); the gated grad has no
    hidden-1 cases (its second implementation, autograd of torch_gated, recomputes rstd with eps 1e-6)."""
    grad = op.endswith("_grad")
    add = op.startswith("add_")
    gated = op.startswith("gated_")

    def tensor(name, t, shapes, value=None, rng=X_RANGE):
        d = {"name": name, "format": "ND", "type": t, "shape": shapes}
        if value:
            d["value"] = value
        if rng and value in (None, "minus_x1"):
            d.update({"value_range": [rng], "data_distribute": "uniform"})
        return d

    def entry(name, pair, shapes, eps_one=False, cancel=False):
        xt, gt = pair
        xs = [list(s) for s in shapes]
        gs = [list(s[-1:]) for s in shapes]
        rs = [list(s[:-1]) + [1] for s in shapes]
        small = {"rms_norm": SMALL_GAMMA, "gemma_rms_norm": GEMMA_SMALL_WEIGHT, "gated_rms_norm": SMALL_GAMMA}.get(op)
        small = small if cancel else None
        g = tensor("gamma", gt, gs, rng=small or GAMMA_RANGE)
        if grad:
            ins = [
                tensor("dy", xt, xs),
                tensor("x", xt, xs),
                tensor("rstd", "float32", rs, "rstd_of_x_eps1" if eps_one else "rstd_of_x"),
                g,
            ]
            if add:
                ins.append(tensor("dx_out", xt, xs))
            if gated:
                ins.append(tensor("z", xt, xs, rng=Z_RANGE))
            outs = [tensor("dx", xt, xs, rng=None), tensor("dgamma", gt, gs, rng=None)]
            if gated:
                outs.append(tensor("dz", xt, xs, rng=None))
        else:
            x2 = tensor("x2", xt, xs, "minus_x1", X2_NOISE) if cancel else tensor("x2", xt, xs)
            ins = ([tensor("x1", xt, xs), x2] if add else [tensor("x", xt, xs)]) + [g]
            if gated:
                ins.append(tensor("z", xt, xs, rng=Z_RANGE))
            outs = [tensor("y", xt, xs, rng=None), tensor("rstd", "float32", rs, rng=None)]
            if add:
                outs.append(tensor("x", xt, xs, rng=None))
        return {"case_name": name, "op": op, "input_desc": ins, "output_desc": outs}

    def cases(quick: bool) -> list[dict]:
        rows, hidden = (QUICK_NORM_ROWS, QUICK_NORM_HIDDEN) if quick else (NORM_ROWS, NORM_HIDDEN)
        out = []
        for pair in NORM_PAIRS:
            tag = f"{op}_{pair[0]}_{pair[1]}"
            shapes = [(r, h) for h in hidden for r in rows if not (grad and h == 1)]
            out.append(entry(tag + ("_quick" if quick else ""), pair, shapes))
            out.append(
                entry(
                    tag + "_cancel" + ("_quick" if quick else ""), pair, CANCEL_SHAPES[: 1 if quick else 2], cancel=True
                )
            )
            if not quick:
                if grad and not gated:
                    out.append(entry(tag + "_hidden1_eps1", pair, [(r, 1) for r in rows], eps_one=True))
                out.append(entry(tag + "_model", pair, [NORM_MODEL]))
        return out

    return cases


def fuzz_norm(op: str) -> Callable:
    """x rank 2..4, gamma its last 1 or 2 dims, hidden up to ~6000 (grads: >= 8, see norm_suite on
    hidden 1), at most ~150k elements."""
    grad, add, gated = op.endswith("_grad"), op.startswith("add_"), op.startswith("gated_")

    def fuzz(rng, attrs):
        rank = int(rng.integers(2, 5))
        lead = [int(rng.integers(1, 20)) for _ in range(rank - 1)]
        hidden = int(rng.integers(8 if grad else 1, 6000))  # grads: no tiny-N cancellation
        xs = lead + [hidden]
        k = 2 if rank > 2 and rng.random() < 0.3 else 1
        while math.prod(xs) > 150_000:
            i = int(np.argmax(xs[:-1]))
            xs[i] = max(1, xs[i] // 2)
        x, g = tuple(xs), tuple(xs[-k:])
        r = tuple(xs[:-k]) + (1,) * k
        if grad:
            out = {"dy": x, "x": x, "rstd": r, "gamma": g}
            if add:
                out["dx_out"] = x
            if gated:
                out["z"] = x
            return out
        if gated:
            return {"x": x, "gamma": g, "z": x}
        return {"x1": x, "x2": x, "gamma": g} if add else {"x": x, "gamma": g}

    return fuzz


def _eps(attrs) -> float:
    return float(attrs.get("epsilon", EPSILON))


def _norm_spec(name: str, run, second, golden) -> OpSpec:
    """An RMSNorm-family op's verify spec: how it runs, PyTorch's and the golden; the family's fuzzer, cases, values."""
    return OpSpec(run, second, golden, fuzz_norm(name), norm_suite(name), values=NORM_VALUES)


VERIFY: dict[str, OpSpec] = {
    "rms_norm": _norm_spec(
        "rms_norm",
        run=lambda t, a: ascendc_ops.rms_norm(t["x"], t["gamma"], _eps(a)),
        second=lambda t, a: torch_rms_norm(t["x"], t["gamma"], _eps(a)),
        golden=lambda g, a: R.rms_norm(g["x"], g["gamma"], _eps(a)),
    ),
    "rms_norm_grad": _norm_spec(
        "rms_norm_grad",
        run=lambda t, a: torch.ops.custom.rms_norm_grad(t["dy"], t["x"], t["rstd"], t["gamma"]),
        second=lambda t, a: torch_rms_norm_grad(t["dy"], t["x"], t["rstd"], t["gamma"]),
        golden=lambda g, a: golden_rms_norm_grad(g["dy"], g["x"], g["rstd"], g["gamma"]),
    ),
    "add_rms_norm": _norm_spec(
        "add_rms_norm",
        run=lambda t, a: ascendc_ops.add_rms_norm(t["x1"], t["x2"], t["gamma"], _eps(a)),
        second=lambda t, a: (*torch_rms_norm(t["x1"] + t["x2"], t["gamma"], _eps(a)), t["x1"] + t["x2"]),
        golden=lambda g, a: R.add_rms_norm(g["x1"], g["x2"], g["gamma"], _eps(a)),
    ),
    "add_rms_norm_grad": _norm_spec(
        "add_rms_norm_grad",
        run=lambda t, a: torch.ops.custom.add_rms_norm_grad(t["dy"], t["x"], t["rstd"], t["gamma"], t["dx_out"]),
        second=lambda t, a: torch_rms_norm_grad(t["dy"], t["x"], t["rstd"], t["gamma"], t["dx_out"]),
        golden=lambda g, a: golden_rms_norm_grad(g["dy"], g["x"], g["rstd"], g["gamma"], g["dx_out"]),
    ),
    "gemma_rms_norm": _norm_spec(
        "gemma_rms_norm",
        run=lambda t, a: ascendc_ops.gemma_rms_norm(t["x"], t["gamma"], _eps(a)),
        second=lambda t, a: torch_gemma_rms_norm(t["x"], t["gamma"], _eps(a)),
        golden=lambda g, a: R.gemma_rms_norm(g["x"], g["gamma"], _eps(a)),
    ),
    "gemma_rms_norm_grad": _norm_spec(
        "gemma_rms_norm_grad",
        run=lambda t, a: torch.ops.custom.gemma_rms_norm_grad(t["dy"], t["x"], t["rstd"], t["gamma"]),
        second=lambda t, a: torch_gemma_rms_norm_grad(t["dy"], t["x"], t["rstd"], t["gamma"]),
        golden=lambda g, a: golden_rms_norm_grad(g["dy"], g["x"], g["rstd"], 1.0 + g["gamma"]),
    ),
    "gated_rms_norm": _norm_spec(
        "gated_rms_norm",
        run=lambda t, a: ascendc_ops.gated_rms_norm(t["x"], t["gamma"], t["z"], _eps(a)),
        second=lambda t, a: (
            torch_gated(t["x"], t["gamma"], t["z"], _eps(a)),
            torch_rms_norm(t["x"], t["gamma"], _eps(a))[1],
        ),
        golden=lambda g, a: R.gated_rms_norm(g["x"], g["gamma"], g["z"], _eps(a)),
    ),
    "gated_rms_norm_grad": _norm_spec(
        "gated_rms_norm_grad",
        run=lambda t, a: torch.ops.custom.gated_rms_norm_grad(t["dy"], t["x"], t["rstd"], t["gamma"], t["z"]),
        second=lambda t, a: torch_gated_grads(t["dy"], t["x"], t["gamma"], t["z"]),
        golden=lambda g, a: golden_gated_rms_norm_grad(g["dy"], g["x"], g["rstd"], g["gamma"], g["z"]),
    ),
}


# ---------------------------------------------------------------- bench
# RMSNorm issue: forward >= 5x HF eager, >= 1.0x torch.compile, >= 60% of copy; every backward >= 2x eager
# autograd (no compile or bandwidth target given; full = forward + backward is held to the backward's 2x)
TARGETS = {"fwd": Targets(5.0, 1.0, 60.0), "bwd": Targets(2.0, None, None), "full": Targets(2.0, None, None)}


EPS = 1e-6


def hf_rms_norm(x, weight, eps=EPS):
    """transformers' LlamaRMSNorm.forward written out (Qwen2/3, Mistral the same): fp32 statistics, cast to
    the input dtype before the weight multiply."""
    input_dtype = x.dtype
    h = x.float()
    var = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(var + eps)
    return weight * h.to(input_dtype)


def hf_add_rms_norm(x1, x2, weight, eps=EPS):
    """The decoder layer's residual add followed by its RMSNorm: (normed, residual); the residual is an
    output (the next layer adds to it), so every provider writes it."""
    h = x1 + x2
    return hf_rms_norm(h, weight, eps), h


def hf_gemma_rms_norm(x, weight, eps=EPS):
    """transformers' GemmaRMSNorm.forward (Gemma 2/3 and Qwen3-Next's RMSNorm the same) written out: fp32
    throughout, the weight (1 + weight) in fp32, one cast to the input dtype at the end."""
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return (h * (1.0 + weight.float())).type_as(x)


def hf_gated_rms_norm(x, z, weight, eps=EPS):
    """transformers' Qwen3NextRMSNormGated.forward (Qwen3.5's the same) written out: fp32 statistics, h cast to
    the input dtype before the weight, the gate silu(z) in fp32, one cast to the input dtype at the end."""
    input_dtype = x.dtype
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    h = weight * h.to(input_dtype)
    return (h * F.silu(z.float())).to(input_dtype)


def norm_inputs(n_x: int):
    def make(shape, dtype, gen):
        xs = tuple(torch.randn(shape, generator=gen).to(dtype) for _ in range(n_x))
        gamma = (1 + 0.1 * torch.randn(shape[-1], generator=gen)).to(dtype)  # gamma in x's dtype
        return (*xs, gamma)

    return make


def check_rows_hidden(shape) -> None:
    if len(shape) < 2 or min(shape) < 1:
        raise ValueError(f"needs at least 2 positive dims (rows..., hidden), got {','.join(map(str, shape))}")


def norm_bytes(op: str) -> Callable:
    """fwd: x (add: x1, x2; gated: x, z) and gamma read, y and rstd (fp32, one per row) written (add: also x);
    bwd (dx only): dy, x (gated: and z), rstd and gamma read, dx written; full: both."""
    add, gated = op == "add_rms_norm", op == "gated_rms_norm"

    def count(inputs, out, pass_) -> int:
        x, gamma = inputs[0], inputs[-1]
        rstd = x.numel() // x.shape[-1] * 4
        fwd = Moved((2 if add or gated else 1) * x.nbytes + gamma.nbytes, x.nbytes + rstd + (x.nbytes if add else 0))
        bwd = Moved((3 if gated else 2) * x.nbytes + rstd + gamma.nbytes, x.nbytes)
        return per_pass(fwd, bwd)[pass_]

    return count


def _norm_bench(op: str, ours: Callable, all_outputs: Callable, step: Callable) -> OpBench:
    """A norm op's bench: the shapes, targets and byte counts every norm shares (x, then z or x2, then gamma)."""
    n_x = 2 if op in ("add_rms_norm", "gated_rms_norm") else 1
    return OpBench(
        ours,
        step,
        norm_inputs(n_x),
        check_rows_hidden,
        lambda m, seq: [(seq, m.hidden)],
        norm_bytes(op),
        "T,H",
        ((8192, 4096), (2048, 8192)),
        TARGETS,
        all_outputs,
    )


BENCH: dict[str, OpBench] = {
    "rms_norm": _norm_bench(
        "rms_norm",
        lambda x, g: ascendc_ops.rms_norm(x, g, EPS)[0],
        lambda x, g: ascendc_ops.rms_norm(x, g, EPS),
        hf_rms_norm,
    ),
    "add_rms_norm": _norm_bench(
        "add_rms_norm",
        lambda x1, x2, g: ascendc_ops.add_rms_norm(x1, x2, g, EPS)[::2],
        lambda x1, x2, g: ascendc_ops.add_rms_norm(x1, x2, g, EPS),
        hf_add_rms_norm,
    ),
    "gemma_rms_norm": _norm_bench(
        "gemma_rms_norm",
        lambda x, g: ascendc_ops.gemma_rms_norm(x, g, EPS)[0],
        lambda x, g: ascendc_ops.gemma_rms_norm(x, g, EPS),
        hf_gemma_rms_norm,
    ),
    "gated_rms_norm": _norm_bench(
        "gated_rms_norm",
        lambda x, z, g: ascendc_ops.gated_rms_norm(x, g, z, EPS)[0],
        lambda x, z, g: ascendc_ops.gated_rms_norm(x, g, z, EPS),
        hf_gated_rms_norm,
    ),
}
