"""Installs into a real environment: version ranges in the metadata (pins only in requirements.txt), the
torch the library was compiled against recorded at build time and checked at import, and the HF patching's
reason on a transformers it does not support. (tools/wheel_check.sh installs the built wheel for real.)"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
import tomllib
import torch

import ascendc_ops
from ascendc_ops import _library

ROOT = Path(__file__).resolve().parents[2]


def test_metadata_declares_ranges_not_pins():
    reqs = importlib.metadata.requires("ascendc-ops")
    assert not [r for r in reqs if "==" in r.split(";")[0]], reqs
    torch_req = next(r for r in reqs if r.startswith("torch"))
    assert torch_req == "torch>=2.4", torch_req  # register_fake / register_autograd / opcheck: torch 2.4
    hf = [r for r in reqs if 'extra == "hf"' in r]
    assert [r.split(";")[0].strip() for r in hf] == ["transformers>=4.55"], reqs


def test_hf_extra_admits_llama_factory_range_and_ci_versions():
    packaging = pytest.importorskip("packaging.specifiers")
    req = next(r for r in importlib.metadata.requires("ascendc-ops") if r.startswith("transformers"))
    spec = packaging.SpecifierSet(req.split(";")[0].removeprefix("transformers"))
    # LLaMA-Factory: transformers>=4.55.0,<=5.8.0; CI: 5.8.0 (tools/wheel_check.sh) and requirements.txt's
    pinned = next(
        line.split("==")[1]
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.startswith("transformers==")
    )
    for v in ("4.55.0", "4.57.6", "5.8.0", pinned):
        assert v in spec, v
    assert "4.54.1" not in spec


def test_build_requires_no_torch():
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    assert not [r for r in build if r.startswith("torch")], build


def test_record_is_the_torch_compiled_against():
    # this build compiled in this venv: the record is written next to the library it loaded
    assert _library.TORCH_RECORD.parent == Path(ascendc_ops.__file__).resolve().parent
    assert _library.TORCH_RECORD.read_text().strip() == torch.__version__


def test_torch_mismatch_says_what_and_how():
    assert _library.torch_mismatch("2.13.0+cpu", "2.13.0+cu126") is None  # local tag: same C++ API
    assert _library.torch_mismatch("2.13.0", "2.13.0") is None
    why = _library.torch_mismatch("2.13.0+cpu", "2.6.0")
    assert "compiled against torch 2.13.0+cpu" in why and "torch 2.6.0 is installed" in why
    assert "--no-build-isolation" in why
    assert "missing" in _library.torch_mismatch(None, "2.13.0")
    assert _library.torch_mismatch("2.13.1", "2.13.0") is not None


def test_import_refuses_another_torch(monkeypatch):
    monkeypatch.setattr(torch, "__version__", "2.6.0+cpu")
    with pytest.raises(ImportError, match="compiled against torch .* but torch 2.6.0"):
        _library.load()
