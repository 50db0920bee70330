"""Runs the C++ RMSNorm tiling unit tests (tests/cpp/test_norm_tiling.cpp): 910B 40/48 cores and the CPU twin,
single-pass and split-row."""
import subprocess

from conftest import BUILD

BINARY = BUILD / "tests" / "test_norm_tiling"


def test_norm_tiling_unit_tests_pass():
    result = subprocess.run([str(BINARY)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith(" 0 failed"), result.stdout
