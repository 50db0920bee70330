"""The package face (ascendc_ops/__init__.py) only re-exports: patching and the npu package import what they use
from the modules that define it, so they load, in either order, under a package whose face defines nothing; the
npu package's modules import no sibling but its errors module."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

BARE_FACE = r"""
import importlib.util, sys, types
spec = importlib.util.find_spec("ascendc_ops")  # a top-level find: the face's code does not run
face = types.ModuleType("ascendc_ops")
face.__path__, face.__spec__ = spec.submodule_search_locations, spec
sys.modules["ascendc_ops"] = face
import ascendc_ops._library
ascendc_ops._library.load()
for name in sys.argv[1:]:
    importlib.import_module(name)
import ascendc_ops.npu as npu, ascendc_ops.patching as K
assert npu.npu_rms_norm and K.apply_default_kernels and not hasattr(face, "rms_norm")
"""


@pytest.mark.parametrize("first", ["ascendc_ops.npu", "ascendc_ops.patching"])
def test_patching_and_npu_load_under_a_bare_face(first):
    proc = subprocess.run([sys.executable, "-c", BARE_FACE, first], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


NPU = Path(__file__).resolve().parents[2] / "python" / "ascendc_ops" / "npu"


def npu_imports(path: Path) -> set[str]:
    """The modules of ascendc_ops.npu one of its files imports (relative `from .x import`), read with ast."""
    tree = ast.parse(path.read_text(), str(path))
    return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module}


def test_npu_modules_import_only_errors_from_their_package():
    """One module per family key under ascendc_ops.npu, each importing the ops it wraps and `errors` only: no
    circle (the face, __init__.py, imports them all)."""
    families = sorted(p.stem for p in NPU.glob("*.py") if p.stem not in ("__init__", "errors"))
    assert families == sorted(
        ["attention", "cross_entropy", "grouped_matmul", "moe_routing", "optimizer", "rms_norm", "rope", "swiglu"]
    )
    assert {f: npu_imports(NPU / f"{f}.py") - {"errors"} for f in families} == {f: set() for f in families}
    assert npu_imports(NPU / "errors.py") == set()
    assert npu_imports(NPU / "__init__.py") == set(families)
