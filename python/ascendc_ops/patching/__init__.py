"""Kernel registry: drop the fused ops into Hugging Face transformers 5 models, one model instance at a time.

    import ascendc_ops.patching as K
    report = K.apply_default_kernels(model)          # every kernel for this model type and backend
    K.apply_kernel("fused_rmsnorm", model)           # one kernel
    K.apply_default_kernels(model, "fused_rope,fused_swiglu")
    K.revert_kernels(model)                          # back to the exact original objects
    K.apply_default_kernels(model, disable_kernels="fused_moe")   # all but one (or ASCENDC_OPS_DISABLE=...)

Kernels (``KERNELS``): ``fused_rope`` (apply_rotary_pos_emb -> rotary_mul), ``fused_rmsnorm`` (RMSNorm-like
modules incl. q_norm/k_norm -> rms_norm), ``fused_swiglu`` (silu-gated MLPs, separate or fused gate_up ->
swiglu), ``fused_moe`` (experts -> permute/grouped_matmul/swiglu/unpermute through transformers' experts
interface), ``fused_add_rmsnorm`` (a decoder layer's residual add feeding an RMSNorm -> add_rms_norm, the
residual stream carried through), ``fused_gated_rmsnorm`` (gated norms ``norm(x) * silu(gate)``, Qwen3-Next /
Qwen3.5's -> gated_rms_norm; in training only once that op has a backward).
No model list: each kernel finds its parts by structure in any model
(transformers 5.x; CI runs requirements.txt's and tools/wheel_check.sh's versions; on 4.x every kernel skips with
that reason) and patches a part only after a probe on a small random input agrees with our op within the fp32
accuracy standard (``probe.py``); parts that look right but disagree (Gemma's (1 + w) norm, GLM's interleaved
RoPE, gelu MLPs) are left and listed in the report with the reason. docs/coverage.md (tools/patch_coverage.py)
lists what this gives on every decoder family of the pinned transformers. Backends: cpu-twin, npu.

Switches: LLaMA-Factory's kernel ids (``ALIASES``: ``npu_fused_rmsnorm``, ``npu_fused_swiglu``, ``npu_fused_rope``,
``npu_fused_moe``, from its kernel plugins' ``KernelPlugin(...)`` ids) name the same kernels wherever an id is taken,
and reports use our ids. Single fusions are turned off by ``disable_kernels="id1,id2"``, by openMind-style
``use_fused_rope=False`` (``use_fused_rms_norm``, ``use_fused_swiglu``, ``use_fused_moe``; ours:
``use_fused_add_rms_norm``, ``use_fused_gated_rms_norm``) or, for the whole
process, by the environment variable ``ASCENDC_OPS_DISABLE=id1,id2`` (read at each call); a disabled kernel is
skipped, and the report says which switch turned it off.

Patching only sets instance attributes on the given model's submodules (never a class or module global), so
another model in the process is untouched, and works under ``torch.compile(model, fullgraph=True)``: the ops
are torch.library custom ops with Meta kernels and autograd.
"""

from __future__ import annotations

import dataclasses
import logging
import os

from torch import nn

from .. import backends as _available_backends
from . import (
    add_rms_norm as _add_rms_norm,
    gated_rms_norm as _gated_rms_norm,
    moe as _moe,
    rms_norm as _rms_norm,
    rope as _rope,
    swiglu as _swiglu,
)
from .base import STATE_ATTR, Found, Kernel, KernelSkip, model_backend, model_type, transformers_unsupported

logger = logging.getLogger(__name__)

KERNELS: dict[str, Kernel] = {}
# LLaMA-Factory's kernel ids (src/llamafactory/v1/plugins/model_plugins/kernels/ops/*: KernelPlugin("npu_fused_...")
# and its _AUTO_KERNELS) -> ours. Accepted wherever a kernel id is; reports and applied_kernels use ours.
ALIASES: dict[str, str] = {
    "npu_fused_rmsnorm": "fused_rmsnorm",
    "npu_fused_swiglu": "fused_swiglu",
    "npu_fused_rope": "fused_rope",
    "npu_fused_moe": "fused_moe",
}
# The process-wide off switch: comma-separated kernel ids (or aliases), read at every apply call.
DISABLE_ENV = "ASCENDC_OPS_DISABLE"
# openMind-style per-fusion flags (``use_fused_rope=False`` turns fused_rope off) -> our ids.
USE_FLAGS: dict[str, str] = {
    "use_fused_rope": "fused_rope",
    "use_fused_rms_norm": "fused_rmsnorm",
    "use_fused_swiglu": "fused_swiglu",
    "use_fused_moe": "fused_moe",
    "use_fused_add_rms_norm": "fused_add_rmsnorm",  # ours: openMind has no such flag
    "use_fused_gated_rms_norm": "fused_gated_rmsnorm",  # ours too
}


def register_kernel(kernel: Kernel, *, replace: bool = False) -> Kernel:
    if kernel.id in KERNELS and not replace:
        raise ValueError(f"kernel {kernel.id!r} is already registered")
    KERNELS[kernel.id] = kernel
    return kernel


for _k in (_rope.KERNEL, _rms_norm.KERNEL, _swiglu.KERNEL, _moe.KERNEL, _add_rms_norm.KERNEL, _gated_rms_norm.KERNEL):
    register_kernel(_k)


@dataclasses.dataclass
class KernelReport:
    """What a call applied and what it skipped (kernel id -> reason). ``left``: parts an applied kernel found but
    left unpatched ({kernel id: {part: why}}, e.g. a gated norm next to plain ones); ``absent``: the
    kernels that found nothing of their kind (a dense model has no experts); with "auto" they leave ``skipped``
    once another kernel applied."""

    model_type: str | None
    backend: str
    applied: list[str] = dataclasses.field(default_factory=list)
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)
    patched_modules: dict[str, int] = dataclasses.field(default_factory=dict)
    left: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    absent: dict[str, str] = dataclasses.field(default_factory=dict)

    def __str__(self) -> str:
        parts = [f"{k} ({self.patched_modules.get(k, 0)} modules)" for k in self.applied]
        skipped = "; ".join(f"{k}: {why}" for k, why in self.skipped.items())
        left = "; ".join(f"{k} left {p}: {why}" for k, d in self.left.items() for p, why in d.items())
        return (
            f"ascendc_ops kernels on {self.model_type} [{self.backend}]: applied {', '.join(parts) or 'nothing'}"
            + (f"; skipped {skipped}" if skipped else "")
            + (f"; {left}" if left else "")
        )


def list_kernels(model: nn.Module | None = None) -> list[str]:
    """All kernel ids, or the ones applied to this model or that would patch something in it on its backend
    (finds and probes, patches nothing)."""
    if model is None:
        return list(KERNELS)
    applied = applied_kernels(model)
    return [
        k
        for k in KERNELS
        if k in applied or (_unsupported_reason(KERNELS[k], model) is None and KERNELS[k].find(model).targets)
    ]


def applied_kernels(model: nn.Module) -> list[str]:
    return list(getattr(model, STATE_ATTR, {}))


def canonical_id(kernel_id: str) -> str:
    """Our id for a kernel id or an alias (LLaMA-Factory's ``npu_fused_*``); ValueError for an unknown one."""
    kernel_id = ALIASES.get(kernel_id, kernel_id)
    if kernel_id not in KERNELS:
        aliases = ", ".join(f"{a} -> {k}" for a, k in ALIASES.items())
        raise ValueError(f"unknown kernel id {kernel_id!r}; available: {', '.join(KERNELS)} (aliases: {aliases})")
    return kernel_id


def _get(kernel_id: str) -> Kernel:
    return KERNELS[canonical_id(kernel_id)]


def _split_ids(ids) -> list[str]:
    if isinstance(ids, str):
        return [s.strip() for s in ids.split(",") if s.strip()]
    return list(ids)


def _disabled(disable_kernels=None, use_flags: dict | None = None) -> dict[str, str]:
    """{our id: which switch turned it off}, from ASCENDC_OPS_DISABLE, disable_kernels and use_fused_*=False.
    Unknown ids raise ValueError naming the switch, before anything is patched."""
    off: dict[str, str] = {}
    sources = [(f"{DISABLE_ENV}=", os.environ.get(DISABLE_ENV, "")), ("disable_kernels=", disable_kernels or "")]
    for name, raw in sources:
        ids = _split_ids(raw)
        switch = name + ",".join(ids)
        for k in ids:
            try:
                off.setdefault(canonical_id(k), switch)
            except ValueError as e:
                raise ValueError(f"{switch}: {e}") from None
    for flag, value in (use_flags or {}).items():  # None: not given; True: leave it on
        if value is not None and not value:
            off.setdefault(USE_FLAGS[flag], f"{flag}=False")
    return off


def _unsupported_reason(kernel: Kernel, model: nn.Module) -> str | None:
    if (why := transformers_unsupported()) is not None:
        return why
    backend = model_backend(model)
    if backend not in kernel.backends:
        return f"backend {backend!r} is not supported by {kernel.id} (runs on {', '.join(kernel.backends)})"
    if backend not in _available_backends():
        return f"this ascendc_ops build does not run on {backend!r} (built for {', '.join(_available_backends())})"
    return None


def _apply_one(kernel: Kernel, model: nn.Module, report: KernelReport, disabled: dict[str, str]) -> None:
    state = model.__dict__.setdefault(STATE_ATTR, {})
    if kernel.id in state:
        report.skipped[kernel.id] = "already applied to this model"
        return
    if kernel.id in disabled:
        report.skipped[kernel.id] = f"disabled by {disabled[kernel.id]}"
        return
    reason = _unsupported_reason(kernel, model)
    found = Found()
    if reason is None:
        found = kernel.find(model)
        if not found.targets:
            reason = found.skip_reason(model)
            if not found.refused:
                report.absent[kernel.id] = reason
    if reason is None:
        try:
            records = kernel.patch(model, found.targets)
        except KernelSkip as e:
            reason = str(e)
    if reason is not None:
        report.skipped[kernel.id] = reason
        return
    state[kernel.id] = records
    report.applied.append(kernel.id)
    if found.refused:
        report.left[kernel.id] = dict(found.refused)
    report.patched_modules[kernel.id] = sum(r.name == "forward" for r in records) or _moe.routed_modules(model)


def _log(report: KernelReport, warn_skips: bool) -> KernelReport:
    logger.info("%s", report)
    if warn_skips:
        for k, why in report.skipped.items():
            logger.warning("ascendc_ops kernel %s skipped: %s", k, why)
    return report


def apply_kernel(kernel_id: str, model: nn.Module) -> KernelReport:
    """Apply one kernel (our id or a LLaMA-Factory alias) to this model instance. Unknown id: ValueError;
    unsupported model/backend, or turned off by ASCENDC_OPS_DISABLE: skipped + warning."""
    kernel = _get(kernel_id)
    disabled = _disabled()
    report = KernelReport(model_type(model), model_backend(model))
    _apply_one(kernel, model, report, disabled)
    return _log(report, warn_skips=True)


def _parse_include(include_kernels) -> tuple[list[str] | None, bool]:
    """-> (ids or None for 'auto', explicit?)."""
    if include_kernels is None or include_kernels is False:
        return [], False
    if include_kernels is True or (isinstance(include_kernels, str) and include_kernels.strip().lower() == "auto"):
        return None, False
    # unknown ids fail before anything is patched; aliases become our ids, each kernel once
    ids = list(dict.fromkeys(canonical_id(k) for k in _split_ids(include_kernels)))
    return ids, True


def apply_default_kernels(
    model: nn.Module,
    include_kernels="auto",
    *,
    disable_kernels=None,
    use_fused_rope: bool | None = None,
    use_fused_rms_norm: bool | None = None,
    use_fused_swiglu: bool | None = None,
    use_fused_moe: bool | None = None,
    use_fused_add_rms_norm: bool | None = None,
    use_fused_gated_rms_norm: bool | None = None,
) -> KernelReport:
    """Apply several kernels: ``"auto"``/True = all that support this model and backend, None/False = nothing,
    ``"id1,id2"`` (or a list; LLaMA-Factory's ``npu_fused_*`` ids too) = those. Returns (and logs) a KernelReport
    of what was applied and skipped, and why. With "auto", an unsupported model type is a warning and nothing is
    patched. Off switches (each kernel they name is skipped, the report saying by which switch):
    ``disable_kernels="id1,id2"``, ``use_fused_<op>=False``, and the ``ASCENDC_OPS_DISABLE`` environment variable."""
    ids, explicit = _parse_include(include_kernels)
    disabled = _disabled(
        disable_kernels,
        dict(
            use_fused_rope=use_fused_rope,
            use_fused_rms_norm=use_fused_rms_norm,
            use_fused_swiglu=use_fused_swiglu,
            use_fused_moe=use_fused_moe,
            use_fused_add_rms_norm=use_fused_add_rms_norm,
            use_fused_gated_rms_norm=use_fused_gated_rms_norm,
        ),
    )
    report = KernelReport(model_type(model), model_backend(model))
    auto = ids is None
    for k in ids if ids is not None else list(KERNELS):
        _apply_one(KERNELS[k], model, report, disabled)
    if auto and report.applied:  # a kind of part this model does not have is no news once something applied
        for k in report.absent:
            report.skipped.pop(k, None)
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
    ids = list(state) if kernel_ids is None else [ALIASES.get(k, k) for k in _split_ids(kernel_ids)]
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
    "ALIASES",
    "DISABLE_ENV",
    "KERNELS",
    "Found",
    "Kernel",
    "KernelReport",
    "KernelSkip",
    "apply_default_kernels",
    "apply_kernel",
    "applied_kernels",
    "canonical_id",
    "list_kernels",
    "register_kernel",
    "revert_kernels",
]
