"""The MoE routing family's harness knowledge: moe_token_unpermute and its grad for `verify` (how to run each,
PyTorch's own computation, the float64 golden, the fuzzer, the default suite, the permutation generator;
moe_token_permute moves rows and returns int32 indices: tests/ops/test_moe_routing.py checks it exactly), and
moe_token_permute and moe_token_unpermute for `bench`."""

from __future__ import annotations

import numpy as np
import torch

import ascendc_ops

from ...ops import moe_routing_reference as R
from ..values import GenContext, signed_uniform
from .base import DTYPES, Moved, OpBench, OpSpec, Targets, case_tensor, per_pass


# ---------------------------------------------------------------- value generators
def permutation(shape, attrs, ctx: GenContext | None = None):
    """sorted_indices: a random permutation of T * topK positions."""
    return ctx.rng.permutation(int(np.prod(shape))).astype(np.float64)


VALUES = {"permutation": permutation, "signed_uniform": signed_uniform}
POSITIVE = [0.25, 1.25]  # data range of the default suite: sums stay fp16 normals away from zero


# ---------------------------------------------------------------- verify
def torch_unpermute(permuted, s, probs):
    t, k = probs.shape
    return (permuted[s.long()].view(t, k, -1) * probs.to(permuted.dtype)[..., None]).sum(1)


def torch_unpermute_grad(permuted, dout, s, probs):
    p, pr = permuted.detach().requires_grad_(), probs.detach().requires_grad_()
    return torch.autograd.grad(torch_unpermute(p, s, pr), (p, pr), dout)


def fuzz_unpermute(grad: bool):
    def fuzz(rng, attrs):
        t, k, h = int(rng.integers(1, 200)), int(rng.integers(1, 9)), int(rng.integers(1, 6000))
        shapes = {"permuted_tokens": (t * k, h), "sorted_indices": (t * k,), "probs": (t, k)}
        if grad:
            shapes["unpermuted_tokens_grad"] = (t, h)
        return shapes

    return fuzz


def unpermute_suite(grad: bool):
    """moe_token_unpermute / its grad in fp16, bf16 and fp32 (probs of the tokens' dtype): topK 1/2/8, hidden
    1, 769, 5125 (more than one 4096-element pass) and the Qwen3-MoE shape (1024 tokens, top-8, hidden 1024).
    Data: tokens uniform in [0.25, 1.25], grads of random sign with magnitudes in [0.25, 1.25], probs uniform
    in [0.05, 1], sorted_indices a random permutation: sums and products stay fp16 normals away from zero."""
    op = "moe_token_unpermute_grad" if grad else "moe_token_unpermute"
    f = list(DTYPES)

    def entry(name, t, k, h):
        ins = [
            case_tensor("permuted_tokens", [t * k, h], f, value_range=[POSITIVE]),
            case_tensor("sorted_indices", [t * k], ["int32"] * 3, value="permutation"),
            case_tensor("probs", [t, k], f, value_range=[[0.05, 1]]),
        ]
        outs = [case_tensor("unpermuted_tokens", [t, h], f)]
        if grad:
            ins.insert(
                1, case_tensor("unpermuted_tokens_grad", [t, h], f, value="signed_uniform", value_range=[POSITIVE])
            )
            outs = [case_tensor("permuted_tokens_grad", [t * k, h], f), case_tensor("probs_grad", [t, k], f)]
        return {
            "case_name": f"{op}_{name}",
            "op": op,
            "input_desc": ins,
            "output_desc": outs,
            "attr": [{"name": "restore_shape", "type": "list_int", "value": []}],
        }

    def cases(quick: bool) -> list[dict]:
        out = [entry("h1_k1", 7, 1, 1), entry("h769_k2", 83, 2, 769)]
        if not quick:
            out += [entry("h5125_k8", 7, 8, 5125), entry("qwen3_moe", 1024, 8, 1024)]
        return out

    return cases


VERIFY: dict[str, OpSpec] = {
    "moe_token_unpermute": OpSpec(
        run=lambda t, a: (ascendc_ops.moe_token_unpermute(t["permuted_tokens"], t["sorted_indices"], t["probs"]),),
        second=lambda t, a: (torch_unpermute(t["permuted_tokens"], t["sorted_indices"], t["probs"]),),
        golden=lambda g, a: (
            R.moe_token_unpermute(g["permuted_tokens"], g["sorted_indices"].astype(np.int64), g["probs"]),
        ),
        fuzz=fuzz_unpermute(False),
        default_cases=unpermute_suite(False),
        values=VALUES,
    ),
    "moe_token_unpermute_grad": OpSpec(
        run=lambda t, a: torch.ops.custom.moe_token_unpermute_grad(
            t["permuted_tokens"], t["unpermuted_tokens_grad"], t["sorted_indices"], t["probs"]
        ),
        second=lambda t, a: torch_unpermute_grad(
            t["permuted_tokens"], t["unpermuted_tokens_grad"], t["sorted_indices"], t["probs"]
        ),
        golden=lambda g, a: R.moe_token_unpermute_backward(
            g["permuted_tokens"], g["unpermuted_tokens_grad"], g["sorted_indices"].astype(np.int64), g["probs"]
        ),
        fuzz=fuzz_unpermute(True),
        default_cases=unpermute_suite(True),
        values=VALUES,
    ),
}


# ---------------------------------------------------------------- bench
def routing_inputs(shape, dtype, gen):
    """tokens [T, H], top-K expert ids of E experts (shape T,H,K,E), and for unpermute probs [T, K]."""
    t, h, k, e = shape
    idx = torch.randint(0, e, (t, k), generator=gen)
    return torch.randn(t, h, generator=gen).to(dtype), idx, torch.rand(t, k, generator=gen).to(dtype)


def permute_torch(tokens, idx, probs):
    """MindSpeed's eager permute: a stable argsort of the flat ids, then index_select."""
    order = torch.argsort(idx.flatten(), stable=True)
    return tokens.index_select(0, order // idx.shape[1])


def unpermute_inputs(shape, dtype, gen):
    """permuted tokens [T*K, H] (the gradient goes to them), sorted_indices int32 [T*K] of a stable sort of
    random top-K ids (made by torch, so the row times only the unpermute), probs [T, K]."""
    tokens, idx, probs = routing_inputs(shape, dtype, gen)
    order = torch.argsort(idx.flatten(), stable=True)
    sorted_indices = torch.empty_like(order).scatter_(0, order, torch.arange(order.numel())).to(torch.int32)
    return tokens.index_select(0, order // idx.shape[1]), sorted_indices, probs


def unpermute_ours(permuted, sorted_indices, probs):
    return ascendc_ops.moe_token_unpermute(permuted, sorted_indices, probs)


def unpermute_torch(permuted, sorted_indices, probs):
    t, k = probs.shape
    return (permuted[sorted_indices.long()].view(t, k, -1) * probs[..., None]).sum(1)


def routing_bytes(inputs, out, pass_) -> int:
    """permute: tokens read, T*K rows written; unpermute: T*K rows read, tokens written (bwd: the reverse)."""
    first, idx, probs = inputs
    other = first.nbytes * idx.shape[1] if idx.dim() == 2 else first.nbytes // probs.shape[1]
    return per_pass(Moved(first.nbytes, other), Moved(other, first.nbytes))[pass_]


def check_routing(shape) -> None:
    if len(shape) != 4 or min(shape) < 1:
        raise ValueError(f"needs 4 positive dims T,H,K,E, got {','.join(map(str, shape))}")


ROUTING_TARGETS = {p: Targets(1.0, None, None) for p in ("fwd", "bwd", "full")}


def _routing_bench(ours, torch_fn, inputs) -> OpBench:
    """A routing op's bench: T tokens of H, top-K of E experts; no model preset shapes."""
    shapes = dict(preset_shapes=lambda m, seq: [], shape_help="T,H,K,E", default_shapes=((1024, 1024, 8, 64),))
    return OpBench(ours, torch_fn, inputs, check_routing, bytes_moved=routing_bytes, targets=ROUTING_TARGETS, **shapes)


BENCH: dict[str, OpBench] = {
    "moe_token_permute": _routing_bench(
        lambda t, i, p: ascendc_ops.moe_token_permute(t, i)[0], permute_torch, routing_inputs
    ),
    "moe_token_unpermute": _routing_bench(unpermute_ours, unpermute_torch, unpermute_inputs),
}
