"""The optimizer family behind torch_npu's names: npu_apply_adam_w (beta powers, the .out tensors updated in place)
against torch.optim.AdamW, and Hugging Face's Trainer with ``optim="adamw_torch_npu_fused"`` running our
NpuFusedAdamW once ``sys.modules["torch_npu"] = ascendc_ops.npu`` (transformers' trainer_optimizer imports
``torch_npu.optim.NpuFusedAdamW``), its parameters after a few steps against the same Trainer with torch's AdamW."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

import ascendc_ops
from ascendc_ops import npu, precision as P

pytest.importorskip("transformers")


@pytest.fixture
def torch_npu(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_npu", npu)
    monkeypatch.delitem(sys.modules, "torch_npu.optim", raising=False)
    import torch_npu as mod

    return mod


def close_in_fp32(ours, ref):
    a = np.concatenate([t.detach().double().flatten().numpy() for t in ours])
    g = np.concatenate([t.detach().double().flatten().numpy() for t in ref])
    m = P.metrics(a, g, "float32")
    assert m["mere"] < P.THRESHOLDS["float32"] and m["mare"] < 10 * P.THRESHOLDS["float32"], P.reported(m)


def test_npu_apply_adam_w_with_beta_powers(torch_npu):
    gen = torch.Generator().manual_seed(0)
    var, grad = torch.randn(769, generator=gen), torch.randn(769, generator=gen)
    m, v = 0.1 * torch.randn(769, generator=gen), 0.01 * torch.rand(769, generator=gen)
    p = var.clone().requires_grad_()
    p.grad = grad.clone()
    ref = torch.optim.AdamW([p], lr=1e-2, weight_decay=0.1)
    ref.state[p] = {"step": torch.tensor(4.0), "exp_avg": m.clone(), "exp_avg_sq": v.clone()}
    ref.step()
    out = torch_npu.npu_apply_adam_w(0.9**5, 0.999**5, 1e-2, 0.1, 0.9, 0.999, 1e-8, grad, None, False, False,
                                     out=(var, m, v))  # fmt: skip
    assert out[0] is var
    close_in_fp32([var, m, v], [p, ref.state[p]["exp_avg"], ref.state[p]["exp_avg_sq"]])


def _train(optim: str, tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, tie_word_embeddings=False)  # fmt: skip
    model = LlamaForCausalLM(config)
    gen = torch.Generator().manual_seed(1)
    data = [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, 64, (8, 12), generator=gen)]
    args = TrainingArguments(output_dir=str(tmp_path / optim), optim=optim, max_steps=3, learning_rate=1e-2,
                             per_device_train_batch_size=4, report_to=[], use_cpu=True, save_strategy="no",
                             data_seed=0, seed=0, disable_tqdm=True)  # fmt: skip
    trainer = Trainer(model=model, args=args, train_dataset=data)
    trainer.train()
    return trainer


def test_hf_trainer_runs_npu_fused_adamw(torch_npu, tmp_path):
    ours = _train("adamw_torch_npu_fused", tmp_path)
    opt = ours.optimizer.optimizer if hasattr(ours.optimizer, "optimizer") else ours.optimizer
    assert type(opt).__name__ == "NpuFusedAdamW" and isinstance(opt, ascendc_ops.optim.FusedAdamW)
    state = opt.state[next(ours.model.parameters())]
    assert float(state["step"]) == 3 and state["exp_avg"].dtype == torch.float32
    ref = _train("adamw_torch", tmp_path)
    close_in_fp32(list(ours.model.parameters()), list(ref.model.parameters()))


def test_clip_grad_norm_fused_returns_the_total_norm(torch_npu):
    from torch_npu.optim import NpuFusedAdamW

    ps = [torch.nn.Parameter(torch.zeros(n)) for n in (3, 5)]
    for p, g in zip(ps, (torch.full((3,), 2.0), torch.full((5,), -1.0)), strict=True):
        p.grad = g
    total = NpuFusedAdamW(ps).clip_grad_norm_fused_(1.0)
    assert abs(float(total) - (3 * 4 + 5) ** 0.5) < 1e-6
    assert abs(float(torch.cat([p.grad for p in ps]).norm()) - 1.0) < 1e-5
