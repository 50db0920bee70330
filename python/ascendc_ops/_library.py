"""Loads the compiled op library, saying plainly what to do when it is missing or stale."""
from __future__ import annotations

import os
from pathlib import Path

import torch

from . import _isa

BUILT_FOR_TORCH = "2.13.0"
# ASCENDC_OPS_LIBRARY points at a _C.so from another build tree (e.g. a second CMake build dir) and
# bypasses the ISA choice; otherwise the widest ISA path this CPU runs (python/ascendc_ops/_isa.py).
LIBRARY = Path(os.environ.get("ASCENDC_OPS_LIBRARY") or _isa.choose(Path(__file__).resolve().parent)[1])


def load() -> Path:
    if not torch.__version__.startswith(BUILT_FOR_TORCH):
        raise ImportError(
            f"ascendc_ops is built for torch {BUILT_FOR_TORCH}, but torch {torch.__version__} is installed; "
            f"run `pip install torch=={BUILT_FOR_TORCH}` or rebuild with ./build.sh"
        )
    if not LIBRARY.exists():
        raise ImportError(
            f"ascendc_ops: the compiled library {LIBRARY.name} is not built; run ./build.sh in the "
            "repository root (it builds the CPU twin, the kernels and the torch bindings)"
        )
    torch.ops.load_library(str(LIBRARY))
    return LIBRARY


def isa() -> str:
    """The ISA path of the loaded library: avx2, avx512, avx512bf16, native or generic."""
    return str(torch.ops.ascendc_ops.isa())


def backends() -> list[str]:
    """What this build can run on: 'cpu-twin' always, 'npu' when built with CANN and torch_npu."""
    return list(torch.ops.ascendc_ops.backends())
