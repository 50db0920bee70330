"""The controls of cann-bench's accuracy rule (verify/cann_bench_rule.py) for its cases on our ops: cann-bench's
golden functions run on a case's inputs (`controls`), and step 5's float32 witness where the control computes in
a 16-bit dtype (`witnesses`). The preset hands both to verify on each of its cases (Case.control, Case.witness)."""

from __future__ import annotations

from ...dtypes import torch_dtype
from . import attention


def controls(case, spec, tensors: dict, second) -> tuple:
    """cann-bench's control for one of its cases on our op: its golden function on the case's inputs in their
    dtype (tasks/*/golden.py). RmsNorm's is torch.nn.functional.rms_norm in the dtype (our rstd output, which
    cann-bench has not, keeps `second`, PyTorch's same-dtype result); SwiGlu's, ApplyRotaryPosEmb's and GroupedMatmul's
    widen the inputs to float32, compute there (a matmul with the bias added in float32) and round once to the
    output dtype, which is our op's PyTorch computation run on float32 inputs. MHA's and GQA's compute in the
    inputs' dtype (attention.cann_bench_golden)."""
    import torch

    if case.op == attention.OP:
        return attention.cann_bench_golden(tensors, case.attrs)
    if case.op == "rms_norm":
        x, gamma = tensors["x"], tensors["gamma"]
        y = torch.nn.functional.rms_norm(x, gamma.shape, gamma, case.attrs["epsilon"])
        return (y, *second[1:])
    wide = {k: v.float() if v.is_floating_point() else v for k, v in tensors.items()}
    outs = spec.second(wide, case.attrs)
    return tuple(o.to(torch_dtype(t.dtype)) for o, t in zip(outs, case.outputs, strict=True))


def witnesses(case, tensors: dict) -> tuple | None:
    """Step 5's witness per output, or None (the control itself): for MHA and GQA, whose control computes in
    the 16-bit input dtype, cann-bench's golden formula on the inputs widened to float32, rounded once to
    each output's dtype."""

    if case.op != attention.OP:
        return None
    wide = {k: v.float() if v.is_floating_point() else v for k, v in tensors.items()}
    outs = attention.cann_bench_golden(wide, case.attrs)
    return tuple(o.to(torch_dtype(t.dtype)) for o, t in zip(outs, case.outputs, strict=True))
