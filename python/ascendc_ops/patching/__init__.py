"""Kernel registry: drop the fused ops into Hugging Face transformers 5 models, one model instance at a time.

    import ascendc_ops.patching as K
    report = K.apply_default_kernels(model)          # every kernel for this model type and backend
    K.apply_kernel("fused_rmsnorm", model)           # one kernel
    K.apply_default_kernels(model, "fused_rope,fused_swiglu")
    K.revert_kernels(model)                          # back to the exact original objects

Kernels (``KERNELS``): ``fused_rope`` (apply_rotary_pos_emb -> rotary_mul), ``fused_rmsnorm`` (RMSNorm
modules incl. Qwen3 q_norm/k_norm -> rms_norm), ``fused_swiglu`` (silu-gated MLPs -> swiglu). Supported model
types: llama, qwen2, qwen3, mistral (transformers 5.x; CI runs requirements.txt's and tools/wheel_check.sh's
versions; on 4.x every kernel skips with that reason); backends: cpu-twin, npu.
``fused_moe`` (experts -> permute/grouped_matmul/swiglu/unpermute through transformers' experts interface) on
the MoE families qwen3_moe, mixtral, qwen2_moe, olmoe, which take the three kernels above as well.

Patching only sets instance attributes on the given model's submodules (never a class or module global), so
another model in the process is untouched, and works under ``torch.compile(model, fullgraph=True)``: the ops
are torch.library custom ops with Meta kernels and autograd.
"""

from __future__ import annotations

import dataclasses
import logging

from torch import nn

from .. import backends as _available_backends
from . import moe as _moe, rms_norm as _rms_norm, rope as _rope, swiglu as _swiglu
from .base import STATE_ATTR, Kernel, KernelSkip, model_backend, model_type, transformers_unsupported

logger = logging.getLogger(__name__)

KERNELS: dict[str, Kernel] = {}


def register_kernel(kernel: Kernel, *, replace: bool = False) -> Kernel:
    if kernel.id in KERNELS and not replace:
        raise ValueError(f"kernel {kernel.id!r} is already registered")
    KERNELS[kernel.id] = kernel
    return kernel


for _k in (_rope.KERNEL, _rms_norm.KERNEL, _swiglu.KERNEL):  # MoE families share these attention/norm/MLP paths
    register_kernel(dataclasses.replace(_k, model_types=_k.model_types + _moe.MODEL_TYPES))
register_kernel(_moe.KERNEL)


@dataclasses.dataclass
class KernelReport:
    """What a call applied and what it skipped (kernel id -> reason)."""

    model_type: str | None
    backend: str
    applied: list[str] = dataclasses.field(default_factory=list)
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)
    patched_modules: dict[str, int] = dataclasses.field(default_factory=dict)

    def __str__(self) -> str:
        parts = [f"{k} ({self.patched_modules.get(k, 0)} modules)" for k in self.applied]
        skipped = "; ".join(f"{k}: {why}" for k, why in self.skipped.items())
        return f"ascendc_ops kernels on {self.model_type} [{self.backend}]: applied {', '.join(parts) or 'nothing'}" + (
            f"; skipped {skipped}" if skipped else ""
        )


def list_kernels(model: nn.Module | None = None) -> list[str]:
    """All kernel ids, or the ones that support this model's type and backend."""
    if model is None:
        return list(KERNELS)
    return [k for k in KERNELS if _unsupported_reason(KERNELS[k], model) is None]


def applied_kernels(model: nn.Module) -> list[str]:
    return list(getattr(model, STATE_ATTR, {}))


def _get(kernel_id: str) -> Kernel:
    try:
        return KERNELS[kernel_id]
    except KeyError:
        raise ValueError(f"unknown kernel id {kernel_id!r}; available: {', '.join(KERNELS)}") from None


def _unsupported_reason(kernel: Kernel, model: nn.Module) -> str | None:
    if (why := transformers_unsupported()) is not None:
        return why
    mt = model_type(model)
    if mt not in kernel.model_types:
        return (
            f"model type {mt!r} is not supported by {kernel.id} (supports {', '.join(kernel.model_types)})"
            if mt
            else "the model has no config.model_type (not a Hugging Face PreTrainedModel?)"
        )
    backend = model_backend(model)
    if backend not in kernel.backends:
        return f"backend {backend!r} is not supported by {kernel.id} (runs on {', '.join(kernel.backends)})"
    if backend not in _available_backends():
        return f"this ascendc_ops build does not run on {backend!r} (built for {', '.join(_available_backends())})"
    return None


def _apply_one(kernel: Kernel, model: nn.Module, report: KernelReport) -> None:
    state = model.__dict__.setdefault(STATE_ATTR, {})
    if kernel.id in state:
        report.skipped[kernel.id] = "already applied to this model"
        return
    reason = _unsupported_reason(kernel, model)
    if reason is None:
        try:
            records = kernel.apply(model)
        except KernelSkip as e:
            reason = str(e)
    if reason is not None:
        report.skipped[kernel.id] = reason
        return
    state[kernel.id] = records
    report.applied.append(kernel.id)
    report.patched_modules[kernel.id] = sum(r.name == "forward" for r in records) or _moe.routed_modules(model)


def _log(report: KernelReport, warn_skips: bool) -> KernelReport:
    logger.info("%s", report)
    if warn_skips:
        for k, why in report.skipped.items():
            logger.warning("ascendc_ops kernel %s skipped: %s", k, why)
    return report


def apply_kernel(kernel_id: str, model: nn.Module) -> KernelReport:
    """Apply one kernel to this model instance. Unknown id: ValueError; unsupported model/backend: skipped + warning."""
    kernel = _get(kernel_id)
    report = KernelReport(model_type(model), model_backend(model))
    _apply_one(kernel, model, report)
    return _log(report, warn_skips=True)


def _parse_include(include_kernels) -> tuple[list[str] | None, bool]:
    """-> (ids or None for 'auto', explicit?)."""
    if include_kernels is None or include_kernels is False:
        return [], False
    if include_kernels is True or (isinstance(include_kernels, str) and include_kernels.strip().lower() == "auto"):
        return None, False
    if isinstance(include_kernels, str):
        ids = [s.strip() for s in include_kernels.split(",") if s.strip()]
    else:
        ids = list(include_kernels)
    for k in ids:
        _get(k)  # unknown ids fail before anything is patched
    return ids, True


def apply_default_kernels(model: nn.Module, include_kernels="auto") -> KernelReport:
    """Apply several kernels: ``"auto"``/True = all that support this model and backend, None/False = nothing,
    ``"id1,id2"`` (or a list) = those. Returns (and logs) a KernelReport of what was applied and skipped, and why.
    With "auto", an unsupported model type is a warning and nothing is patched."""
    ids, explicit = _parse_include(include_kernels)
    report = KernelReport(model_type(model), model_backend(model))
    auto = ids is None  # the kernels made for this model type (fused_moe only on MoE families); else all, for the why
    if auto:
        ids = [k for k in KERNELS if report.model_type in KERNELS[k].model_types] or list(KERNELS)
    for k in ids:
        _apply_one(KERNELS[k], model, report)
    if auto and not report.applied:
        logger.warning(
            "ascendc_ops: no kernel applies to this %s model on %s: %s",
            report.model_type,
            report.backend,
            "; ".join(f"{k}: {w}" for k, w in report.skipped.items()),
        )
        return _log(report, warn_skips=False)
    return _log(report, warn_skips=explicit)


def revert_kernels(model: nn.Module, kernel_ids=None) -> list[str]:
    """Undo the kernels applied to this model (all, or the given ids), restoring the original objects exactly.
    Returns the ids reverted."""
    state = model.__dict__.get(STATE_ATTR, {})
    ids = list(state) if kernel_ids is None else ([kernel_ids] if isinstance(kernel_ids, str) else list(kernel_ids))
    reverted = []
    for k in reversed(ids):
        records = state.pop(k, None)
        if records is None:
            continue
        for r in reversed(records):
            r.revert()
        reverted.append(k)
    if not state:
        model.__dict__.pop(STATE_ATTR, None)
    if reverted:
        logger.info("ascendc_ops kernels reverted on %s: %s", model_type(model), ", ".join(reversed(reverted)))
    return list(reversed(reverted))


__all__ = [
    "KERNELS",
    "Kernel",
    "KernelReport",
    "KernelSkip",
    "apply_default_kernels",
    "apply_kernel",
    "applied_kernels",
    "list_kernels",
    "register_kernel",
    "revert_kernels",
]
