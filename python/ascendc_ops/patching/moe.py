"""fused_moe: HF transformers 5 experts on our permute -> grouped_matmul -> swiglu -> grouped_matmul -> unpermute.

transformers 5 routes every ``@use_experts_implementation`` experts module through
``ALL_EXPERTS_FUNCTIONS[config._experts_implementation]``. We register ``EXPERTS_IMPL`` there (once, as
transformers loads it, ``hf_registries.py``: a new name, nothing else changes) and apply = set that name on the
experts modules' configs, so the model keeps its own modules, parameters, router and shared experts; revert puts the
previous name back.
``from_pretrained(..., experts_implementation="ascendc_fused_moe")`` works too once ascendc_ops is imported.

The implementation is a config setting, like HF's own ``set_experts_implementation``: models built on one
shared config object share it. Supported experts: gated (``gate_up_proj`` concatenated gate first, plain or
``is_transposed``), no bias, no post-expert norm, the default gate with ``hidden_act == "silu"``; found by
structure (the interface's flags on the module, any model type), and used only if the probe
(``probe.disagreement``: random experts, 6 tokens, top-2) agrees with the class's own eager forward.
"""

from __future__ import annotations

import torch
from torch import nn

from ..ops import moe_experts as _experts_op
from ..ops.moe_experts import moe_experts
from . import hf_registries, probe
from .base import Found, KernelSkip, set_instance_attr

EXPERTS_IMPL = "ascendc_fused_moe"
CONFIG_ATTR = "_experts_implementation_internal"
PROBE_TOKENS, PROBE_TOP_K = 6, 2


def fused_experts_forward(
    self, hidden_states: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor
) -> torch.Tensor:
    """The ``ALL_EXPERTS_FUNCTIONS`` entry: HF's experts signature on ascendc_ops.ops.moe_experts."""
    return moe_experts(hidden_states, top_k_index, top_k_weights, self.gate_up_proj, self.down_proj, self.is_transposed)


_MODULE, _REGISTRY = "transformers.integrations.moe", "ALL_EXPERTS_FUNCTIONS"
hf_registries.register_when_imported(_MODULE, _REGISTRY, EXPERTS_IMPL, fused_experts_forward)


def registered() -> bool:
    """Whether transformers' experts interface takes our name (importing transformers if no one has)."""
    return hf_registries.ensure(_MODULE, _REGISTRY, EXPERTS_IMPL)


def _unsupported(m: nn.Module) -> str | None:
    """Why this experts module cannot take the fused path (None: it can)."""
    from transformers.integrations.moe import _default_apply_gate

    checks = (
        (getattr(m, "has_gate", False), "has no gate (up_proj only)"),
        (getattr(m, "is_concatenated", False), "stores gate/up interleaved, not concatenated"),
        (not getattr(m, "has_bias", True), "has expert biases"),
        # transformers 5.8's experts interface has no post-expert norm (nor the flag): absent means none
        (not getattr(m, "has_post_expert_norm", False), "has a post-expert norm"),
        (getattr(type(m), "_apply_gate", None) is _default_apply_gate, "has a custom gate function"),
        (
            getattr(getattr(m, "config", None), "hidden_act", None) == "silu",
            f"hidden_act={getattr(getattr(m, 'config', None), 'hidden_act', None)!r} is not 'silu'",
        ),
        (
            isinstance(getattr(m, "gate_up_proj", None), torch.Tensor) and m.gate_up_proj.dim() == 3,
            "has no 3-D gate_up_proj",
        ),
    )
    return next((why for ok, why in checks if not ok), None)


def _experts_modules(model: nn.Module):
    """Modules whose class went through HF's @use_experts_implementation (they carry its flags; the ones
    every version since 5.8 sets: ``_is_expert_parallel`` and ``has_post_expert_norm`` came later)."""
    for name, m in model.named_modules():
        if hasattr(m, "is_concatenated") and hasattr(m, "has_gate") and hasattr(m, "config"):
            yield name, m


def routed_modules(model: nn.Module) -> int:
    """How many experts modules of this model run on our kernels now."""
    return sum(getattr(m.config, "_experts_implementation", None) == EXPERTS_IMPL for _, m in _experts_modules(model))


def _probe_forward(self, hidden_states, top_k_index, top_k_weights):
    """fused_experts_forward's computation, calling the op module directly: the probe is not a model call, and
    counts of calls through this module's ``moe_experts`` (tests/distributed) see the model's calls only."""
    return _experts_op.moe_experts(
        hidden_states, top_k_index, top_k_weights, self.gate_up_proj, self.down_proj, self.is_transposed
    )


def _probe(m: nn.Module) -> str | None:
    eager = getattr(type(m).forward, "__wrapped__", None)  # the class's own loop, under the interface's dispatch
    if eager is None:
        return "its forward is not wrapped by use_experts_implementation"
    experts = m.gate_up_proj.shape[0]
    hidden = m.gate_up_proj.shape[1 if m.is_transposed else 2]
    inter = m.gate_up_proj.shape[2 if m.is_transposed else 1] // 2
    k = min(PROBE_TOP_K, experts)
    why = None
    for resize in (probe.widths(hidden, inter, keep=(experts,)), {}):  # probe widths; full size if they fail
        gen = probe.generator()
        x = torch.randn(PROBE_TOKENS, resize.get(hidden, hidden), generator=gen, dtype=torch.float64)
        idx = torch.stack([torch.randperm(experts, generator=gen)[:k] for _ in range(PROBE_TOKENS)])
        weights = torch.randn(PROBE_TOKENS, k, generator=gen, dtype=torch.float64).softmax(-1)
        params = probe.random_params(m, gen, resize)
        why = probe.disagreement(m, eager, _probe_forward, (x, idx, weights), params)
        if not (resize and why and why.startswith("it fails")):
            break
    return None if why is None else f"not the gated silu experts formula: {why}"


def find(model: nn.Module) -> Found:
    found = Found(looked_for="experts module using transformers' experts interface")
    if not registered():
        found.refused["experts"] = "transformers has no experts interface (ALL_EXPERTS_FUNCTIONS, transformers >= 5)"
        return found
    configs, verdicts = {}, {}
    for _, m in _experts_modules(model):
        why = _unsupported(m)
        if why is None:
            key = (type(m), tuple(m.gate_up_proj.shape), m.config.hidden_act)
            if key not in verdicts:
                verdicts[key] = _probe(m)
            why = verdicts[key]
        if why is not None:
            found.refused[type(m).__name__] = why
            continue
        configs.setdefault(id(m.config), m.config)
    # all experts of a model share one config setting: all or none
    found.targets = [] if found.refused else list(configs.values())
    return found


def patch(model: nn.Module, targets: list) -> list:
    if not registered():
        raise KernelSkip("transformers has no experts interface (ALL_EXPERTS_FUNCTIONS, transformers >= 5)")
    return [set_instance_attr(cfg, CONFIG_ATTR, EXPERTS_IMPL) for cfg in targets]
