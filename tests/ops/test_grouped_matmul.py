"""grouped_matmul and grouped_matmul_weight_grad against the float64 NumPy goldens of
ascendc_ops.ops.grouped_matmul_reference, judged by the Ascend standards (MERE/MARE against the golden of
the dtype-rounded inputs, double benchmark against PyTorch in the same dtype). Also: autograd, opcheck,
readable errors, empty tensors, the cube GEMM's paths and the shipped case files. (The bias:
test_grouped_matmul_bias.py; the routing ops around it: test_moe_routing.py; the C++ tiling unit tests,
tests/cpp/test_grouped_matmul_tiling.cpp, run under CTest: tests/twin/test_cpp.py.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.library import opcheck

import ascendc_ops
from accuracy import assert_accurate, np64
from ascendc_ops import precision as P
from ascendc_ops.ops import grouped_matmul_reference as R
from bad_inputs import bad_input_tests
from shipped_cases import verify_shipped

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


def test_opcheck_every_op():
    x, w, gl = torch.randn(10, 6), torch.randn(3, 6, 5), torch.tensor([3, 0, 5])
    opcheck(ops.grouped_matmul, (x.requires_grad_(), w.requires_grad_(), gl, None, 1, False))
    opcheck(ops.grouped_matmul, (x, w.transpose(1, 2).contiguous(), torch.tensor([3, 3, 8]), None, 0, True))
    opcheck(ops.grouped_matmul_weight_grad, (x.detach(), torch.randn(10, 5), gl, 1))


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
]


# The errors that come from values on the device (group_list): no fake sees them.
DATA_DEPENDENT = ("group_list[", "group_list covers", "cumulative end")


test_bad_input_is_a_readable_error, test_fake_and_real_calls_raise_one_message = bad_input_tests(BAD, DATA_DEPENDENT)


def test_empty_tensors():
    y = ascendc_ops.grouped_matmul(torch.randn(0, 4), torch.randn(2, 4, 3), torch.tensor([0, 0]))
    assert y.shape == (0, 3)
    y = ascendc_ops.grouped_matmul(torch.randn(5, 4), torch.randn(2, 4, 3), torch.tensor([0, 0]))
    assert y.shape == (5, 3) and (y == 0).all()
    dw = ops.grouped_matmul_weight_grad(torch.randn(0, 4), torch.randn(0, 3), torch.tensor([0, 0]), 1)
    assert dw.shape == (2, 4, 3) and (dw == 0).all()


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
    wide = ascendc_ops.isa() in ("avx512", "native")
    assert ("bfloat16" in native) == (wide and torch.cpu._is_avx512_bf16_supported()), (ascendc_ops.isa(), native)
    assert _cube_gemm_native(dict(env, ASCENDC_OPS_CUBE_GEMM="native", ASCENDC_OPS_ISA="avx2")) == "['float32']"
    assert _cube_gemm_native(dict(env, ASCENDC_OPS_CUBE_GEMM="widened")) == "['float32']"
    typo = _cube_gemm_native(dict(env, ASCENDC_OPS_CUBE_GEMM="Native"))  # refused at import, not ignored
    assert "ASCENDC_OPS_CUBE_GEMM='Native': choose widened or native" in typo, typo


@pytest.mark.slow
def test_native_cube_gemm_meets_the_standard_too():
    """ASCENDC_OPS_CUBE_GEMM=native (the CPU's bf16 dot products where it has them, else the same widened GEMM):
    grouped_matmul's accuracy and backward tests pass on it as on the default path (which this process runs)."""
    if not (ascendc_ops.isa() in ("avx512", "native") and torch.cpu._is_avx512_bf16_supported()):
        pytest.skip("no bf16 dot products here: native is the widened GEMM this process already tested")
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


def test_harness_verifies_the_case_files(tmp_path, capsys):
    """cases/grouped_matmul/*.json (grouped matmul with its weight grad; fuzz entries) pass
    `ascendc-ops verify` against the float64 goldens."""
    res = verify_shipped(tmp_path, capsys, "grouped_matmul/grouped_matmul.json")
    assert {r["op"] for r in res} == {"grouped_matmul", "grouped_matmul_weight_grad"}
    assert all(r["passed"] for r in res) and any(r["case"].startswith("moe_gmm_fuzz#") for r in res)
