"""The cube basic API on the twin (csrc/twin/twin_cube_basic.h, docs/twin.md "The cube's basic API"):
the hand-written example csrc/kernels/examples/cube_matmul_example.cpp matches float64 and is
sanitizer-clean; each kernel in tests/cpp/twin_cube_basic_kernels.cpp that breaks a documented rule
stops with the rule named, and each that drops a hand-off between MTE2/MTE1/M/FIX is a race the
sanitizer names."""

import pytest
import torch

from conftest import kernel_library, rule_error

cube = kernel_library("twin_faults", "twin_cube_basic")

N = r"#\d+"
RULES = {
    "l0a_misaligned": ("cube alignment", r"LoadData 2D dst starts at L0A byte 32, not a multiple of 512"),
    "loaddata_transpose_float": ("cube params", r"LoadData 2D ifTranspose needs b16 data, not float"),
    "mmad_fm_in_l1": ("cube position", r"Mmad fm must be in L0A \(TPosition A2\), not L1"),
    "mmad_k_range": ("cube params", r"Mmad k 4096 outside \[0, 4095\]"),
    "mmad_half_out": ("cube dtype", r"Mmad half x half -> half is not an A2 combination"),
    "fixpipe_half_without_quant": ("cube params", r"Fixpipe float -> half needs quantPre F322F16"),
    "fixpipe_nsize_not_16": ("cube params", r"Fixpipe nSize 24 must be a multiple of 16 for an NZ output"),
    "nd2nz_into_ub": ("cube position", r"DataCopy ND2NZ dst must be in L1 \(TPosition A1/B1\), not UB"),
    "nd2nz_c0_stride_zero": ("cube params", r"DataCopy ND2NZ dstNzC0Stride 0 outside \[1, 16384\]"),
    "l0a_capacity": ("L0A capacity", r"brings this TPipe to 65600 B, over the 65536 B L0A"),
}
RACES = {
    "loaddata_before_copy_waited": (
        rf"RAW hazard on L1 bytes \[0, 512\): MTE1 LoadData {N} reads what MTE2 DataCopy {N} writes "
        r"with nothing ordering them: SetFlag/WaitFlag<MTE2_MTE1>"
    ),
    "mmad_before_loaddata_waited": (
        rf"RAW hazard on L0A bytes \[0, 512\): M Mmad {N} reads what MTE1 LoadData {N} writes "
        r"with nothing ordering them: SetFlag/WaitFlag<MTE1_M>"
    ),
    "fixpipe_before_mmad_waited": (
        rf"RAW hazard on L0C bytes \[0, 1024\): FIX Fixpipe {N} reads what M Mmad {N} writes "
        r"with nothing ordering them: SetFlag/WaitFlag<M_FIX>"
    ),
    # B2's DeQue orders every earlier MTE1 instruction, A2's LoadData too: no race, but A2's EnQue
    # flag is never waited (synccheck)
    "queue_mmad_without_deque": (
        rf"MTE1 SetFlag {N} \(EnQue of a A2 buffer\)<MTE1_M>\(0\) is never waited by the end of the block"
    ),
}


# Mmad.md 同步优化说明: an Mmad accumulating onto the L0C of one with (m/16)*(n/16) < 10 needs
# PipeBarrier<PIPE_M> between them (the sanitizer's rule "Mmad accumulation barrier")
ACCUMULATE_CLEAN = ["mmad_accumulate_16x16_with_barrier", "mmad_accumulate_32x80_without_barrier"]
ACCUMULATE_FAULTS = {
    "mmad_accumulate_16x16_without_barrier": r"L0C bytes \[0, 1024\)",
    "mmad_accumulate_48x48_without_barrier": r"L0C bytes \[0, 9216\)",
}


def block_input(seed=0):
    torch.manual_seed(seed)
    x = torch.zeros(4 * 256, dtype=torch.half)
    x[:512] = torch.randn(512).half()
    return x


def test_every_kernel_is_covered():
    names = set(RULES) | set(RACES) | set(ACCUMULATE_CLEAN) | set(ACCUMULATE_FAULTS) | {"correct", "correct_half"}
    assert set(cube.names()) == names


@pytest.mark.parametrize("half_out", [False, True])
def test_example_matches_float64(monkeypatch, half_out):
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "1")  # and the sanitizer finds nothing
    torch.manual_seed(1)
    a, b = torch.randn(48, 64).half(), torch.randn(64, 32).half()
    c = cube.example(a, b, half_out)
    ref = a.double() @ b.double()
    assert c.dtype == (torch.half if half_out else torch.float)
    tol = 2e-3 if half_out else 1e-5  # fp32 accumulation; half out rounds once (CAST_RINT)
    torch.testing.assert_close(c.double(), ref, rtol=tol, atol=tol * 8)
    if half_out:  # exactly the fp32 result rounded to nearest even
        assert torch.equal(c, cube.example(a, b, False).half())


@pytest.mark.parametrize("name", ["correct", "correct_half"])
def test_manual_block_is_clean_and_right(monkeypatch, name):
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "1")
    x = block_input()
    a, b = x[:256].view(16, 16).double(), x[256:512].view(16, 16).double()
    out = cube.run(name, x)
    c = out[512:768].view(16, 16) if name == "correct_half" else out[512:1024].view(torch.float).view(16, 16)
    torch.testing.assert_close(c.double(), a @ b, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name", sorted(RULES))
def test_rule_named(name):
    rule, detail = RULES[name]
    rule_error(lambda: cube.run(name, block_input()), name, rule, detail)


@pytest.mark.parametrize("name", sorted(RACES))
def test_race_found(monkeypatch, name):
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "1")
    rule = "synccheck" if name == "queue_mmad_without_deque" else "racecheck"
    rule_error(lambda: cube.run(name, block_input()), name, rule, RACES[name])


@pytest.mark.parametrize("name", ACCUMULATE_CLEAN)
def test_accumulating_mmads_ordered(monkeypatch, name):
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "1")
    cube.run(name, block_input())


@pytest.mark.parametrize("name", sorted(ACCUMULATE_FAULTS))
def test_accumulating_mmads_need_pipe_m_barrier(monkeypatch, name):
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "1")
    onto = rf"M Mmad {N} accumulates onto {ACCUMULATE_FAULTS[name]}, written by M Mmad {N}"
    message = rule_error(lambda: cube.run(name, block_input()), name, "Mmad accumulation barrier", onto)
    assert "PipeBarrier<PIPE_M>" in message, message
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "0")
    cube.run(name, block_input())  # a sanitizer rule: with the sanitizer off the kernel runs
