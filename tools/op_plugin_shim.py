"""torch_npu as Ascend/op-plugin's tests import it, on ascendc_ops.npu: a pytest plugin (``-p op_plugin_shim``)
that tools/op_plugin_tests.py loads before their files are collected. Written here, not taken from torch_npu:

- ``torch_npu``: the functions ascendc_ops.npu provides (its PROVIDED list, read now, so names added later are
  covered), anything else raising its AttributeError; ``torch_npu.npu`` / ``torch.npu`` with ``synchronize``,
  ``config.allow_internal_format`` and the device name, anything else raising an AttributeError of its own;
- ``torch_npu.testing.testcase`` (TestCase with ``assertRtolEqual``, run_tests),
  ``torch_npu.testing.common_utils`` (SupportedDevices, get_npu_device), ``torch_npu.contrib.transfer_to_npu``.

ASCENDC_OPP_DEVICE picks where "npu" tensors live: ``cpu`` (default: ``.npu()`` and ``.to("npu")`` copy on
the CPU, so the ops run their CPU kernels) or ``sim`` (ascendc_ops.testing's simulated NPU: real "npu"
tensors, the PrivateUse1 launchers). ASCENDC_OPP_UNSKIP=1 also runs what op-plugin skips.
"""

from __future__ import annotations

import functools
import os
import random
import sys
import types
import unittest
from collections.abc import Sequence

import numpy as np
import torch

import ascendc_ops.npu as _npu

DEVICE = os.environ.get("ASCENDC_OPP_DEVICE", "cpu")
# ASCENDC_OPP_UNSKIP=1 also runs what op-plugin skips (unittest.skip) or runs on other SoCs only
UNSKIP = os.environ.get("ASCENDC_OPP_UNSKIP") == "1"
# the SoC the twin and the simulated NPU model (ascendc_ops.testing: an Ascend910B2's core counts)
SOC = "Ascend910B2"


# ---- torch_npu.testing ----
def _rtol_check(case: unittest.TestCase, x, y, prec: float, prec16: float) -> None:
    """torch_npu's assertRtolEqual rule: elements fail by |x - y| > prec (absolute) and by
    |x - y| / (max(|x|, |y|) + tiny) > prec (relative); the pair fails only when both failure counts exceed
    prec * size. fp16 uses prec16 and tiny = 6e-8, the others tiny = 1e-9; shapes and dtypes must agree."""
    if isinstance(x, Sequence) and isinstance(y, Sequence):
        for a, b in zip(x, y, strict=False):
            _rtol_check(case, a, b, prec, prec16)
        return
    if torch.is_tensor(x) and not torch.is_tensor(y):
        y = torch.as_tensor(y, dtype=x.dtype)
    elif torch.is_tensor(y) and not torch.is_tensor(x):
        x = torch.as_tensor(x, dtype=y.dtype)
    x, y = (t.detach().cpu().numpy() if torch.is_tensor(t) else np.asarray(t) for t in (x, y))
    if x.shape != y.shape:
        case.fail(f"shape error: {x.shape} vs {y.shape}")
    if x.dtype != y.dtype:
        case.fail(f"dtype error: {x.dtype} vs {y.dtype}")
    if x.dtype == np.bool_:
        if not np.array_equal(x, y):
            case.fail("result error (bool)")
        return
    if x.dtype == np.float16:
        prec, tiny = prec16, 6e-8
    elif x.dtype in (np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64):
        tiny = 1e-9
    else:
        case.fail(f"unsupported dtype {x.dtype}")
    diff = np.abs(y.astype(np.float64) - x.astype(np.float64))
    rel = diff / (np.maximum(np.abs(x.astype(np.float64)), np.abs(y.astype(np.float64))) + tiny)
    bad_abs, bad_rel = int(np.sum(~(diff <= prec))), int(np.sum(~(rel <= prec)))
    if bad_abs > x.size * prec and bad_rel > x.size * prec:
        case.fail(f"result error: {bad_abs} elements over atol {prec}, {bad_rel} over rtol {prec} of {x.size}")


class TestCase(unittest.TestCase):
    def setUp(self):
        seed = int(os.environ.get("SEED", "666"))  # torch_npu's TestCase seeds torch and random this way
        torch.manual_seed(seed)
        random.seed(seed)

    def assertRtolEqual(self, x, y, prec=1.0e-4, prec16=1.0e-3, auto_trans_dtype=False, message=None):
        if auto_trans_dtype and torch.is_tensor(x) and torch.is_tensor(y):
            x = x.to(y.dtype)
        _rtol_check(self, x, y, prec, prec16)

    def assertEqual(self, x, y, prec=None, message=None, **_):  # noqa: N802
        """torch_npu's rule for tensors: same shape, max |x - y| <= prec (1e-5 unless given); else unittest's."""
        if not (torch.is_tensor(x) or torch.is_tensor(y)):
            return super().assertEqual(x, y, message)
        x, y = (torch.as_tensor(t).detach().cpu() for t in (x, y))
        self.assertEqual(tuple(x.shape), tuple(y.shape), message)
        if x.numel():
            err = (x.double() - y.double()).abs().max().item()
            self.assertLessEqual(err, 1e-5 if prec is None else prec, message)


def run_tests():
    unittest.main()


def SupportedDevices(devices):  # noqa: N802 (torch_npu's name)
    """Runs the test on a listed SoC family only; ascendc_ops stands in for SOC."""

    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            if not UNSKIP and not any(SOC.startswith(d) for d in devices):
                raise unittest.SkipTest(f"op-plugin runs it on {devices} only; ascendc_ops models {SOC}")
            return fn(*args, **kwargs)

        return run

    return wrap


# ---- devices ----
def _device_module(base: types.ModuleType | None) -> types.ModuleType:
    mod = base or types.ModuleType("torch_npu.npu")
    mod.synchronize = getattr(mod, "synchronize", lambda device=None: None)
    mod.config = types.SimpleNamespace(allow_internal_format=False)
    mod.get_device_name = lambda device=None: SOC
    mod.__getattr__ = _device_missing
    return mod


def _device_missing(name: str):
    """What the device module lacks (the NPU generator, graphs, compile modes) raises an AttributeError that
    tools/op_plugin_tests.py counts as out of scope, as it does ascendc_ops.npu's."""
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"torch_npu.npu (the shim's device module) has no {name!r}")


def _is_npu(d) -> bool:
    return (isinstance(d, str) and d.split(":")[0] == "npu") or (isinstance(d, torch.device) and d.type == "npu")


def _cpu_stand_in() -> types.ModuleType:
    """``.npu()`` / ``.to("npu")`` as a copy to another device would be: a new tensor (an input's .grad stays apart)."""
    to = torch.Tensor.to

    def npu(self, device=None, non_blocking=False, **_):
        return self.clone()

    def to_npu(self, *args, **kwargs):
        if (args and _is_npu(args[0])) or _is_npu(kwargs.get("device")):
            args = args[1:] if args and _is_npu(args[0]) else args
            kwargs.pop("device", None)
            out = to(self, *args, **kwargs) if (args or kwargs) else self
            return out.clone() if out is self else out
        return to(self, *args, **kwargs)

    torch.Tensor.npu = npu
    torch.Tensor.to = to_npu
    return _device_module(None)


def _device() -> types.ModuleType:
    if DEVICE == "sim":
        from ascendc_ops.testing import simulated_npu

        simulated_npu()
        return _device_module(torch.npu)
    if DEVICE != "cpu":
        raise ValueError(f"ASCENDC_OPP_DEVICE must be cpu or sim, got {DEVICE!r}")
    return _cpu_stand_in()


# ---- the modules ----
def _module(name: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name, "ascendc_ops stand-in (tools/op_plugin_shim.py)")
    mod.__dict__.update(attrs)
    mod.__path__ = []  # a package, so submodule imports resolve through sys.modules
    sys.modules[name] = mod
    return mod


def install() -> types.ModuleType:
    if UNSKIP:
        unittest.skip = lambda reason: lambda fn: fn
    device = _device()
    torch.npu = device
    root = _module("torch_npu", npu=device, **{n: getattr(_npu, n) for n in _npu.PROVIDED})
    root.__getattr__ = _npu.__getattr__  # names ascendc_ops.npu lacks raise its AttributeError
    root.testing = _module("torch_npu.testing")
    root.testing.testcase = _module("torch_npu.testing.testcase", TestCase=TestCase, run_tests=run_tests)
    root.testing.common_utils = _module(
        "torch_npu.testing.common_utils",
        SupportedDevices=SupportedDevices,
        get_npu_device=lambda: "npu",
    )
    root.contrib = _module("torch_npu.contrib")
    root.contrib.transfer_to_npu = _module("torch_npu.contrib.transfer_to_npu")  # no cuda calls to redirect
    sys.modules["torch_npu.npu"] = device
    return root


def pytest_configure(config):
    install()


def pytest_report_header(config):
    extra = ", op-plugin's skips ignored" if UNSKIP else ""
    return f"torch_npu: ascendc_ops.npu stand-in ({', '.join(_npu.PROVIDED)}); device {DEVICE}, SoC {SOC}{extra}"
