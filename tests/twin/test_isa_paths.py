"""ISA paths (cmake/isa_paths.cmake, python/ascendc_ops/_isa.py): each path this CPU runs, forced
with ASCENDC_OPS_ISA in a subprocess, gives bit-identical outputs for a fixed set of op calls
(tests/twin/isa_probe.py: rope, rotary_mul, rms_norm, add_rms_norm, swiglu, MoE permute/unpermute,
forward and backward, fp32/fp16/bf16, odd shapes, subnormal results).

Exempt from bit-identity: grouped_matmul, whose GEMM is torch's (at::mm via the twin's GEMM
provider), not arithmetic the twin defines; it is checked against the baseline with assert_close.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import ascendc_ops
from ascendc_ops import _isa

HERE = Path(__file__).resolve().parent
PACKAGE = Path(ascendc_ops.__file__).resolve().parent
BUILT = [p for p, (lib, _) in _isa.PATHS.items() if (PACKAGE / lib).exists()]
RUNNABLE = [p for p in _isa.supported() if p in BUILT]
needs_paths = pytest.mark.skipif(
    bool(os.environ.get("ASCENDC_OPS_LIBRARY")) or (PACKAGE / _isa.NATIVE).exists(),
    reason="ASCENDC_OPS_LIBRARY or a native build: one library, no ISA paths",
)


def run_python(args: list, isa: str | None, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("ASCENDC_OPS_ISA", "ASCENDC_OPS_LIBRARY")}
    if isa is not None:
        env["ASCENDC_OPS_ISA"] = isa
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def probes(tmp_path_factory) -> dict:
    out = {}
    for path in RUNNABLE:
        f = tmp_path_factory.mktemp("isa") / f"{path}.pt"
        p = run_python([str(HERE / "isa_probe.py"), str(f)], path)
        assert p.returncode == 0, p.stderr[-3000:]
        out[path] = torch.load(f)
    return out


@needs_paths
def test_every_runnable_path_is_built():
    """The default build has all three x86 paths, and this CPU runs at least the baseline."""
    if _isa.is_x86():
        assert BUILT == list(_isa.PATHS), f"built: {BUILT}"
        assert RUNNABLE and RUNNABLE[0] == "avx2"


@pytest.mark.slow
@needs_paths
def test_paths_bit_identical(probes):
    if len(probes) < 2:
        pytest.skip(f"this CPU runs only {RUNNABLE}: nothing to compare")
    base_name = RUNNABLE[0]
    base = probes[base_name]["outputs"]
    assert {n.split("/")[0] for n in base} == {
        "rotary_mul_half",
        "rotary_mul_interleave",
        "rope_customer",
        "rms_norm",
        "add_rms_norm",
        "swiglu",
        "moe_permute_unpermute",
        "grouped_matmul",
    }
    assert {n.split("/")[1] for n in base} == {"float32", "float16", "bfloat16"}
    for path, probe in probes.items():
        assert probe["isa"] == path and probe["library"] == _isa.PATHS[path][0]
        assert probe["outputs"].keys() == base.keys()
        differ = []
        for name, ref in base.items():
            got = probe["outputs"][name]
            if name.split("/")[0] in ("grouped_matmul",):
                torch.testing.assert_close(got, ref, msg=f"{path} vs {base_name}: {name}")
            elif not torch.equal(got, ref) or got.dtype != ref.dtype:
                differ.append(name)
        assert not differ, f"{path} differs from {base_name} in {differ}"


def test_probe_sees_subnormal_bf16_results(probes):
    """The probe must reach the case where AVX512-BF16's conversion differs (it flushes subnormals)."""
    if not probes:
        pytest.skip("no runnable path")
    y = next(iter(probes.values()))["outputs"]["swiglu/bfloat16/0"].float()
    tiny = (y != 0) & (y.abs() < torch.finfo(torch.float32).tiny)
    assert tiny.any()


@needs_paths
def test_default_is_the_widest_runnable_path():
    code = "import ascendc_ops, pathlib; print(ascendc_ops.isa(), pathlib.Path(ascendc_ops.library_path).name)"
    p = run_python(["-c", code], None, cwd=HERE.parents[1] / "python")
    assert p.returncode == 0, p.stderr[-2000:]
    isa, lib = p.stdout.split()
    expected = RUNNABLE[-1] if _isa.is_x86() else "generic"
    assert isa == expected and lib == _isa.PATHS.get(isa, (_isa.BASELINE,))[0]


def test_info_reports_the_path():
    p = run_python(["-m", "ascendc_ops", "info"], None, cwd=HERE.parents[1] / "python")
    assert p.returncode == 0, p.stderr[-2000:]
    line = next(line for line in p.stdout.splitlines() if line.startswith("isa:"))
    assert line.split()[1] in (*_isa.PATHS, "native", "generic")


def test_unknown_path_is_a_clear_error():
    p = run_python(["-c", "import ascendc_ops"], "avx9000", cwd=HERE.parents[1] / "python")
    assert p.returncode != 0
    assert "ASCENDC_OPS_ISA='avx9000' is not an ISA path; choose one of avx2, avx512" in p.stderr


@pytest.mark.skipif(not _isa.is_x86(), reason="x86 ISA paths")
@pytest.mark.parametrize("path, cpu", [("avx512", _isa._V3)])
def test_path_the_cpu_lacks_is_a_clear_error(tmp_path, monkeypatch, path, cpu):
    """A CPU without the path's features (given here as a feature set: this CPU may have them all)."""
    monkeypatch.delenv(_isa.ENV, raising=False)  # the default choice, even when the suite runs a forced path
    for p in _isa.PATHS.values():
        (tmp_path / p[0]).touch()
    with pytest.raises(_isa.IsaError, match=rf"ASCENDC_OPS_ISA={path}: this CPU lacks avx512_"):
        _isa.choose(tmp_path, path, features=set(cpu))
    widest = {"avx512": "avx2"}[path]  # what that CPU gets by default
    assert _isa.choose(tmp_path, None, features=set(cpu)) == (widest, tmp_path / _isa.PATHS[widest][0])


@pytest.mark.skipif(not _isa.is_x86(), reason="x86 ISA paths")
def test_cpu_below_the_baseline_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv(_isa.ENV, raising=False)
    (tmp_path / "_C.so").touch()
    with pytest.raises(_isa.IsaError, match="lacks AVX2/FMA/F16C"):
        _isa.choose(tmp_path, None, features={"avx", "sse4_2"})


def test_cpu_features_match_proc_cpuinfo():
    """torch's CPUID view and Linux's flags agree on every feature the paths need."""
    cpuinfo = Path("/proc/cpuinfo")
    if not _isa.is_x86() or not cpuinfo.exists():
        pytest.skip("Linux x86 only")
    flags = set(
        next(line for line in cpuinfo.read_text().splitlines() if line.startswith("flags")).split(":")[1].split()
    )
    names = {f for p in _isa.PATHS.values() for f in p[1]}
    from_flags = {f for f in names if _isa._CPUINFO_NAMES.get(f, f) in flags}
    assert _isa.cpu_features() & names == from_flags
