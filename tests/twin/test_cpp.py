"""Runs the C++ tests once, through CTest (tests/cpp/CMakeLists.txt registers each test executable): tiling
keys, block counts, tile sizes and the UB budget for the 910B with 40 and 48 vector cores and for the CPU
twin, one test per family (test_<family>_tiling), the twin's Matmul API and sort (test_twin_cube_sort)
and the cube tiling rules (test_cube_tiling). `ctest --test-dir build --output-on-failure` runs the same by hand."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD

pytestmark = pytest.mark.cpp

FAMILIES = [p.name for p in (Path(__file__).resolve().parents[2] / "op_proto").iterdir() if p.is_dir()]
EXPECTED = {f"test_{family}_tiling" for family in FAMILIES} | {"test_twin_cube_sort", "test_cube_tiling"}


def ctest_command() -> str:
    """The ctest of the CMake that configured BUILD (its cache names it), else the one on PATH."""
    cache = BUILD / "CMakeCache.txt"
    if cache.exists():
        m = re.search(r"^CMAKE_CTEST_COMMAND:INTERNAL=(.+)$", cache.read_text(), re.M)
        if m:
            return m.group(1)
    return shutil.which("ctest") or "ctest"


def test_cpp_tests_pass_under_ctest():
    result = subprocess.run(
        [ctest_command(), "--test-dir", str(BUILD), "--output-on-failure", "--no-tests=error"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    ran = set(re.findall(r"Test\s+#\d+: (\S+) \.+\s+Passed", result.stdout))
    assert EXPECTED <= ran, out
