"""Model patching runs inside a user's training job: importing it (the registry, the probe, the coverage run) must
not import the CLI harness (verify, bench, the pipeline model), only the runtime module it judges with,
ascendc_ops.precision. Checked in a fresh interpreter, whose sys.modules holds only what the imports pulled in."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PATCHING = ("ascendc_ops.patching", "ascendc_ops.patching.probe", "ascendc_ops.patching.coverage")


def loaded_after(*modules: str) -> list[str]:
    """The ascendc_ops modules a fresh interpreter holds after importing `modules` (this process's sys.path)."""
    code = (
        f"import importlib, json, sys\nfor m in {list(modules)!r}: importlib.import_module(m)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('ascendc_ops'))))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(run.stdout.splitlines()[-1])


def harness_modules(loaded: list[str]) -> list[str]:
    return [m for m in loaded if m == "ascendc_ops.harness" or m.startswith("ascendc_ops.harness.")]


def test_importing_patching_imports_no_harness():
    loaded = loaded_after(*PATCHING)
    assert "ascendc_ops.precision" in loaded  # the probe's standard, from the runtime module
    assert harness_modules(loaded) == []


def test_the_check_sees_a_harness_import():
    loaded = loaded_after(*PATCHING, "ascendc_ops.harness.verify.suite")
    assert "ascendc_ops.harness.verify.suite" in harness_modules(loaded)


REGISTRY_CHECK = """
import sys
if {hf_first}:
    import transformers.modeling_utils
import ascendc_ops
print("loaded", "transformers" in sys.modules)
from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from ascendc_ops.patching import attention, moe
assert ALL_ATTENTION_FUNCTIONS.get(attention.ATTN_IMPL) is attention.fused_attention_forward
assert ALL_MASK_ATTENTION_FUNCTIONS.get(attention.ATTN_IMPL) is sdpa_mask
assert ALL_EXPERTS_FUNCTIONS.get(moe.EXPERTS_IMPL) is moe.fused_experts_forward
assert attention.registered() and moe.registered()
print("hook left", any(type(f).__name__ == "_AfterImport" for f in sys.meta_path))
"""


def test_transformers_registries_take_our_names_in_either_import_order():
    """`import ascendc_ops` does not import transformers (3.5 s of CPU per process), yet our attention and experts
    names are in its registries whether transformers was imported before or after us."""
    pytest.importorskip("transformers.integrations.moe")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    for hf_first in (False, True):
        code = REGISTRY_CHECK.format(hf_first=hf_first)
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-2000:]
        assert f"loaded {hf_first}" in run.stdout and "hook left False" in run.stdout, run.stdout
