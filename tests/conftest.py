"""Shared pytest setup: the package on sys.path, and seeded RNGs so every test sees fixed inputs.

Tests live by area, mirroring the source tree (ops/, twin/, harness/, patching/, distributed/, npu/, package/,
cpp/), and a family's test files carry its key (test_rms_norm*.py); tests/ and every area directory go on
sys.path, so the shared helpers here (accuracy.py, conftest.py) and a module of another area (e.g.
patching/test_patching.py's tiny models) import by their plain names from anywhere. Test file
names stay unique across areas (pytest imports them by basename)."""

from __future__ import annotations

import os
import re
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
PYTHON_DIR = ROOT / "python"
# The CMake build tree holding the C++ test binaries (ASCENDC_OPS_BUILD_DIR for a second tree).
BUILD = Path(os.environ.get("ASCENDC_OPS_BUILD_DIR") or ROOT / "build")
TESTS_DIR = Path(__file__).resolve().parent
TEST_DIRS = [TESTS_DIR] + sorted(d for d in TESTS_DIR.iterdir() if d.is_dir() and any(d.glob("test_*.py")))
for directory in reversed([PYTHON_DIR, *TEST_DIRS]):
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))


def kernel_library(library: str, namespace: str | None = None):
    """The C++ test kernels of <build>/tests/lib<library>.so (tests/cpp/CMakeLists.txt), loaded: the torch.ops
    namespace they register (by default the library's name)."""
    torch.ops.load_library(str(BUILD / "tests" / f"lib{library}.so"))
    return getattr(torch.ops, namespace or library)


def proto_dtypes(op: str, *inputs: str) -> tuple:
    """The dtype combinations op_proto/<family>/<op>.json declares over these inputs, in its order, as torch
    dtypes: e.g. rms_norm's (x, gamma) pairs."""
    from ascendc_ops import op_proto

    types = {t.name: t.types for t in op_proto.load_all()[op].inputs}
    return tuple(zip(*([getattr(torch, op_proto.DTYPES[ty][0]) for ty in types[name]] for name in inputs), strict=True))


def rule_error(call, kernel: str, rule: str, detail: str = "") -> str:
    """The twin's error from call(), which must fail: it names the kernel, its block and the rule in brackets, and
    matches detail (a regex); returned for any further check."""
    with pytest.raises(RuntimeError) as err:
        call()
    message = str(err.value)
    assert f"kernel '{kernel}' block " in message and f"[{rule}]" in message, message
    assert re.search(detail, message), message
    return message


# Every kernel the tests launch runs under the twin's sanitizer (racecheck, synccheck, initcheck,
# multi-core overlap); ASCENDC_TWIN_SANITIZE=0 in the environment turns it off.
os.environ.setdefault("ASCENDC_TWIN_SANITIZE", "1")


# Files renamed to carry their family's key -> the name their tests were seeded by before.
SEEDED_AS = {
    "test_rms_norm.py": "test_norm.py",
    "test_gemma_rms_norm.py": "test_gemma_norm.py",
    "test_gated_rms_norm.py": "test_gated_norm.py",
    "test_grouped_matmul_bias.py": "test_gmm_bias.py",
    "test_grouped_matmul.py": "test_moe_ops.py",
    "test_moe_routing.py": "test_moe_ops.py",
    "test_gated_rms_norm_patching.py": "test_gated_norm_patching.py",
}


def seed_id(nodeid: str) -> str:
    """tests/<area>/<file>::name -> tests/<file>::name (other ids unchanged), under the file's former name if
    it was renamed (SEEDED_AS)."""
    path, sep, name = nodeid.partition("::")
    parts = path.split("/")
    if len(parts) == 3 and parts[0] == "tests":
        path = f"tests/{SEEDED_AS.get(parts[2], parts[2])}"
    return path + sep + name


@pytest.fixture(autouse=True)
def seed_rngs(request):
    """Seed torch and NumPy from the test id: reproducible, and different across parametrized cases. The id is
    taken without the test's area directory (a test of tests/<area>/ seeds as if its file were in tests/ itself,
    where the tests were before they moved into areas, and under a renamed file's former name), so moving or
    renaming a file never changes its inputs."""
    seed = zlib.crc32(seed_id(request.node.nodeid).encode())
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)
    yield seed
