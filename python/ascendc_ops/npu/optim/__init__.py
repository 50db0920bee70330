"""torch_npu.optim: ``from torch_npu.optim import NpuFusedAdamW`` (Hugging Face's Trainer with
``optim="adamw_torch_npu_fused"``) finds ours once ``sys.modules["torch_npu"] = ascendc_ops.npu``. A subpackage as in
torch_npu; imported as ``torch_npu.optim`` too, hence the absolute import."""

from ascendc_ops.npu.optimizer import NpuFusedAdamW as NpuFusedAdamW

__all__ = ["NpuFusedAdamW"]
