"""fused_swiglu: gated MLPs ``down_proj(silu(gate_proj(x)) * up_proj(x))`` on ``torch.ops.custom.swiglu``.

Found by structure: a module with ``gate_proj``, ``up_proj`` and ``down_proj`` submodules, or with a fused
``gate_up_proj`` (``[gate | up]`` halves, as Phi-3 and GLM-4 split it) and ``down_proj``, and a one-tensor
forward. It is patched only if its probe (``probe.disagreement``, random projections with pre-activations of
std ~3) agrees with one of ``VARIANTS``: another activation than silu, an up-first or interleaved split, a
clamp or a bias on the gate are left with the reason. A new variant is one more ``Variant`` entry.
Two ways to produce the ``[gate | up]`` input of the op, chosen by ``GATE_UP_MODE``:

- ``"cat"`` (default): ``cat(gate_proj(x), up_proj(x))`` - two matmuls, the projections' own modules
  (so hooks, LoRA wrappers etc. keep working);
- ``"matmul"``: one matmul against ``cat(gate_proj.weight, up_proj.weight)``, used only for plain
  ``nn.Linear`` projections without hooks. On the 2-core AVX2 CPU this was measured *slower* in training
  (the weight concat per step and the split of the weight gradient cost more than the second matmul
  launch: fwd+bwd 1.08-1.15 s vs 0.86-0.96 s at T=1024, H=1024, I=2816, fp32), hence not the default.

Either way the gradients flow to the original ``gate_proj`` / ``up_proj`` parameters (the concat is inside
the autograd graph), so optimizers and ``state_dict`` are unchanged.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from . import probe
from .base import Found, call_op, model_config, set_instance_attr

GATE_UP_MODE = "cat"  # "cat" or "matmul", see the module docstring


def _plain_linear(m: nn.Module) -> bool:
    return (
        type(m) is nn.Linear
        and not m._forward_hooks
        and not m._forward_pre_hooks
        and not nn.modules.module._global_forward_hooks
        and not nn.modules.module._global_forward_pre_hooks
    )


def swiglu_mlp_forward(self, x: torch.Tensor) -> torch.Tensor:
    if GATE_UP_MODE == "matmul" and _plain_linear(self.gate_proj) and _plain_linear(self.up_proj):
        g, u = self.gate_proj, self.up_proj
        bias = None if g.bias is None else torch.cat((g.bias, u.bias))
        gate_up = F.linear(x, torch.cat((g.weight, u.weight)), bias)
    else:
        gate_up = torch.cat((self.gate_proj(x), self.up_proj(x)), dim=-1)
    return self.down_proj(call_op(torch.ops.custom.swiglu.default, gate_up, -1))


def fused_gate_up_forward(self, x: torch.Tensor) -> torch.Tensor:
    """One ``gate_up_proj`` whose output is ``[gate | up]``: already the op's input."""
    return self.down_proj(call_op(torch.ops.custom.swiglu.default, self.gate_up_proj(x), -1))


@dataclasses.dataclass(frozen=True)
class Variant:
    """An MLP form our op computes: its projections (submodule names), formula (for reports) and forward."""

    projections: tuple[str, ...]
    formula: str
    forward: Callable  # (module, x) -> tensor


VARIANTS = (
    Variant(("gate_proj", "up_proj", "down_proj"), "down(silu(gate(x)) * up(x))", swiglu_mlp_forward),
    Variant(("gate_up_proj", "down_proj"), "down(silu(gate) * up), [gate | up] = gate_up(x)", fused_gate_up_forward),
)


def _variant(m: nn.Module) -> Variant | None:
    return next((v for v in VARIANTS if all(isinstance(getattr(m, p, None), nn.Module) for p in v.projections)), None)


def _in_features(proj: nn.Module) -> int | None:
    n = getattr(proj, "in_features", None)
    w = getattr(proj, "weight", None)
    return n if isinstance(n, int) else (w.shape[-1] if isinstance(w, torch.Tensor) and w.dim() == 2 else None)


def _structural_refusal(m: nn.Module, variant: Variant) -> str | None:
    try:
        extra = list(inspect.signature(type(m).forward).parameters)[2:]
    except (TypeError, ValueError):
        extra = ["<no signature>"]
    if extra:
        return f"its forward takes more than x ({', '.join(extra)})"
    if any(isinstance(c, nn.Dropout) and c.p > 0 for c in m.modules()):
        return "it has dropout (our forward has none)"
    if _in_features(getattr(m, variant.projections[0])) is None:
        return f"{variant.projections[0]} has no in_features"
    return None


def _out_features(proj: nn.Module) -> int | None:
    n = getattr(proj, "out_features", None)
    w = getattr(proj, "weight", None)
    return n if isinstance(n, int) else (w.shape[0] if isinstance(w, torch.Tensor) and w.dim() == 2 else None)


def _probe(m: nn.Module, variant: Variant) -> str | None:
    first = getattr(m, variant.projections[0])
    hidden, out = _in_features(first), _out_features(first)
    inter = out // 2 if variant.projections[0] == "gate_up_proj" and out else out
    why = None
    for resize in (probe.widths(hidden, inter), {}) if inter else ({},):  # probe widths; full size if they fail
        gen = probe.generator()
        x = torch.randn(2, 3, resize.get(hidden, hidden), generator=gen, dtype=torch.float64)
        params = probe.random_params(m, gen, resize)
        why = probe.disagreement(m, lambda part, h: type(part).forward(part, h), variant.forward, (x,), params)
        if not (resize and why and why.startswith("it fails")):
            break
    if why is None:
        return None
    cfg = getattr(m, "config", None) or model_config(m)
    act = getattr(cfg, "hidden_act", None) or getattr(cfg, "hidden_activation", None)
    act_fn = getattr(m, "act_fn", None) or getattr(m, "activation_fn", None)
    hint = [f"hidden_act={act!r}"] if act not in (None, "silu") else []
    hint += [f"act_fn {type(act_fn).__name__}"] if isinstance(act_fn, nn.Module) else []
    return f"not {variant.formula}{' (' + ', '.join(hint) + ')' if hint else ''}: {why}"


def find(model: nn.Module) -> Found:
    found = Found(looked_for="gated MLP (gate_proj/up_proj/down_proj or gate_up_proj/down_proj)")
    verdicts: dict[tuple, str | None] = {}
    for m in model.modules():
        variant = _variant(m)
        if variant is None or "forward" in m.__dict__:
            continue
        why = _structural_refusal(m, variant)
        if why is None:
            shapes = tuple(tuple(p.shape) for p in m.parameters())
            key = (type(m), variant, shapes, getattr(getattr(m, "config", None), "hidden_act", None))
            if key not in verdicts:
                verdicts[key] = _probe(m, variant)
            why = verdicts[key]
        if why is None:
            found.targets.append((m, variant))
        else:
            found.refused[type(m).__name__] = why
    return found


def patch(model: nn.Module, targets: list) -> list:
    return [set_instance_attr(m, "forward", types.MethodType(v.forward, m)) for m, v in targets]
