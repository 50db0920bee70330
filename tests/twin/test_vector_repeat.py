"""The twin's mask/repeat ("level 0") vector APIs against plain NumPy references, bit for bit.

Geometry (asc-devkit docs/zh/api/SIMD-API/基础API/Memory矢量计算/SIMD计算说明/高维切分.md, 掩码.md): lane i of
repeat r is element i % B of block r * repStride + (i // B) * blkStride, B = 32 bytes' worth of elements;
the continuous mask is the number of leading lanes. Orders: a binary tree of adjacent pairs per repeat
(WholeReduceSum, ReduceRepeat.md) and per 32-byte block (BlockReduceSum, ReduceDataBlock.md). The
kernels are in tests/cpp/twin_vector_repeat_kernels.cpp; every launch runs under the sanitizer.
"""

import json

import numpy as np
import pytest
import torch

import ascendc_ops  # noqa: F401  (loads the twin the test kernels link against)
from ascendc_ops.harness.pipeline import load_platform
from ascendc_ops.harness.pipeline.platform import dtype_key
from ascendc_ops.harness.pipeline.timeline import vector_cost
from conftest import kernel_library

repeat = kernel_library("twin_faults", "twin_repeat")
run_op = repeat.run

NP = {torch.float32: np.float32, torch.float16: np.float16, torch.int32: np.int32, torch.int16: np.int16}
ORDERS = ["ORDER_VALUE_INDEX", "ORDER_INDEX_VALUE", "ORDER_ONLY_VALUE", "ORDER_ONLY_INDEX"]


def per_block(dtype) -> int:
    return 32 // torch.tensor([], dtype=dtype).element_size()


def lane(r: int, i: int, blk: int, rep: int, b: int) -> int:
    return (r * rep + (i // b) * blk) * b + i % b


def params(
    mask,
    repeat,
    dst_blk=1,
    src0_blk=1,
    src1_blk=1,
    dst_rep=8,
    src0_rep=8,
    src1_rep=8,
    order=0,
    a_off=0,
    b_off=0,
    d_off=0,
    alias=0,
):
    return [mask, repeat, dst_blk, src0_blk, src1_blk, dst_rep, src0_rep, src1_rep, order, a_off, b_off, d_off, alias]


def blocks_for(n_elems: int, dtype) -> int:
    """n_elems rounded up to whole 32-byte blocks (at least one)."""
    b = per_block(dtype)
    return max(b, -(-n_elems // b) * b)


def extent(mask, repeat, blk, rep, b) -> int:
    """One past the last element the geometry touches."""
    return max(lane(repeat - 1, i, blk, rep, b) for i in range(mask)) + 1


def values(n: int, dtype, seed: int, positive: bool = False) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g) * torch.exp2(torch.randint(-4, 5, (n,), generator=g).float())
    if positive:
        x = x.abs() + 0.5
    if dtype == torch.float16:
        x = x.clamp(-60, 60)
    return x.to(dtype)


def sentinel(n: int, dtype) -> torch.Tensor:
    return (torch.arange(n) % 13 - 100).to(dtype)


def same_bits(a: torch.Tensor, b) -> bool:
    b = torch.as_tensor(np.ascontiguousarray(b))
    return a.dtype == b.dtype and torch.equal(a.view(torch.uint8), b.view(torch.uint8))


# ---- binary ----
BIN = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Max": np.maximum, "Min": np.minimum}
# (dst_blk, src0_blk, src1_blk, dst_rep, src0_rep, src1_rep): contiguous; src1 a block broadcast per repeat
# (block stride 0, repeat stride 1: the row-broadcast idiom); repeat strides past 8; a dst block stride of 2
STRIDES = [(1, 1, 1, 8, 8, 8), (1, 1, 0, 8, 8, 1), (1, 2, 1, 10, 17, 9), (2, 1, 0, 16, 8, 0)]
MASKS = {torch.float32: [8, 40, 64, 13], torch.float16: [24, 128, 100]}


def binary_ref(op, a, b, dst, mask, repeat, s, bsz):
    out = dst.copy()
    for r in range(repeat):
        x = np.array([a[lane(r, i, s[1], s[4], bsz)] for i in range(mask)], dtype=a.dtype)
        y = np.array([b[lane(r, i, s[2], s[5], bsz)] for i in range(mask)], dtype=a.dtype)
        res = BIN[op](x, y).astype(a.dtype)
        for i in range(mask):
            out[lane(r, i, s[0], s[3], bsz)] = res[i]
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("repeat", [1, 7, 64])
@pytest.mark.parametrize("strides", STRIDES)
def test_binary_matches_reference(dtype, repeat, strides):
    b = per_block(dtype)
    for mask in MASKS[dtype]:
        for k, op in enumerate(BIN):
            na = blocks_for(extent(mask, repeat, strides[1], strides[4], b), dtype)
            nb = blocks_for(extent(mask, repeat, strides[2], strides[5], b), dtype)
            nd = blocks_for(extent(mask, repeat, strides[0], strides[3], b), dtype)
            a, y = values(na, dtype, mask + k), values(nb, dtype, 99 + k, positive=op == "Div")
            d = sentinel(nd, dtype)
            out = run_op(op, a, y, d, params(mask, repeat, *strides))
            ref = binary_ref(op, a.numpy(), y.numpy(), d.numpy(), mask, repeat, strides, b)
            assert same_bits(out, ref), (op, mask)


def test_binary_int_dtypes_and_in_place():
    for dtype in (torch.int32, torch.int16):
        a = torch.arange(256, dtype=dtype)
        out = run_op("Add", a, a, torch.zeros(256, dtype=dtype), params(per_block(dtype) * 3, 2))
        assert same_bits(
            out,
            binary_ref(
                "Add",
                a.numpy(),
                a.numpy(),
                np.zeros(256, NP[dtype]),
                per_block(dtype) * 3,
                2,
                (1, 1, 1, 8, 8, 8),
                per_block(dtype),
            ),
        )
    # dst == src0, the same bytes in every repeat: allowed (100% overlap)
    d = values(512, torch.float32, 3)
    y = values(512, torch.float32, 4)
    out = run_op("Mul", y, y, d, params(40, 8, alias=1))
    assert same_bits(out, binary_ref("Mul", d.numpy(), y.numpy(), d.numpy(), 40, 8, (1, 1, 1, 8, 8, 8), 8))


def test_binary_accumulates_into_src1_with_repeat_stride_zero():
    # 通用地址重叠约束's exception: dst == src1 with dstRepStride = src1RepStride = 0 sums src0's repeats
    a = values(7 * 64, torch.float32, 5)
    d = values(64, torch.float32, 6)
    out = run_op("Add", a, torch.zeros(8), d, params(64, 7, dst_rep=0, src1_rep=0, alias=2))
    acc = d.numpy().copy()
    for r in range(7):
        acc = (acc + a.numpy()[r * 64 : (r + 1) * 64]).astype(np.float32)
    assert same_bits(out, acc)
    with pytest.raises(RuntimeError, match="operand overlap"):  # Div has no such exception
        run_op("Div", a, torch.zeros(8), d, params(64, 7, dst_rep=0, src1_rep=0, alias=2))
    with pytest.raises(RuntimeError, match="operand overlap"):  # nor src0
        run_op("Add", d, a, d, params(64, 7, dst_rep=0, src0_rep=0, alias=1))


def test_binary_overlap_rules():
    d = values(1024, torch.float32, 7)
    y = values(1024, torch.float32, 8)
    with pytest.raises(RuntimeError, match="operand overlap.*without being the same bytes"):
        run_op("Add", y, y, d, params(64, 1, a_off=8, alias=1))  # src0 one block behind dst, same repeat
    with pytest.raises(RuntimeError, match="operand overlap.*that repeat 0 wrote"):
        run_op("Add", y, y, d, params(64, 2, d_off=64, alias=1))  # repeat 1 reads what repeat 0 wrote
    # the source a repeat ahead of dst: each repeat reads bytes no earlier repeat wrote (allowed)
    out = run_op("Add", y, y, d, params(64, 3, a_off=64, alias=1))
    ref = d.numpy().copy()
    for r in range(3):
        ref[64 * r : 64 * r + 64] = ref[64 * r + 64 : 64 * r + 128] + y.numpy()[64 * r : 64 * r + 64]
    assert same_bits(out, ref)


def test_binary_rules_fire():
    f = torch.zeros(512)
    with pytest.raises(RuntimeError, match=r"repeat parameters.*mask.*65"):
        run_op("Add", f, f, f, params(65, 1))
    with pytest.raises(RuntimeError, match=r"repeat parameters.*mask.*129"):
        h = torch.zeros(512, dtype=torch.float16)
        run_op("Add", h, h, h, params(129, 1))
    with pytest.raises(RuntimeError, match="dstBlkStride 0"):
        run_op("Add", f, f, f, params(64, 1, dst_blk=0))
    with pytest.raises(RuntimeError, match="32-byte alignment"):
        run_op("Add", f, f, f, params(8, 1, b_off=4))
    with pytest.raises(RuntimeError, match="dtype support"):
        i = torch.zeros(512, dtype=torch.int32)
        run_op("Div", i, i, i, params(8, 1))
    # one block past src1's buffer: 7 repeats of 8 blocks need 448 floats, the buffer holds 440
    with pytest.raises(RuntimeError, match=r"UB bounds.*Add src1 touches bytes up to 1792.*1760 bytes"):
        run_op("Add", torch.zeros(448), torch.zeros(440), torch.zeros(448), params(64, 7))
    with pytest.raises(RuntimeError, match="UB bounds.*dst"):  # dst block stride 2 doubles dst's reach
        run_op("Add", torch.zeros(448), torch.zeros(448), torch.zeros(448), params(64, 7, dst_blk=2))
    # repeat 0 and mask 0 are NOPs: dst unchanged, nothing checked past the buffer
    d = sentinel(64, torch.float32)
    assert torch.equal(run_op("Add", f, f, d, params(64, 0)), d)
    assert torch.equal(run_op("Add", f, f, d, params(0, 200)), d)


# ---- WholeReduceSum / WholeReduceMax ----
def tree(x: np.ndarray, width: int) -> np.ndarray:
    level = np.zeros(width, dtype=x.dtype)
    level[: len(x)] = x
    while len(level) > 1:
        level = level[0::2] + level[1::2]  # NumPy rounds each sum to x's dtype
    return level[0]


def repeat_lanes(x, r, mask, blk, rep, b):
    return np.array([x[lane(r, i, blk, rep, b)] for i in range(mask)], dtype=x.dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("repeat", [1, 7, 64])
@pytest.mark.parametrize("strides", [(1, 1, 8), (3, 2, 17), (1, 0, 1)])  # (dstRep, srcBlk, srcRep)
def test_whole_reduce_sum_is_a_tree_per_repeat(dtype, repeat, strides):
    b, lanes = per_block(dtype), 256 // (4 if dtype == torch.float32 else 2)
    dst_rep, blk, rep = strides
    for mask in MASKS[dtype]:
        x = values(blocks_for(extent(mask, repeat, blk, rep, b), dtype), dtype, mask)
        d = sentinel(blocks_for(dst_rep * (repeat - 1) + 1, dtype), dtype)
        out = run_op("WholeReduceSum", x, x[:b], d, params(mask, repeat, dst_rep=dst_rep, src0_blk=blk, src0_rep=rep))
        ref = d.numpy().copy()
        for r in range(repeat):
            ref[r * dst_rep] = tree(repeat_lanes(x.numpy(), r, mask, blk, rep, b), lanes)
        assert same_bits(out, ref), mask


def test_whole_reduce_sum_order_is_the_tree_not_left_to_right():
    x = np.zeros(64, np.float32)
    x[:4] = [1e8, 1, -1e8, 1]  # tree: (1e8 + 1) + (-1e8 + 1) = 0; left to right: ((1e8 + 1) - 1e8) + 1 = 1
    out = run_op("WholeReduceSum", torch.from_numpy(x), torch.zeros(8), torch.full((8,), 5.0), params(4, 1))
    left_to_right = np.float32(np.float32(np.float32(1e8) + np.float32(1)) - np.float32(1e8)) + np.float32(1)
    assert out[0].item() == 0.0 and left_to_right == 1.0
    assert out[1:].eq(5.0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("order", range(4))
def test_whole_reduce_max_orders(dtype, order):
    b, size = per_block(dtype), 32 // per_block(dtype)
    repeat, mask, dst_rep = 7, MASKS[dtype][1], 2
    x = values(repeat * 8 * b, dtype, order)
    xs = x.numpy().copy()
    xs[5] = xs[3] = xs[:mask].max() + 1  # a tie in repeat 0: the smaller index wins
    x = torch.from_numpy(xs)
    unit = {2: size, 3: 4}.get(order, 2 * size)  # ReduceRepeat.md 表3: dstRepStride's unit in bytes
    nbytes = -(-(unit * dst_rep * repeat) // 32) * 32
    d = sentinel(nbytes // size, dtype)
    out = run_op("WholeReduceMax", x, x[:b], d, params(mask, repeat, dst_rep=dst_rep, order=order))
    ref = bytearray(d.numpy().tobytes())
    idx_t = np.uint16 if size == 2 else np.uint32
    for r in range(repeat):
        lanes_r = xs[r * 8 * b : r * 8 * b + mask]
        at = int(np.argmax(lanes_r))  # the first of equal maxima
        if r == 0:
            assert at == 3
        value, index = lanes_r[at].tobytes(), idx_t(at).tobytes()
        entry = {0: value + index, 1: index + value, 2: value, 3: np.uint32(at).tobytes()}[order]
        o = r * dst_rep * unit
        ref[o : o + len(entry)] = entry
    assert out.numpy().tobytes() == bytes(ref), ORDERS[order]


def test_whole_reduce_rules_fire():
    f = torch.zeros(512)
    with pytest.raises(RuntimeError, match=r"repeat parameters.*repeatTime 256"):
        run_op("WholeReduceSum", f, f, f, params(64, 256, src0_rep=0))
    with pytest.raises(RuntimeError, match=r"repeat parameters.*srcRepStride 65536"):
        run_op("WholeReduceSum", f, f, f, params(64, 1, src0_rep=65536))
    with pytest.raises(RuntimeError, match="dtype support"):
        i = torch.zeros(512, dtype=torch.int32)
        run_op("WholeReduceMax", i, i, i, params(8, 1))
    with pytest.raises(RuntimeError, match="alignment.*not a multiple of 8"):  # float value+index: 8 bytes
        run_op("WholeReduceMax", f, f, f, params(64, 1, d_off=1))
    run_op("WholeReduceMax", f, f, f, params(64, 1, d_off=1, order=2))  # value only: 4-byte aligned is enough
    with pytest.raises(RuntimeError, match="UB bounds.*dst"):  # 9 results of 8 bytes past a 64-byte dst
        run_op("WholeReduceMax", torch.zeros(9 * 64), f, torch.zeros(16), params(64, 9, dst_rep=1))
    with pytest.raises(RuntimeError, match="UB bounds.*src"):  # one block past the source
        run_op("WholeReduceSum", torch.zeros(440), f, f, params(64, 7))
    with pytest.raises(RuntimeError, match="operand overlap"):  # in place: dst partly inside repeat 0's source
        run_op("WholeReduceSum", f, f, f, params(64, 4, dst_rep=1, alias=1))


# ---- BlockReduceSum / BlockReduceMax ----
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("repeat", [1, 7, 64])
@pytest.mark.parametrize("strides", [(1, 1, 8), (2, 2, 17), (1, 0, 1)])  # (dstRep, srcBlk, srcRep)
def test_block_reduce_per_block(dtype, repeat, strides):
    b = per_block(dtype)
    dst_rep, blk, rep = strides
    for op in ("BlockReduceSum", "BlockReduceMax"):
        for mask in MASKS[dtype]:
            x = values(blocks_for(extent(mask, repeat, blk, rep, b), dtype), dtype, mask + 1)
            d = sentinel(blocks_for(8 * dst_rep * (repeat - 1) + 8, dtype), dtype)
            out = run_op(op, x, x[:b], d, params(mask, repeat, dst_rep=dst_rep, src0_blk=blk, src0_rep=rep))
            ref = d.numpy().copy()
            for r in range(repeat):
                lanes_r = repeat_lanes(x.numpy(), r, mask, blk, rep, b)
                for j in range(-(-mask // b)):  # blocks no lane of which takes part keep dst's data
                    part = lanes_r[j * b : (j + 1) * b]
                    ref[r * 8 * dst_rep + j] = tree(part, b) if op == "BlockReduceSum" else part.max()
            assert same_bits(out, ref), (op, mask)


def test_block_reduce_sum_order_is_a_tree_per_block():
    x = np.zeros(64, np.float32)
    x[8:12] = [1e8, 1, -1e8, 1]  # block 1
    out = run_op("BlockReduceSum", torch.from_numpy(x), torch.zeros(8), torch.full((8,), 5.0), params(64, 1))
    assert out.tolist() == [0.0] * 8


def test_block_reduce_rules_fire():
    f = torch.zeros(512)
    with pytest.raises(RuntimeError, match="alignment.*not a multiple of 32"):
        run_op("BlockReduceMax", f, f, f, params(64, 1, d_off=4))
    with pytest.raises(RuntimeError, match="UB bounds.*src"):
        run_op("BlockReduceSum", torch.zeros(440), f, f, params(64, 7))
    with pytest.raises(RuntimeError, match="UB bounds.*dst"):
        run_op("BlockReduceSum", torch.zeros(448), f, torch.zeros(48), params(64, 7, dst_rep=1))


# ---- Brcb ----
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int16])
@pytest.mark.parametrize("repeat", [1, 7, 64])
@pytest.mark.parametrize("strides", [(1, 8), (2, 16), (1, 9)])
def test_brcb_broadcasts_each_element_to_a_block(dtype, repeat, strides):
    b = per_block(dtype)
    blk, rep = strides
    x = (torch.arange(blocks_for(8 * repeat, dtype)) * 3 + 1).to(dtype)
    d = sentinel(blocks_for(((repeat - 1) * rep + 7 * blk + 1) * b, dtype), dtype)
    out = run_op("Brcb", x, x[:b], d, params(0, repeat, dst_blk=blk, dst_rep=rep))
    ref = d.numpy().copy()
    for r in range(repeat):
        for j in range(8):
            o = (r * rep + j * blk) * b
            ref[o : o + b] = x.numpy()[r * 8 + j]
    assert same_bits(out, ref)


def test_brcb_rules_fire():
    f = torch.zeros(512)
    with pytest.raises(RuntimeError, match="dstBlkStride 0"):
        run_op("Brcb", f, f, f, params(0, 1, dst_blk=0))
    with pytest.raises(RuntimeError, match="operand overlap"):
        run_op("Brcb", f, f, f, params(0, 1, a_off=56, alias=1))  # src in dst block 7
    with pytest.raises(RuntimeError, match="UB bounds.*src"):  # 9 repeats read 72 elements
        run_op("Brcb", torch.zeros(64), f, torch.zeros(9 * 64), params(0, 9))


# ---- the record: exact spans, costed by repeatTime ----
def record(fn):
    repeat.record_take()
    repeat.record(True)
    try:
        fn()
    finally:
        repeat.record(False)
    return [json.loads(s) for s in repeat.record_take()]


def vector_instrs(launches, op):
    return [i for launch in launches for blk in launch["blocks"] for i in blk if i.get("op") == op]


def test_record_spans_and_pipeline_cost_follow_repeat_time():
    a, y, d = torch.zeros(7 * 64), torch.zeros(8 * 7), torch.zeros(7 * 64)
    launches = record(lambda: run_op("Add", a, y, d, params(40, 7, src1_blk=0, src1_rep=1)))
    (ins,) = vector_instrs(launches, "Add")
    assert ins["repeats"] == 7 and ins["count"] == 7 * 40
    reads = sorted(ins["ub_read"])
    src0_at, src1_at, dst_at = reads[0][0], reads[-1][0], ins["ub_write"][0][0]
    # src0: 160 bytes (40 lanes) of every 256-byte repeat; src1: one 32-byte block per repeat, contiguous
    assert [r for r in reads if src0_at <= r[0] < src0_at + 7 * 256] == [
        [src0_at + 256 * r, src0_at + 256 * r + 160] for r in range(7)
    ]
    assert [src1_at, src1_at + 7 * 32] in reads
    assert ins["ub_write"] == [[dst_at + 256 * r, dst_at + 256 * r + 160] for r in range(7)]
    plat = load_platform("910B")
    key = dtype_key("float")
    # 7 repeats, not the ceil(280 / 64) = 5 a count of 280 would give
    assert vector_cost(plat, ins, set()) == plat.vector_cycles("Add", key, 7)
    assert plat.vector_cycles("Add", key, 7) != plat.vector_cycles("Add", key, 5)
    for op, p in (
        ("WholeReduceSum", params(8, 9, dst_rep=1)),
        ("BlockReduceMax", params(8, 9, dst_rep=1)),
        ("Brcb", params(0, 9)),
    ):
        (ins,) = vector_instrs(
            record(lambda op=op, p=p: run_op(op, torch.zeros(9 * 64), a[:8], torch.zeros(9 * 64), p)), op
        )
        assert ins["repeats"] == 9, op
        assert vector_cost(plat, ins, uncosted := set()) == plat.vector_cycles(op, key, 9) and not uncosted, op
