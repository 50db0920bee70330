"""The package face (ascendc_ops/__init__.py) only re-exports: patching and npu.py import what they use from
the modules that define it, so they load, in either order, under a package whose face defines nothing."""

import subprocess
import sys

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
