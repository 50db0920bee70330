"""The op families the harness knows, one module per family key. Each declares VERIFY (op name -> base.OpSpec:
how `verify` runs the op, PyTorch's own computation of it, its golden, fuzzer, default cases and value
generators) and BENCH (op name -> base.OpBench: how `bench` times it). A new family is one module here and one
name in FAMILIES (a backward op, verified as its own op, lives in its forward's module: fusion_attention_grad in
attention; its bench variants, dropout and sinks, in attention_variants)."""

from __future__ import annotations

from . import (
    attention,
    attention_variants,
    cross_entropy,
    grouped_matmul,
    moe_routing,
    optimizer,
    rms_norm,
    rope,
    swiglu,
)

FAMILIES = (
    rope, swiglu, rms_norm, grouped_matmul, moe_routing, attention, attention_variants, cross_entropy, optimizer,
)  # fmt: skip

VERIFY_OPS = {name: spec for family in FAMILIES for name, spec in family.VERIFY.items()}
BENCH_OPS = {name: spec for family in FAMILIES for name, spec in family.BENCH.items()}
