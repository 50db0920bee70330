"""The least work of cann-bench's built-in for any case the preset runs: the model check's
(pipeline/calibration.py builtin_work) for its tasks, the preset's own for the tasks outside the check
(data.PRESET_TASKS: the optimizer's in cann_bench/optimizer.py, the attention labs' in cann_bench/attention.py
attention_grad.py and attention_grad_enhance.py),
priced by the same rule (bytes read and written once, a GEMM's FLOPs at the cube's peak, one kernel start)."""

from __future__ import annotations

from ..pipeline import calibration
from . import attention, attention_grad, attention_grad_enhance, optimizer


def builtin_work(task: str, case: dict) -> calibration.Work | None:
    if task in optimizer.TASKS:
        return optimizer.builtin_work(task, case)
    if task == attention_grad_enhance.TASK:
        return attention_grad_enhance.builtin_work(task, case)
    if task == attention_grad.TASK:
        return attention_grad.builtin_work(task, case)
    if task in attention.LAB_TASKS:
        return attention.builtin_work(task, case)
    return calibration.builtin_work(task, case)
