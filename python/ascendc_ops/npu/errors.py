"""The errors ascendc_ops.npu raises: torch_npu's argument checks raise RuntimeError (TORCH_CHECK); ours raise
that and the kind that names the fault, so callers catching either see them."""

from __future__ import annotations

_ERRORS = {kind: type(kind.__name__, (RuntimeError, kind), {}) for kind in (ValueError, TypeError)}


def fail(kind, op: str, msg: str):
    """Raise kind (ValueError and TypeError as their RuntimeError-compatible forms) as "op: msg"."""
    raise _ERRORS.get(kind, kind)(f"{op}: {msg}")
