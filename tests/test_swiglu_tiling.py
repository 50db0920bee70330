"""Runs the SwiGLU tiling unit tests (tests/cpp/test_swiglu_tiling.cpp): tiling keys, block counts, tile
sizes and the UB budget for the 910B with 40 and 48 vector cores and for the CPU twin."""
import subprocess

from conftest import BUILD

BINARY = BUILD / "tests" / "test_swiglu_tiling"


def test_swiglu_tiling_unit_tests_pass():
    result = subprocess.run([str(BINARY)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith(" 0 failed"), result.stdout
