"""Cube and vector cores together on the twin: the MIX launch model, cross-core flags, SyncAll, atomic adds.

Kernels in tests/cpp/twin_crosscore_kernels.cpp. Each fault must stop with its rule's name (A2's rules from
asc-devkit's CrossCoreSetFlag(ISASI).md, SyncAll.md and 设置Kernel类型.md; docs/records/twin-fidelity.md cites them per
rule); each valid kernel must run clean under the sanitizer with the numbers the device would give."""

import json
import re
import time

import pytest
import torch

import ascendc_ops  # noqa: F401  (the conftest environment: the sanitizer on)
from conftest import kernel_library

cc = kernel_library("twin_crosscore")

ROW = 64
INPUT = 128 * ROW  # the kernels' inputs start at row 128 of x


def run(name: str, blocks: int = 2) -> torch.Tensor:
    x = torch.zeros(ROW * 3 * 64)
    x[INPUT:] = torch.arange(64 * ROW, dtype=torch.float32)
    return cc.run(name, blocks, x).view(-1, ROW)


# kernel -> (rule, message detail)
FAULTS = {
    # the op package's one-launch rms_norm backward and moe_token_permute as they were declared before
    # MIX_AIV_1_0 (the real entries run in test_one_launch.py)
    "aiv_only_hard_syncall": ("cross-core kernel type", r"SyncAll mode 0 in a kernel of type KERNEL_TYPE_AIV_ONLY"),
    "aiv_only_hard_syncall_typed": ("cross-core kernel type", r"KERNEL_TYPE_AIV_ONLY: .*no scheduling module"),
    "mode1_in_mix_aiv": ("cross-core kernel type", r"mode 1 in a kernel of type KERNEL_TYPE_MIX_AIV_1_0"),
    "mode4": ("cross-core mode", r"mode 4 .*Ascend 950PR/950DT only"),
    "set_on_pipe_s": ("cross-core pipe", r"CrossCoreSetFlag<2, PIPE_S>"),
    "counter_overflow": ("cross-core flag overflow", r"AIV 0 \(group 0, sub-block 0\)'s counter for flag 1 past 15"),
    "flag_of_syncall": ("cross-core flag id", r"flag 12 in a kernel that calls the hard SyncAll"),
    "declares_other_type": (
        "kernel type",
        r"declares KERNEL_TYPE_MIX_AIC_1_1 but the launch runs KERNEL_TYPE_MIX_AIC_1_2",
    ),
    "atomic_wrong_dtype": ("atomic add", r"DataCopyPad UB->GM of float while SetAtomicAdd<half>"),
    "soft_syncall_dirty": ("SyncAll workspace", r"slot holds 7 at call 1: the GM workspace must start zeroed"),
    "soft_syncall_plain": ("SyncAll residency", r"runs one after another"),
    "workspace_race": (
        "cross-core race",
        r"AIC 0 SetValue #\d+ writes GM bytes \[0x[0-9a-f]+, 0x[0-9a-f]+\) and AIV \d \(group 0, sub-block \d\) "
        r"DataCopy #\d+ reads it, with no cross-core flag",
    ),
    "set_without_wait": ("cross-core set without wait", r"flag 3 of AIV 0 \(group 0, sub-block 0\) is still raised"),
}


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_fault_is_rejected_by_rule(name):
    rule, detail = FAULTS[name]
    with pytest.raises(RuntimeError, match=rf"kernel '{name}'.*\[{re.escape(rule)}\] .*{detail}"):
        run(name)


def test_deadlock_names_every_waiting_core():
    start = time.monotonic()
    with pytest.raises(RuntimeError) as e:
        run("wait_never_set")
    msg = str(e.value)
    assert "[cross-core deadlock]" in msg
    for v in range(4):
        group, sub = divmod(v, 2)
        assert f"AIV {v} (group {group}, sub-block {sub}) waits in CrossCoreWaitFlag flag 5 (mode 2)" in msg
    assert "(2 of 6 cores finished)" in msg
    assert time.monotonic() - start < 10


def test_deadlock_on_a_full_chip_fails_fast():
    # 24 groups: 24 AIC and 48 AIV threads, every AIV waiting
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"AIV 47 \(group 23, sub-block 1\) waits in CrossCoreWaitFlag flag 5"):
        run("wait_never_set", 24)
    assert time.monotonic() - start < 10


def test_skipped_syncall_deadlocks():
    with pytest.raises(
        RuntimeError, match=r"\[cross-core deadlock\].*\n  AIV 1 \(group 1, sub-block 0\) waits in SyncAll"
    ):
        run("syncall_skipped")


def test_syncall_beyond_the_platform_cores_is_rejected():
    # 49 blocks of MIX_AIV_1_0: the 910B has 48 AIVs, so not every block is resident (SyncAll.md)
    with pytest.raises(RuntimeError, match=r"\[SyncAll residency\] SyncAll in a launch of 49 blocks \(0 AIC, 49 AIV\)"):
        run("mix_aiv_syncall", 49)
    run("mix_aiv_syncall", 48)


def test_core_ids_per_kind():
    """MIX_AIC_1_2 with n blocks: n AICs (GetBlockIdx 0..n-1) and 2n AIVs (GetBlockIdx 0..2n-1, sub-block 0/1)."""
    n = 3
    out = run("core_ids", n)
    for b in range(n):
        assert out[b, :5].tolist() == [1, b, 0, n, 1]
    for v in range(2 * n):
        assert out[n + v, :5].tolist() == [2, v, v % 2, n, 2]


def test_mix_handoff_through_workspace():
    n = 2
    out = run("mix_handoff", n)
    for v in range(2 * n):
        want = torch.arange(ROW, dtype=torch.float32) + 100 * (v // 2) + v % 2
        assert torch.equal(out[v], want)


def test_mode0_and_mode1():
    n = 3
    out = run("mode0_neighbours", n)
    src = torch.arange(64 * ROW, dtype=torch.float32).view(-1, ROW)
    for b in range(n):
        assert torch.equal(out[b], src[(b + 1) % n] + 1)
    out = run("mode1_pair", n)
    for g in range(n):
        assert torch.equal(out[2 * g + 1], src[0] + 5)


def test_mode2_rounds_meet_per_aiv():
    """Sub-block 0 sets its mode-2 flag twice before sub-block 1 sets once: the AIC's first wait still waits
    for sub-block 1 (counting sets from either AIV would release it with sub-block 1's row unwritten)."""
    n = 2
    out = run("mode2_one_aiv_ahead", n)
    for g in range(n):
        for r in range(2):  # each AIV adds 10 round + its sub-block to x[INPUT] = 0
            assert out[64 + 2 * g + r, 0].item() == 20 * r + 1


@pytest.mark.parametrize("name", ["mix_aiv_syncall", "soft_syncall"])
def test_syncall_one_launch_reduction(name):
    n = 5
    out = run(name, n)
    src = torch.arange(64 * ROW, dtype=torch.float32).view(-1, ROW)
    want = sum(src[b] + b for b in range(n))
    assert torch.equal(out[0], want)


def test_results_are_deterministic():
    assert torch.equal(run("mix_aiv_syncall", 7), run("mix_aiv_syncall", 7))


def test_counter_limit_and_low_bits_are_valid():
    run("counter_at_limit")
    run("flag_low_bits")


def test_atomic_add_rows():
    n = 4
    out = run("atomic_rows", n)
    assert torch.equal(out[0], torch.full((ROW,), float(sum(range(1, n + 1)))))


def test_pad_copy_with_nothing_to_copy_is_a_nop():
    out = run("pad_copy_empty")
    assert not out[:128].any()


def test_record_names_core_kinds_and_cross_core_events():
    x = torch.zeros(ROW * 3 * 64)
    (launch,) = [json.loads(s) for s in cc.record("mix_handoff", 1, x)]
    assert [c["kind"] for c in launch["cores"]] == ["AIC", "AIV", "AIV"]
    aic, aiv0, _ = launch["blocks"]
    assert [(i["op"], i["cross"]) for i in aic if "cross" in i] == [
        ("CrossCoreSetFlag", {"mode": 2, "flag": 3}),
        ("CrossCoreWaitFlag", {"mode": 2, "flag": 4}),
    ]
    assert [i["op"] for i in aiv0 if "cross" in i] == ["CrossCoreWaitFlag", "CrossCoreSetFlag"]


@pytest.mark.parametrize("seed", [0, 1])
def test_mix_matmul_epilogue_example_matches_float64(seed):
    """csrc/kernels/examples/mix_matmul_epilogue_example.cpp: AIC matmul -> GM workspace -> AIV epilogue."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(48, 64, generator=g).half()
    b = torch.randn(64, 32, generator=g).half()
    bias = torch.randn(32, generator=g)
    y = cc.mix_example(a, b, bias, 0.5)
    want = (a.double() @ b.double()) * 0.5 + bias.double()
    # fp32 accumulation of 64 exact half products, then one fp32 multiply and add: gamma_(K+2) of fp32
    bound = (64 + 2) * 2.0**-24 * ((a.double().abs() @ b.double().abs()) * 0.5 + bias.double().abs())
    assert ((y.double() - want).abs() <= bound).all()
