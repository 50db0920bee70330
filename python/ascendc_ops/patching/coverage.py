"""What the structural patching gives on each decoder family of the installed transformers: a tiny random model
per model type (the config class's defaults shrunk: 2 layers, hidden 64, ...), ``apply_default_kernels``, and
logits and gradient parity against the unpatched model (tools/patch_coverage.py writes docs/records/coverage.md).

Parity is the fp32 double benchmark of docs/accuracy.md (``ascendc_ops.precision.check_ratio``), per output: golden =
the unpatched model in float64, the comparison = the unpatched model in fp32, ours = the patched model in fp32; the
logits and every parameter's gradient must pass its MARE/MERE/RMSE ratios and the sanity bound. Two criteria are
read differently for a whole model's outputs, each against the comparison measured in the same run, so that a
verdict holds whatever order this CPU's BLAS sums in: the small-value ErrorCount (2^-30 absolute on |g| < 2^-14) is
reported, not judged - an end-to-end gradient's small elements carry rounding from every layer upstream, and the
counts are a few on either side (ours 7 vs the comparison's 2 on a tiny Qwen3-MoE lm_head gradient); and the sanity
bound is read as the double benchmark reads MARE: ours' worst distance to it may be at most 5x the comparison's (an
fp32 gradient near the bound is near it in every order: CPM-Ant's second-layer project_q gradient sits at
0.55-1.09x the bound for the unpatched model itself as MKL changes code path). Past that 5x, an output whose
comparison itself misses the bound (a gradient that is zero in exact arithmetic, as a key bias's or DeepSeek-V4's
router's: rounding noise around 1e-12, where the bound scales with the golden's own ~0 RMS) is judged by the
standard's small-value rule instead: every element ours misses the bound on must be a small value within 2^-30;
where every element is a small value and the comparison's own rounding exceeds 2^-30 (BLT's encoder cross-attention
q/k gradients: one key per query, zero in exact arithmetic, fp32 noise ~1e-9 either way) the standard's small-value
criterion alone decides: ours' ErrorCount at most 2x the comparison's.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import time

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..precision import RATIO_LIMITS, SMALL_ERROR, SMALL_VALUE, check_ratio, sanity_bound
from . import coverage_types

VOCAB, BATCH, SEQ, SEED = 128, 2, 12, 0
# Shrunk values for the config attributes that size a model; set only where the defaults have the attribute.
SHRINK = {
    "vocab_size": VOCAB,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 128,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    "num_experts": 4,
    "num_local_experts": 4,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "num_experts_per_token": 2,  # Kimi-Linear
    "n_shared_experts": 1,
    "n_group": 1,
    "topk_group": 1,
    "first_k_dense_replace": 1,
    "num_dense_layers": 1,  # LFM2-MoE
    "kv_lora_rank": 16,
    "q_lora_rank": 32,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 8,
    "v_head_dim": 16,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 16,
    "linear_value_head_dim": 16,
    "tie_word_embeddings": False,
    # GPT-2 style names
    "n_embd": 64,
    "n_layer": 2,
    "n_head": 4,
    "n_positions": 128,
    "n_inner": 96,
    "num_layers": 2,
    "d_model": 64,
    "rotary_dim": 8,  # GPT-J / CodeGen: the rotated part of each 16-wide head
    # encoder-decoder names (their decoders are causal LMs too)
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 96,
    "decoder_ffn_dim": 96,
    # family-specific sizes that stay large otherwise
    "vocab_size_per_layer_input": VOCAB,  # Gemma 3n/4 per-layer embeddings
    "hidden_size_per_layer_input": 16,
    "num_kv_shared_layers": 0,  # Gemma 3n: sharing KV with an earlier layer of a kind needs more layers than 2
    "encoder_hash_byte_group_vocab": VOCAB,  # BLT hash embeddings
    "hidden_size_global": 64,  # BLT's local encoder/decoder read the global transformer's width
    "adapter_in_dim": 64,  # dots3's vision and audio adapters take their tower's hidden size
    "adapter_input_size": 64,
    "adapter_out_dim": 64,
    "emb_dim": 64,  # XLM
    "n_layers": 2,
    "ffn_hidden_size": 96,  # LongCat-Flash
    "expert_ffn_hidden_size": 32,
    "zero_expert_num": 2,
    "moe_topk": 2,
    "index_n_heads": 4,  # DeepSeek-V3.2 / GLM-DSA sparse-attention indexer
    "index_head_dim": 16,
    "index_topk": 8,
    "num_expert_group": 1,  # Bailing hybrid (Ling 2.5)
    "linear_num_heads": 4,
    "linear_head_dim": 16,
    "indexer_n_heads": 4,  # Qwen4-Exp's QSA indexer (unset by default, its indexed_attention layers need it)
    "indexer_kv_heads": 1,
    "indexer_head_dim": 16,
    "indexer_budget": 8,
    "indexer_compress_ratio": 4,
    # Mamba-2 mixers (Bamba, Falcon-H1, Granite-MoE-Hybrid, Nemotron-H): 128 heads of 64 and a 256-token chunk made
    # these three types half of the table's time (20 s each, the reference chunk scan)
    "mamba_n_heads": 8,
    "mamba_d_head": 16,
    "mamba_d_ssm": 128,
    "mamba_d_state": 16,
    "mamba_chunk_size": 16,
    "mamba_num_heads": 8,
    "mamba_head_dim": 16,
    "ssm_state_size": 16,
    "shape_vocab_size": VOCAB,  # RoCBert's glyph and pinyin embeddings
    "pronunciation_vocab_size": VOCAB,
}
TOKEN_IDS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
MAX_PARAMS = 20_000_000  # a shrunk model bigger than this kept some unshrunk size: skipped (runtime)


@dataclasses.dataclass
class Row:
    """One model type's line of the coverage table."""

    model_type: str
    model_class: str = ""
    status: str = "skipped"  # "pass" | "FAIL" | "skipped" (could not be built or run; reason in note)
    applied: dict[str, int] = dataclasses.field(default_factory=dict)  # kernel id -> patched modules
    idle: list[str] = dataclasses.field(default_factory=list)  # applied kernels whose op never ran (another path)
    left: dict[str, str] = dataclasses.field(default_factory=dict)  # kernel id or part -> why not patched
    logits: str = ""
    grads: str = ""
    note: str = ""
    attention: str = ""  # fused_attention (by id, inference): its verdict or why it was not applied
    linear_ce: str = ""  # fused_linear_cross_entropy (by id, training loss): its verdict or why not applied
    seconds: float = 0.0


def decoder_types() -> dict[str, str]:
    """model type -> causal-LM class name, for every decoder the installed transformers maps."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return dict(sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.items()))


def tiny_config(model_type: str):
    """The config class's defaults with the sizes in SHRINK; a composite (multimodal) config has each of its
    sub-configs shrunk the same way (the model then runs on text alone)."""
    from transformers import CONFIG_MAPPING

    defaults = CONFIG_MAPPING[model_type]()
    # every row is a causal LM: BERT-like configs default to bidirectional attention unless told is_decoder
    causal = {"is_decoder": True} if "is_decoder" in defaults.to_dict() else {}
    return _shrunk(defaults, overrides={**causal, **coverage_types.CONFIG_OVERRIDES.get(model_type, {})})


def _shrunk(defaults, inherited: bool = False, overrides: dict | None = None):
    subs = sorted(getattr(type(defaults), "sub_configs", None) or {})
    present, overrides = defaults.to_dict(), overrides or {}
    kw = {k: v for k, v in SHRINK.items() if k in present}
    kw.update({k: v for k, v in TOKEN_IDS.items() if k in present})
    kw.update(
        {
            s: _shrunk(getattr(defaults, s), True, overrides.get(s))
            for s in subs
            if getattr(defaults, s, None) is not None
        }
    )
    if "qk_rope_head_dim" in present:  # MLA (DeepSeek): head_dim is the rotary part; one KV head per query head
        kw.update({k: kw["qk_rope_head_dim"] for k in ("head_dim",) if k in present})
        kw["num_key_value_heads"] = kw["num_attention_heads"]
    _cut_layers(present, kw)
    kw.update({k: v for k, v in overrides.items() if k not in subs})
    if inherited:  # a sub-config keeps what its parent set in it (DBRX's attention config its rope_theta)
        kw = {**{k: v for k, v in present.items() if k not in ("model_type", "transformers_version")}, **kw}
    return type(defaults)(**kw)


LAYER_COUNTS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers")


def _cut_layers(present: dict, kw: dict) -> None:
    """Per-layer settings (lists as long as the layer count: layer_types, mlp_layer_types, layers_block_type,
    activation_sparsity_pattern, ...; per_layer_config keyed by layer index) cut to the shrunk count, the same
    original layers kept in each. The kept layers are each combination of the lists of kinds once (attention
    and MLP: Qwen3-Next's 2 first layers are both linear attention, Gemma 3's both sliding, DeepSeek-V3.2's
    both dense), else the first ones."""
    count_key = next((k for k in LAYER_COUNTS if isinstance(present.get(k), int) and k in kw), None)
    lists = {k: v for k, v in present.items() if isinstance(v, list) and len(v) > 1}
    if count_key is None and "layer_types" in lists:  # layers counted by another name: the list is the count
        count_key = "num_hidden_layers"
    if count_key is None:
        return
    count = present.get(count_key, len(lists.get("layer_types", ())))
    lists = {k: v for k, v in lists.items() if len(v) == count}
    named = [v for v in lists.values() if all(isinstance(x, str) for x in v)]  # attention and MLP kinds
    kinds = list(zip(*named, strict=True))  # all as long as the layer count
    first = [kinds.index(kind) for kind in dict.fromkeys(kinds)]
    n = kw[count_key] = max(kw.get(count_key, 2), len(first))
    keep = (first * n)[:n] if first else list(range(n))
    for k, v in lists.items():
        size = next((s for s in kw if k.startswith(s) and isinstance(present.get(s), int)), None)
        if k in kw:  # a list-valued size (Gemma 3n's intermediate_size per layer)
            kw[k] = [kw[k]] * n
        else:  # per-layer sizes in proportion (Laguna's num_attention_heads_per_layer)
            kw[k] = [v[i] if size is None else _scaled(size, v[i], present, kw) for i in keep]
    by_layer = present.get("per_layer_config")
    if isinstance(by_layer, dict) and by_layer:  # Gemma 4's full-attention head_dim, dots3's wider heads
        width = len(str(next(iter(by_layer))))
        given = {int(i): v for i, v in by_layer.items()}
        kw["per_layer_config"] = {
            str(j).zfill(width): {a: _scaled(a, x, present, kw) for a, x in given[i].items()}
            for j, i in enumerate(keep)
            if i in given
        }


def _scaled(name: str, value, present: dict, kw: dict):
    """A per-layer size shrunk in proportion to its default (head_dim 512 where 256 is shrunk to 16 -> 32),
    the shrunk size itself where the proportion is not a whole number; other per-layer settings as given."""
    if name not in kw or not isinstance(value, int) or not isinstance(present.get(name), int) or not present[name]:
        return value
    ratio = kw[name] * value / present[name]
    return int(ratio) if ratio >= 1 and ratio == int(ratio) else kw[name]


def tiny_model(model_type: str, class_name: str):
    import transformers

    config, cls = tiny_config(model_type), getattr(transformers, class_name)
    for sub in getattr(type(config), "sub_configs", None) or {}:  # a causal LM of a multimodal type's text part
        if isinstance(getattr(config, sub, None), cls.config_class) and not isinstance(config, cls.config_class):
            config = getattr(config, sub)
    torch.manual_seed(SEED)
    model = cls(config).float()
    n = sum(p.numel() for p in model.parameters())
    if n > MAX_PARAMS:
        raise ValueError(f"{n / 1e6:.0f}M parameters after shrinking (some size has no SHRINK entry)")
    with torch.no_grad():  # HF inits norms to 1 (or 0) and routers tiny: make a wrong gamma path or route show
        for name, p in model.named_parameters():
            if p.dim() == 1 and "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
            elif p.dim() == 2 and (name.endswith("gate.weight") or "router" in name):
                p.copy_(0.2 * torch.randn_like(p))  # well separated top-k: fp32 noise never flips a choice
    return model.train(False)


class _CustomOpCalls(TorchDispatchMode):
    """Counts the calls of our custom ops (torch.ops.custom.*) under it: which applied kernels really ran."""

    def __init__(self):
        super().__init__()
        self.calls: collections.Counter = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        namespace, _, name = func.name().partition("::")
        if namespace == "custom":
            self.calls[name.split(".")[0]] += 1
        return func(*args, **(kwargs or {}))


def _fwd_bwd(model, x):
    """Logits and parameter gradients of one loss step; x is token ids (the labels too) or the inputs."""
    return _step(model, x)[:2]


def _step(model, x):
    """Logits (None when the model returns none), parameter gradients and the loss of one loss step."""
    model.zero_grad(set_to_none=True)
    inputs = x if isinstance(x, dict) else {"input_ids": x, "labels": x}
    dtype = next(model.parameters()).dtype  # GIT's pixel values in the float64 golden's precision
    inputs = {k: v.to(dtype) if v.is_floating_point() else v for k, v in inputs.items()}
    out = model(**inputs, use_cache=False)  # hybrids' caches need attention layers they may lack
    out.loss.backward()
    grads = {n: p.grad.detach().double().numpy().copy() for n, p in model.named_parameters() if p.grad is not None}
    logits = None if out.logits is None else out.logits.detach().double().numpy()
    return logits, grads, out.loss.detach().double().numpy().reshape(1)


def _grad_failures(grads, ref, gold) -> dict[str, str]:
    """{parameter: why} for each of the unpatched model's gradients that ours lacks or that fails _judge."""
    judged = {n: _judge(grads[n], ref[n], gold[n]) if n in grads else (False, "no gradient") for n in ref}
    return {n: why for n, (ok, why) in judged.items() if not ok}


def _beyond_small(ours, golden) -> bool:
    """Whether ours misses the sanity bound on an element that is not a small value within 2^-30 (the
    small-value domain's absolute bound)."""
    d = np.abs(ours - golden)
    small_ok = (np.abs(golden) < SMALL_VALUE["float32"]) & (d <= SMALL_ERROR["float32"])
    return bool(np.any((d > sanity_bound(golden, "float32")) & ~small_ok))


def _judge(ours, second, golden) -> tuple[bool, str]:
    """(passed, max |ours - comparison| and the first failed criterion); see the module docstring."""
    check = check_ratio(ours, second, golden, "float32")
    sanity, second_sanity = check.numbers["sanity"], check.numbers["second_sanity"]
    failures = [f for f in check.failures if not f.startswith("small-value ErrorCount") and "sanity bound" not in f]
    miss = f"ours misses the sanity bound (worst {sanity:.3g}x; the comparison {second_sanity:.3g}x)"
    if second_sanity > 1 and np.all(np.abs(golden) < SMALL_VALUE["float32"]):  # wholly small, ill-conditioned
        counted = not any(f.startswith("small-value ErrorCount") for f in check.failures)
        if _beyond_small(ours, golden) and not counted:
            failures.append(f"{miss} and its small-value ErrorCount is over 2x the comparison's")
    # Otherwise as the double benchmark reads MARE: against the unpatched model's own worst distance to float64
    # in this run, within the MARE ratio. Where that comes near the bound, the bound alone only says which order
    # this CPU's BLAS summed in.
    elif sanity > max(1.0, RATIO_LIMITS["mare"] * second_sanity) and (
        second_sanity <= 1 or _beyond_small(ours, golden)
    ):
        failures.append(f"{miss}, over {RATIO_LIMITS['mare']:g}x the comparison's")
    text = f"{np.abs(ours - second).max():.1e}"
    return not failures, text + (f" ({failures[0]})" if failures else "")


def _logits(model, x):
    """Logits of one inference forward (grad off: fused_attention's calls needing gradients run sdpa)."""
    inputs = x if isinstance(x, dict) else {"input_ids": x}
    dtype = next(model.parameters()).dtype
    inputs = {k: v.to(dtype) if v.is_floating_point() else v for k, v in inputs.items() if k != "labels"}
    with torch.no_grad():
        return model(**inputs, use_cache=False).logits.double().numpy()


def _attention_cell(model, x, ref_logits, gold_logits) -> str:
    """fused_attention alone, for inference (it is not in "auto": it is asked for by id): found by structure
    as apply_kernel finds it, logits judged as the other kernels' are; or why it was not applied."""
    from .apply import apply_kernel, revert_kernels
    from .registry import KERNELS

    report = apply_kernel("fused_attention", model)
    if "fused_attention" not in report.applied:
        return f"- ({report.skipped.get('fused_attention', 'not applied')})"
    try:
        with _CustomOpCalls() as ops:
            logits = _logits(model, x)
    except Exception as e:  # noqa: BLE001 - the patched model fails where the original ran
        return f"FAIL: {type(e).__name__}: {str(e)[:120]}"
    finally:
        revert_kernels(model, "fused_attention")
    ok, diff = _judge(logits, ref_logits, gold_logits)
    n = report.patched_modules["fused_attention"]
    ran = "" if ops.calls[KERNELS["fused_attention"].op] else ", op never ran"
    return f"{'pass' if ok else 'FAIL'} ({n}{ran}) {diff}"


def golden_model(model):
    """A float64 copy of the model, to be the golden."""
    gold = copy.deepcopy(model).double()
    if hasattr(gold, "set_experts_implementation"):  # grouped_mm (the default) takes no float64
        gold.set_experts_implementation("eager")
    return gold


def _golden(model, x):
    """_step of the unpatched model in float64. A forward that makes a float constant in the default dtype
    (XGLM's ``torch.full((), finfo(float64).min)``, an overflow in fp32) is run again with float64 the default."""
    gold = golden_model(model)
    try:
        return _step(gold, x)
    except RuntimeError:
        default = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            return _step(gold, x)
        finally:
            torch.set_default_dtype(default)


def _linear_ce_cell(model, x, ref, gold) -> str:
    """fused_linear_cross_entropy alone (by id, as it is asked for), on a training step: the loss and every
    parameter gradient judged as the other kernels' are against the unpatched model's (ref, gold: (grads, loss)),
    no logits returned; or why it was not applied. Only the top module is put in training mode (the fused
    path's switch): dropout stays off, so the step is the unpatched one's."""
    from .apply import apply_kernel, revert_kernels
    from .registry import KERNELS

    kernel = KERNELS["fused_linear_cross_entropy"]
    report = apply_kernel(kernel.id, model)
    if kernel.id not in report.applied:
        return f"- ({report.skipped.get(kernel.id, 'not applied')})"
    training, model.training = model.training, True
    try:
        with _CustomOpCalls() as ops:
            logits, grads, loss = _step(model, x)
    except Exception as e:  # noqa: BLE001 - the patched model fails where the original ran
        return f"FAIL: {type(e).__name__}: {str(e)[:120]}"
    finally:
        model.training = training
        revert_kernels(model, kernel.id)
    ok, diff = _judge(loss, ref[1], gold[1])
    bad = list(_grad_failures(grads, ref[0], gold[0]))
    ran = "" if ops.calls[kernel.op] else ", op never ran"
    verdict = "pass" if ok and not bad and logits is None and grads.keys() == ref[0].keys() else "FAIL"
    fails = f" (fails: {', '.join(bad[:3])})" if bad else "" if logits is None else " (logits returned)"
    grads_passed = f"{len(ref[0]) - len(bad)}/{len(ref[0])}"
    return f"{verdict} ({report.patched_modules[kernel.id]}{ran}) loss {diff}, grads {grads_passed}{fails}"


def check_model_type(model_type: str, class_name: str) -> Row:
    """Build, patch, compare: one row. Never raises for a model that cannot be built or run (status skipped)."""
    from .apply import apply_default_kernels, revert_kernels
    from .registry import KERNELS

    row, start = Row(model_type, class_name), time.perf_counter()
    if model_type in coverage_types.NOT_CAUSAL_LM:
        row.note = coverage_types.NOT_CAUSAL_LM[model_type]
        return row
    try:
        model = tiny_model(model_type, class_name)
        coverage_types.prepare(model_type, model)
        ids = torch.randint(3, VOCAB, (BATCH, SEQ), generator=torch.Generator().manual_seed(1))
        x = coverage_types.model_inputs(model_type, model.config, ids)
        ref_logits, ref_grads, ref_loss = _step(model, x)
    except Exception as e:  # noqa: BLE001 - a family that does not build or run from defaults is a table row
        why = next((line.strip() for line in str(e).splitlines() if line.strip()), "")  # the first said line
        row.note = f"not built/run from shrunk defaults: {type(e).__name__}: {why[:160]}"
        return row
    gold_logits, gold_grads, gold_loss = ref_logits, ref_grads, ref_loss  # without a float64 run the ratios floor out
    if model_type in coverage_types.NO_FLOAT64_GOLDEN:
        row.note = f"no float64 golden (fp32 used): {coverage_types.NO_FLOAT64_GOLDEN[model_type]}"
    else:
        try:
            gold_logits, gold_grads, gold_loss = _golden(model, x)
        except Exception:  # noqa: BLE001 - no float64 run: the fp32 model is the golden
            row.note = "no float64 golden (fp32 used)"
    report = apply_default_kernels(model)
    row.applied = {k: report.patched_modules.get(k, 0) for k in report.applied}
    row.left = {k: why for k, why in report.skipped.items()}
    row.left.update({f"{k}: {part}": why for k, d in report.left.items() for part, why in d.items()})
    try:
        with _CustomOpCalls() as ops:
            logits, grads = _fwd_bwd(model, x)
        row.idle = [k for k in row.applied if not any(ops.calls[o] for o in (KERNELS[k].op, *KERNELS[k].variant_ops))]
    except Exception as e:  # noqa: BLE001 - the patched model fails where the original ran: a failure
        row.status, row.note = "FAIL", f"patched model fails: {type(e).__name__}: {e}"
        revert_kernels(model)
        return row
    revert_kernels(model)
    row.attention = _attention_cell(model, x, ref_logits, gold_logits)
    row.linear_ce = _linear_ce_cell(model, x, (ref_grads, ref_loss), (gold_grads, gold_loss))
    ok, row.logits = _judge(logits, ref_logits, gold_logits)
    bad = list(_grad_failures(grads, ref_grads, gold_grads))
    row.grads = f"{len(ref_grads) - len(bad)}/{len(ref_grads)}" + (f" (fails: {', '.join(bad[:3])})" if bad else "")
    passed = ok and not bad and grads.keys() == ref_grads.keys()
    passed = passed and not row.attention.startswith("FAIL") and not row.linear_ce.startswith("FAIL")
    row.status = "pass" if passed else "FAIL"
    row.seconds = time.perf_counter() - start
    return row
