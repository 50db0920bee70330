"""The op package's one-launch entries on the twin, against the torch path's launches of the same kernels.

The RMSNorm-family backward entries (csrc/kernels/op_package/rms_norm/*_grad.cpp: row phase, SyncAll, dgamma
phase) and moe_token_permute's (op_package/moe_routing/: chunk sort, merge rounds, gather, each phase ended
by SyncAll) are compiled per dtype combination in tests/cpp/twin_one_launch_kernels.cpp and launched as their
op_host tiles them, KERNEL_TYPE_MIX_AIV_1_0 with every block resident; the torch path (torch.ops.custom.*)
runs the same phases as two or more launches. Both are tiled for the same chip (set_tiling_platform), so
both split the rows over the same blocks and sum the same fp32 dgamma partials in the same block order:
the outputs must be bit-identical, under the twin's sanitizer (conftest). The one-launch outputs start as
NaN and its workspace as 0xFF bytes, so anything a phase fails to write or reads unwritten shows.
The AIV_ONLY form of the same pattern is refused by rule: tests/twin/test_crosscore.py's
`aiv_only_hard_syncall` fault kernels."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
import torch

import ascendc_ops  # noqa: F401  (loads torch.ops.custom; the conftest environment: the sanitizer on)
from conftest import kernel_library, proto_dtypes

one = kernel_library("twin_one_launch")
UB = torch.ops.ascendc_ops.twin_ub_bytes()  # A2's Unified Buffer, which both sides tile for
A2_VECTOR_CORES = 48

PAIRS = proto_dtypes("rms_norm_grad", "x", "gamma")  # the same for every *_grad.json of the family
NORM_GRAD_OPS = ("rms_norm_grad", "add_rms_norm_grad", "gemma_rms_norm_grad", "gated_rms_norm_grad")


@contextmanager
def chip(vector_cores: int):
    """The torch path tiled for an A2 with `vector_cores` vector cores, as the one-launch side is."""
    torch.ops.ascendc_ops.set_tiling_platform("Ascend910B", vector_cores, 0, UB)
    try:
        yield
    finally:
        torch.ops.ascendc_ops.reset_tiling_platform()


def assert_same_bits(got: torch.Tensor, want: torch.Tensor, label: str):
    assert got.dtype == want.dtype and got.shape == want.shape, label
    ints = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[got.element_size()]
    differ = got.contiguous().view(ints) != want.contiguous().view(ints)
    if differ.any():
        first = tuple(differ.nonzero()[0].tolist())
        pytest.fail(
            f"{label}: {int(differ.sum())} of {got.numel()} differ; first at {first}: {got[first]} vs {want[first]}"
        )


def dname(dtype) -> str:
    return str(dtype).removeprefix("torch.")


# ---------------------------------------------------------------- RMSNorm-family backward
def norm_grad_inputs(op, rows, hidden, pair):
    xdt, gdt = pair
    x = torch.randn(rows, hidden).to(xdt)
    dy = torch.randn(rows, hidden).to(xdt)
    gamma = (1 + 0.5 * torch.randn(hidden)).to(gdt)
    rstd = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)
    fifth = torch.randn(rows, hidden).to(xdt) if op in ("add_rms_norm_grad", "gated_rms_norm_grad") else None
    return dy, x, rstd, gamma, fifth


def check_norm_grad(op, rows, hidden, pair, vector_cores, blocks):
    dy, x, rstd, gamma, fifth = norm_grad_inputs(op, rows, hidden, pair)
    with chip(vector_cores):
        want = getattr(torch.ops.custom, op)(dy, x, rstd, gamma, *([fifth] if fifth is not None else []))
    got = one.rms_norm_grad(op, dy, x, rstd, gamma, fifth, vector_cores)
    assert one.last_blocks() == blocks  # that many cores met at the SyncAll
    label = f"{op} [{rows}, {hidden}] {dname(pair[0])}/{dname(pair[1])} on {vector_cores} cores"
    assert len(got) == len(want), label
    for name, g, w in zip(("dx", "dgamma", "dz")[: len(want)], got, want, strict=True):
        assert_same_bits(g, w, f"{label}: {name}")


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{dname(p[0])}-{dname(p[1])}")
@pytest.mark.parametrize("op", NORM_GRAD_OPS)
def test_norm_grad_one_launch_is_bit_identical(op, pair):
    """Every variant and dtype pair on the 910B's 48 cores: 83 rows -> 48 blocks meet at SyncAll; 7 rows of
    5125 -> 7 row blocks and 21 dgamma blocks (256-column tasks); one row of 769 -> one row block and 4
    dgamma blocks (the blocks idle in a phase still meet at SyncAll)."""
    for rows, hidden, blocks in ((83, 769, 48), (7, 5125, 21), (1, 769, 4)):
        check_norm_grad(op, rows, hidden, pair, A2_VECTOR_CORES, blocks)


@pytest.mark.parametrize("op", NORM_GRAD_OPS)
@pytest.mark.parametrize(
    "rows, hidden, vector_cores, blocks",
    [
        (83, 5125, 5, 5),  # 16-17 rows a block, several tiles each
        (7, 16384, 3, 3),  # fp32 rows that do not fit in UB: the split-row tiling, partials read back
        (13, 9000, 4, 4),  # fp32 single-buffered (add_rms_norm_grad: dx_out loaded late); bf16 split-row
        (83, 8, 48, 48),  # rows shorter than a 32-byte block
        (1, 5125, 48, 21),  # one row block, 21 dgamma blocks
    ],
)
def test_norm_grad_one_launch_tilings(op, rows, hidden, vector_cores, blocks):
    for pair in ((torch.float32, torch.float32), (torch.bfloat16, torch.float32)):
        check_norm_grad(op, rows, hidden, pair, vector_cores, blocks)


def test_norm_grad_one_launch_beyond_the_chip_is_refused():
    """Tiled for 64 vector cores, 83 rows take 64 blocks: more than an A2's 48 AIVs can hold at once, so the
    SyncAll would hang the device (its op_host must tile with the chip's own core count)."""
    dy, x, rstd, gamma, _ = norm_grad_inputs("rms_norm_grad", 83, 769, (torch.float32, torch.float32))
    with pytest.raises(RuntimeError, match=r"\[SyncAll residency\] SyncAll in a launch of 64 blocks \(0 AIC, 64 AIV\)"):
        one.rms_norm_grad("rms_norm_grad", dy, x, rstd, gamma, None, 64)


# ---------------------------------------------------------------- moe_token_permute
def check_permute(tokens, indices, num_out, vector_cores, label):
    with chip(vector_cores):
        want = torch.ops.custom.moe_token_permute(tokens, indices, num_out, False)
    got = one.moe_token_permute(tokens, indices, num_out, vector_cores)
    assert one.last_blocks() == min(tokens.shape[0], vector_cores), label
    for name, g, w in zip(("permuted_tokens", "sorted_indices"), got, want, strict=True):
        assert_same_bits(g, w, f"{label}: {name}")


@pytest.mark.parametrize("index_dtype", (torch.int32, torch.int64), ids=dname)
@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16), ids=dname)
@pytest.mark.parametrize(
    "tokens, top_k, experts, vector_cores",
    [
        (1, 1, 4, 48),
        (7, 2, 8, 48),
        (83, 4, 64, 48),  # 332 routes over 64 experts: some get none
        (700, 8, 16, 48),  # 5600 routes: 2 sorted chunks, one merge round
        (2100, 8, 64, 3),  # 16800 routes: 5 chunks dealt over 3 blocks, two merge rounds
    ],
)
def test_permute_one_launch_is_bit_identical(tokens, top_k, experts, vector_cores, dtype, index_dtype):
    x = torch.randn(tokens, 769).to(dtype)
    # every other expert unused (empty experts), and many ties: the sort must keep position order
    ids = 2 * torch.randint(0, max(experts // 2, 1), (tokens, top_k))
    label = f"[{tokens}, 769] top-{top_k} of {experts} experts, {dname(dtype)}/{dname(index_dtype)}"
    check_permute(x, ids.to(index_dtype), None, vector_cores, label)


@pytest.mark.parametrize("num_out", (1, 2800, 5599))
def test_permute_one_launch_capacity(num_out):
    """num_out_tokens below T*K drops the rows sorted last; sorted_indices still covers every route."""
    x = torch.randn(700, 96)
    ids = torch.randint(0, 16, (700, 8))
    check_permute(x, ids, num_out, 4, f"num_out_tokens {num_out}")


def test_permute_one_launch_flat_indices():
    """indices [T] (top-1), the ids 2**24 - 1 (the largest the ops take) and 3, every expert between them empty."""
    x = torch.randn(83, 769).to(torch.bfloat16)
    ids = torch.where(torch.rand(83) < 0.5, 3, 2**24 - 1)
    check_permute(x, ids, None, 48, "flat indices")
