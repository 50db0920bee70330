"""The optimizer family's harness knowledge: apply_adam_w (how to run it on copies of var / m / v, PyTorch's own
torch.optim.AdamW step seeded with the same states, the float64 golden, the shape fuzzer, the default suite) and
foreach_norm's bench row (N tensors of E elements against torch._foreach_norm). The AdamW step is timed by `bench
optimizer` (harness/bench/optimizer_step.py): an in-place op has no row in `bench ops`, whose providers share inputs."""

from __future__ import annotations

import torch

from ... import op_proto
from ...ops import optimizer_reference as R
from .base import DTYPES, Moved, OpBench, OpSpec, Targets, case_tensor

_PROTO = op_proto.load_all()["apply_adam_w"]
STATES = ("m", "v", "max_grad_norm")


def _hyper(a) -> dict:
    """The case's attributes, the prototype's defaults where a case leaves one out (the one source of them)."""
    out = {}
    for d in _PROTO.attrs:
        value = a.get(d.name, d.default)
        out[d.name] = (str(value).lower() == "true") if d.type == "bool" else float(value)
    return out


def _amsgrad(t, a) -> bool:
    return _hyper(a)["amsgrad"] and t.get("max_grad_norm") is not None


def run_adam_w(t, a):
    """The in-place op on copies of var, m, v (and the maximum), returning them (verify also runs this on meta)."""
    h = _hyper(a)
    amsgrad = _amsgrad(t, a)
    var, m, v = (t[n].clone() for n in ("var", "m", "v"))
    vmax = t["max_grad_norm"].clone() if amsgrad else None
    torch.ops.custom.apply_adam_w(var, m, v, t["grad"], vmax, **{**h, "amsgrad": amsgrad})
    return (var, m, v) + ((vmax,) if amsgrad else ())


def torch_adam_w(t, a):
    """torch.optim.AdamW's step on fp32 copies seeded with the states and step - 1; var rounded to its dtype."""
    h = _hyper(a)
    amsgrad = _amsgrad(t, a)
    p = t["var"].float().clone().requires_grad_()
    p.grad = t["grad"].float().clone()
    opt = torch.optim.AdamW(
        [p], lr=h["lr"], betas=(h["beta1"], h["beta2"]), eps=h["eps"], weight_decay=h["weight_decay"],
        amsgrad=amsgrad, maximize=h["maximize"], foreach=False,
    )  # fmt: skip
    state = {"step": torch.tensor(h["step"] - 1.0), "exp_avg": t["m"].clone(), "exp_avg_sq": t["v"].clone()}
    if amsgrad:
        state["max_exp_avg_sq"] = t["max_grad_norm"].clone()
    opt.state[p] = state
    opt.step()
    out = (p.detach().to(t["var"].dtype), state["exp_avg"], state["exp_avg_sq"])
    return out + ((state["max_exp_avg_sq"],) if amsgrad else ())


def golden_adam_w(g, a):
    h = _hyper(a)
    amsgrad = h["amsgrad"] and g.get("max_grad_norm") is not None
    var, m, v, vmax = R.adam_w(g["var"], g["m"], g["v"], g["grad"], g.get("max_grad_norm"),
                               **{**h, "amsgrad": amsgrad})  # fmt: skip
    return (var, m, v) + ((vmax,) if amsgrad else ())


def fuzz_adam_w(rng, attrs):
    """One tensor of 1 to ~100k elements, rank 1 to 3."""
    rank = int(rng.integers(1, 4))
    shape = tuple(int(rng.integers(1, 48)) for _ in range(rank - 1)) + (int(rng.integers(1, 2000)),)
    names = ("var", "m", "v", "grad") + (("max_grad_norm",) if _hyper(attrs)["amsgrad"] else ())
    return {n: shape for n in names}


SIZES, QUICK_SIZES, MODEL = ((1,), (7,), (83,), (769,), (5125,), (33, 1001)), ((7,), (769,)), (4096, 4096)


def adam_w_suite(quick: bool) -> list[dict]:
    """fp16, bf16 and fp32 parameters (fp32 states) of 1 to 5125 elements and a 2-D one, at step 1 (bias
    corrections at their largest) and step 10 with amsgrad and maximize; quick: two sizes; full: a 4096 x 4096 layer."""
    tag = "_quick" if quick else ""
    types = list(DTYPES)

    def entry(name, shapes, attrs, amsgrad=False):
        shapes = [list(s) for s in shapes]
        param = {"value_range": [[-2.0, 2.0]], "data_distribute": "uniform"}
        ins = [case_tensor("var", shapes, types, **param),
               case_tensor("m", shapes, ["float32"] * 3, value_range=[[-0.1, 0.1]], data_distribute="uniform"),
               case_tensor("v", shapes, ["float32"] * 3, value_range=[[0.0, 0.01]], data_distribute="uniform"),
               case_tensor("grad", shapes, types, **param)]  # fmt: skip
        outs = [case_tensor("var", shapes, types), case_tensor("m", shapes, ["float32"] * 3),
                case_tensor("v", shapes, ["float32"] * 3)]  # fmt: skip
        if amsgrad:
            ins.append(case_tensor("max_grad_norm", shapes, ["float32"] * 3, value_range=[[0.0, 0.02]],
                                   data_distribute="uniform"))  # fmt: skip
            outs.append(case_tensor("max_grad_norm", shapes, ["float32"] * 3))
        attr = [{"name": k, "type": "bool" if isinstance(v, bool) else "float", "value": v} for k, v in attrs.items()]
        return {"case_name": name, "op": "apply_adam_w", "input_desc": ins, "output_desc": outs, "attr": attr}

    sizes = QUICK_SIZES if quick else SIZES
    out = [
        entry(f"apply_adam_w_step1{tag}", sizes, {"lr": 1e-2, "step": 1.0}),
        entry(
            f"apply_adam_w_amsgrad_maximize{tag}",
            sizes,
            {"lr": 1e-2, "step": 10.0, "amsgrad": True, "maximize": True},
            amsgrad=True,
        ),  # fmt: skip
    ]
    if not quick:
        out.append(entry("apply_adam_w_model", [MODEL], {"lr": 1e-3, "step": 1000.0}))
    return out


VERIFY: dict[str, OpSpec] = {
    "apply_adam_w": OpSpec(
        run=run_adam_w,
        second=torch_adam_w,
        golden=golden_adam_w,
        fuzz=fuzz_adam_w,
        default_cases=adam_w_suite,
    ),
}


# ---------------------------------------------------------------- bench
def check_tensors(shape) -> None:
    if len(shape) != 2 or min(shape) < 1:
        raise ValueError(f"needs N,E: N tensors of E elements, got {','.join(map(str, shape))}")


def norms_ours(x):
    """The 2-norm of each row of x [N, E], the rows as a list (contiguous views: no copy), one launch."""
    return torch.stack(torch.ops.custom.foreach_norm(list(x.unbind(0)), 2.0))


def norms_torch(x):
    return torch.stack(torch._foreach_norm(list(x.unbind(0)), 2))


BENCH: dict[str, OpBench] = {
    "foreach_norm": OpBench(
        norms_ours,
        norms_torch,
        lambda shape, dtype, gen: (torch.randn(shape, generator=gen).to(dtype),),
        check_tensors,
        lambda m, seq: [(9, m.hidden * m.hidden)],  # a layer's worth of H x H gradients
        lambda inputs, out, pass_: Moved(inputs[0].nbytes, 0),  # x read once (the norms are a few bytes)
        "N,E",
        ((200, 65536),),
        {"fwd": Targets(1.0, 1.0, None)},
    ),
}
