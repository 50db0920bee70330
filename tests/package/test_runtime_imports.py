"""Model patching runs inside a user's training job: importing it (the registry, the probe, the coverage run) must
not import the CLI harness (verify, bench, the pipeline model), only the runtime module it judges with,
ascendc_ops.precision. Checked in a fresh interpreter, whose sys.modules holds only what the imports pulled in."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
