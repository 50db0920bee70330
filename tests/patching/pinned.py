"""The transformers release requirements.txt pins, which the coverage table and the per-family tests are written
against (their model types, config fields and rotary functions). On any other release (tools/wheel_check.sh runs
the oldest LLaMA-Factory allows, and 4.x) those tests skip; the generic patching tests still run there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

try:
    import transformers
except ImportError:  # the test modules skip on their own importorskip
    transformers = None

_REQUIREMENTS = Path(__file__).resolve().parents[2] / "requirements.txt"
PINNED = (
    re.search(r"^transformers==(\S+)", _REQUIREMENTS.read_text(), re.M).group(1) if _REQUIREMENTS.exists() else None
)
INSTALLED = getattr(transformers, "__version__", None)

only_pinned = pytest.mark.skipif(
    INSTALLED != PINNED, reason=f"written against transformers {PINNED} (requirements.txt); installed {INSTALLED}"
)
