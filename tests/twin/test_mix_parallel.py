"""Synchronising launches on the twin's two schedules give the same bits.

The parallel schedule (no record consumer: core groups claimed by host workers side by side) against the serial one
(ASCENDC_TWIN_MIX=serial: every core on one thread in slot order) and against the sanitized run (the serial
schedule with every check on, the conftest default): attention forward and backward, the fused linear cross-entropy
forward and backward, the op package's one-launch RMSNorm backward and moe_token_permute (every block meets at
SyncAll), and the mix example. A race-free kernel's outputs cannot depend on which host thread ran which group, so
any difference is a race the schedule exposed or state one core left in another's context. Where groups are long
enough that a second worker must start before the first is through (the large attention case) or meet at SyncAll
(the one-launch kernels), the parallel run must have used more than one worker, or the test would compare a
schedule with itself (on a busy host the second thread can start too late: such a run is compared too, and repeated);
a short launch may legitimately finish on the first worker. The deadlock kernels still fail
by name on the parallel schedule."""

from __future__ import annotations

import os
from contextlib import contextmanager

import pytest
import torch

import ascendc_ops
from conftest import kernel_library
from test_one_launch import norm_grad_inputs

one = kernel_library("twin_one_launch")
cc = kernel_library("twin_crosscore")
SCHEDULES = ("parallel", "serial", "sanitized")


@contextmanager
def schedule(name: str):
    """The environment each launch reads: the sanitizer forces the serial schedule, ASCENDC_TWIN_MIX=serial too."""
    saved = {k: os.environ.get(k) for k in ("ASCENDC_TWIN_SANITIZE", "ASCENDC_TWIN_MIX")}
    os.environ["ASCENDC_TWIN_SANITIZE"] = "1" if name == "sanitized" else "0"
    if name == "serial":
        os.environ["ASCENDC_TWIN_MIX"] = "serial"
    else:
        os.environ.pop("ASCENDC_TWIN_MIX", None)
    threads = torch.get_num_threads()
    torch.set_num_threads(max(2, threads))  # torch's pool runs the workers: two at least, whatever the host
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def same_bits(outs: dict, label: str):
    ref = outs["sanitized"]
    for name, got in outs.items():
        for i, (g, w) in enumerate(zip(got, ref, strict=True)):
            assert g.dtype == w.dtype and g.shape == w.shape
            ints = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[g.element_size()]
            differ = g.contiguous().view(ints) != w.contiguous().view(ints)
            assert not differ.any(), f"{label}: output {i} of the {name} schedule differs in {int(differ.sum())} places"


PARALLEL_TRIES = 10  # a host thread the OS starts late (both cores busy) can find every group taken: run again


def run_all(fn, workers, side_by_side: bool, label: str):
    outs = {}
    for name in SCHEDULES:
        with schedule(name):
            outs[name] = [t.clone() for t in fn()]
            used = workers()
            for attempt in range(1, PARALLEL_TRIES if name == "parallel" and side_by_side else 0):
                if used > 1:
                    break
                outs[f"parallel, try {attempt + 1}"] = [t.clone() for t in fn()]
                used = workers()
        if name == "parallel" and side_by_side:
            assert used > 1, f"{label}: the parallel schedule ran on {used} worker in {PARALLEL_TRIES} tries"
        elif name != "parallel":
            assert used == 1, f"{label}: the {name} schedule ran on {used} workers"
    same_bits(outs, label)


ATTENTION = [  # B, S1, S2, N, NKV, D, layout, dtype, sparse_mode, sinks; the first runs side by side
    (1, 256, 256, 8, 2, 128, "BSND", torch.bfloat16, 3, True),
    (2, 83, 83, 4, 4, 80, "BNSD", torch.float16, 0, False),
    (1, 1, 700, 16, 2, 64, "BSND", torch.float16, 0, False),
    (1, 130, 130, 6, 3, 40, "BSH", torch.float32, 2, True),
]


def attention_inputs(b, s1, s2, n, nkv, d, layout, dtype, mode, _sinks):
    g = torch.Generator().manual_seed(s1 * 7 + n)
    q = torch.randn(b, n, s1, d, generator=g).to(dtype)
    k, v = (torch.randn(b, nkv, s2, d, generator=g).to(dtype) for _ in range(2))

    def lay(t):
        if layout == "BNSD":
            return t
        t = t.transpose(1, 2).contiguous()
        return t if layout == "BSND" else t.flatten(2)

    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1) if mode in (2, 3) else None
    return lay(q), lay(k), lay(v), mask


@pytest.mark.parametrize(
    "case", ATTENTION, ids=lambda c: f"{c[6]}-{c[1]}x{c[2]}-N{c[3]}/{c[4]}-D{c[5]}-mode{c[8]}{'-sinks' * c[9]}"
)
def test_attention_forward_and_backward(case):
    """With sinks the backward's d_sink (per-task partials summed by one AIV after a SyncAll) is compared too."""
    b, s1, s2, n, nkv, d, layout, dtype, mode, sinks = case
    q, k, v, mask = attention_inputs(*case)
    dy = torch.randn(q.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    scale = d**-0.5
    sink = torch.linspace(-1.0, 2.0, n) if sinks else None

    def fwd_bwd():
        out, smax, ssum = ascendc_ops.fusion_attention(q, k, v, n, layout, mask, scale, sparse_mode=mode, sink=sink)[:3]
        grads = torch.ops.custom.fusion_attention_grad(
            q, k, v, dy, smax, ssum, out, n, layout, mask, scale, 2147483647, 2147483647, None, None, mode, sink=sink
        )
        return [out, smax, ssum, *grads]

    workers = torch.ops.ascendc_ops.twin_core_workers
    run_all(fwd_bwd, workers, case == ATTENTION[0], f"attention {case}")


@pytest.mark.parametrize("op", ["rms_norm_grad", "add_rms_norm_grad"])
def test_one_launch_norm_grad(op):
    dy, x, rstd, gamma, fifth = norm_grad_inputs(op, 83, 769, (torch.bfloat16, torch.float32))
    run_all(lambda: one.rms_norm_grad(op, dy, x, rstd, gamma, fifth, 8), one.core_workers, True, op)


def test_one_launch_moe_token_permute():
    x = torch.randn(700, 96).to(torch.float16)
    ids = torch.randint(0, 16, (700, 8), generator=torch.Generator().manual_seed(3))
    run_all(lambda: one.moe_token_permute(x, ids, None, 6), one.core_workers, True, "moe_token_permute")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
def test_linear_cross_entropy_forward_and_backward(dtype):
    """The fused linear cross-entropy: 12 token tasks in the forward, 12 + 10 tasks in the backward (its atomic-add
    Fixpipes into each group's own accumulator), side by side: large enough that a second worker starts before the
    first is through (at 300 tokens the whole launch took a few ms, and a busy host started the second too late).
    With a bias and class weights: grad_bias is summed by the AIV owning each vocab task's rows."""
    g = torch.Generator().manual_seed(7)
    h, w = torch.randn(1500, 72, generator=g).to(dtype), (torch.randn(1200, 72, generator=g) / 8).to(dtype)
    bias, classes = torch.randn(1200, generator=g).to(dtype), torch.rand(1200, generator=g)
    t = torch.randint(0, 1200, (1500,), generator=g)
    scales = [torch.rand(1500, generator=g) for _ in range(3)]

    def fwd_bwd():
        stats = torch.ops.custom.linear_cross_entropy(h, w, t, bias, classes, softcap=30.0)
        lse = stats[0] + torch.log(stats[1])
        return [*stats, *torch.ops.custom.linear_cross_entropy_grad(h, w, t, lse, *scales, bias, classes, softcap=30.0)]

    run_all(fwd_bwd, torch.ops.ascendc_ops.twin_core_workers, True, f"linear_cross_entropy {dtype}")


def test_mix_example():
    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(48, 64, generator=g).half(), torch.randn(64, 32, generator=g).half()
    bias = torch.randn(32, generator=g)
    run_all(lambda: [cc.mix_example(a, b, bias, 0.5)], cc.core_workers, False, "mix example")


@pytest.mark.parametrize("blocks", [2, 24])
def test_deadlock_is_named_on_the_parallel_schedule(blocks):
    x = torch.zeros(64 * 3 * 64)
    with schedule("parallel"), pytest.raises(RuntimeError) as e:
        cc.run("wait_never_set", blocks, x)
    msg = str(e.value)
    assert "[cross-core deadlock]" in msg
    for v in range(2 * blocks):
        assert f"AIV {v} (group {v // 2}, sub-block {v % 2}) waits in CrossCoreWaitFlag flag 5 (mode 2)" in msg
    assert f"({blocks} of {3 * blocks} cores finished)" in msg
    with schedule("parallel"), pytest.raises(RuntimeError, match=r"\[cross-core deadlock\].*\n  AIV 1 .* SyncAll"):
        cc.run("syncall_skipped", 2, x)
