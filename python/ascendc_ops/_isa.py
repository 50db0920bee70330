"""Which compiled library to load: the build has one per ISA path (cmake/isa_paths.cmake) and the
CPU this process runs on picks the widest it supports; ASCENDC_OPS_ISA=<path> forces a narrower one.

Every path computes the same bits (the twin fixes its own rounding; see tests/twin/test_isa_paths.py):
the choice is about speed only, and the build machine's CPU plays no part in it.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

ENV = "ASCENDC_OPS_ISA"
# how the twin's cube multiplies fp16/bf16 blocks (csrc/torch/grouped_matmul_ops.cpp NativeGemm, which reads it)
CUBE_GEMM_ENV, CUBE_GEMMS = "ASCENDC_OPS_CUBE_GEMM", ("widened", "native")
# narrow to wide: path -> (library file, CPU features it needs, as torch.cpu.get_capabilities() names them)
_V3 = ("avx", "avx2", "fma3", "f16c", "bmi", "bmi2", "lzcnt")
_V4 = _V3 + ("avx512_f", "avx512_bw", "avx512_cd", "avx512_dq", "avx512_vl")
PATHS = {
    "avx2": ("_C.so", _V3),
    "avx512": ("_C_avx512.so", _V4),
}
NATIVE = "_C_native.so"  # ASCENDC_OPS_NATIVE=ON: built for the build machine, loaded whenever present
BASELINE = "_C.so"  # the avx2 path on x86-64, the compiler's default target elsewhere
# /proc/cpuinfo spells a few features differently (only read when torch cannot say)
_CPUINFO_NAMES = {
    "fma3": "fma",
    "bmi": "bmi1",
    "lzcnt": "abm",
    "avx512_f": "avx512f",
    "avx512_bw": "avx512bw",
    "avx512_cd": "avx512cd",
    "avx512_dq": "avx512dq",
    "avx512_vl": "avx512vl",
}


class IsaError(ImportError):
    """ASCENDC_OPS_ISA names a path this CPU or this build does not have."""


def is_x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


def cpu_features() -> set[str] | None:
    """The CPU's features by CPUID (torch's cpuinfo, which also checks the OS saves the AVX-512
    registers), else /proc/cpuinfo's flags; None when neither can say."""
    try:
        import torch.cpu

        caps = torch.cpu.get_capabilities()
        return {name for name, on in caps.items() if on is True}
    except (AttributeError, RuntimeError):
        pass
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return None
    have = set(flags.split(":", 1)[1].split())
    names = {f for p in PATHS.values() for f in p[1]}
    return {f for f in names if _CPUINFO_NAMES.get(f, f) in have}


def supported(features: set[str] | None = None) -> list[str]:
    """The ISA paths this CPU runs, narrow to wide (none on a CPU below x86-64-v3 or not x86)."""
    if not is_x86():
        return []
    features = cpu_features() if features is None else features
    if features is None:  # cannot tell: assume the baseline the build requires
        return ["avx2"]
    return [p for p, (_, needs) in PATHS.items() if all(f in features for f in needs)]


def check_cube_gemm() -> None:
    """A misspelt ASCENDC_OPS_CUBE_GEMM is refused at import, not silently taken as the default."""
    value = os.environ.get(CUBE_GEMM_ENV)
    if value and value not in CUBE_GEMMS:
        raise IsaError(f"{CUBE_GEMM_ENV}={value!r}: choose {' or '.join(CUBE_GEMMS)} (default widened)")


def choose(folder: Path, requested: str | None = None, features: set[str] | None = None) -> tuple[str, Path]:
    """(path name, library file) to load from `folder`, for this CPU and ASCENDC_OPS_ISA."""
    check_cube_gemm()
    if requested is None:
        requested = os.environ.get(ENV) or None
    if (folder / NATIVE).exists():
        if requested not in (None, "native"):
            raise IsaError(
                f"{ENV}={requested}: this is a native build (ASCENDC_OPS_NATIVE=ON, {NATIVE}), which has "
                "only the build machine's path; rebuild without ASCENDC_OPS_NATIVE for the ISA paths"
            )
        return "native", folder / NATIVE
    built = [p for p, (lib, _) in PATHS.items() if (folder / lib).exists()]
    if not is_x86():
        if requested not in (None, "generic"):
            raise IsaError(f"{ENV}={requested}: the ISA paths are x86-64 only; this CPU is {platform.machine()}")
        return "generic", folder / BASELINE
    features = cpu_features() if features is None else features
    cpu = supported(features)
    if requested is not None:
        if requested not in PATHS:
            raise IsaError(f"{ENV}={requested!r} is not an ISA path; choose one of {', '.join(PATHS)}")
        if requested not in cpu:
            missing = [f for f in PATHS[requested][1] if f not in (features or ())]
            raise IsaError(
                f"{ENV}={requested}: this CPU lacks {', '.join(missing)}; "
                f"it runs {', '.join(cpu) or 'none of the ISA paths'}"
            )
        if requested not in built:
            raise IsaError(
                f"{ENV}={requested}: this build has no {PATHS[requested][0]} (built: {', '.join(built)}; "
                "ASCENDC_OPS_WIDE_PATHS=OFF or a compiler without the flags)"
            )
        return requested, folder / PATHS[requested][0]
    if not cpu:
        raise IsaError(
            "ascendc_ops: this CPU lacks AVX2/FMA/F16C (x86-64-v3), which the portable build needs; "
            "build on this machine with ASCENDC_OPS_NATIVE=1 ./build.sh"
        )
    usable = [p for p in cpu if p in built] or ["avx2"]  # the baseline file's absence is reported by the loader
    return usable[-1], folder / PATHS[usable[-1]][0]
