"""`ascendc-ops bench [ops|moe|model|attention|cann-bench]`: latency. ops: each op against PyTorch step-by-step,
torch.compile and a same-size copy; moe: the MoE experts block and a Qwen3-MoE step against HF; model: a
Llama-shaped HF model with and without the kernels; attention: fused attention fwd + bwd at a training shape
against HF eager and SDPA, with peak memory; cann-bench: our 910B estimates on cann-bench's cases."""

from __future__ import annotations

import sys

from ..harness import plot
from ..harness.bench import (
    attention_train,
    cross_entropy_train,
    hf_fusions,
    hf_model,
    moe as bench_moe,
    ops as bench_ops,
    optimizer_model,
    optimizer_step,
)
from ..harness.cann_bench import report as cann_bench_report
from ..harness.environment import progress
from ..harness.families.attention import check_attention_shape
from . import options
from .common import Suite, UsageError, add_suites, out_path, positive_int, run_suite

HELP = (
    "time our ops (ops), the MoE block (moe), a model (model), attention at a training shape (attention), the LM "
    "head's loss (cross-entropy), an optimizer step (optimizer) or cann-bench's cases (cann-bench)"
)
DESCRIPTION = (
    "Suites: ops (the default when none is named), moe, model, attention, cross-entropy, optimizer, cann-bench; "
    "`ascendc-ops bench SUITE -h` lists a suite's options. The older `--suite SUITE` and `--preset cann-bench` "
    "name a suite too."
)


# ---------------------------------------------------------------- ops
MAIN_DTYPE = "bfloat16"  # the training dtype: the main job's rows; --full adds float32 and every default shape
BOTH = " and ".join(bench_ops.DEFAULT_DTYPES)


def _add_ops(parser) -> None:
    options.ops(parser, bench_ops.OPS)
    parser.add_argument(
        "--preset",
        nargs="+",
        action="extend",
        choices=list(bench_ops.PRESETS),
        help="model shapes (RoPE: q [1, heads, seq, head_dim] and k [1, kv_heads, seq, head_dim]; "
        "RMSNorm: [seq, hidden]; SwiGLU: [seq, 2 x intermediate])",
    )
    parser.add_argument("--seq", type=positive_int, help="sequence length for --preset (default: 4096)")
    options.shapes(
        parser,
        "comma-separated dims, e.g. 1,32,512,128 (RoPE: B,H,L,D; RMSNorm: rows,hidden; SwiGLU: T,2I); "
        "default without --preset: each op's shapes from its issue",
    )
    options.dtypes(parser, bench_ops.DTYPES, f"{MAIN_DTYPE}; with --full, --shape or --preset: {BOTH}")
    parser.add_argument(
        "--mode",
        nargs="+",
        action="extend",
        choices=list(bench_ops.PASSES),
        help="fwd, bwd (dx only) and/or full (forward with grad + backward); default: fwd bwd",
    )
    parser.add_argument(
        "--csv", type=out_path, metavar="OUT", help="append the rows, with environment columns, to this CSV file"
    )
    parser.add_argument(
        "--plot",
        type=out_path,
        metavar="OUT.png",
        help="draw speedups and %% of copy bandwidth (needs matplotlib: pip install 'ascendc-ops[plot]')",
    )
    options.quick(parser, "fewer repeats (~0.1 s per provider, >= 5)")
    parser.add_argument(
        "--full",
        action="store_true",
        help=f"every op's default shapes in {BOTH} (default without --shape or --preset: each op's first shape in "
        f"{MAIN_DTYPE}, a few minutes on 2 cores; with them: {BOTH})",
    )
    parser.add_argument(
        "--no-compile", action="store_true", help="skip the torch.compile provider (saves compile time)"
    )
    parser.add_argument(
        "--no-explain",
        action="store_true",
        help="skip the table explaining each missed row (one host profile per such row: its top APIs, vector "
        "passes and copy share)",
    )
    options.uncalibrated(parser)
    parser.add_argument("--threads", type=positive_int, help="torch threads (default: all cores)")
    parser.add_argument(
        "--keep-malloc",
        action="store_true",
        help="leave glibc malloc's defaults (shows the page-fault trap on large outputs)",
    )
    options.no_progress(parser)


def _run_ops(args) -> int:
    if args.plot and not plot.available():  # before the run, not after it
        raise UsageError(f"--plot needs matplotlib: {plot.INSTALL}")
    whole = args.full or bool(args.shape or args.preset)  # shapes named: every dtype unless --dtype says
    cfg = bench_ops.Config(
        ops=tuple(dict.fromkeys(args.op or bench_ops.OPS)),
        shapes=tuple(dict.fromkeys(args.shape or ())),
        presets=tuple(dict.fromkeys(args.preset or ())),
        seq=args.seq or 0,
        dtypes=tuple(dict.fromkeys(args.dtype or (bench_ops.DEFAULT_DTYPES if whole else (MAIN_DTYPE,)))),
        passes=tuple(dict.fromkeys(args.mode or bench_ops.DEFAULT_PASSES)),
        full=whole,
        threads=args.threads or 0,
        tune_malloc=not args.keep_malloc,
        compile=not args.no_compile,
        csv=args.csv,
        plot=args.plot,
        progress=not args.no_progress,
        explain=not args.no_explain,
        calibrated=not args.uncalibrated,
    )
    if args.quick:
        cfg.target_s, cfg.min_reps, cfg.warmup = 0.1, 5, 1
    try:
        bench_ops.cases(cfg)
        if cfg.csv:
            bench_ops.check_csv(cfg.csv)
    except ValueError as e:
        raise UsageError(str(e)) from None
    bench_ops.run(cfg)
    return 0


# ---------------------------------------------------------------- moe
def _add_moe(parser) -> None:
    parser.add_argument(
        "--case", nargs="+", action="extend", choices=list(bench_moe.CASES), help="experts block case(s) (default: all)"
    )
    options.dtypes(parser, bench_moe.DTYPES, " ".join(bench_moe.DTYPES))
    options.quick(parser, "256 tokens per block case, a shorter model sequence")
    parser.add_argument("--no-eager", action="store_true", help="skip HF eager (the slowest: ~9 s per E=64 step)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak memory subprocesses")
    parser.add_argument("--no-model", action="store_true", help="skip the Qwen3-MoE training step")
    parser.add_argument("--no-gmm", action="store_true", help="skip grouped_matmul vs torch._grouped_mm")


def _run_moe(args) -> int:
    return bench_moe.run(
        bench_moe.Options(
            quick=args.quick,
            cases=tuple(dict.fromkeys(args.case or ())),
            dtypes=tuple(dict.fromkeys(args.dtype or ())),
            eager=not args.no_eager,
            memory=not args.no_memory,
            model=not args.no_model,
            gmm=not args.no_gmm,
        )
    )


# ---------------------------------------------------------------- model
def _add_model(parser) -> None:
    options.quick(parser, "smaller shapes (< 1 min)")
    parser.add_argument(
        "--rounds", type=positive_int, help="subprocess runs per variant, interleaved, the best shown (default: 2)"
    )
    parser.add_argument("--no-profile", action="store_true", help="skip the per-op profile")
    parser.add_argument(
        "--steps-only",
        action="store_true",
        help="only the Qwen3 / Qwen3-MoE training steps by fusion level (not the Llama table)",
    )


def _run_model(args) -> int:
    if not args.steps_only:  # the Llama table, then the Qwen3 / Qwen3-MoE steps by fusion level
        hf_model.run(quick=args.quick, rounds=args.rounds or hf_model.ROUNDS, profile_ops=not args.no_profile)
    return hf_fusions.run(quick=args.quick, rounds=args.rounds or hf_fusions.ROUNDS)


# ---------------------------------------------------------------- attention
def _add_attention(parser) -> None:
    options.shapes(
        parser,
        "B,S,N,NKV,D: batch, sequence, query heads, kv heads, head dim (default: "
        + ",".join(map(str, attention_train.SHAPE))
        + ")",
    )
    options.dtypes(parser, attention_train.DTYPES, "bfloat16")
    parser.add_argument(
        "--repeats",
        type=positive_int,
        help="calls per provider, the best shown (default: 1; ours takes minutes at S 4096)",
    )
    options.providers(parser, attention_train.PROVIDERS)
    options.quick(parser, "S 512 (" + ",".join(map(str, attention_train.QUICK_SHAPE)) + ")")


def _run_attention(args) -> int:
    return _run_training_suite(args, attention_train, check_attention_shape, repeats=args.repeats or 1)


def _run_training_suite(args, suite, check_shape, **extra) -> int:
    """`bench attention` / `bench cross-entropy`: a table per --shape and --dtype (the suite's shape, or with --quick
    its quick one; bfloat16), each with the providers asked for."""
    shapes = args.shape or [suite.QUICK_SHAPE if args.quick else suite.SHAPE]
    for dims in shapes:
        try:
            check_shape(dims)
        except ValueError as e:
            raise UsageError(f"--shape {e}") from None
    providers = tuple(dict.fromkeys(args.provider or suite.PROVIDERS))
    for dims in dict.fromkeys(map(tuple, shapes)):
        for dtype in dict.fromkeys(args.dtype or ["bfloat16"]):
            suite.run(suite.Options(shape=dims, dtype=dtype, providers=providers, **extra))
    return 0


# ---------------------------------------------------------------- cross-entropy
def _add_cross_entropy(parser) -> None:
    options.shapes(
        parser,
        "T,H,V: tokens, hidden, vocabulary (default: " + ",".join(map(str, cross_entropy_train.SHAPE)) + ")",
    )
    options.dtypes(parser, cross_entropy_train.DTYPES, "bfloat16")
    options.providers(
        parser, cross_entropy_train.PROVIDERS, "only these (default: all; hf is the reference of the differences)"
    )
    options.quick(parser, "T 512, V 32000 (" + ",".join(map(str, cross_entropy_train.QUICK_SHAPE)) + ")")


def _run_cross_entropy(args) -> int:
    return _run_training_suite(args, cross_entropy_train, _check_cross_entropy_shape)


def _check_cross_entropy_shape(dims) -> None:
    if len(dims) != 3 or min(dims) < 1:
        raise ValueError(f"wants T,H,V (three positive numbers), got {','.join(map(str, dims))}")


# ---------------------------------------------------------------- optimizer
def _add_optimizer(parser) -> None:
    options.shapes(
        parser, "H,L: width and decoder layers of the model (default: " + ",".join(map(str, optimizer_step.SHAPE)) + ")"
    )
    options.dtypes(parser, optimizer_step.DTYPES, "float32")
    options.providers(parser, optimizer_step.PROVIDERS)
    options.quick(parser, "H 128, 4 layers (" + ",".join(map(str, optimizer_step.QUICK_SHAPE)) + ")")
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="instead: the pipeline model's 910B step of LLaMA-3-8B's parameters, ours against torch_npu's "
        "NpuFusedAdamW passes (model estimates, not measurements)",
    )


def _run_optimizer(args) -> int:
    if args.estimate:
        return optimizer_model.run()
    for dims in args.shape or [optimizer_step.QUICK_SHAPE if args.quick else optimizer_step.SHAPE]:
        if len(dims) != 2 or min(dims) < 1:
            raise UsageError(f"--shape wants H,L (two positive numbers), got {','.join(map(str, dims))}")
        providers = tuple(dict.fromkeys(args.provider or optimizer_step.PROVIDERS))
        for dtype in dict.fromkeys(args.dtype or ["float32"]):
            optimizer_step.run(optimizer_step.Options(shape=tuple(dims), dtype=dtype, providers=providers))
    return 0


# ---------------------------------------------------------------- cann-bench
def _add_cann_bench(parser) -> None:
    options.cann_bench(parser)
    options.quick(parser, "the cases whose largest tensor holds at most 4 Mi elements")
    parser.add_argument("--no-accuracy", action="store_true", help="skip each case's accuracy run on the twin")
    options.json_out(parser, "the rows as well")
    options.no_progress(parser)


def _run_cann_bench(args) -> int:
    facts, only = options.cann_bench_facts(args)
    return cann_bench_report.run_bench(
        facts,
        only,
        args.quick,
        accuracy=not args.no_accuracy,
        json_path=args.json,
        progress=progress if sys.stderr.isatty() and not args.no_progress else None,
        calibrated=not args.uncalibrated,
    )


SUITES = (
    Suite(
        "ops",
        "each op against PyTorch step-by-step, torch.compile and a copy",
        "Time each op against the PyTorch step-by-step code it replaces, torch.compile of that code and a "
        "same-size copy; print a Markdown table.",
        _add_ops,
        _run_ops,
    ),
    Suite(
        "moe",
        "the MoE experts block and a tiny Qwen3-MoE step against HF (also: --suite moe)",
        "The MoE experts block against HF transformers' eager loop and grouped_mm, and a tiny Qwen3-MoE training step.",
        _add_moe,
        _run_moe,
    ),
    Suite(
        "model",
        "a Llama-shaped HF model with and without the kernels (also: --suite model)",
        "A Llama-shaped HF model's training step and generation with and without the kernels, then the Qwen3 / "
        "Qwen3-MoE training steps by fusion level.",
        _add_model,
        _run_model,
    ),
    Suite(
        "attention",
        "fused attention fwd + bwd at a training shape against HF eager and SDPA, with peak memory",
        "Fused attention forward + backward at a training shape (default llama3-8b's heads at S 4096, bf16, "
        "causal) against HF's eager attention and torch's scaled_dot_product_attention, each provider in its own "
        "process, with its peak memory.",
        _add_attention,
        _run_attention,
    ),
    Suite(
        "cross-entropy",
        "the LM head + cross-entropy fwd + bwd against HF's path and a chunked one, with peak memory",
        "The LM head and its loss, forward + backward at a training shape (default T 4096, H 128, Qwen2's V "
        "152064, bf16): the fused linear cross-entropy against Hugging Face's logits + ForCausalLMLoss and a "
        "chunked PyTorch implementation, each provider in its own process, with its peak memory.",
        _add_cross_entropy,
        _run_cross_entropy,
    ),
    Suite(
        "optimizer",
        "an AdamW step and gradient clipping over an LLM's parameters against torch's foreach and fused AdamW",
        "One AdamW step and one clip_grad_norm_ over the 200 tensors of an LLM-shaped model (default 151M "
        "parameters, fp32): FusedAdamW and our clip_grad_norm_ against torch.optim.AdamW with foreach=True and "
        "fused=True and torch's clip_grad_norm_, with the GB/s of the bytes each element must move.",
        _add_optimizer,
        _run_optimizer,
    ),
    Suite(
        "cann-bench",
        "our 910B estimates on cann-bench's cases (also: --preset cann-bench)",
        "The cases of hicann/cann-bench's tasks our ops implement: accuracy on the twin, our 910B estimate, "
        "the built-in kernels' 910B2 times and HAP (docs/benchmarks.md), then the model check.",
        _add_cann_bench,
        _run_cann_bench,
    ),
)


def add_arguments(parser) -> None:
    add_suites(parser, SUITES, suite_option="--suite")


def run(args) -> int:
    return run_suite(SUITES, args)
