"""Runs the C++ tiling unit tests (tests/cpp/test_*tiling.cpp): tiling keys, block counts, tile
sizes and the UB budget for the 910B with 40 and 48 vector cores and for the CPU twin."""
import subprocess

import pytest
from conftest import BUILD

BINARIES = ["test_tiling", "test_swiglu_tiling", "test_norm_tiling"]


@pytest.mark.parametrize("binary", BINARIES)
def test_tiling_unit_tests_pass(binary):
    result = subprocess.run([str(BUILD / "tests" / binary)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith(" 0 failed"), result.stdout
