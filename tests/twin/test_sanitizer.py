"""The twin's sanitizer and its instruction record.

Each deliberately faulty kernel in tests/cpp/twin_sanitizer_faults.cpp computes the right numbers
on the twin (which runs in program order) but would race, hang or leak garbage on the NPU; under
ASCENDC_TWIN_SANITIZE=1 each must stop with the rule, the kernel, the block, both instructions
and the byte range. The record export must describe a real launch faithfully."""

import json
import re

import pytest
import torch

import ascendc_ops
from conftest import kernel_library

faults = kernel_library("twin_faults", "twin_sanitizer_faults")

N = r"#\d+"
# kernel -> (rule, message detail)
FINDINGS = {
    "missing_waitflag": (
        "racecheck",
        rf"RAW hazard on UB bytes \[4096, 5120\): V Add {N} reads what MTE2 DataCopy {N} "
        r"writes with nothing ordering them: SetFlag/WaitFlag<MTE2_V>",
    ),
    "overwrite_during_copy_out": (
        "racecheck",
        rf"WAR hazard on UB bytes \[4096, 5120\): V Muls {N} writes what MTE3 "
        rf"DataCopy {N} reads .*SetFlag/WaitFlag<MTE3_V>",
    ),
    "mte2_overlap_no_barrier": (
        "racecheck",
        rf"WAW hazard on UB bytes \[4352, 4608\): MTE2 DataCopy {N} writes what "
        rf"MTE2 DataCopy {N} writes without PipeBarrier<PIPE_MTE2>",
    ),
    "gm_read_back_unsynced": (
        "racecheck",
        rf"RAW hazard on GM bytes \[0x[0-9a-f]+, 0x[0-9a-f]+\): MTE2 DataCopy {N} "
        rf"reads what MTE3 DataCopy {N} writes .*<MTE3_MTE2>",
    ),
    "unpaired_setflag": ("synccheck", rf"V SetFlag {N}<V_MTE3>\(3\) is never waited by the end of the block"),
    "wait_without_set": ("synccheck", rf"V WaitFlag<MTE2_V>\(2\) {N}: waits for an event no SetFlag set: PIPE_V hangs"),
    "reserved_event_id": ("synccheck", r"S SetFlag<S_V>\(7\) #1: event ids 6 and 7 are reserved"),
    "event_id_collision": (
        "synccheck",
        rf"V SetFlag<V_MTE2>\(0\) {N}: the event is still set by V SetFlag {N} "
        r"\(FreeTensor of a VECIN buffer\)",
    ),
    "stolen_queue_event": (
        "synccheck",
        rf"MTE2 WaitFlag<V_MTE2>\(0\) {N} \(TPipe::Destroy of a VECIN buffer\): waits "
        r"for an event no SetFlag set: PIPE_MTE2 hangs",
    ),
    "uninitialised_read": (
        "initcheck",
        rf"MTE3 DataCopy {N} copies out UB bytes \[5632, 6144\) that hold no defined "
        rf"value: they come from bytes no instruction wrote \(last written by V Add {N}\)",
    ),
    "padding_copied_out": (
        "initcheck",
        rf"MTE3 DataCopy {N} copies out UB bytes \[2128, 2144\) .* the padding MTE2 "
        rf"DataCopyPad {N} left unfilled",
    ),
    "blocks_write_same_row": (
        "multi-core overlap",
        rf"block \d DataCopy {N} and block \d DataCopy {N} both write GM bytes",
    ),
    "block_reads_neighbours_row": (
        "multi-core overlap",
        rf"block \d DataCopy {N} reads GM bytes \[0x[0-9a-f]+, "
        rf"0x[0-9a-f]+\) that block \d DataCopy {N} writes",
    ),
}
MULTI_CORE = {"blocks_write_same_row", "block_reads_neighbours_row"}


def test_every_sanitizer_fault_is_covered():
    assert set(faults.names()) == set(FINDINGS) | {"clean"}


@pytest.mark.parametrize("block_dim", [1, 2, 4])
def test_clean_kernel_passes_every_check(monkeypatch, block_dim):
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "1")
    faults.run("clean", block_dim)


@pytest.mark.parametrize("kernel", sorted(FINDINGS))
def test_finding_names_rule_kernel_block_and_instructions(monkeypatch, kernel):
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "1")
    rule, detail = FINDINGS[kernel]
    with pytest.raises(RuntimeError) as err:
        faults.run(kernel, 2)
    message = str(err.value)
    where = (
        rf"kernel '{kernel}' blocks \d and \d of 2: " if kernel in MULTI_CORE else rf"kernel '{kernel}' block \d/2: "
    )
    assert re.search(where + re.escape(f"[{rule}] "), message), message
    assert re.search(detail, message), message


@pytest.mark.parametrize("kernel", sorted(FINDINGS))
def test_sanitizer_off_runs_every_fault_kernel(monkeypatch, kernel):
    """ASCENDC_TWIN_SANITIZE=0: none of these is a twin hardware-rule violation, so all run."""
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "0")
    faults.run(kernel, 2)


def test_single_block_has_no_multi_core_finding(monkeypatch):
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "1")
    for kernel in MULTI_CORE:
        faults.run(kernel, 1)


def test_real_kernels_run_clean_on_split_row_and_odd_shapes(monkeypatch):
    """The shapes that take the rarer paths: split-row norms (hidden past the UB), D=40 RoPE, odd SwiGLU."""
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "1")
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(3, 30000, dtype=dtype, requires_grad=True)
        g = torch.rand(30000, dtype=dtype, requires_grad=True)
        ascendc_ops.add_rms_norm(x, x, g, 1e-6)[0].sum().backward()
        ascendc_ops.rms_norm(x, g, 1e-6)[0].sum().backward()
        ascendc_ops.gemma_rms_norm(x, g, 1e-6)[0].sum().backward()
        ascendc_ops.gated_rms_norm(x, g, 3 * x, 1e-6)[0].sum().backward()
        xs = torch.randn(7, 769, dtype=dtype, requires_grad=True)  # the gated grad's single-pass tiles
        ascendc_ops.gated_rms_norm(xs, g[:769], 3 * xs, 1e-6)[0].sum().backward()
        q = torch.randn(2, 3, 7, 40, dtype=dtype, requires_grad=True)
        ascendc_ops.rotary_mul(
            q, torch.randn(1, 1, 7, 40, dtype=dtype), torch.randn(1, 1, 7, 40, dtype=dtype), rotary_mode="interleave"
        ).sum().backward()
        ascendc_ops.swiglu(torch.randn(5, 2 * 83, dtype=dtype, requires_grad=True)).sum().backward()


def test_real_kernels_run_clean_on_packed_rows(monkeypatch):
    """The packed paths: rms_norm rows shorter than a block (hidden 1, 2, 4, 8), SwiGLU over a last dim of 2;
    rows that leave a short last tile, and enough rows for several tiles per block."""
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "1")
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for rows in (7, 20011):
            for hidden in (1, 2, 4, 8):
                ascendc_ops.rms_norm(torch.randn(rows, hidden, dtype=dtype), torch.rand(hidden, dtype=dtype), 1e-6)
            ascendc_ops.gemma_rms_norm(torch.randn(rows, 2, dtype=dtype), torch.rand(2, dtype=dtype), 1e-6)
            ascendc_ops.swiglu(torch.randn(rows, 2, dtype=dtype))


def record(fn):
    torch.ops.ascendc_ops.twin_record_take()
    torch.ops.ascendc_ops.twin_record(True)
    try:
        fn()
    finally:
        torch.ops.ascendc_ops.twin_record(False)
    return [json.loads(s) for s in torch.ops.ascendc_ops.twin_record_take()]


KEYS = {"pipe", "op", "dtype", "count", "repeats", "gm_read", "gm_write", "ub_read", "ub_write", "event"}


def test_record_export_describes_a_launch(monkeypatch):
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "0")
    x = torch.randn(7, 80)
    launches = record(lambda: ascendc_ops.rms_norm(x, torch.ones(80), 1e-6))
    assert [rec["kernel"] for rec in launches] == ["rms_norm"]
    rec = launches[0]
    assert len(rec["blocks"]) == rec["block_dim"] >= 1
    loaded = stored = 0
    for block in rec["blocks"]:
        pending = {}
        for ins in block:
            assert KEYS <= set(ins), ins
            assert ins["pipe"] in {"MTE2", "MTE3", "V", "S", "MTE1", "M", "FIX", "ALL"}
            if ins["op"] in ("SetFlag", "WaitFlag"):
                key = tuple(ins["event"])
                assert 0 <= key[2] < 8
                if ins["op"] == "SetFlag":
                    assert key not in pending, ins  # never set twice
                    pending[key] = ins
                else:
                    assert pending.pop(key)  # every wait has its set
                if "que" in ins:
                    assert ins["que"] in {"VECIN", "VECOUT"} and ins["slot"] >= 0
            if ins["op"] == "DataCopyPad":
                loaded += ins["gm_read"]
                stored += ins["gm_write"]
            if ins["op"] == "Mul":
                assert ins["repeats"] == (ins["count"] * 4 + 255) // 256
        assert not pending  # every set is waited by the end of the block
    assert loaded >= x.numel() * 4 + 80 * 4 and stored == x.numel() * 4 + 7 * 4  # x (+ gamma) in; y and rstd out


def test_record_is_empty_when_off():
    torch.ops.ascendc_ops.twin_record_take()
    ascendc_ops.swiglu(torch.randn(4, 64))
    assert list(torch.ops.ascendc_ops.twin_record_take()) == []
