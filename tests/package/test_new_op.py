"""tools/new_op.py writes what docs/adding-an-op.md lists, each file failing until written: run into a
temporary tree, a new family first, then a second op of it, then an op of an existing family of this tree."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import new_op  # noqa: E402

TABLE_ROW = re.compile(r"^\| `([^`]+)` \| per (op|family) \|", re.M)
MIX_ROW = re.compile(r"^\| `([^`]+)` \| per mix family \|", re.M)


def run(root: Path, family: str, op: str, *options: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(ROOT / "tools/new_op.py"), family, op, "--root", str(root), *options]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def documented() -> dict[str, bool]:
    """The table of docs/adding-an-op.md: path template -> written per op."""
    rows = TABLE_ROW.findall((ROOT / "docs/adding-an-op.md").read_text())
    return {path: kind == "op" for path, kind in rows}


def test_the_doc_lists_exactly_what_the_script_writes():
    names = new_op.Names("<family>", "<op>")
    assert documented() == {path: per_op for path, _, _, per_op in new_op.files(names)}
    # --mix: the same files, and those only a MIX kernel's family has
    mix = {path for path, *_ in new_op.files(names, mix=True)} - set(documented())
    assert set(MIX_ROW.findall((ROOT / "docs/adding-an-op.md").read_text())) == mix


def compiles_once_its_error_line_goes(path: Path) -> None:
    """The compiler stops at the #error; without that line the starting point compiles (its outline is comments)."""
    cxx = subprocess.run(["g++", "-fsyntax-only", "-x", "c++", str(path)], capture_output=True, text=True)
    assert cxx.returncode != 0 and '#error "tools/new_op.py scaffold: ' in cxx.stderr, (path, cxx.stderr)
    body = "".join(line for line in path.read_text().splitlines(keepends=True) if not line.startswith("#error"))
    cxx = subprocess.run(["g++", "-fsyntax-only", "-x", "c++", "-"], input=body, capture_output=True, text=True)
    assert cxx.returncode == 0, (path, cxx.stderr)


def test_a_new_family_gets_every_file_each_failing_until_written(tmp_path):
    result = run(tmp_path, "attention", "flash_attention")
    assert result.returncode == 0, result.stderr
    expected = [path for path, *_ in new_op.files(new_op.Names("attention", "flash_attention"))]
    assert "tests/ops/test_flash_attention.py" in expected  # the op's name holds the key
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(expected)
    for path in expected:
        assert f"wrote  {path}: " in result.stdout, path
        text = (tmp_path / path).read_text()
        if path.endswith((".cpp", ".h")):  # the compiler stops at it (CMake builds the .cpp files)
            compiles_once_its_error_line_goes(tmp_path / path)
        elif path.startswith("python/"):
            assert "\nraise NotImplementedError(" in text, path
    (proto,) = json.loads((tmp_path / "op_proto/attention/flash_attention.json").read_text())
    assert proto["op"] == "FlashAttention" and [d["name"] for d in proto["output_desc"]] == ["y"]
    assert json.loads((tmp_path / "cases/attention/flash_attention.json").read_text()) == []
    # the generated test fails, and so does importing the generated module
    test = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "tests/ops")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert test.returncode == 1 and "1 failed" in test.stdout, test.stdout
    module = subprocess.run(
        [sys.executable, str(tmp_path / "python/ascendc_ops/ops/attention.py")], capture_output=True
    )
    assert module.returncode != 0 and b"NotImplementedError" in module.stderr
    for shared, _ in new_op.SHARED:
        assert f"edit   {shared}: " in result.stdout

    # a second op of the family: its per-op files only, the family's files to extend named
    second = run(tmp_path, "attention", "flash_attention_grad")
    assert second.returncode == 0, second.stderr
    assert second.stdout.count("wrote  ") == sum(documented().values())
    assert "extend tiling/attention_problem.h" in second.stdout and "edit   " not in second.stdout
    again = run(tmp_path, "attention", "flash_attention_grad")
    assert again.returncode != 0 and "has a prototype already" in again.stderr


def test_a_mix_family_gets_its_cube_and_vector_sides(tmp_path):
    result = run(tmp_path, "cross_entropy", "cross_entropy", "--mix")
    assert result.returncode == 0, result.stderr
    expected = [path for path, *_ in new_op.files(new_op.Names("cross_entropy", "cross_entropy"), mix=True)]
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(expected)
    for side in (
        "csrc/kernels/cross_entropy_cube.h",
        "csrc/kernels/cross_entropy_vector.h",
        "csrc/kernels/cross_entropy_task.h",
        "tiling/cross_entropy_buffers.h",
    ):
        assert f"wrote  {side}: " in result.stdout
    for path in expected:
        if path.endswith((".cpp", ".h")):
            compiles_once_its_error_line_goes(tmp_path / path)
    entry = (tmp_path / "csrc/kernels/cross_entropy.cpp").read_text()
    for part in (
        "KERNEL_TYPE_MIX_AIC_1_2",
        "ASCEND_IS_AIC",
        "ASCEND_IS_AIV",
        "GetUserWorkspace",
        "CROSS_ENTROPY_PARAMS",
    ):
        assert part in entry, part
    assert "LaunchTypedOnTwin(KERNEL_TYPE_MIX_AIC_1_2" in result.stdout and "TwinCubePlatform()" in result.stdout
    assert "CrossCoreWaitFlag" in (tmp_path / "csrc/kernels/cross_entropy_vector.h").read_text()
    # its next op gets the per-op files; a second --mix on the family is refused
    again = run(tmp_path, "cross_entropy", "cross_entropy_grad", "--mix")
    assert again.returncode != 0 and "--mix starts a family" in again.stderr
    second = run(tmp_path, "cross_entropy", "cross_entropy_grad")
    assert second.returncode == 0 and "extend csrc/kernels/cross_entropy_cube.h" in second.stdout


def test_an_op_of_an_existing_family_names_its_files(tmp_path):
    shutil.copytree(ROOT / "op_proto", tmp_path / "op_proto")
    for d in ("tiling", "csrc/kernels"):
        shutil.copytree(ROOT / d, tmp_path / d, ignore=shutil.ignore_patterns("op_package"))
    result = run(tmp_path, "moe_routing", "moe_token_scatter")
    assert result.returncode == 0, result.stderr
    assert "wrote  op_proto/moe_routing/moe_token_scatter.json" in result.stdout
    assert "wrote  tests/ops/test_moe_routing_moe_token_scatter.py" in result.stdout
    # its kernels are csrc/kernels/moe_routing_*.cpp: those are named
    assert "extend csrc/kernels/moe_routing_permute.cpp" in result.stdout
    assert "extend tiling/moe_routing_problem.h" in result.stdout


@pytest.mark.parametrize(("family", "op", "error"), [("Rope", "x", "snake_case"), ("rope", "rotary_mul", "already")])
def test_bad_names_and_existing_ops_are_refused(tmp_path, family, op, error):
    shutil.copytree(ROOT / "op_proto", tmp_path / "op_proto")
    result = run(tmp_path, family, op)
    assert result.returncode != 0 and error in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["op_proto"]  # nothing written


def test_no_case_file_is_left_empty():
    """The scaffold's case file is an empty list: here (and in `ascendc-ops verify --cases`) it fails until
    cases are written."""
    for path in sorted((ROOT / "cases").glob("*/*.json")):
        cases = json.loads(path.read_text())
        assert isinstance(cases, list) and cases, f"{path.relative_to(ROOT)}: no cases"
