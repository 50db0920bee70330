"""Which kernels a call applies and which it leaves off: ``include_kernels``, and the off switches
(``ASCENDC_OPS_DISABLE``, ``disable_kernels``, ``use_fused_*=False``), each resolved to our ids before anything
is patched, so an unknown id fails the call first."""

from __future__ import annotations

import os

from .registry import USE_FLAGS, canonical_id

# The process-wide off switch: comma-separated kernel ids (or aliases), read at every apply call.
DISABLE_ENV = "ASCENDC_OPS_DISABLE"


def split_ids(ids) -> list[str]:
    """``"id1, id2"`` or a sequence of ids -> the ids."""
    if isinstance(ids, str):
        return [s.strip() for s in ids.split(",") if s.strip()]
    return list(ids)


def disabled(disable_kernels=None, use_flags: dict | None = None) -> dict[str, str]:
    """{our id: which switch turned it off}, from ASCENDC_OPS_DISABLE, disable_kernels and use_fused_*=False.
    Unknown ids raise ValueError naming the switch, an unknown use_fused_* TypeError (a keyword no function has)."""
    off: dict[str, str] = {}
    sources = [(f"{DISABLE_ENV}=", os.environ.get(DISABLE_ENV, "")), ("disable_kernels=", disable_kernels or "")]
    for name, raw in sources:
        ids = split_ids(raw)
        switch = name + ",".join(ids)
        for k in ids:
            try:
                off.setdefault(canonical_id(k), switch)
            except ValueError as e:
                raise ValueError(f"{switch}: {e}") from None
    for flag, value in (use_flags or {}).items():  # None: not given; True: leave it on
        if flag not in USE_FLAGS:
            raise TypeError(f"unexpected keyword argument {flag!r}; the switches are {', '.join(USE_FLAGS)}")
        if value is not None and not value:
            off.setdefault(USE_FLAGS[flag], f"{flag}=False")
    return off


def parse_include(include_kernels) -> list[str] | None:
    """-> our ids, each once, or None for 'auto' (every kernel that supports the model)."""
    if include_kernels is None or include_kernels is False:
        return []
    if include_kernels is True or (isinstance(include_kernels, str) and include_kernels.strip().lower() == "auto"):
        return None
    # unknown ids fail before anything is patched; aliases become our ids, each kernel once
    return list(dict.fromkeys(canonical_id(k) for k in split_ids(include_kernels)))
