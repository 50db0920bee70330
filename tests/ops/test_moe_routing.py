"""moe_token_permute, moe_token_unpermute and its grad against the float64 NumPy goldens of
ascendc_ops.ops.moe_routing_reference: unpermute by the Ascend standards (MERE/MARE against the golden of the
dtype-rounded inputs, double benchmark against PyTorch in the same dtype); permute moves rows and must be
exact. Also: autograd, opcheck, the MoE block (permute, grouped_matmul, unpermute) under torch.compile,
readable errors, empty tensors and the shipped case files. (The C++ tiling unit tests,
tests/cpp/test_moe_routing_tiling.cpp, run under CTest: tests/twin/test_cpp.py.)
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.library import opcheck

import ascendc_ops
from accuracy import assert_accurate, np64
from ascendc_ops import precision as P
from ascendc_ops.ops import moe_routing_reference as R
from bad_inputs import bad_input_tests
from shipped_cases import verify_shipped

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
ops = torch.ops.custom


def dname(dtype) -> str:
    return str(dtype).removeprefix("torch.")


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


# The errors that come from values on the device (expert ids, sorted indices): no fake sees them.
DATA_DEPENDENT = ("values must be in",)


test_bad_input_is_a_readable_error, test_fake_and_real_calls_raise_one_message = bad_input_tests(BAD, DATA_DEPENDENT)


def test_empty_tensors():
    p, s = ascendc_ops.moe_token_permute(torch.randn(0, 4), torch.zeros(0, 2, dtype=torch.int64))
    assert p.shape == (0, 4) and s.shape == (0,)
    out = ascendc_ops.moe_token_unpermute(torch.randn(0, 4), torch.zeros(0, dtype=torch.int32), torch.rand(0, 2))
    assert out.shape == (0, 4)
    p, s = ascendc_ops.moe_token_permute(torch.randn(3, 0), torch.randint(0, 2, (3, 2)))
    assert p.shape == (6, 0) and sorted(s.tolist()) == list(range(6))


def test_harness_verifies_the_case_files(tmp_path, capsys):
    """cases/moe_routing/*.json (unpermute with its grad) pass
    `ascendc-ops verify` against the float64 goldens."""
    res = verify_shipped(tmp_path, capsys, "moe_routing/moe_routing.json")
    assert {r["op"] for r in res} == {"moe_token_unpermute", "moe_token_unpermute_grad"}
    assert all(r["passed"] for r in res)
