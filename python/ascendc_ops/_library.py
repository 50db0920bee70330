"""Loads the compiled op library, saying plainly what to do when it is missing or stale."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from . import _isa

# Written by setup.py when the library is compiled: the torch.__version__ it was compiled against. The record
# is the package's own; an ASCENDC_OPS_LIBRARY build (tools/sanitize_host.sh) uses the same venv's torch.
TORCH_RECORD = Path(__file__).resolve().parent / "_C.torch_version"
# ASCENDC_OPS_LIBRARY points at a _C.so from another build tree (e.g. a second CMake build dir) and
# bypasses the ISA choice; otherwise the widest ISA path this CPU runs (python/ascendc_ops/_isa.py).
LIBRARY = Path(os.environ.get("ASCENDC_OPS_LIBRARY") or _isa.choose(Path(__file__).resolve().parent)[1])


def torch_mismatch(built: str | None, running: str) -> str | None:
    """Why a library compiled against torch ``built`` cannot load into torch ``running`` (None: it can).
    The local tag (+cpu, +cu121) is not compared: same release, same C++ API."""
    rebuild = (
        "reinstall ascendc_ops against the installed torch (`pip install --no-build-isolation "
        "--force-reinstall --no-deps .` from its source, or ./build.sh in a checkout)"
    )
    if built is None:
        return f"ascendc_ops: {TORCH_RECORD.name} (the torch it was compiled against) is missing; {rebuild}"
    if built.split("+")[0] != running.split("+")[0]:
        return (
            f"ascendc_ops was compiled against torch {built}, but torch {running} is installed: a C++ "
            f"extension only loads into the torch it was compiled against; {rebuild}, or install torch {built}"
        )
    return None


def load() -> Path:
    if not LIBRARY.exists():
        raise ImportError(
            f"ascendc_ops: the compiled library {LIBRARY.name} is not built; run ./build.sh in the "
            "repository root (it builds the CPU twin, the kernels and the torch bindings)"
        )
    why = torch_mismatch(TORCH_RECORD.read_text().strip() if TORCH_RECORD.exists() else None, torch.__version__)
    if why:
        raise ImportError(why)
    torch.ops.load_library(str(LIBRARY))
    return LIBRARY


def isa() -> str:
    """The ISA path of the loaded library: avx2, avx512, native or generic."""
    return str(torch.ops.ascendc_ops.isa())


def backends() -> list[str]:
    """What this process can run the kernels on: 'cpu-twin' always, 'npu' once PrivateUse1 launchers are
    registered (an NPU build with CANN and torch_npu, or ascendc_ops.testing.simulated_npu()). The names
    are ascendc_ops._backends.CPU_TWIN / NPU."""
    return list(torch.ops.ascendc_ops.backends())
