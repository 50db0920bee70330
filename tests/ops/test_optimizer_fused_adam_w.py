"""ascendc_ops.optim.FusedAdamW against torch.optim.AdamW: 200 steps of a small model in lockstep (parameters within
the fp32 standard of each other at every step, the same loss curve to printing precision), param groups, amsgrad,
bf16 parameters, and state_dicts that load into each other."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import ascendc_ops  # noqa: F401  (loads the library)
from ascendc_ops import precision as P
from ascendc_ops.optim import FusedAdamW


def model(seed=0, dtype=torch.float32):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(16, 48), torch.nn.GELU(), torch.nn.Linear(48, 5)).to(dtype)


def batches(n=8, seed=1):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(32, 16, generator=gen), torch.randint(0, 5, (32,), generator=gen)) for _ in range(n)]


def train_step(net, opt, x, y):
    loss = torch.nn.functional.cross_entropy(net(x.to(next(net.parameters()).dtype)).float(), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def assert_fp32_standard(ours, ref, label):
    """MERE < 2^-13 and MARE < 10 * 2^-13 of ours against ref, over all parameters together."""
    a = np.concatenate([p.detach().double().flatten().numpy() for p in ours])
    g = np.concatenate([p.detach().double().flatten().numpy() for p in ref])
    m = P.metrics(a, g, "float32")
    t = P.THRESHOLDS["float32"]
    assert m["mere"] < t and m["mare"] < 10 * t, f"{label}: {P.reported(m)}"


def test_200_steps_in_lockstep_with_torch_adamw():
    ref, ours = model(), model()
    groups = lambda net: [  # noqa: E731  two groups: torch's usual no-decay split for biases
        {"params": [p for n, p in net.named_parameters() if n.endswith("weight")]},
        {"params": [p for n, p in net.named_parameters() if n.endswith("bias")], "weight_decay": 0.0},
    ]
    opt_ref = torch.optim.AdamW(groups(ref), lr=3e-3, weight_decay=0.05)
    opt = FusedAdamW(groups(ours), lr=3e-3, weight_decay=0.05)
    data = batches()
    losses = []
    for step in range(200):
        x, y = data[step % len(data)]
        loss_ref, loss = train_step(ref, opt_ref, x, y), train_step(ours, opt, x, y)
        # equal to printing precision (5 decimals): within half a unit of the last digit printed
        assert abs(loss - loss_ref) < 5e-6, f"step {step}: loss {loss:.7f} vs {loss_ref:.7f}"
        losses.append(loss)
        assert_fp32_standard(list(ours.parameters()), list(ref.parameters()), f"step {step}")
    assert losses[-1] < 0.8 * losses[0]  # it learned: the comparison is not of two idle runs


@pytest.mark.parametrize("amsgrad,maximize", [(True, False), (False, True)])
def test_amsgrad_and_maximize_follow_torch(amsgrad, maximize):
    ref, ours = model(2), model(2)
    opt_ref = torch.optim.AdamW(ref.parameters(), lr=1e-2, amsgrad=amsgrad, maximize=maximize)
    opt = FusedAdamW(ours.parameters(), lr=1e-2, amsgrad=amsgrad, maximize=maximize)
    for x, y in batches(10, seed=3):
        train_step(ref, opt_ref, x, y), train_step(ours, opt, x, y)
        assert_fp32_standard(list(ours.parameters()), list(ref.parameters()), f"amsgrad={amsgrad}")


def test_state_dicts_load_into_each_other():
    data = batches(6, seed=4)
    ref, ours = model(3), model(3)
    opt_ref, opt = torch.optim.AdamW(ref.parameters(), lr=1e-2), FusedAdamW(ours.parameters(), lr=1e-2)
    for x, y in data[:3]:
        train_step(ref, opt_ref, x, y), train_step(ours, opt, x, y)
    mine, theirs = opt.state_dict(), opt_ref.state_dict()
    assert mine["param_groups"] == theirs["param_groups"]
    assert {k: sorted(v) for k, v in mine["state"].items()} == {k: sorted(v) for k, v in theirs["state"].items()}
    # swap: torch continues from our state, ours from torch's, and both stay with the other's run
    opt_ref.load_state_dict(mine)
    opt.load_state_dict(theirs)
    for x, y in data[3:]:
        train_step(ref, opt_ref, x, y), train_step(ours, opt, x, y)
        assert_fp32_standard(list(ours.parameters()), list(ref.parameters()), "after the swap")


def test_bf16_parameters_keep_fp32_states():
    net = model(5, torch.bfloat16)
    opt = FusedAdamW(net.parameters(), lr=1e-2)
    first = None
    for x, y in batches(20, seed=6):
        loss = train_step(net, opt, x, y)
        first = loss if first is None else first
    state = opt.state[next(net.parameters())]
    assert state["exp_avg"].dtype == torch.float32 and state["exp_avg_sq"].dtype == torch.float32
    assert next(net.parameters()).dtype == torch.bfloat16 and loss < first


def test_bad_hyperparameters_raise_torch_errors():
    p = [torch.nn.Parameter(torch.zeros(3))]
    with pytest.raises(ValueError, match="Invalid learning rate: -0.1"):
        FusedAdamW(p, lr=-0.1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 0: 1.0"):
        FusedAdamW(p, betas=(1.0, 0.999))
    with pytest.raises(ValueError, match="FusedAdamW: differentiable=True is not supported"):
        FusedAdamW(p, differentiable=True)


def test_sparse_grad_is_refused_by_name():
    p = torch.nn.Parameter(torch.zeros(4))
    p.grad = torch.zeros(4).to_sparse()
    with pytest.raises(ValueError, match=r"foreach_adam_w: grad must be a dense \(strided\) tensor"):
        FusedAdamW([p]).step()


# ---------------------------------------------------------------- fp32 master copies (master_weights=True)
def low_precision_params(dtype, seed=7):
    gen = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(s, generator=gen).to(dtype)) for s in ((48, 16), (48,), (5, 48))]


def give_grads(params, ref, gen):
    """The same gradients to both: 16-bit to ours, the same values in each of ref's dtype (fp32: exactly widened)."""
    for p, q in zip(params, ref, strict=True):
        p.grad = torch.randn(p.shape, generator=gen).to(p.dtype)
        q.grad = p.grad.to(q.dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_master_weights_step_as_fp32_parameters(dtype):
    """50 steps of 16-bit parameters with masters beside torch.optim.AdamW on fp32 parameters given the same
    gradients: the masters within the fp32 standard of torch's parameters, each parameter its master's rounding."""
    params = low_precision_params(dtype)
    ref = [torch.nn.Parameter(p.detach().float()) for p in params]
    opt, opt_ref = FusedAdamW(params, lr=1e-2, master_weights=True), torch.optim.AdamW(ref, lr=1e-2)
    gen = torch.Generator().manual_seed(8)
    for step in range(50):
        give_grads(params, ref, gen)
        opt.step(), opt_ref.step()
        masters = [opt.state[p]["master_param"] for p in params]
        assert all(m.dtype == torch.float32 for m in masters)
        assert_fp32_standard(masters, ref, f"step {step}")
        assert all(torch.equal(p, m.to(dtype)) for p, m in zip(params, masters, strict=True))


def test_master_weights_state_dict_round_trip():
    """Saved and loaded into a fresh optimizer (and fresh bf16 parameters), the masters and moments come back fp32
    and the two optimizers continue bit for bit alike; without master_weights no master is kept."""
    params, twin = low_precision_params(torch.bfloat16), low_precision_params(torch.bfloat16)
    opt = FusedAdamW(params, lr=1e-2, master_weights=True)
    gen = torch.Generator().manual_seed(9)
    for _ in range(3):
        give_grads(params, twin, gen)
        opt.step()
    with torch.no_grad():
        for p, q in zip(params, twin, strict=True):
            q.copy_(p)
    loaded = FusedAdamW(twin, lr=1e-2, master_weights=True)
    loaded.load_state_dict(copy.deepcopy(opt.state_dict()))  # as torch.save / torch.load give it
    for p, q in zip(params, twin, strict=True):
        for name in ("master_param", "exp_avg", "exp_avg_sq"):
            got = loaded.state[q][name]
            assert got.dtype == torch.float32 and torch.equal(got, opt.state[p][name]), name
    for _ in range(3):
        give_grads(params, twin, gen)
        opt.step(), loaded.step()
        assert all(torch.equal(p, q) for p, q in zip(params, twin, strict=True))
    plain = FusedAdamW(low_precision_params(torch.bfloat16), lr=1e-2)
    give_grads(plain.param_groups[0]["params"], low_precision_params(torch.bfloat16), gen)
    plain.step()
    assert all("master_param" not in s for s in plain.state.values())
