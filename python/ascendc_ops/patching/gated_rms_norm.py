"""fused_gated_rmsnorm: gated RMSNorm modules' forward on ``torch.ops.custom.gated_rms_norm``, found by structure.

A candidate is RMSNorm-like (``rms_norm._is_candidate``: 1-D weight, float epsilon, no bias) and its forward takes
exactly one input after the hidden states, named ``gate`` (HF's ``*RMSNormGated``, whatever the class is called).
It is patched only if its probe (``probe.disagreement``: random weight, hidden states with a row whose mean square
is about eps, a gate of std ``probe.GAIN``) agrees with ``weight * x * rsqrt(mean(x^2) + eps) * silu(gate)``:
in fp32 (the formula), and in bf16 and fp16 ours must meet the dtype's standard where the module's own result
does (``probe.narrow_disagreement``: the op rounds ``x * rstd`` and a narrow ``weight * h`` to x's dtype, as HF's
Qwen3-Next does). Patched: Qwen3-Next, Qwen3.5 (+MoE), OLMo-Hybrid, Qwen4-Exp. Refused, with the probe's reason
and the attribute that explains it: sigmoid gates (Kimi-Linear, GLM-5-Next, Bailing-Hybrid:
``activation='sigmoid'``), the gate applied before the norm and per-group norms (Mamba 2, Bamba, Zamba 2,
Nemotron-H, GraniteMoeHybrid: ``group_size``; Falcon-H1: ``n_groups``, ``norm_before_gate``), and Falcon-H1's
one-group norm-before-gate form: our formula, but computed in fp32 and rounded once; the op's roundings give
more small-value errors than its own in bf16 (the probe's reason counts them). The epsilon is the module's own
attribute, read at every call.

At run time the op runs when the gate is a tensor of x's shape and dtype (fp16, bf16, fp32) and the weight spans
x's last dim; anything else (``gate=None``, an fp32 gate next to bf16 states) runs the module's class forward, as
unpatched. Gradients go through the op's backward (gated_rms_norm_grad: dx, dgamma, dz).
"""

from __future__ import annotations

import math
import types

import torch
from torch import nn

from . import probe
from .base import Found, call_op, set_instance_attr
from .rms_norm import GATED_INPUTS, _eps_attr, _extra_inputs, _is_candidate

FORMULA = "weight * x * rsqrt(mean(x^2) + eps) * silu(gate)"
_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_NOT_GIVEN = object()
NARROW = (torch.bfloat16, torch.float16)  # probed too: the op's roundings to x's dtype must not cost accuracy
# Attributes HF's gated norms carry that, when set so, say why the probe disagrees (reports only: never decisive).
_HINTS = {
    "activation": lambda m, v: v != "silu",
    "group_size": lambda m, v: v != m.weight.shape[0],
    "n_groups": lambda m, v: v != 1,
    "norm_before_gate": lambda m, v: not v,
}


def is_gated_candidate(m: nn.Module) -> bool:
    """RMSNorm-like with a forward ``(hidden_states, gate)``: this kernel's part (fused_rmsnorm leaves it)."""
    return _is_candidate(m) and _extra_inputs(m) == GATED_INPUTS


def gated_rms_norm(self, hidden_states: torch.Tensor, gate: torch.Tensor, eps: float) -> torch.Tensor:
    weight = self.weight
    if weight.dtype not in (hidden_states.dtype, torch.float32):
        weight = weight.float()  # exact; HF's product with x's dtype promotes to fp32 there too (no rounding)
    y, _ = call_op(torch.ops.custom.gated_rms_norm.default, hidden_states, weight, gate, eps)
    return y  # HF: .to(input_dtype)


def _fusable(self, x: torch.Tensor, gate) -> bool:
    return (
        isinstance(gate, torch.Tensor)
        and gate.shape == x.shape
        and gate.dtype == x.dtype
        and x.dtype in _DTYPES
        and gate.device == x.device
        and x.dim() > 0
        and x.shape[-1] == self.weight.shape[0]
    )


def gated_rms_norm_forward(self, hidden_states: torch.Tensor, gate=_NOT_GIVEN) -> torch.Tensor:
    if gate is not _NOT_GIVEN and _fusable(self, hidden_states, gate):
        return gated_rms_norm(self, hidden_states, gate, getattr(self, self._ascendc_eps_attr))
    args = (hidden_states,) if gate is _NOT_GIVEN else (hidden_states, gate)
    return type(self).forward(self, *args)  # as unpatched: its own gate=None path (or its own error)


def _hints(m: nn.Module) -> str:
    shown = [f"{a}={getattr(m, a)!r}" for a, odd in _HINTS.items() if hasattr(m, a) and odd(m, getattr(m, a))]
    return f" ({', '.join(shown)})" if shown else ""


def _probe(m: nn.Module, eps: float) -> str | None:
    gen = probe.generator()
    width = m.weight.shape[0]
    x = torch.randn(2, 3, width, generator=gen, dtype=torch.float64)
    x[1, 1] *= math.sqrt(eps)  # a row whose mean square is about eps: where the epsilon's place matters
    gate = probe.GAIN * torch.randn(2, 3, width, generator=gen, dtype=torch.float64)
    params = probe.random_params(m, gen)
    theirs = lambda part, h, g: type(part).forward(part, h, g)  # noqa: E731
    ours = lambda part, h, g: gated_rms_norm(part, h, g, eps)  # noqa: E731
    why = probe.disagreement(m, theirs, ours, (x, gate), params)
    if why is not None:
        return f"not {FORMULA}{_hints(m)}: {why}"
    for dtype in NARROW:
        if why := probe.narrow_disagreement(m, theirs, ours, (x, gate), params, dtype):
            return f"{FORMULA}, but ours, rounded as Qwen3-Next's, is less accurate than its roundings {why}"
    return None


def find(model: nn.Module) -> Found:
    found = Found(looked_for="gated RMSNorm module (RMSNorm-like, forward(hidden_states, gate))")
    verdicts: dict[tuple, str | None] = {}
    for m in model.modules():
        if not is_gated_candidate(m) or "forward" in m.__dict__:
            continue
        attr = _eps_attr(m)
        key = (type(m), getattr(m, attr), m.weight.shape[0], *(str(getattr(m, a, None)) for a in _HINTS))
        if key not in verdicts:
            verdicts[key] = _probe(m, getattr(m, attr))
        if verdicts[key] is None:
            found.targets.append((m, attr))
        else:
            found.refused[type(m).__name__] = verdicts[key]
    return found


def patch(model: nn.Module, targets: list) -> list:
    records = []
    for m, attr in targets:
        records.append(set_instance_attr(m, "_ascendc_eps_attr", attr))
        records.append(set_instance_attr(m, "forward", types.MethodType(gated_rms_norm_forward, m)))
    return records
