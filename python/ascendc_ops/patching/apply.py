"""Applying and reverting the registry's kernels on one model instance."""

from __future__ import annotations

from torch import nn

from .._library import backends as _available_backends
from . import moe as _moe
from .base import STATE_ATTR, Found, Kernel, KernelSkip, model_backend, model_type, transformers_unsupported
from .registry import ALIASES, KERNELS, canonical_id, takes_switches
from .report import KernelReport, log, logger
from .switches import disabled as _disabled, parse_include, split_ids


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
    # kernels that route modules count them; others the forwards they set (a config setting: experts routed)
    forwards = sum(r.name == "forward" for r in records)
    report.patched_modules[kernel.id] = (
        kernel.routed(model) if kernel.routed else forwards or _moe.routed_modules(model)
    )


def apply_kernel(kernel_id: str, model: nn.Module) -> KernelReport:
    """Apply one kernel (our id or a LLaMA-Factory alias) to this model instance. Unknown id: ValueError;
    unsupported model/backend, or turned off by ASCENDC_OPS_DISABLE: skipped + warning."""
    kernel = KERNELS[canonical_id(kernel_id)]
    off = _disabled()
    report = KernelReport(model_type(model), model_backend(model))
    _apply_one(kernel, model, report, off)
    return log(report, warn_skips=True)


@takes_switches
def apply_default_kernels(
    model: nn.Module, include_kernels="auto", *, disable_kernels=None, **switches
) -> KernelReport:
    """Apply several kernels: ``"auto"``/True = all that support this model and backend, None/False = nothing,
    ``"id1,id2"`` (or a list; LLaMA-Factory's ``npu_fused_*`` ids too) = those (also the kernels "auto" leaves
    out, ``Kernel.auto``: fused_attention, fused_linear_cross_entropy). Returns (and logs) a KernelReport
    of what was applied and skipped, and why. With "auto", an unsupported model type is a warning and nothing is
    patched. Off switches (each kernel they name is skipped, the report saying by which switch):
    ``disable_kernels="id1,id2"``, ``use_fused_<op>=False`` (each kernel's ``switch``; None or True leave it on),
    and the ``ASCENDC_OPS_DISABLE`` environment variable."""
    ids = parse_include(include_kernels)
    off = _disabled(disable_kernels, switches)
    report = KernelReport(model_type(model), model_backend(model))
    auto = ids is None
    for k in [k for k, kernel in KERNELS.items() if kernel.auto] if auto else ids:
        _apply_one(KERNELS[k], model, report, off)
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
        return log(report, warn_skips=False)
    return log(report, warn_skips=not auto)


def revert_kernels(model: nn.Module, kernel_ids=None) -> list[str]:
    """Undo the kernels applied to this model (all, or the given ids), restoring the original objects exactly.
    Returns the ids reverted."""
    state = model.__dict__.get(STATE_ATTR, {})
    ids = list(state) if kernel_ids is None else [ALIASES.get(k, k) for k in split_ids(kernel_ids)]
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
