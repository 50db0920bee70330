"""The real msopgen generates the NPU op project from op_proto/, and our overlay fits it.

tools/op_project.py (the overlay build.sh uses) runs msopgen from a checkout of Ascend/msopgen
(ASCENDC_MSOPGEN; its templates from hicann/asc-tools, ASCENDC_ASC_TOOLS) on every prototype, one
project for all ops, overlays our sources and checks each replaced file against the generated one
(kernel entry, tiling struct, OpDef); then every op_host and op_kernel file of the overlaid project
is compiled against CANN's public headers in the project's own layout (tools/check_cann.py
--project), and the project's CMake is configured as far as it goes without a toolkit.
Skipped without the checkouts (docs/npu.md says how to fetch them)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import op_project  # noqa: E402

MSOPGEN = os.environ.get("ASCENDC_MSOPGEN")
HEADERS = os.environ.get("ASCENDC_ASC_DEVKIT") and os.environ.get("ASCENDC_METADEF")

pytestmark = [
    pytest.mark.needs_cann,
    pytest.mark.skipif(not MSOPGEN, reason="ASCENDC_MSOPGEN not set (no msopgen checkout here)"),
]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    out = tmp_path_factory.mktemp("msopgen") / "op_project"
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools/op_project.py"), "--out", str(out), "--no-check"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def test_msopgen_generates_every_op_and_the_overlay_fits(project):
    generated = project.parent / "op_project.generated"
    ops = [op_project.snake(p["op"]) for p in op_project.protos()]
    assert sorted(p.stem for p in generated.glob("op_kernel/*.cpp")) == sorted(ops)
    for op in ops:
        for f in (f"op_host/{op}.cpp", f"op_kernel/{op}.cpp", f"op_kernel/{op}_tiling.h"):
            assert (generated / f).is_file(), f
    # msopgen's own files are stubs (TODO bodies, a placeholder tiling struct), ours replace them
    assert "TODO" in (generated / "op_kernel/rms_norm.cpp").read_text()
    assert op_project.check(project, generated) == []
    # the SoC msopgen writes for our compute unit is the Atlas A2 one the OpDefs name
    assert '"ascend910b"' in (project / "CMakePresets.json").read_text()
    assert not (project / "framework").exists()  # -f pytorch: no TensorFlow parser plugins


def test_check_finds_mismatches(project, tmp_path):
    """Each kind of mismatch the check exists for is reported (a check that cannot fail checks nothing)."""
    generated = project.parent / "op_project.generated"
    bad = tmp_path / "op_project"
    shutil.copytree(project, bad)
    k = bad / "op_kernel/swiglu.cpp"
    k.write_text(k.read_text().replace("GM_ADDR y,", "GM_ADDR out,", 1))
    h = bad / "op_host/rms_norm_def.h"
    h.write_text(h.read_text().replace('Attr("epsilon")', 'Attr("eps")', 1))
    t = bad / "op_kernel/rope_customer_tiling.h"
    t.write_text("#pragma once\n")
    (bad / "op_host/stub.h").write_text("// TODO: user tiling\n")
    shutil.copy(generated / "op_host/rotary_mul.cpp", bad / "op_host/rotary_mul.cpp")
    problems = "\n".join(op_project.check(bad, generated))
    assert "Swiglu: kernel entry" in problems, problems
    assert "RmsNorm: OpDef attrs" in problems, problems
    assert "RopeCustomer: op_kernel/rope_customer_tiling.h does not define RopeTilingData" in problems, problems
    assert "stub left: op_host/stub.h" in problems, problems
    assert "RotaryMul: op_host/rotary_mul.cpp is msopgen's, not replaced" in problems, problems


@pytest.mark.slow
@pytest.mark.skipif(not HEADERS, reason="ASCENDC_ASC_DEVKIT / ASCENDC_METADEF not set (no CANN headers here)")
def test_overlaid_project_compiles_against_public_headers(project):
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools/check_cann.py"), "--project", str(project)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    for f in [*project.glob("op_host/*.cpp"), *project.glob("op_kernel/*.cpp")]:
        assert f"PASS  op_project/{f.parent.name}/{f.name}" in out, out
    assert "FAIL" not in out, out


@pytest.mark.skipif(not os.environ.get("ASCENDC_ASC_DEVKIT"), reason="ASCENDC_ASC_DEVKIT not set")
@pytest.mark.skipif(not shutil.which("cmake"), reason="no cmake")
def test_cmake_configures_up_to_the_toolkit(project, tmp_path):
    """With asc-devkit's public cmake modules and no toolkit (an empty ASCEND_HOME_PATH), the project's
    CMake gets through find_package(ASC), npu_op_package and the presets' variables, and stops in
    npu_op_code_gen: that compiles op_host/ at configure time against the toolkit's include/ (absent),
    links it with the toolkit's libexe_graph / libregister / libtiling_api and runs its closed
    opbuild to write the aclnn sources -- none of which is public."""
    adk = Path(os.environ["ASCENDC_ASC_DEVKIT"]) / "cmake/asc"
    home = tmp_path / "no_toolkit"
    home.mkdir()
    result = subprocess.run(
        [
            "cmake",
            "-S",
            str(project),
            "-B",
            str(tmp_path / "build"),
            "-Dvendor_name=ascendc_ops",
            "-DASCEND_COMPUTE_UNIT=ascend910b",
            f"-DASC_DIR={adk}",
            f"-DCUSTOM_ASC_CMAKE_PATH={adk}",
            f"-DASCEND_PYTHON_EXECUTABLE={sys.executable}",
            f"-DASCEND_CANN_PACKAGE_PATH={home}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "ASCEND_HOME_PATH": str(home)},
    )
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "opbuild run failed" in out and "op_host/CMakeLists.txt" in out, out  # npu_op_code_gen
    make = (tmp_path / "build/autogen/ascendc_all_ops.make").read_text()
    assert "-std=c++11 -std=c++17" in make  # our C++17 wins over CANN's fixed -std=c++11
    for op in op_project.protos():
        assert f"op_host/{op_project.snake(op['op'])}.cpp" in make
