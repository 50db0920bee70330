"""The twin's Matmul agreement rules (docs/twin.md "Matmul: what the twin checks"): each wrong cube
kernel in tests/cpp/twin_cube_faults.cpp stops with an error naming the rule; the control (B's
MatmulType chosen by the weight layout, as grouped_matmul.cpp does) runs clean; grouped_matmul fp32
matches float64 with and without transpose_weight."""

import pytest
import torch

import ascendc_ops
from conftest import kernel_library, rule_error

cube_faults = kernel_library("twin_faults", "twin_cube_faults")
run = cube_faults.run

# kernel -> (rule, detail the message must carry)
RULES = {
    "b_istrans_runtime_false": ("cube operand", r"SetTensorB\(gm, false\) with MatmulType<\.\.\., isTrans=true>"),
    "a_istrans_runtime_false": ("cube operand", r"SetTensorA\(gm, false\) with MatmulType<\.\.\., isTrans=true>"),
    "b_runtime_true_without_istrans": ("cube operand", r"SetTensorB\(gm, true\) needs MatmulType"),
    "tiling_base_k_for_other_transposition": ("cube tiling", r"base alignment: baseK 8 must be a multiple of 16"),
    "tiling_depth_not_step": ("cube tiling", r"depth: depthA1 3 must be stepM x stepKa x db"),
    "tiling_share_l1_unfilled": ("cube tiling", r"used size: shareL1Size 0 != "),
}


def test_every_cube_fault_kernel_is_covered():
    assert set(cube_faults.names()) == set(RULES) | {"correct"}


def test_correct_cube_kernel_runs_clean():
    run("correct")


@pytest.mark.parametrize("kernel", sorted(RULES))
def test_cube_rule_fires(kernel):
    rule, detail = RULES[kernel]
    rule_error(lambda: run(kernel), kernel, rule, detail)


@pytest.mark.parametrize("transpose_weight", [False, True])
def test_grouped_matmul_fp32_both_layouts(transpose_weight):
    torch.manual_seed(0)
    e, k, n = 3, 40, 24
    x = torch.randn(50, k)
    w = torch.randn(e, n, k) if transpose_weight else torch.randn(e, k, n)
    group_list = torch.tensor([10, 30, 50])
    y = ascendc_ops.grouped_matmul(x, w, group_list, group_list_type=0, transpose_weight=transpose_weight)
    wk = w.transpose(1, 2) if transpose_weight else w
    ref = torch.cat([x[s:t].double() @ wk[i].double() for i, (s, t) in enumerate([(0, 10), (10, 30), (30, 50)])])
    torch.testing.assert_close(y.double(), ref, rtol=1e-4, atol=1e-4)


def cube_stream(launch):
    """Per pipe and op of one recorded launch: (instructions, summed count)."""
    seen = {}
    for block in launch["blocks"]:
        for ins in block:
            n, total = seen.get((ins["pipe"], ins["op"]), (0, 0))
            seen[(ins["pipe"], ins["op"])] = (n + 1, total + ins["count"])
    return seen


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("transpose_weight", [False, True])
def test_grouped_matmul_records_the_cube_stream(monkeypatch, dtype, transpose_weight):
    """IterateAll issues CANN's base-block stream through the basic API (twin_cube_iterate.h): the
    sanitizer checks it (on here) and the record carries it. The Mmads' m*n*k add up to every group's
    product and the Fixpipes' m*n to every output element: forward, dx and the weight gradient."""
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "1")
    torch.manual_seed(0)
    e, k, n, rows = 3, 200, 150, [70, 1, 140]  # K and N tails past base blocks; a 1-row group
    x = torch.randn(sum(rows), k, dtype=dtype, requires_grad=True)
    w = torch.randn(e, n, k, dtype=dtype) if transpose_weight else torch.randn(e, k, n, dtype=dtype)
    w.requires_grad_(True)
    group_list = torch.tensor(rows).cumsum(0)

    from test_sanitizer import record

    out = {}
    forward = record(lambda: out.setdefault("y", ascendc_ops.grouped_matmul(x, w, group_list, 0, transpose_weight)))
    backward = record(lambda: out["y"].backward(torch.randn_like(out["y"])))
    t = sum(rows)
    launches = [(rec, t * n) for rec in forward]  # y = x @ w_e per group
    for rec in backward:  # dx = dy @ w_e^T per group; dw_e = x_e^T @ dy_e
        launches.append((rec, t * k if rec["kernel"] == "grouped_matmul" else e * k * n))
    kernels = sorted(rec["kernel"] for rec, _ in launches)
    assert kernels == ["grouped_matmul", "grouped_matmul", "grouped_matmul_weight_grad"], kernels
    for rec, outputs in launches:
        stream = cube_stream(rec)
        assert stream[("M", "Mmad")][1] == t * k * n, (rec["kernel"], stream)
        assert stream[("FIX", "Fixpipe")][1] == outputs, (rec["kernel"], stream)
        assert stream[("MTE2", "DataCopy")][0] > 0 and stream[("MTE1", "LoadData")][0] > 0, (rec["kernel"], stream)
        # one L1 -> L0 move per operand and K step, as A2's library issues them (load_to_l0{a,b}_loadInstr.h)
        assert stream[("MTE1", "LoadData")][0] == 2 * stream[("M", "Mmad")][0], (rec["kernel"], stream)
        assert stream[("M", "SetFlag")][0] > 0 and stream[("FIX", "SetFlag")][0] > 0, (rec["kernel"], stream)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_grouped_matmul_records_the_bias_moves(monkeypatch, dtype):
    """With a bias, each base block's bias goes GM -> L1 (MTE2, the bias's own bytes) -> bias table (MTE1,
    written as fp32) and the block's first Mmad reads the table: in the record, sanitized (on here)."""
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "1")
    e, k, n, rows = 3, 200, 300, [70, 0, 41]  # N past one base block; an empty group
    bias_dtype = torch.float16 if dtype == torch.float16 else torch.float32
    x, w = torch.randn(sum(rows), k, dtype=dtype), torch.randn(e, k, n, dtype=dtype)
    bias = torch.randn(e, n, dtype=bias_dtype)

    from test_sanitizer import record

    (rec,) = record(lambda: ascendc_ops.grouped_matmul(x, w, torch.tensor(rows), 1, False, bias))
    (plain,) = record(lambda: ascendc_ops.grouped_matmul(x, w, torch.tensor(rows), 1, False))
    ins = [i for block in rec["blocks"] for i in block]
    to_table = [i for i in ins if i["pipe"] == "MTE1" and i["op"] == "DataCopy"]
    from_table = [i for i in ins if i["op"] == "Mmad" and i.get("BT_read")]
    assert len(to_table) == len(from_table) > 0  # one table load per base block, read by its first Mmad
    assert all(i["L1_read"] and 0 < sum(e - b for b, e in i["BT_write"]) <= 1024 for i in to_table)
    # the bias's own GM bytes, once per base block of rows (128 here: x's rows stay resident for K 200)
    row_blocks = sum(-(-r // 128) for r in rows)
    extra = sum(i["gm_read"] for b in rec["blocks"] for i in b) - sum(i["gm_read"] for b in plain["blocks"] for i in b)
    assert extra == row_blocks * n * bias.element_size(), (extra, row_blocks)


def _l1_loads(rec, block_bytes):
    """GM -> L1 DataCopies per block of one launch, keyed by the bytes each reads."""
    per_block = []
    for block in rec["blocks"]:
        sizes = [i["gm_read"] for i in block if i["pipe"] == "MTE2" and i["op"] == "DataCopy"]
        per_block.append({name: sizes.count(b) for name, b in block_bytes.items()} | {"all": len(sizes)})
    return per_block


@pytest.mark.parametrize("bias", [False, True])
def test_norm_l1_cache_loads_k_once_per_n_block(monkeypatch, bias):
    """The Norm schedule loads one base block per K step (k_loop_norm.h) and keeps depth - 2 of an
    operand's K steps cached in L1 (all of them when K fits) until the operand resets
    (cube_in_buffer_normal.h, scheduler_norm_base.h). fp16, baseK 64, 48 blocks. K 1024 (16 steps), no
    bias: x's rows stay (depthA1 16, iterateOrder 1), a block is 128 rows by 2 N base blocks: A's 16
    steps load once, B's reset every base block (16 x 2). K 2048 (32 steps) with a bias: the rows do not
    fit L1 (depthA1 8, iterateOrder 0), a block is 2 M x 4 N base blocks: A loads all 32 steps per base
    block, B's first 6 steps stay across the 2 M base blocks (32 + 26 per N base block)."""
    monkeypatch.setenv("ASCENDC_TWIN_SANITIZE", "1")
    m, n, k = (128 * 48, 512, 1024) if not bias else (256 * 48, 1024, 2048)
    x, w = torch.randn(m, k, dtype=torch.float16), torch.randn(1, k, n, dtype=torch.float16) / 32
    b = torch.randn(1, n, dtype=torch.float16) if bias else None

    from ascendc_ops.harness.pipeline import load_platform
    from ascendc_ops.harness.pipeline.estimate import tiling_platform
    from test_sanitizer import record

    with tiling_platform(load_platform("910B")):  # 24 cube cores: 2 blocks per core
        (rec,) = record(lambda: ascendc_ops.grouped_matmul(x, w, torch.tensor([m]), 1, False, b))
    sizes = {"A": 128 * 64 * 2, "B": 64 * 256 * 2, "bias": 256 * 2}
    loads = _l1_loads(rec, sizes)
    assert len(loads) == 24  # the launch's cores, each a list of its blocks' instructions
    one = {"A": 16, "B": 32, "bias": 0, "all": 48} if not bias else {"A": 256, "B": 232, "bias": 8, "all": 496}
    want = {key: 2 * v for key, v in one.items()}
    assert all(block == want for block in loads), loads[:2]
