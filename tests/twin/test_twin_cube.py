"""The twin's Matmul agreement rules (docs/twin.md "Matmul: what the twin checks"): each wrong cube
kernel in tests/cpp/twin_cube_faults.cpp stops with an error naming the rule; the control (B's
MatmulType chosen by the weight layout, as grouped_matmul.cpp does) runs clean; grouped_matmul fp32
matches float64 with and without transpose_weight."""

import re

import pytest
import torch

import ascendc_ops
from conftest import BUILD

torch.ops.load_library(str(BUILD / "tests" / "libtwin_faults.so"))
run = torch.ops.twin_cube_faults.run

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
    assert set(torch.ops.twin_cube_faults.names()) == set(RULES) | {"correct"}


def test_correct_cube_kernel_runs_clean():
    run("correct")


@pytest.mark.parametrize("kernel", sorted(RULES))
def test_cube_rule_fires(kernel):
    rule, detail = RULES[kernel]
    with pytest.raises(RuntimeError) as err:
        run(kernel)
    message = str(err.value)
    assert f"kernel '{kernel}' block " in message and f"[{rule}]" in message, message
    assert re.search(detail, message), message


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
