"""The optimizer family's NPU launchers (csrc/torch/npu/optimizer_npu.cpp) on the simulated NPU: apply_adam_w,
foreach_adam_w (its tensor table copied to the device), foreach_norm (its slots on the device, combined there) and
foreach_clip_by_total_norm (clip_grad_norm_ in two launches)
against the same calls on CPU, with launch counts proving the launcher ran. In a fresh process, as
tests/npu/test_simulated_npu.py explains (the renamed PrivateUse1 device must not leak into other test files)."""

import contextlib
import os
import re
import subprocess
import sys

import pytest
import torch

import ascendc_ops
from ascendc_ops import testing

FRESH_PROCESS = "ASCENDC_OPS_SIMULATED_NPU_PROCESS"
HYPER = dict(lr=1e-2, weight_decay=0.01, step=3.0)


@pytest.fixture(scope="module")
def npu():
    if os.environ.get(FRESH_PROCESS) != "1":
        pytest.skip("runs in its own process: test_in_a_fresh_process")
    testing.simulated_npu()
    return torch.device(testing.NAME)


def test_in_a_fresh_process():
    if os.environ.get(FRESH_PROCESS) == "1":
        pytest.skip("this is the fresh process")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__],
        env={**os.environ, FRESH_PROCESS: "1"}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
    assert re.search(r"^\d+ passed, 1 skipped in", result.stdout, re.M), result.stdout[-2000:]


@contextlib.contextmanager
def launched(kernel):
    before = testing.launch_count(kernel)
    yield
    assert testing.launch_count(kernel) > before, f"{kernel} was not launched on the simulated NPU"


def states(n, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(n, generator=gen).to(dtype), 0.1 * torch.randn(n, generator=gen),
            0.01 * torch.rand(n, generator=gen), torch.randn(n, generator=gen).to(dtype),
            0.02 * torch.rand(n, generator=gen))  # fmt: skip


@pytest.mark.parametrize("dtype,suffix", [(torch.float32, "float"), (torch.bfloat16, "bfloat16")])
def test_apply_adam_w(npu, dtype, suffix):
    cpu = states(5125, dtype, 0)
    dev = [t.to(npu) for t in cpu]
    with launched(f"apply_adam_w_{suffix}"):
        torch.ops.custom.apply_adam_w(*dev, amsgrad=True, **HYPER)
    torch.ops.custom.apply_adam_w(*cpu, amsgrad=True, **HYPER)
    for d, c in zip(dev, cpu, strict=True):
        assert d.device.type == testing.NAME and torch.equal(d.cpu(), c)


def test_foreach_adam_w_and_norm(npu):
    cpu = [states(n, torch.float32, k) for k, n in enumerate((7, 0, 70001, 769))]
    lists = [[c[j] for c in cpu] for j in range(5)]
    dev = [[t.to(npu) for t in lst] for lst in lists]
    with launched("foreach_adam_w_float"):
        torch.ops.custom.foreach_adam_w(*dev[:4], [], [], **HYPER)
    torch.ops.custom.foreach_adam_w(*lists[:4], [], [], **HYPER)
    for dl, cl in zip(dev, lists, strict=True):
        for d, c in zip(dl, cl, strict=True):
            assert torch.equal(d.cpu(), c)
    with launched("foreach_norm_float"):
        norms = ascendc_ops.foreach_norm(dev[3], 2.0)
    want = ascendc_ops.foreach_norm(lists[3], 2.0)
    assert all(n.device.type == testing.NAME for n in norms)
    torch.testing.assert_close(torch.stack([n.cpu() for n in norms]), torch.stack(want), rtol=1e-6, atol=0)


def test_clip_grad_norm_is_two_launches(npu):
    """clip_grad_norm_ on the device: foreach_norm then foreach_clip_by_total_norm (the table of x's and the norms'
    device addresses), one launch each whatever the parameter count, the same values as on CPU."""
    gen = torch.Generator().manual_seed(5)
    grads = [torch.randn(n, generator=gen) for n in (7, 70001, 0, 769)]
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.zeros(g.shape, device=npu))
        p.grad = g.to(npu)
        params.append(p)
    kernels = ("foreach_norm_float", "foreach_clip_by_total_norm_float")
    before = [testing.launch_count(k) for k in kernels]
    total = ascendc_ops.clip_grad_norm_(params, 1.0)
    assert [testing.launch_count(k) - b for k, b in zip(kernels, before, strict=True)] == [1, 1]
    want = ascendc_ops.clip_grad_norm_(grads_as_params(grads), 1.0)
    assert total.device.type == testing.NAME and torch.equal(total.cpu(), want)
    assert all(torch.equal(p.grad.cpu(), g) for p, g in zip(params, grads, strict=True))


def grads_as_params(grads):
    """CPU parameters whose grads are ``grads`` themselves (scaled in place by the clipping)."""
    out = []
    for g in grads:
        p = torch.nn.Parameter(torch.zeros(g.shape))
        p.grad = g
        out.append(p)
    return out
