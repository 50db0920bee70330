"""fused_rmsnorm: RMSNorm-like modules' forward on ``torch.ops.custom.rms_norm`` (npu_rms_norm), found by structure.

A candidate is any module with a 1-D ``weight`` parameter, a float epsilon attribute (``variance_epsilon``, ``eps`` or
``epsilon``), no ``bias`` and a one-tensor forward - whatever its class is called: the decoder norms, Qwen3's
``q_norm`` / ``k_norm`` (over head_dim, on ``(B, S, N, D)``), OLMo 2's full-width q/k norms. It is patched only
if its probe (``probe.disagreement``: random weight, rows whose RMS is near sqrt(eps) so the epsilon's place
shows) agrees with one of ``VARIANTS``: the plain weight (``custom.rms_norm``) or Gemma's ``(1 + weight)``
(``custom.gemma_rms_norm``: Gemma, Gemma 2/3, Qwen3-Next / Qwen3.5's decoder norms); norms with other inputs are left
with the reason; gated norms ``forward(hidden_states, gate)`` are fused_gated_rmsnorm's (gated_rms_norm.py).
The epsilon is the module's own attribute, read at every call.

Numerics vs HF: HF rounds ``x * rstd`` to the input dtype before multiplying by the weight; the op multiplies
by the weight in fp32 and rounds once (bit-equal in fp32 up to summation order, <= 1 ulp in bf16). The output
dtype follows HF: ``promote_types(weight.dtype, x.dtype)``. Gemma's norm computes all in fp32 and rounds once to
x's dtype, as the op does.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import types
from collections.abc import Callable

import torch
from torch import nn

from . import probe
from .base import Found, call_op, set_instance_attr

EPS_ATTRS = ("variance_epsilon", "eps", "epsilon")
# A gated norm's forward inputs after the hidden states: fused_gated_rmsnorm's part (gated_rms_norm.py), not ours.
GATED_INPUTS = ["gate"]


def _eps_attr(m: nn.Module) -> str | None:
    for attr in EPS_ATTRS:
        if isinstance(getattr(m, attr, None), float):
            return attr
    return None


def rms_norm(self, hidden_states: torch.Tensor, eps: float) -> torch.Tensor:
    weight = self.weight
    out_dtype = torch.promote_types(weight.dtype, hidden_states.dtype)
    if hidden_states.dtype == torch.float32 and weight.dtype != torch.float32:
        weight = weight.float()  # (fp32 x, low-precision weight): HF promotes the weight; the op wants fp32/fp32
    y, _ = call_op(torch.ops.custom.rms_norm.default, hidden_states, weight, eps)
    return y if y.dtype == out_dtype else y.to(out_dtype)


def rms_norm_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
    return rms_norm(self, hidden_states, getattr(self, self._ascendc_eps_attr))


def gemma_rms_norm(self, hidden_states: torch.Tensor, eps: float) -> torch.Tensor:
    weight = self.weight
    if weight.dtype not in (hidden_states.dtype, torch.float32):
        weight = weight.float()  # a pair the op lacks: exact, and the op forms 1 + weight in fp32 either way (as HF)
    y, _ = call_op(torch.ops.custom.gemma_rms_norm.default, hidden_states, weight, eps)
    return y  # HF: .type_as(x)


def gemma_rms_norm_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
    return gemma_rms_norm(self, hidden_states, getattr(self, self._ascendc_eps_attr))


@dataclasses.dataclass(frozen=True)
class Variant:
    """A formula our ops compute: its name (for reports) and the forward installed on a module that has it."""

    formula: str
    forward: Callable  # (module, hidden_states) -> tensor; reads the epsilon attribute named _ascendc_eps_attr
    compute: Callable  # (module, hidden_states, eps) -> tensor: the same, for the probe


VARIANTS = (
    Variant("weight * x * rsqrt(mean(x^2) + eps)", rms_norm_forward, rms_norm),
    Variant("(1 + weight) * x * rsqrt(mean(x^2) + eps)", gemma_rms_norm_forward, gemma_rms_norm),
)


def _is_candidate(m: nn.Module) -> bool:
    w = getattr(m, "weight", None)  # a Parameter: a weightless norm's dummy weight buffer (Falcon-Mamba) is no gamma
    return isinstance(w, nn.Parameter) and w.dim() == 1 and getattr(m, "bias", None) is None and bool(_eps_attr(m))


def _extra_inputs(m: nn.Module) -> list[str]:
    """The forward's parameters after the hidden states (a gated norm's ``gate``): our forward takes none."""
    try:
        params = list(inspect.signature(type(m).forward).parameters.values())[2:]
    except (TypeError, ValueError):
        return ["<no signature>"]
    return [p.name for p in params]


def _probe(m: nn.Module, eps: float) -> tuple[Variant | None, str]:
    gen = probe.generator()
    x = torch.randn(2, 3, m.weight.shape[0], generator=gen, dtype=torch.float64)
    x[1, 1] *= math.sqrt(eps)  # a row whose mean square is about eps: where the epsilon's place matters
    params = probe.random_params(m, gen)
    why = ""
    for v in VARIANTS:
        why = probe.disagreement(
            m, lambda part, h: type(part).forward(part, h), lambda p, h, v=v: v.compute(p, h, eps), (x,), params
        )
        if why is None:
            return v, ""
    return None, f"not {' nor '.join(v.formula for v in VARIANTS)}: {why}"


def find(model: nn.Module) -> Found:
    found = Found(looked_for="RMSNorm-like module (1-D weight, float epsilon, no bias)")
    verdicts: dict[tuple, tuple[Variant | None, str]] = {}
    for m in model.modules():
        if not _is_candidate(m) or "forward" in m.__dict__:
            continue
        part = type(m).__name__
        if (extra := _extra_inputs(m)) == GATED_INPUTS:
            continue
        if extra:
            found.refused[part] = f"its forward takes more than the hidden states ({', '.join(extra)})"
            continue
        attr = _eps_attr(m)
        key = (type(m), getattr(m, attr), m.weight.shape[0])
        if key not in verdicts:
            verdicts[key] = _probe(m, getattr(m, attr))
        variant, why = verdicts[key]
        if variant is None:
            found.refused[part] = why
        else:
            found.targets.append((m, attr, variant))
    return found


def patch(model: nn.Module, targets: list) -> list:
    records = []
    for m, attr, variant in targets:
        records.append(set_instance_attr(m, "_ascendc_eps_attr", attr))
        records.append(set_instance_attr(m, "forward", types.MethodType(variant.forward, m)))
    return records
