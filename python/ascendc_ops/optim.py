"""``FusedAdamW``: torch.optim.AdamW's optimizer with the update done by our one-pass kernel
(``torch.ops.custom.foreach_adam_w``: param, grad, m and v read once, param, m and v written once).

Same constructor, hyperparameters, param groups and ``state_dict`` layout as torch.optim.AdamW (``step`` a float32
tensor, ``exp_avg``, ``exp_avg_sq``, ``max_exp_avg_sq`` with amsgrad), so a state saved by one loads into the other.
The states are float32 whatever the parameter's dtype (torch keeps them in the parameter's); a state loaded from
torch.optim.AdamW in another dtype is widened at the next step, and torch narrows ours on load (ours keeps a saved fp32
state fp32). One launch per param group, device, parameter dtype and step count (usually one per group).
capturable / differentiable / fused=True (CUDA graphs, autograd through the step, torch's own fused kernels) are
refused.

``master_weights=True`` (apex FusedAdam's option of that name, and its semantics): each fp16 / bf16 parameter gets an
fp32 master copy (``state["master_param"]``, made from the parameter at its first step, saved and loaded with the
state_dict); the update reads the master, not the parameter, updates it in fp32 and writes the parameter as the
master rounded to nearest even, in the same single pass. A change made to the 16-bit parameter outside the optimizer
is overwritten at the next step, as apex's. fp32 parameters have no master.

``clip_grad_norm_``: torch.nn.utils.clip_grad_norm_'s contract (same arguments, the total norm returned in the
gradients' dtype, error_if_nonfinite) in two launches whatever the parameter count: foreach_norm (the per-tensor
norms) and foreach_clip_by_total_norm (the total, the coefficient min(1, max_norm / (total + 1e-6)) and the scaling,
on the device: no host reads the norm unless error_if_nonfinite asks, as torch's check does). Gradients of several
dtypes: one pair per dtype, each scaling launch given every norm (cast to its dtype). A norm_type other than 1, 2 or
inf, or gradients on several devices, are torch's own clip_grad_norm_.
"""

from __future__ import annotations

import functools
import math

import torch

LOW_PRECISION = (torch.float16, torch.bfloat16)
FP32_STATES = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "master_param")  # kept fp32 whatever the parameter


class FusedAdamW(torch.optim.Optimizer):
    def __init__(
        self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
        master_weights=False, **options,
    ):  # fmt: skip
        params = list(params)
        self.master_weights = bool(master_weights)
        # torch.optim.AdamW's own constructor checks the hyperparameters (its errors, its words) and gives the
        # param-group keys, so both optimizers' state_dicts hold the same fields.
        template = torch.optim.AdamW(
            [torch.zeros(1)], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, **options
        )
        for key in ("capturable", "differentiable"):
            if template.defaults.get(key):
                raise ValueError(f"FusedAdamW: {key}=True is not supported (our kernel runs outside autograd/graphs)")
        if template.defaults.get("fused"):
            raise ValueError("FusedAdamW: fused=True selects torch's own fused kernel; leave it None")
        super().__init__(params, template.defaults)

    def _state_of(self, p: torch.Tensor, amsgrad: bool) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = torch.tensor(0.0, dtype=torch.float32)
            state["exp_avg"] = torch.zeros_like(p, dtype=torch.float32, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, dtype=torch.float32, memory_format=torch.preserve_format)
        names = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad else ())
        for name in names:
            if name not in state:  # amsgrad switched on after some steps: torch starts the maximum at 0
                state[name] = torch.zeros_like(p, dtype=torch.float32, memory_format=torch.preserve_format)
            elif state[name].dtype != torch.float32:  # loaded from torch.optim.AdamW on a 16-bit parameter
                state[name] = state[name].float()
        if self.master_weights and p.dtype in LOW_PRECISION and "master_param" not in state:
            state["master_param"] = p.detach().to(torch.float32, copy=True)
        return state

    def load_state_dict(self, state_dict):
        """torch's, which casts every floating state to its parameter's dtype, then the fp32 states put back as saved
        (the moments and the master of a 16-bit parameter stay fp32)."""
        saved = state_dict["state"]
        super().load_state_dict(state_dict)
        ids = [i for group in state_dict["param_groups"] for i in group["params"]]
        params = [p for group in self.param_groups for p in group["params"]]
        for i, p in zip(ids, params, strict=True):
            for name, value in saved.get(i, {}).items():
                if name in FP32_STATES and torch.is_tensor(value) and value.dtype == torch.float32:
                    self.state[p][name] = value.to(p.device, copy=True)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            amsgrad = bool(group["amsgrad"])
            # one launch serves tensors of one device and dtype at one step count
            buckets: dict[tuple, list] = {}
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self._state_of(p, amsgrad)
                state["step"] += 1
                key = (p.device, p.dtype, float(state["step"]), "master_param" in state)
                buckets.setdefault(key, []).append((p, state))
            for (_, _, step, master), members in buckets.items():
                states = [s for _, s in members]
                torch.ops.custom.foreach_adam_w(
                    [p for p, _ in members], [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
                    [p.grad for p, _ in members], [s["max_exp_avg_sq"] for s in states] if amsgrad else [],
                    [s["master_param"] for s in states] if master else [],
                    lr=float(group["lr"]), beta1=float(beta1), beta2=float(beta2),
                    weight_decay=float(group["weight_decay"]), eps=float(group["eps"]), step=step, amsgrad=amsgrad,
                    maximize=bool(group["maximize"]),
                )  # fmt: skip
        return loss


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None) -> torch.Tensor:
    """Scales the gradients of ``parameters`` so their total ``norm_type`` norm is at most ``max_norm``; returns the
    total norm (of the gradients before scaling). ``foreach`` is accepted for torch's signature (ours always is)."""
    from .ops import optimizer as O

    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    norm_type = float(norm_type)
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    if norm_type not in (1.0, 2.0, math.inf) or len({g.device for g in grads}) > 1:
        return torch.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)
    groups: dict[torch.dtype, list] = {}  # one kernel entry per dtype
    for g in grads:
        groups.setdefault(g.dtype, []).append(g)
    norms = {dtype: O.foreach_norm(group, norm_type) for dtype, group in groups.items()}
    totals = {}
    for dtype, group in groups.items():
        every = [n if n.dtype == dtype else n.to(dtype) for ns in norms.values() for n in ns]
        totals[dtype] = O.foreach_clip_by_total_norm_(group, every, max_norm, norm_type, error_if_nonfinite)
        if error_if_nonfinite and not bool(torch.isfinite(totals[dtype])):  # the kernel left the grads unscaled
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
                "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
                "`error_if_nonfinite=False`"
            )
    wide = functools.reduce(torch.promote_types, groups)  # the dtype torch's stacked norms take
    return totals[wide] if wide in totals else next(iter(totals.values())).to(wide)
