"""The controls of cann-bench's accuracy rule (verify/cann_bench_rule.py) for its cases on our ops: cann-bench's
golden functions run on a case's inputs (`controls`), and step 5's float32 witness where the control computes in
a 16-bit dtype (`witnesses`). The preset hands both to verify on each of its cases (Case.control, Case.witness)."""

from __future__ import annotations

from ...dtypes import torch_dtype
from ..families import VERIFY_OPS
from . import attention, cross_entropy


def controls(case, spec, tensors: dict, second) -> tuple:
    """cann-bench's control for one of its cases on our op: its golden function on the case's inputs in their
    dtype (tasks/*/golden.py). RmsNorm's is torch.nn.functional.rms_norm in the dtype (our rstd output, which
    cann-bench has not, keeps `second`, PyTorch's same-dtype result); SwiGlu's, ApplyRotaryPosEmb's and GroupedMatmul's
    widen the inputs to float32, compute there (a matmul with the bias added in float32) and round once to the
    output dtype, which is our op's PyTorch computation run on float32 inputs. MHA's and GQA's compute in the
    inputs' dtype (attention.cann_bench_golden). CrossEntropyLoss's is F.cross_entropy in the input's dtype and
    LinearCrossEntropy's F.cross_entropy on fp32 logits: our ops' PyTorch computations (`second`), log_prob and the
    statistics from the same logits."""
    import torch

    if case.op == attention.OP:
        if case.meta.get("task") in attention.LAB_TASKS:  # TileLang's flash_attention: its golden in float32
            return attention.float32_golden(tensors, case.attrs, case.outputs)
        return attention.cann_bench_golden(tensors, case.attrs)
    if case.op in ("cross_entropy_loss", cross_entropy.LOSS_OP):  # their PyTorch computation is cann-bench's golden
        return second
    if case.op == "rms_norm":
        x, gamma = tensors["x"], tensors["gamma"]
        y = torch.nn.functional.rms_norm(x, gamma.shape, gamma, case.attrs["epsilon"])
        return (y, *second[1:])
    wide = {k: v.float() if v.is_floating_point() else v for k, v in tensors.items()}
    outs = spec.second(wide, case.attrs)
    return tuple(o.to(torch_dtype(t.dtype)) for o, t in zip(outs, case.outputs, strict=True))


def witnesses(case, tensors: dict) -> tuple | None:
    """Step 5's witness per output, or None (the control itself): for MHA, GQA and CrossEntropyLoss, whose
    controls compute in the 16-bit input dtype, the same formula on the inputs widened to float32, rounded once
    to each output's dtype (CrossEntropyLoss's bf16 log_softmax misses MARE on 0.15% of case 12's log_prob, where
    logits of +-1000 leave log-probabilities near 0)."""
    if case.op not in (attention.OP, "cross_entropy_loss") or case.meta.get("task") in attention.LAB_TASKS:
        return None  # the control computes in float32 (or is the golden's own formula)
    wide = {k: v.float() if v.is_floating_point() else v for k, v in tensors.items()}
    golden = attention.cann_bench_golden if case.op == attention.OP else VERIFY_OPS[case.op].second
    outs = golden(wide, case.attrs)
    return tuple(o.to(torch_dtype(t.dtype)) for o, t in zip(outs, case.outputs, strict=True))
