"""MoE ops (grouped_matmul, grouped_matmul_weight_grad, moe_token_permute, moe_token_unpermute and
its grad) against the float64 NumPy goldens of ascendc_ops.ops.grouped_matmul_reference and moe_routing_reference.

grouped_matmul and unpermute are judged by the Ascend standards (MERE/MARE against the golden of
the dtype-rounded inputs, double benchmark against PyTorch in the same dtype); permute moves rows
and must be exact. Also: autograd, opcheck on every op, readable errors and empty tensors. (The C++
tiling/twin unit tests, tests/cpp/test_moe_tiling.cpp, run under CTest: tests/twin/test_cpp.py.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch.library import opcheck

import ascendc_ops
from accuracy import assert_accurate, np64
from ascendc_ops import precision as P
from ascendc_ops.ops import grouped_matmul_reference, moe_routing_reference

R = SimpleNamespace(**{**vars(grouped_matmul_reference), **vars(moe_routing_reference)})  # both families' goldens

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
ops = torch.ops.custom


def dname(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def random_counts(m: int, e: int, empty: tuple = (), one: int | None = None) -> torch.Tensor:
    """Row counts of e groups summing to m; groups in `empty` get none, `one` gets them all."""
    counts = torch.zeros(e, dtype=torch.int64)
    if one is not None:
        counts[one] = m
        return counts
    allowed = [g for g in range(e) if g not in empty]
    picks = torch.tensor(allowed)[torch.randint(0, len(allowed), (m,))]
    return torch.bincount(picks, minlength=e).to(torch.int64)


def as_type(counts: torch.Tensor, group_list_type: int) -> torch.Tensor:
    return counts if group_list_type == 1 else torch.cumsum(counts, 0)


def torch_gmm(x, w, counts, trans):
    """Per-expert torch.mm in x's dtype (the double benchmark's second implementation)."""
    outs, start = [], 0
    for e, c in enumerate(counts.tolist()):
        we = w[e].T if trans else w[e]
        outs.append(x[start : start + c] @ we)
        start += c
    y = torch.cat(outs) if outs else x.new_zeros(0, 1)
    return torch.cat([y, y.new_zeros(x.shape[0] - start, y.shape[1])])


def gemm_bound(x, w, counts, k: int) -> np.ndarray:
    """fp32 evaluation bound of each length-k dot product: gamma(k) * |x_e| @ |w_e|."""
    return P.gamma(max(k, 1)) * R.grouped_matmul(np.abs(np64(x)), np.abs(np64(w)), counts.numpy())


# ---------------------------------------------------------------- grouped matmul
GMM_CASES = {  # name -> (M, K, N, E, empty groups, one group)
    "tiny": (1, 1, 1, 1, (), None),
    "odd": (83, 769, 5, 3, (1,), None),
    "wide": (7, 16, 1025, 4, (0, 3), None),
    "one_expert": (64, 40, 33, 8, (), 5),
    "e64": (256, 64, 48, 64, (), None),
    "e512": (300, 8, 16, 512, (), None),
}


@pytest.mark.parametrize("case", GMM_CASES)
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_grouped_matmul_accuracy(dtype, case):
    m, k, n, e, empty, one = GMM_CASES[case]
    x = torch.randn(m, k).to(dtype)
    w = (torch.randn(e, k, n) / k**0.5).to(dtype)
    counts = random_counts(m, e, empty, one)
    for glt in (0, 1):
        y = ascendc_ops.grouped_matmul(x, w, as_type(counts, glt), glt)
        golden = R.grouped_matmul(np64(x), np64(w), as_type(counts, glt).numpy(), glt)
        assert_accurate(
            y,
            golden,
            torch_gmm(x, w, counts, False),
            dtype,
            f"gmm {case} {dname(dtype)} type={glt}",
            bound=gemm_bound(x, w, counts, k),
        )
    yt = ascendc_ops.grouped_matmul(x, w.transpose(1, 2).contiguous(), counts, 1, True)  # HF's [E, N, K]
    assert_accurate(
        yt,
        golden,
        torch_gmm(x, w, counts, False),
        dtype,
        f"gmm {case} {dname(dtype)} transposed",
        bound=gemm_bound(x, w, counts, k),
    )


def test_grouped_matmul_rows_past_groups_are_zero_and_views_work():
    x = torch.randn(20, 12)
    w = torch.randn(3, 24, 12).transpose(1, 2)  # a transposed view: [E, K=12, N=24], not contiguous
    counts = torch.tensor([4, 0, 9])
    y = ascendc_ops.grouped_matmul(x, w, counts)
    assert (y[13:] == 0).all()
    np.testing.assert_allclose(np64(y), R.grouped_matmul(np64(x), np64(w), counts.numpy()), rtol=1e-5, atol=1e-5)
    x_view = torch.randn(12, 20).T  # x as a transposed view too
    np.testing.assert_allclose(
        np64(ascendc_ops.grouped_matmul(x_view, w, counts)),
        R.grouped_matmul(np64(x_view), np64(w), counts.numpy()),
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize("trans", (False, True))
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_grouped_matmul_backward(dtype, trans):
    m, k, n, e = 83, 48, 37, 5
    x = torch.randn(m, k).to(dtype).requires_grad_()
    w_kn = (torch.randn(e, k, n) / k**0.5).to(dtype)
    w = (w_kn.transpose(1, 2).contiguous() if trans else w_kn).requires_grad_()
    counts = random_counts(m - 6, e, empty=(2,))  # six rows past the last group
    y = ascendc_ops.grouped_matmul(x, w, counts, 1, trans)
    dy = torch.randn(m, n).to(dtype)
    y.backward(dy)
    gl = counts.numpy()
    wk = np64(w).transpose(0, 2, 1) if trans else np64(w)  # [E, K, N]
    dx_golden = R.grouped_matmul(np64(dy), wk.transpose(0, 2, 1), gl)
    dw_golden = R.grouped_matmul_weight_grad(np64(x), np64(dy), gl)
    if trans:
        dw_golden = dw_golden.transpose(0, 2, 1)
    dx_second = torch_gmm(dy, w_kn, counts, True)
    dw_second = torch.stack(
        [
            x.detach()[s : s + c].T @ dy[s : s + c]
            for s, c in zip(torch.cumsum(counts, 0) - counts, counts.tolist(), strict=True)
        ]
    )
    if trans:
        dw_second = dw_second.transpose(1, 2)
    bound_dx = P.gamma(n) * R.grouped_matmul(np.abs(np64(dy)), np.abs(wk).transpose(0, 2, 1), gl)
    bound_dw = P.gamma(m) * R.grouped_matmul_weight_grad(np.abs(np64(x)), np.abs(np64(dy)), gl)
    if trans:
        bound_dw = bound_dw.transpose(0, 2, 1)
    assert_accurate(x.grad, dx_golden, dx_second, dtype, f"gmm dx {dname(dtype)} trans={trans}", bound=bound_dx)
    assert_accurate(
        w.grad, dw_golden, dw_second.contiguous(), dtype, f"gmm dw {dname(dtype)} trans={trans}", bound=bound_dw
    )
    assert (w.grad[2] == 0).all() and (x.grad[m - 6 :] == 0).all()


# ---------------------------------------------------------------- permute / unpermute
PERMUTE_CASES = {  # name -> (T, topK, E, H)
    "tiny": (1, 1, 1, 1),
    "h769": (7, 8, 3, 769),
    "e512": (83, 4, 512, 5),
    "one_expert": (83, 8, 1, 16),
    "multi_round_sort": (2600, 8, 64, 3),  # 20800 ids: 6 sorted chunks, two MrgSort rounds
}


@pytest.mark.parametrize("case", PERMUTE_CASES)
@pytest.mark.parametrize("index_dtype", (torch.int32, torch.int64), ids=dname)
def test_permute_exact(case, index_dtype):
    t, k, e, h = PERMUTE_CASES[case]
    indices = torch.randint(0, e, (t, k)).to(index_dtype)
    for dtype in DTYPES:
        tokens = torch.randn(t, h).to(dtype)
        for n_out in (None, max(1, (t * k) // 3)):
            permuted, sorted_indices = ascendc_ops.moe_token_permute(tokens, indices, n_out)
            p_gold, s_gold = R.moe_token_permute(np64(tokens), indices.numpy(), n_out)
            assert sorted_indices.dtype == torch.int32 and permuted.dtype == dtype
            np.testing.assert_array_equal(sorted_indices.numpy(), s_gold)
            np.testing.assert_array_equal(np64(permuted), p_gold)


def test_permute_rank1_indices_and_topk_8_all_tokens_one_expert():
    tokens = torch.randn(9, 4)
    idx = torch.randint(0, 3, (9,))
    p, s = ascendc_ops.moe_token_permute(tokens, idx)
    p_gold, s_gold = R.moe_token_permute(np64(tokens), idx.numpy())
    np.testing.assert_array_equal(s.numpy(), s_gold)
    np.testing.assert_array_equal(np64(p), p_gold)
    same = torch.full((5, 8), 7)
    _, s = ascendc_ops.moe_token_permute(torch.randn(5, 2), same)
    assert s.tolist() == list(range(40))  # one expert: the sort is stable, order unchanged


UNPERMUTE_CASES = {"tiny": (1, 1, 1), "h5125": (7, 2, 5125), "k8": (83, 8, 33), "k3_h1": (12, 3, 1)}


@pytest.mark.parametrize("case", UNPERMUTE_CASES)
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_unpermute_and_grad_accuracy(dtype, case):
    t, k, h = UNPERMUTE_CASES[case]
    tokens = torch.randn(t, h).to(dtype)
    _, s = ascendc_ops.moe_token_permute(tokens, torch.randint(0, 4, (t, k)))
    permuted = torch.randn(t * k, h).to(dtype)
    for probs_dtype in {dtype, torch.float32}:
        probs = torch.rand(t, k).to(probs_dtype)
        out = ascendc_ops.moe_token_unpermute(permuted, s, probs)
        golden = R.moe_token_unpermute(np64(permuted), s.numpy(), np64(probs))
        second = (permuted[s.long()].view(t, k, h) * probs.to(dtype)[..., None]).sum(1)
        bound = P.gamma(2 * k) * R.moe_token_unpermute(np.abs(np64(permuted)), s.numpy(), np64(probs))
        assert_accurate(
            out, golden, second, dtype, f"unpermute {case} {dname(dtype)} probs {dname(probs_dtype)}", bound=bound
        )
        dout = torch.randn(t, h).to(dtype)
        dperm, dprobs = ops.moe_token_unpermute_grad(permuted, dout, s, probs)
        g_perm, g_probs = R.moe_token_unpermute_backward(np64(permuted), np64(dout), s.numpy(), np64(probs))
        pr = probs.detach().clone().requires_grad_()
        pp = permuted.detach().clone().requires_grad_()
        (pp[s.long()].view(t, k, h) * pr.to(dtype)[..., None]).sum(1).backward(dout)
        assert dprobs.dtype == probs_dtype
        assert_accurate(
            dperm, g_perm, pp.grad, dtype, f"dpermuted {case} {dname(dtype)}", bound=P.gamma(1) * np.abs(g_perm)
        )
        dot_bound = (
            P.gamma(h) * np.abs(np64(permuted))[s.numpy()].reshape(t, k, h).__abs__().sum(-1) * np.abs(np64(dout)).max()
        )
        assert_accurate(
            dprobs, g_probs, pr.grad.to(probs_dtype), probs_dtype, f"dprobs {case} {dname(dtype)}", bound=dot_bound
        )
    plain = ascendc_ops.moe_token_unpermute(permuted, s, None, restore_shape=[t, h])
    np.testing.assert_allclose(
        np64(plain),
        R.moe_token_unpermute(np64(permuted), s.numpy(), None, k),
        rtol=P.THRESHOLDS[dname(dtype)] * 4,
        atol=P.THRESHOLDS[dname(dtype)] * 4,
    )


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_permute_unpermute_autograd_with_capacity_drop(dtype):
    t, k, h, e = 23, 4, 17, 6
    tokens = torch.randn(t, h).to(dtype).requires_grad_()
    idx = torch.randint(0, e, (t, k))
    probs = torch.rand(t, k).requires_grad_()
    n_out = 60  # 92 routed rows, the last 32 dropped
    permuted, s = ascendc_ops.moe_token_permute(tokens, idx, n_out)
    out = ascendc_ops.moe_token_unpermute(permuted, s, probs.to(dtype) if dtype == torch.float32 else probs)
    dout = torch.randn(t, h).to(dtype)
    out.backward(dout)
    # golden: out[t] = sum_k p * tokens[t] over the kept routes, so dtokens[t] = sum_kept p * dout[t]
    kept = (s.view(t, k) < n_out).numpy()
    p64, d64 = np64(probs), np64(dout)
    dtok_gold = (kept * p64).sum(1)[:, None] * d64
    dprob_gold = kept * (np64(tokens) @ d64.T).diagonal()[:, None]
    tol = P.THRESHOLDS[dname(dtype)] * 8
    np.testing.assert_allclose(np64(tokens.grad), dtok_gold, rtol=tol, atol=tol)
    np.testing.assert_allclose(np64(probs.grad), dprob_gold, rtol=tol, atol=tol * max(1.0, np.abs(dprob_gold).max()))


# ---------------------------------------------------------------- opcheck, errors, empty tensors
def test_unpermute_grad_rows_no_index_names_are_zero():
    """sorted_indices with a repeat (not a permutation): dpermuted rows it never names are 0, not stale memory."""
    permuted, dout = torch.randn(6, 5), torch.randn(3, 5)
    s = torch.tensor([0, 2, 2, 4, 5, 1], dtype=torch.int32)  # row 3 never named
    probs = torch.rand(3, 2)
    for _ in range(3):  # reused allocator blocks would show stale values
        dperm, dprobs = torch.ops.custom.moe_token_unpermute_grad(permuted, dout, s, probs, False, None)
        assert torch.equal(dperm[3], torch.zeros(5))
        assert torch.allclose(dperm[0], probs[0, 0] * dout[0]) and torch.allclose(dperm[1], probs[2, 1] * dout[2])


def test_opcheck_every_op():
    x, w, gl = torch.randn(10, 6), torch.randn(3, 6, 5), torch.tensor([3, 0, 5])
    opcheck(ops.grouped_matmul, (x.requires_grad_(), w.requires_grad_(), gl, None, 1, False))
    opcheck(ops.grouped_matmul, (x, w.transpose(1, 2).contiguous(), torch.tensor([3, 3, 8]), None, 0, True))
    opcheck(ops.grouped_matmul_weight_grad, (x.detach(), torch.randn(10, 5), gl, 1))
    tok, idx = torch.randn(7, 6).requires_grad_(), torch.randint(0, 4, (7, 2))
    opcheck(ops.moe_token_permute, (tok, idx, None, False))
    opcheck(ops.moe_token_permute, (tok, idx.int(), 9, False))
    p, s = ops.moe_token_permute(tok.detach(), idx)
    probs = torch.rand(7, 2).requires_grad_()
    opcheck(ops.moe_token_unpermute, (p.requires_grad_(), s, probs, False, None))
    opcheck(ops.moe_token_unpermute, (p, s, None, False, [7, 6]))
    opcheck(ops.moe_token_unpermute_grad, (p.detach(), torch.randn(7, 6), s, probs.detach(), False, None))


def test_compile_fullgraph():
    @torch.compile(fullgraph=True, backend="aot_eager")
    def block(tokens, idx, probs, w):
        p, s = ops.moe_token_permute(tokens, idx)
        counts = torch.bincount(idx.flatten(), minlength=w.shape[0])
        h = ops.grouped_matmul(p, w, counts, None, 1, False)
        return ops.moe_token_unpermute(h, s, probs)

    tokens, idx, probs, w = torch.randn(9, 8), torch.randint(0, 3, (9, 2)), torch.rand(9, 2), torch.randn(3, 8, 8)
    torch.testing.assert_close(
        block(tokens, idx, probs, w),
        ops.moe_token_unpermute(
            ops.grouped_matmul(
                ops.moe_token_permute(tokens, idx)[0], w, torch.bincount(idx.flatten(), minlength=3), None, 1, False
            ),
            ops.moe_token_permute(tokens, idx)[1],
            probs,
        ),
    )


BAD = [
    (
        lambda: ops.grouped_matmul(torch.randn(4, 3), torch.randn(2, 3, 5), torch.tensor([1, -1])),
        ValueError,
        "group_list[1] = -1 is a negative row count",
    ),
    (
        lambda: ops.grouped_matmul(torch.randn(4, 3), torch.randn(2, 3, 5), torch.tensor([3, 2]), None, 1),
        ValueError,
        "group_list covers 5 rows but x has 4",
    ),
    (
        lambda: ops.grouped_matmul(torch.randn(4, 3), torch.randn(2, 3, 5), torch.tensor([3, 2]), None, 0),
        ValueError,
        "below the previous cumulative end 3",
    ),
    (
        lambda: ascendc_ops.grouped_matmul(torch.randn(4, 3), torch.randn(2, 4, 5), torch.tensor([1, 1])),
        ValueError,
        "weight must have K = 3",
    ),
    (
        lambda: ascendc_ops.grouped_matmul(
            torch.randn(4, 3), torch.randn(2, 3, 5), torch.tensor([1, 1], dtype=torch.int32)
        ),
        TypeError,
        "group_list must be one of int64",
    ),
    (
        lambda: ascendc_ops.grouped_matmul(torch.randn(4, 3), torch.randn(3, 3, 5), torch.tensor([1, 1])),
        ValueError,
        "E = 2 (group_list entries)",
    ),
    (
        lambda: ascendc_ops.grouped_matmul(torch.randn(4, 3), torch.randn(2, 3, 5).half(), torch.tensor([1, 1])),
        TypeError,
        "weight must have x's dtype",
    ),
    (
        lambda: ascendc_ops.grouped_matmul(torch.randn(4, 3), torch.randn(2, 3, 5), torch.tensor([1, 1]), 2),
        ValueError,
        "group_list_type must be 0",
    ),
    (
        lambda: ascendc_ops.moe_token_permute(torch.randn(4, 3), torch.zeros(4, 2, dtype=torch.int64), None, True),
        ValueError,
        "padded_mode=True is not supported",
    ),
    (
        lambda: ops.moe_token_permute(torch.randn(4, 3), torch.full((4, 2), -1), None, False),
        ValueError,
        "indices values must be in [0, 16777215]",
    ),
    (
        lambda: ascendc_ops.moe_token_permute(torch.randn(4, 3), torch.zeros(5, 2, dtype=torch.int64)),
        ValueError,
        "indices must have T = 4 rows",
    ),
    (
        lambda: ascendc_ops.moe_token_permute(torch.randn(4, 3), torch.zeros(4, 513, dtype=torch.int64)),
        ValueError,
        "topK (indices.size(1)) must be in [1, 512]",
    ),
    (
        lambda: ascendc_ops.moe_token_permute(torch.randn(4, 3), torch.zeros(4, 2)),
        TypeError,
        "indices must be one of int32, int64",
    ),
    (
        lambda: ascendc_ops.moe_token_permute(torch.randn(4, 3), torch.zeros(4, 2, dtype=torch.int64), -1),
        ValueError,
        "num_out_tokens must be >= 0",
    ),
    (
        lambda: ascendc_ops.moe_token_unpermute(torch.randn(8, 3), torch.arange(8, dtype=torch.int32), None, True),
        ValueError,
        "padded_mode=True is not supported",
    ),
    (
        lambda: ascendc_ops.moe_token_unpermute(
            torch.randn(8, 3), torch.arange(8, dtype=torch.int32), torch.rand(3, 2)
        ),
        ValueError,
        "probs must be 2-D [T, topK] with T * topK = 8",
    ),
    (
        lambda: ascendc_ops.moe_token_unpermute(
            torch.randn(8, 3), torch.arange(8, dtype=torch.int32), None, False, [3, 3]
        ),
        ValueError,
        "restore_shape must be [T, H] with H = 3 and T dividing 8",
    ),
    (
        lambda: ops.moe_token_unpermute(torch.randn(8, 3), torch.arange(1, 9, dtype=torch.int32), None, False, None),
        ValueError,
        "sorted_indices values must be in [0, 7]",
    ),
    (
        lambda: ascendc_ops.moe_token_unpermute(torch.randn(8, 3), torch.arange(8), None),
        TypeError,
        "sorted_indices must be one of int32",
    ),
    (
        lambda: ops.moe_token_unpermute_grad(
            torch.randn(7, 6), torch.randn(4, 6).half(), torch.arange(8, dtype=torch.int32), torch.rand(4, 2), False
        ),
        TypeError,
        "moe_token_unpermute_grad: unpermuted_tokens_grad must have permuted_tokens' dtype float32, got float16",
    ),
    (
        lambda: ops.moe_token_unpermute(
            torch.randn(7, 6).bfloat16(), torch.arange(8, dtype=torch.int32), torch.rand(4, 2).half(), False
        ),
        TypeError,
        "moe_token_unpermute: probs must have permuted_tokens' dtype bfloat16 or float32, got float16",
    ),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_input_is_a_readable_error(i):
    call, kind, text = BAD[i]
    with pytest.raises(kind) as info:
        call()
    assert text in str(info.value)


# The errors that come from values on the device (group_list, expert ids, sorted indices): no fake sees them.
DATA_DEPENDENT = ("group_list[", "group_list covers", "cumulative end", "values must be in")


@pytest.mark.parametrize("i", [i for i, (_, _, text) in enumerate(BAD) if not any(d in text for d in DATA_DEPENDENT)])
def test_fake_and_real_calls_raise_one_message(i):
    """The C++ Meta kernels run the bindings' problem functions: FakeTensor raises what a real call raises."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    call, kind, text = BAD[i]
    with pytest.raises(kind) as real:
        call()
    with FakeTensorMode(), pytest.raises(kind) as fake:
        call()
    assert str(real.value).splitlines()[0] == str(fake.value).splitlines()[0]
    assert text in str(fake.value)


def test_empty_tensors():
    y = ascendc_ops.grouped_matmul(torch.randn(0, 4), torch.randn(2, 4, 3), torch.tensor([0, 0]))
    assert y.shape == (0, 3)
    y = ascendc_ops.grouped_matmul(torch.randn(5, 4), torch.randn(2, 4, 3), torch.tensor([0, 0]))
    assert y.shape == (5, 3) and (y == 0).all()
    dw = ops.grouped_matmul_weight_grad(torch.randn(0, 4), torch.randn(0, 3), torch.tensor([0, 0]), 1)
    assert dw.shape == (2, 4, 3) and (dw == 0).all()
    p, s = ascendc_ops.moe_token_permute(torch.randn(0, 4), torch.zeros(0, 2, dtype=torch.int64))
    assert p.shape == (0, 4) and s.shape == (0,)
    out = ascendc_ops.moe_token_unpermute(torch.randn(0, 4), torch.zeros(0, dtype=torch.int32), torch.rand(0, 2))
    assert out.shape == (0, 4)
    p, s = ascendc_ops.moe_token_permute(torch.randn(3, 0), torch.randint(0, 2, (3, 2)))
    assert p.shape == (6, 0) and sorted(s.tolist()) == list(range(6))


def _cube_gemm_native(env):
    probe = subprocess.run(
        [sys.executable, "-c", "import torch, ascendc_ops; print(torch.ops.ascendc_ops.cube_gemm_native())"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return probe.stdout.strip() + probe.stderr[-2000:]


def test_cube_gemm_is_widened_on_every_cpu_unless_native_is_opted_into():
    """By default every CPU widens fp16/bf16 cube blocks (one summation order everywhere); with
    ASCENDC_OPS_CUBE_GEMM=native, bf16 blocks go to torch's bf16 GEMM exactly where the loaded ISA path has
    AVX512-BF16 and torch itself finds it on the CPU (an independent probe)."""
    assert torch.ops.ascendc_ops.cube_gemm_native() == ["float32"]
    env = {k: v for k, v in os.environ.items() if k != "ASCENDC_OPS_CUBE_GEMM"}
    native = _cube_gemm_native(dict(env, ASCENDC_OPS_CUBE_GEMM="native"))
    wide = ascendc_ops.isa() in ("avx512bf16", "native")
    assert ("bfloat16" in native) == (wide and torch.cpu._is_avx512_bf16_supported()), (ascendc_ops.isa(), native)
    assert _cube_gemm_native(dict(env, ASCENDC_OPS_CUBE_GEMM="native", ASCENDC_OPS_ISA="avx2")) == "['float32']"
    assert _cube_gemm_native(dict(env, ASCENDC_OPS_CUBE_GEMM="widened")) == "['float32']"
    typo = _cube_gemm_native(dict(env, ASCENDC_OPS_CUBE_GEMM="Native"))  # refused at import, not ignored
    assert "ASCENDC_OPS_CUBE_GEMM='Native': choose widened or native" in typo, typo


@pytest.mark.slow
def test_native_cube_gemm_meets_the_standard_too():
    """ASCENDC_OPS_CUBE_GEMM=native (the CPU's bf16 dot products where it has them, else the same widened GEMM):
    grouped_matmul's accuracy and backward tests pass on it as on the default path (which this process runs)."""
    env = dict(os.environ, ASCENDC_OPS_CUBE_GEMM="native")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            Path(__file__).name,
            "-k",
            "grouped_matmul_accuracy or grouped_matmul_backward",
        ],
        cwd=Path(__file__).parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0 and " passed" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]


def test_harness_verifies_the_moe_case_files(tmp_path, capsys):
    """cases/moe_*.json (grouped matmul with its weight grad, unpermute with its grad; fuzz entries) pass
    `ascendc-ops verify` against the float64 goldens (in-process through the CLI's main)."""
    import json
    from pathlib import Path

    from ascendc_ops import __main__ as cli

    out = tmp_path / "v.json"
    files = [
        str(Path(__file__).resolve().parents[2] / "cases" / n) for n in ("grouped_matmul.json", "moe_routing.json")
    ]
    rc = cli.main(["verify", "--cases", *files, "--json", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert rc == 0, captured.out[-3000:] + captured.err
    res = json.loads(out.read_text())["results"]
    assert {r["op"] for r in res} == {
        "grouped_matmul",
        "grouped_matmul_weight_grad",
        "moe_token_unpermute",
        "moe_token_unpermute_grad",
    }
    assert all(r["passed"] for r in res) and any(r["case"].startswith("moe_gmm_fuzz#") for r in res)
