"""What an apply call did: the KernelReport it returns and logs."""

from __future__ import annotations

import dataclasses
import logging

# the package's logger: users and tools set its level by the name they import
logger = logging.getLogger(__package__)


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


def log(report: KernelReport, warn_skips: bool) -> KernelReport:
    logger.info("%s", report)
    if warn_skips:
        for k, why in report.skipped.items():
            logger.warning("ascendc_ops kernel %s skipped: %s", k, why)
    return report
