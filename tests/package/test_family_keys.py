"""Every op family has one key in every layer (docs/architecture.md): `git ls-files | grep <family>` lists
the family whole. The families and their ops come from op_proto/<family>/<op>.json (op_proto.families());
a tracked file whose path names one of a family's ops must carry that family's key, so a new file named
by its op alone (a test_rotary_mul.py, a rotary_mul.json outside op_proto/rope/) fails here."""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
from pathlib import Path

import pytest

from ascendc_ops import op_proto

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = op_proto.families(ROOT / "op_proto")
# Where every family has files; {f} is the family key. `*` also matches "/" (fnmatch).
LAYERS = [
    "op_proto/{f}/*.json",
    "tiling/{f}_problem.h",
    "tiling/{f}_tiling*.h",
    "tiling/{f}_tiling.cpp",
    "csrc/kernels/{f}*.cpp",
    "csrc/kernels/op_package/{f}/*.cpp",
    "csrc/op_host/{f}/*.cpp",
    "csrc/op_host/{f}/{f}_host.h",
    "csrc/torch/{f}_ops.cpp",
    "csrc/torch/npu/{f}_npu.cpp",
    "python/ascendc_ops/ops/{f}.py",
    "python/ascendc_ops/ops/{f}_reference.py",
    "python/ascendc_ops/harness/*{f}.py",
    "cases/{f}/*.json",
    "tests/ops/test_{f}*.py",
    "tests/cpp/test_{f}_tiling.cpp",
]


def tracked() -> list[str]:
    if not shutil.which("git") or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def misnamed(paths: list[str], families: dict[str, list[str]]) -> list[str]:
    """Paths that name an op of a family without the family's key."""
    return [
        f"{path}: names {op} but not its family {family}"
        for path in paths
        for family, ops in families.items()
        for op in ops
        if op in path and family not in path
    ]


def test_families_are_the_op_proto_folders():
    assert len(FAMILIES) >= 5 and all(FAMILIES.values()), FAMILIES
    assert sorted(op for ops in FAMILIES.values() for op in ops) == sorted(op_proto.load_all(ROOT / "op_proto"))


def test_every_file_naming_an_op_carries_its_family_key():
    assert misnamed(tracked(), FAMILIES) == []


def test_a_file_named_by_its_op_alone_is_caught():
    """The rule can fail: the names the families had before their keys were complete."""
    old = ["op_proto/rotary_mul.json", "csrc/op_host/moe_token_permute.cpp", "tests/ops/test_gemma_norm.py"]
    assert misnamed(old, FAMILIES) == [
        "op_proto/rotary_mul.json: names rotary_mul but not its family rope",
        "csrc/op_host/moe_token_permute.cpp: names moe_token_permute but not its family moe_routing",
    ]  # test_gemma_norm.py names no op: only a review sees it


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_key_finds_the_family_in_every_layer(family):
    """`git ls-files | grep <family>` reaches every layer: prototype, tiling, kernels, op package, op_host,
    bindings, NPU launcher, wrapper, reference, harness, cases and tests."""
    found = [p for p in tracked() if family in p]
    missing = [layer for layer in LAYERS if not fnmatch.filter(found, layer.format(f=family))]
    assert missing == [], f"{family}: no tracked file matches {missing}"
    # and every op has its prototype, op_host file and op-package entry under the key (the NPU op package)
    for op in FAMILIES[family]:
        for layer in ("op_proto/{f}/{op}.json", "csrc/op_host/{f}/{op}.cpp", "csrc/kernels/op_package/{f}/{op}.cpp"):
            assert layer.format(f=family, op=op) in found, layer.format(f=family, op=op)
