"""tools/op_plugin_tests.py: on a checkout written here (test files in op-plugin's style, our own text) every
verdict it can give comes out where it should; on a real Ascend/op-plugin checkout (ASCENDC_OPS_OP_PLUGIN, a work
tree or bare git directory; CI-optional, skipped without it) no case within our scope fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
if not (TOOLS / "op_plugin_tests.py").exists():  # tools/wheel_check.sh runs a copy of tests/ alone
    pytest.skip("needs the checkout's tools/", allow_module_level=True)
sys.path.insert(0, str(TOOLS))
import op_plugin_tests  # noqa: E402

STYLE = """
import unittest
import torch
import torch.nn.functional as F
import torch_npu
from torch_npu.testing.testcase import TestCase, run_tests
from torch_npu.testing.common_utils import SupportedDevices


class TestSwiglu(TestCase):
    def golden(self, x):
        a, b = x.chunk(2, -1)
        return F.silu(a) * b

    @SupportedDevices(['Ascend910B'])
    def test_right(self):
        x = torch.rand(8, 64)
        self.assertRtolEqual(self.golden(x), torch_npu.npu_swiglu(x.npu()).cpu())

    @SupportedDevices(['Ascend910B'])
    def test_wrong_golden(self):
        x = torch.rand(8, 64) + 1
        self.assertRtolEqual(self.golden(x) * 1.01, torch_npu.npu_swiglu(x.npu()).cpu())

    @SupportedDevices(['Ascend910B'])
    def test_npu_copy_keeps_grads_apart(self):
        x = torch.rand(8, 64, requires_grad=True)
        y = x.npu()
        self.assertIsNot(x, y)
        self.assertEqual(torch.from_numpy(x.detach().numpy()).to("npu").shape, (8, 64))

    @SupportedDevices(['Ascend950'])
    def test_other_soc(self):
        self.fail("runs on Ascend950 only")

    @unittest.skip("CI does not support it")
    def test_skipped_upstream(self):
        torch_npu.npu_swiglu(torch.rand(8, 64))

    def test_refused_by_design(self):
        x = torch.rand(1, 1, 2, 8)
        torch_npu.npu_rotary_mul(x, x, x, rotate=torch.eye(8))

    def test_missing_name(self):
        torch_npu.npu_format_cast(torch.rand(2, 2), 29)

    def test_device_generator(self):
        torch.npu.manual_seed(2)
"""
# op-plugin names the fusion-attention tests after the kernel
FLASH = """
import torch
import torch_npu


def test_named_after_the_kernel():
    q = torch.rand(1, 2, 4, 8)
    assert torch_npu.npu_fusion_attention_v3(q, q, q, 2, "BNSD")[0].shape == q.shape
"""


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("op-plugin")
    tests = root / "test" / "test_custom_ops"
    tests.mkdir(parents=True)
    (tests / "test_npu_swiglu.py").write_text(STYLE)
    (tests / "test_npu_flash_attention_v3_tensor.py").write_text(FLASH)
    # another op's test that uses ours for its golden only: not selected
    (tests / "test_alltoallv_swiglu.py").write_text("import torch_npu\n\ndef test_x():\n    torch_npu.npu_swiglu(1)\n")
    env = dict(
        os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t"
    )
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-qm", "tests"]):
        subprocess.run(["git", "-C", str(root), *cmd], check=True, env=env)
    return root


def verdicts(cases):
    return {c["case"].rsplit("::", 1)[1]: c["status"] for c in cases}


def test_every_verdict_on_a_checkout_written_here(checkout):
    names = op_plugin_tests.provided()
    assert op_plugin_tests.test_files(checkout, "HEAD", names) == [
        "test/test_custom_ops/test_npu_flash_attention_v3_tensor.py",
        "test/test_custom_ops/test_npu_swiglu.py",
    ]
    cases = op_plugin_tests.run(checkout, "HEAD", "cpu", None, None)
    assert verdicts(cases) == {
        "test_right": "pass",
        "test_wrong_golden": "fail",  # 1% off on every element: over assertRtolEqual's 1e-4
        "test_npu_copy_keeps_grads_apart": "pass",
        "test_other_soc": "out of scope",
        "test_skipped_upstream": "out of scope",
        "test_refused_by_design": "out of scope",
        "test_missing_name": "out of scope",
        "test_device_generator": "out of scope",  # the shim's device module stands in for no generator
        "test_named_after_the_kernel": "pass",
    }
    why = {c["case"].rsplit("::", 1)[1]: c["why"] for c in cases}
    assert "Ascend950" in why["test_other_soc"] and "rotate" in why["test_refused_by_design"]
    assert "npu_format_cast" in why["test_missing_name"] and "manual_seed" in why["test_device_generator"]
    unskipped = verdicts(op_plugin_tests.run(checkout, "HEAD", "cpu", "other_soc or upstream", None, unskip=True))
    assert unskipped == {"test_other_soc": "fail", "test_skipped_upstream": "pass"}


@pytest.mark.slow
def test_op_plugin_checkout_has_no_failure_in_scope():
    """The real thing (about 10 minutes on 2 cores): every file of op-plugin testing a name we provide."""
    path = os.environ.get("ASCENDC_OPS_OP_PLUGIN")
    if not path:
        pytest.skip("set ASCENDC_OPS_OP_PLUGIN to an Ascend/op-plugin checkout (docs/npu.md)")
    cases = op_plugin_tests.run(Path(path), "HEAD", "cpu", None, None)
    failed = [f"{c['case']}: {c['why']}" for c in cases if c["status"] == "fail"]
    assert cases and not failed, "\n".join(failed)
    assert any(c["status"] == "pass" for c in cases)
