"""The CPU twin's hardware rules: each deliberately wrong kernel in tests/cpp/twin_faults.cpp
must stop with an error that names the rule, the kernel and the block, and that error must
arrive in Python as an exception, not an abort."""

import pytest
import torch

import ascendc_ops  # noqa: F401  (loads the twin the fault kernels link against)
from conftest import kernel_library, rule_error

twin_faults = kernel_library("twin_faults")
run = twin_faults.run

# kernel -> (rule named in the error, detail the message must carry)
RULES = {
    "ub_capacity": ("UB capacity", r"over the 196352 B Unified Buffer"),
    "copy_length_alignment": ("32-byte alignment", r"DataCopy GM->UB of 20 float = 80 bytes"),
    "operand_alignment": ("32-byte alignment", r"Add operand starts at UB byte 2060, not a multiple of 32"),
    "bf16_arithmetic": ("dtype support", r"Add does not support bfloat16"),
    "exp_int32": ("dtype support", r"Exp does not support int32 .*half and float only"),
    "bf16_cast_without_rounding": ("dtype support", r"Cast float -> bfloat16 with CAST_NONE"),
    "half_to_bf16_cast": ("dtype support", r"Cast half -> bfloat16 .* no Cast on Atlas A2"),
    "half_to_int32_cast": (
        "dtype support",
        r"Cast half -> int32 with CAST_RINT: A2 has this pair .*does not implement",
    ),
    "dequeue_empty": ("queue discipline", r"DeQue of an empty TQue"),
    "double_free": ("queue discipline", r"double FreeTensor"),
    "queue_depth": ("queue discipline", r"EnQue exceeds the TQue depth of 1"),
    "ub_overrun": ("UB bounds", r"Muls needs 512 float elements but the LocalTensor holds 256"),
    "gm_overrun": ("GM bounds", r"touches 256 float elements but only 128 remain"),
    "ub_copy_overlap": ("data copy params", r"DataCopy UB->UB source and destination share UB bytes \[\d+, \d+\)"),
    "gather_repeat_limit": (
        "repeat range",
        r"Gather count 16384 float needs 256 full repeats of 64 elements; .* at most 255 .* count <= 16383",
    ),
    "gather_overlap": ("operand overlap", r"Gather reads source UB bytes \[\d+, \d+\) and writes destination bytes"),
    "pad_too_wide": ("data copy params", r"DataCopyPad GM->UB leftPadding 0 / rightPadding 9 float: each at most 32"),
    "mrgsort_list_too_long": ("sort params", r"MrgSort list 1 of 4096 elements: at most 4095 on A2"),
    "mrgsort_overlap": ("operand overlap", r"MrgSort source list 1 UB bytes \[\d+, \d+\) overlaps dst"),
    "pipe_barrier_scalar": ("pipe barrier", r"PipeBarrier<PIPE_S>: A2 has no barrier for the scalar pipe"),
    "too_many_buffers": ("buffer count", r"InitBuffer\(TBuf, 1\) brings this TPipe to 65 buffers, over the 64"),
    "too_many_que_buffers": ("buffer count", r"brings this TPipe to 10 TQue buffers at one TPosition; A2 has 8"),
    "duplicate_int8": ("dtype support", r"Duplicate does not support int8 .*int16, uint16, half, bfloat16, int32"),
    "shift_past_width": ("scalar range", r"ShiftLeft by 33 on uint32: A2 takes \[0, 32\]"),
    "or_uint32": ("dtype support", r"Or does not support uint32 on Atlas A2 \(int16 and uint16 only"),
    "shift_float": ("dtype support", r"ShiftLeft does not support float on Atlas A2"),
    "shift_partial_overlap": ("operand overlap", r"ShiftRight source UB bytes \[\d+, \d+\) partly overlap"),
    "add_partial_overlap": (
        "operand overlap",
        r"Add source UB bytes \[\d+, \d+\) partly overlap destination bytes \[\d+, \d+\): repeat 0's source",
    ),
    "muls_reads_earlier_repeat": ("operand overlap", r"Muls source .*: repeat 1 reads bytes an earlier repeat wrote"),
    "cast_widening_in_place": ("operand overlap", r"Cast source .*: a widening Cast's destination may not overlap"),
    "cast_narrowing_shifted": ("operand overlap", r"Cast source .*: repeat 0's source and destination overlap"),
    "bf16_cast_odd": ("dtype support", r"Cast float -> bfloat16 with CAST_ODD: A2 rounds to odd only on float -> half"),
}
# kernels that must run clean: the control, and each rule's case exactly at its limit
VALID = {
    "correct",
    "gather_at_limit",
    "mrgsort_at_limit",
    "buffers_at_limit",
    "que_buffers_at_limit",
    "strided_copy_empty",
    "pair_swap",
    "shift_full_width",
    "shift_repeat_ahead",
    "overlap_at_limit",
}


def test_every_fault_kernel_is_covered():
    assert set(run_names()) == set(RULES) | VALID


def run_names():
    return list(twin_faults.names())


@pytest.mark.parametrize("kernel", sorted(VALID))
@pytest.mark.parametrize("block_dim", [1, 4])
def test_correct_kernel_runs_clean(kernel, block_dim):
    run(kernel, block_dim)


@pytest.mark.parametrize("kernel", sorted(RULES))
@pytest.mark.parametrize("block_dim", [1, 4])
def test_rule_fires_and_reaches_python(kernel, block_dim):
    rule, detail = RULES[kernel]
    message = rule_error(lambda: run(kernel, block_dim), kernel, rule, detail)
    assert f"/{block_dim}: [{rule}]" in message


def test_twin_recovers_after_a_fault():
    """A rule violation in one launch leaves the launcher usable (no stuck pool, no leaked state)."""
    with pytest.raises(RuntimeError):
        run("double_free", 4)
    run("correct", 4)
    x = torch.randn(2, 3, 5, 8)
    cos, sin = torch.randn(5, 8), torch.randn(5, 8)
    torch.testing.assert_close(ascendc_ops.rope_customer(x, cos, sin), ascendc_ops.rope_customer(x, cos, sin))
