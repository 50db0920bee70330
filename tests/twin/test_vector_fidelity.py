"""The twin's vector arithmetic in Atlas A2's documented order, bit for bit.

ReduceSum, count form (asc-devkit docs/zh/api/SIMD-API/基础API/Memory矢量计算/归约计算/ReduceSum.md,
关键特性说明: the count form on Atlas A2 uses 方式一): inside each 256-byte repeat (64 float / 128 half
lanes) a binary tree of adjacent pairs, lanes past count as 0; the repeats' sums added in order; every
addition rounded to the operand type. count 0 is a no-op: dst is not written. The reference below
computes that order in NumPy, independently of the twin's C++ (tests/cpp/twin_vector_kernels.cpp).
"""

import numpy as np
import pytest
import torch

import ascendc_ops  # noqa: F401  (loads the twin the test kernels link against)
from conftest import kernel_library

vector = kernel_library("twin_faults", "twin_vector")
reduce_sum = vector.reduce_sum

COUNTS = [1, 7, 64, 65, 127, 128, 129, 1000, 4097]
DTYPES = {torch.float32: np.float32, torch.float16: np.float16}


def a2_reduce_sum(x: np.ndarray) -> np.ndarray:
    """ReduceSum's count form on A2: a pairwise tree per repeat, then the repeats in order, in x's dtype."""
    lanes = 256 // x.itemsize
    acc = None
    for start in range(0, len(x), lanes):
        level = np.zeros(lanes, dtype=x.dtype)
        chunk = x[start : start + lanes]
        level[: len(chunk)] = chunk
        while len(level) > 1:
            level = level[0::2] + level[1::2]  # NumPy rounds each sum to x's dtype
        acc = level[0] if acc is None else (acc + level[0]).astype(x.dtype)
    return np.asarray(acc, dtype=x.dtype)


def sentinel(dtype):
    """One 32-byte block of values ReduceSum must leave alone (all but dst[0], or all for count 0)."""
    n = 32 // (4 if dtype == torch.float32 else 2)
    return torch.arange(1, n + 1, dtype=dtype) * -7


def awkward(count: int, dtype, seed: int) -> torch.Tensor:
    """Values whose rounded sums depend on the order: mixed signs and magnitudes, a few large ones."""
    g = torch.Generator().manual_seed(seed * 7919 + count)
    x = torch.randn(count, generator=g) * torch.exp2(torch.randint(-6, 7, (count,), generator=g).float())
    if dtype == torch.float16:
        x = x.clamp(-4, 4)  # sums stay far below half's 65504
    return x.to(dtype)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reduce_sum_order_bit_exact(count, dtype, seed):
    x = awkward(count, dtype, seed)
    dst = sentinel(dtype)
    out = reduce_sum(x, count, dst)
    expected = a2_reduce_sum(x.numpy())
    assert out[0].numpy().view(np.uint32 if dtype == torch.float32 else np.uint16) == expected.view(
        np.uint32 if dtype == torch.float32 else np.uint16
    ), (float(out[0]), float(expected))
    torch.testing.assert_close(out[1:], dst[1:], rtol=0, atol=0)  # only dst[0] is written


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_reduce_sum_count_zero_leaves_dst(dtype):
    dst = sentinel(dtype)
    out = reduce_sum(torch.ones(64, dtype=dtype), 0, dst)
    assert torch.equal(out, dst)


def test_reduce_sum_reference_is_not_a_plain_sum():
    """The order matters for these inputs: the reference differs from a left-to-right float32 sum, and the
    twin follows the reference, so a twin summing in another order would fail the tests above."""
    differs = 0
    for seed in range(3):
        x = awkward(4097, torch.float32, seed).numpy()
        sequential = np.float32(0)
        for v in x:
            sequential = np.float32(sequential + v)
        differs += int(a2_reduce_sum(x) != sequential)
    assert differs > 0


def test_reduce_sum_masked_lanes_are_plus_zero():
    """A partial repeat of -0.0 sums with the +0 of its masked lanes: +0 (a full repeat keeps -0)."""
    neg = torch.full((7,), -0.0)
    assert torch.signbit(reduce_sum(neg, 7, sentinel(torch.float32))[0]).item() is False
    assert torch.signbit(reduce_sum(torch.full((64,), -0.0), 64, sentinel(torch.float32))[0]).item() is True


# ---- MulAddDst (count form): the product rounded to T, then the sum ----
# A2's boundary-value table (docs/zh/api/附录/Memory矢量计算接口边界值汇总.md, 表21) lists the product
# as an intermediate in T's range: MAX * MAX is +inf, and MAX * MAX + -inf is nan (a fused multiply-add
# gives -inf). The reference rounds the product to T, then the sum, in NumPy's own T arithmetic.
mul_add_dst = vector.mul_add_dst


def a2_mul_add_dst(a: np.ndarray, b: np.ndarray, d: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return (a * b) + d  # NumPy rounds a * b to the dtype, then the sum


def bits(x: np.ndarray) -> np.ndarray:
    return x.view({4: np.uint32, 2: np.uint16}[x.itemsize])


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("seed", [0, 1])
def test_mul_add_dst_rounds_the_product_first(dtype, seed):
    a, b, d = (awkward(1024, dtype, seed * 3 + k) for k in range(3))
    out = mul_add_dst(a, b, d).numpy()
    want = a2_mul_add_dst(a.numpy(), b.numpy(), d.numpy())
    assert np.array_equal(bits(out), bits(want)), np.flatnonzero(bits(out) != bits(want))[:8]
    # The order shows on these inputs: one rounding of a * b + d (in float64) differs somewhere.
    once = (a.double() * b.double() + d.double()).to(dtype).numpy()
    assert np.any(bits(once) != bits(want))


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_mul_add_dst_boundary_rows(dtype):
    """Rows of 表21 (INF/NAN mode): (src0, src1, dst) -> dst out."""
    big = float(torch.finfo(dtype).max)
    inf, nan = float("inf"), float("nan")
    rows = [
        (big, big, -inf, nan),  # the product overflows to +inf before the add
        (big, big, -big, inf),
        (big, 1.0, -big, 0.0),  # src0 * src1 = MAX, dst MIN: +0
        (0.0, -0.0, -0.0, -0.0),
        (0.0, -0.0, 0.0, 0.0),
        (inf, 0.0, 1.0, nan),
    ]
    n = 32 // (4 if dtype == torch.float32 else 2) * 2
    cols = [torch.tensor([r[k] for r in rows] * n, dtype=dtype)[:n] for k in range(4)]
    out = mul_add_dst(cols[0], cols[1], cols[2])
    assert torch.equal(torch.isnan(out), torch.isnan(cols[3]))
    ok = ~torch.isnan(cols[3])
    assert torch.equal(out[ok], cols[3][ok]) and torch.equal(torch.signbit(out[ok]), torch.signbit(cols[3][ok]))


# ---- Cast: A2's modes (Cast.md RoundMode; the A2 dtype-pair table) against models in exact arithmetic ----
cast = vector.cast
MODES = {"NONE": 0, "RINT": 1, "FLOOR": 2, "CEIL": 3, "ROUND": 4, "TRUNC": 5, "ODD": 6}


def pick(x: float, lo: float, hi: float, lo_bits: int, mode: str, nearest: float) -> float:
    """x between the neighbours lo < x < hi of the target format; `nearest` is its round-to-nearest-even."""
    if mode in ("RINT", "NONE"):
        return nearest
    if mode == "FLOOR":
        return lo
    if mode == "CEIL":
        return hi
    if mode == "TRUNC":
        return lo if x > 0 else hi
    if mode == "ODD":
        return lo if lo_bits & 1 else hi
    # ROUND: nearest, ties away from zero (x, lo, hi exact in Python floats: no overflow in these inputs)
    if x - lo == hi - x:
        return hi if x > 0 else lo
    return lo if x - lo < hi - x else hi


def rounded(v, ftype, mode: str):
    """v (a float32 or an int32 value) in ftype (np.float16 or np.float32) by the mode: as it is where ftype holds
    it, else picked between its two ftype neighbours."""
    near = ftype(v)
    if float(near) == float(v):
        return near
    up, down = np.nextafter(near, ftype(np.inf)), np.nextafter(near, ftype(-np.inf))
    lo, hi = (near, up) if float(near) < v else (down, near)
    return ftype(pick(float(v), float(lo), float(hi), int(bits(np.array(lo, dtype=ftype))), mode, float(near)))


def cast_inputs(seed: int) -> np.ndarray:
    """float32 values inside half's finite range: random, exact half values, and halfway points."""
    g = np.random.default_rng(seed)
    h = (g.standard_normal(256) * np.exp2(g.integers(-24, 15, 256))).astype(np.float16)
    h = h[np.isfinite(h) & (np.abs(h) < 60000)]
    halfway = (h.astype(np.float32) + np.nextafter(h, np.float16(np.inf)).astype(np.float32)) / np.float32(2)
    rand = (g.standard_normal(256) * np.exp2(g.integers(-26, 15, 256))).astype(np.float32)
    x = np.concatenate([halfway[:96], -halfway[96:192], h.astype(np.float32), rand])
    x = x[np.abs(x) < 65000][:512]
    return np.resize(x, 512).astype(np.float32)


@pytest.mark.parametrize("mode", list(MODES))
def test_cast_float_to_half_modes(mode):
    x = cast_inputs(MODES[mode])
    out = cast(torch.from_numpy(x), "half", MODES[mode]).numpy()
    want = np.array([rounded(v, np.float16, mode) for v in x], dtype=np.float16)
    assert np.array_equal(bits(out), bits(want)), (x[bits(out) != bits(want)][:4], out[bits(out) != bits(want)][:4])


@pytest.mark.parametrize("mode", ["RINT", "FLOOR", "CEIL", "ROUND", "TRUNC"])
def test_cast_float_to_bf16_modes(mode):
    x = cast_inputs(10 + MODES[mode]) * np.float32(3.0e4)  # bf16 keeps float's range
    ties = (np.random.default_rng(MODES[mode]).integers(0x0080, 0x7F00, 128) << 16) | 0x8000  # halfway for bf16
    x[:128] = ties.astype(np.uint32).view(np.float32) * np.float32(np.resize([1, -1], 128))
    u = x.view(np.uint32).astype(np.int64)
    sign, mag = u & 0x80000000, u & 0x7FFFFFFF
    toward0, rem = mag & 0x7FFF0000, mag & 0xFFFF
    away = toward0 + 0x10000
    up = {  # does the magnitude round away from zero?
        "RINT": (rem > 0x8000) | ((rem == 0x8000) & ((toward0 >> 16) & 1 == 1)),
        "ROUND": rem >= 0x8000,
        "TRUNC": np.zeros_like(rem, dtype=bool),
        "FLOOR": (rem > 0) & (sign != 0),
        "CEIL": (rem > 0) & (sign == 0),
    }[mode]
    want = ((sign | np.where(up, away, toward0)) >> 16).astype(np.uint16)
    out = cast(torch.from_numpy(x), "bfloat16", MODES[mode]).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(out, want), (x[out != want][:4], out[out != want][:4], want[out != want][:4])


@pytest.mark.parametrize("mode", ["RINT", "FLOOR", "CEIL", "ROUND", "TRUNC"])
def test_cast_float_to_int32_modes_and_saturation(mode):
    """Halfway and saturating values; nan -> 0 and +-inf / MAX saturate (表32, float/int32_t)."""
    base = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 7.75, -7.25, 3.4028235e38, -3.4028235e38]
    base += [float("inf"), float("-inf"), float("nan"), 2147483520.0, 2147483648.0, -2147483648.0, -0.0]
    x = np.resize(np.array(base, dtype=np.float32), 64)
    fn = {
        "RINT": np.rint,
        "FLOOR": np.floor,
        "CEIL": np.ceil,
        "TRUNC": np.trunc,
        "ROUND": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5),
    }[mode]
    with np.errstate(invalid="ignore"):
        r = fn(x.astype(np.float64))
    want = np.where(np.isnan(r), 0, np.clip(np.nan_to_num(r, posinf=2**31, neginf=-(2**31)), -(2**31), 2**31 - 1))
    out = cast(torch.from_numpy(x), "int32", MODES[mode]).numpy()
    assert np.array_equal(out, want.astype(np.int32)), (x[out != want], out[out != want])


@pytest.mark.parametrize("mode", ["NONE", "RINT", "FLOOR", "CEIL", "ROUND", "TRUNC"])
def test_cast_int32_to_float_modes(mode):
    """int32 -> float honours the mode (Cast.md, A2 table); values past 2^24 need rounding."""
    g = np.random.default_rng(MODES[mode])
    x = np.concatenate(
        [
            g.integers(-(2**31), 2**31, 48),
            [
                2**31 - 1,
                -(2**31),
                2**24 + 1,
                -(2**24 + 1),
                2**25 + 2,
                -(2**25 + 2),
                2**25 + 6,
                2**25 + 1,
                0,
                1,
                -1,
                2**30 + 64,
                -(2**30 + 64),
                7,
                8,
                9,
            ],
        ]
    )
    x = x.astype(np.int32)
    out = cast(torch.from_numpy(x), "float", MODES[mode]).numpy()
    # int32 and their float32 neighbours are exact in Python floats: pick compares them without rounding
    want = np.array([rounded(v, np.float32, mode) for v in x.tolist()], dtype=np.float32)
    assert np.array_equal(out, want), (x[out != want], out[out != want], want[out != want])


# ---- Sort<float, true> (高阶API Sort.md, 排布方式一 on A2): descending, equal scores in input order ----
sort = vector.sort


@pytest.mark.parametrize("n", [32, 96, 1024])
def test_full_sort_is_descending_and_stable(n):
    g = torch.Generator().manual_seed(n)
    scores = torch.randint(-4, 5, (n,), generator=g).float()  # many ties
    scores[::7] = -0.0  # -0 ties with +0
    pairs = sort(scores)
    order = np.argsort(-scores.numpy(), kind="stable")  # -(-0.0) == 0.0: a tie, input order kept
    assert np.array_equal(pairs[:, 1].numpy(), order)
    assert np.array_equal(pairs[:, 0].numpy(), scores.numpy()[order].view(np.int32))  # score bits carried as is


# ShiftLeft / ShiftRight / Or (Memory矢量计算/逻辑计算/*.md): unsigned shifts are logical; signed right
# shifts copy the sign in; a signed left shift keeps the sign bit and drops the bit below it (ShiftLeft.md
# 功能说明: 0b1010101010101010 int16 << 1 is 0b1101010101010100). A shift by the full width leaves 0.
shift = vector.shift
bitwise_or = vector.bitwise_or
INT_DTYPES = {torch.int16: (np.int16, np.uint16), torch.int32: (np.int32, np.uint32)}


def a2_shift(x: np.ndarray, left: bool, by: int, unsigned: bool) -> np.ndarray:
    signed_t, unsigned_t = INT_DTYPES[torch.int16 if x.itemsize == 2 else torch.int32]
    u = x.view(unsigned_t).astype(np.uint64)
    width = x.itemsize * 8
    mask = (1 << width) - 1
    if left:
        moved = (u << by) & mask if by < width else np.zeros_like(u)
        if not unsigned:  # the sign bit stays, the bit below it is dropped
            sign = 1 << (width - 1)
            moved = (u & sign) | (moved & (mask ^ sign))
        return moved.astype(unsigned_t).view(unsigned_t if unsigned else signed_t)
    if unsigned:
        return (u >> by if by < width else np.zeros_like(u)).astype(unsigned_t)
    return x.view(signed_t) >> min(by, width - 1)


@pytest.mark.parametrize("dtype", list(INT_DTYPES))
@pytest.mark.parametrize("unsigned", [False, True])
@pytest.mark.parametrize("left", [True, False])
def test_shift_matches_numpy(dtype, unsigned, left):
    width = torch.iinfo(dtype).bits
    x = torch.randint(torch.iinfo(dtype).min, torch.iinfo(dtype).max, (256,), dtype=dtype)
    for by in (0, 1, 3, width // 2, width - 1, width):
        out = shift(x, left, by, unsigned).numpy()
        want = a2_shift(x.numpy(), left, by, unsigned)
        view = INT_DTYPES[dtype][1]
        assert np.array_equal(out.view(view), want.view(view)), (
            by,
            np.flatnonzero(out.view(view) != want.view(view))[:8],
        )


def test_signed_left_shift_keeps_the_sign_bit():
    """ShiftLeft.md's own example, which a plain C++ shift gets wrong (0b0101010101010100 for << 1)."""
    x = torch.tensor([np.int16(np.uint16(0b1010101010101010).view(np.int16))] * 16, dtype=torch.int16)
    assert shift(x, True, 1, False).numpy().view(np.uint16)[0] == 0b1101010101010100
    assert shift(x, True, 3, False).numpy().view(np.uint16)[0] == 0b1101010101010000
    assert shift(x, False, 3, False).numpy().view(np.uint16)[0] == 0b1111010101010101


@pytest.mark.parametrize("unsigned", [False, True])
def test_or_matches_numpy(unsigned):
    a, b = (torch.randint(-(2**15), 2**15 - 1, (512,), dtype=torch.int16) for _ in range(2))
    assert np.array_equal(bitwise_or(a, b, unsigned).numpy(), a.numpy() | b.numpy())


def test_pair_swap_by_shifts_is_the_gather_permutation():
    """rope's 16-bit swap: (w << 16) | (w >> 16) on uint32 words is x[i ^ 1], bit for bit (bf16 bits)."""
    x = torch.randn(1024).to(torch.bfloat16).view(torch.int16)
    words = x.view(torch.int32)
    hi = shift(words, True, 16, True).view(torch.int16)
    lo = shift(words, False, 16, True).view(torch.int16)
    swapped = bitwise_or(lo, hi, True).numpy()
    assert np.array_equal(swapped, x.numpy()[np.arange(1024) ^ 1])
