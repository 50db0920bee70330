"""Loads the compiled op library, saying plainly what to do when it is missing or stale."""
from __future__ import annotations

import os
from pathlib import Path

import torch

BUILT_FOR_TORCH = "2.13.0"
# ASCENDC_OPS_LIBRARY points at a _C.so from another build tree (e.g. a second CMake build dir).
LIBRARY = Path(os.environ.get("ASCENDC_OPS_LIBRARY") or Path(__file__).resolve().parent / "_C.so")


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


def backends() -> list[str]:
    """What this process can run the kernels on: 'cpu-twin' always, 'npu' once PrivateUse1 launchers are
    registered (an NPU build with CANN and torch_npu, or ascendc_ops.testing.simulated_npu()). The names
    are ascendc_ops._backends.CPU_TWIN / NPU."""
    return list(torch.ops.ascendc_ops.backends())
