"""fused_attention: HF transformers 5 attention layers on ``torch.ops.custom.fusion_attention`` (npu_fusion_attention).

transformers routes every ``ALL_ATTENTION_FUNCTIONS[config._attn_implementation]`` attention layer through one call
``fn(module, query [B, Nq, Sq, D], key / value [B, Nkv, Skv, D], attention_mask, dropout=, scaling=, **kwargs)
-> (out [B, Sq, Nq, D], None)``, and builds that mask with ``ALL_MASK_ATTENTION_FUNCTIONS`` under the same name.
We register ``ATTN_IMPL`` in both (once, as transformers loads them: ``hf_registries.py``): the attention function
is ``fused_attention_forward``, the mask function HF's own ``sdpa_mask`` -- an unknown name there would make
``masking_utils`` build no mask at all and drop causal masking. Apply sets the name on the model's configs; revert
puts the previous one back.

The mask translation, as HF's ``sdpa_attention_forward`` reads the same masks:

- no mask, a causal layer and Sq > 1: HF skipped the mask because ``is_causal`` covers it, and sdpa's ``is_causal``
  is aligned top-left (HF relies on that for a prefill into an empty static cache, Skv > Sq) -> sparse_mode 2 with
  the compressed causal mask (== mode 3 when Sq == Skv); Sq == 1 or a non-causal layer: no mask.
- a bool mask (True = attend; padding, chunked prefill against a cache, sliding windows, the block-diagonal mask of
  position_ids-packed sequences: HF put all of it in the mask) -> ``atten_mask = ~mask`` ([B, 1, Sq, Skv] as BNSS /
  B1SS), sparse_mode 0; on a causal sliding-window layer (the ``sliding_window`` kwarg) with Sq == Skv, also the
  band ``pre_tockens = window - 1``, ``next_tockens = 0`` when the mask already masks everything outside it
  (checked), so the kernel skips those blocks (mode 4 would take no padding mask and counts from the bottom-right:
  the mask is kept as the source of truth).
- a float mask (a user's prepared 4-D additive mask) of 0 and -inf / the dtype's minimum only -> ``mask < 0``; other
  values (a bias) cannot be a boolean mask -> the call runs HF's sdpa.
- ``cu_seq_lens_q`` / ``cu_seq_lens_k`` (a flattening collator's kwargs, B = 1) on a causal layer without a window ->
  TND with ``actual_seq_qlen / kvlen = cu_seq_lens[1:]``, sparse_mode 3 per sequence.

Left unpatched at apply (the reason in the report), by structure: models whose class does not declare
transformers' ``_supports_attention_backend``; attention layers passing the function keywords we cannot honour
(``sinks``, ``position_bias``, a sparse indexer's ``indices``) or branching on the implementation's name; a
``sinks`` parameter not passed as ``s_aux``. Attention logit softcapping (Gemma 2/3's ``softcap`` keyword) and
sinks (gpt-oss's ``s_aux``, as the op's ``sink`` in fp32) run in the kernel.
Run on HF's sdpa at call time, with a warning naming the reason once (``FALLBACKS`` counts them): dropout > 0,
``position_bias``, a paged cache, ``output_attentions``, dtypes / head shapes the op does not take, float masks with
other values. Gradients run on ``fusion_attention_grad`` through the op's autograd. Not in ``"auto"`` (it swaps the
model's attention implementation): request it by id.
"""

from __future__ import annotations

import ast
import collections
import functools
import inspect
import math
import sys
import textwrap

import torch
from torch import nn

from ..ops.attention_args import TOCKENS_MAX, compressed_mask
from . import hf_registries
from .base import Found, KernelSkip, set_instance_attr
from .report import logger

ATTN_IMPL = "ascendc_fused_attention"
CONFIG_ATTR = "_attn_implementation_internal"
_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
# the keywords an attention layer may pass that we read (or that make the call run sdpa: output_attentions)
_READ_KWARGS = frozenset(
    ("dropout", "scaling", "is_causal", "attention_mask", "sliding_window", "position_ids", "output_attentions")
    + ("cu_seq_lens_q", "cu_seq_lens_k", "max_length_q", "max_length_k", "query", "key", "value", "softcap")
    + ("s_aux",)
)
# reason -> calls that ran HF's sdpa instead of our op (a warning is logged the first time per reason)
FALLBACKS: collections.Counter = collections.Counter()
_causal_masks: dict[torch.device, torch.Tensor] = {}


def _compressed_mask(device: torch.device) -> torch.Tensor:
    """torch_npu's compressed causal mask for sparse modes 2-4 on a device, made once."""
    if device not in _causal_masks:
        _causal_masks[device] = torch.from_numpy(compressed_mask()).to(device)
    return _causal_masks[device]


def _boolean_mask(mask: torch.Tensor) -> torch.Tensor | None:
    """HF's mask -> ours (True = masked), or None when a float mask carries values other than 0 and -inf/min."""
    if mask.dtype == torch.bool:
        return ~mask
    if torch.compiler.is_compiling():
        return None  # its values cannot be checked without a graph break
    blocked = mask <= torch.finfo(mask.dtype).min  # -inf too
    return blocked if bool(((mask == 0) | blocked).all()) else None


def _mask_shape_ok(mask: torch.Tensor, query: torch.Tensor, key: torch.Tensor) -> bool:
    """[B or 1, 1 or Nq, Sq, Skv]: what B1SS / BNSS take after broadcasting the batch."""
    return (
        mask.dim() == 4
        and mask.shape[0] in (1, query.shape[0])
        and mask.shape[1] in (1, query.shape[1])
        and tuple(mask.shape[2:]) == (query.shape[2], key.shape[2])
    )


def _unsupported_call(module, query, key, value, mask, dropout, kwargs) -> str | None:
    """Why this call cannot run on our op (None: it can)."""
    checks = (
        (dropout > 0, f"dropout={dropout:g}"),
        (kwargs.get("position_bias") is not None, "a position_bias"),
        (kwargs.get("cache") is not None, "a paged cache"),
        (bool(kwargs.get("output_attentions")), "output_attentions=True"),
        (not (kwargs.get("softcap") or 0.0) >= 0.0, f"softcap={kwargs.get('softcap')}"),
        (kwargs.get("s_aux") is not None and tuple(kwargs["s_aux"].shape) != (query.shape[1],),
         f"sinks of shape {tuple(getattr(kwargs.get('s_aux'), 'shape', ()))} for {query.shape[1]} heads"),
        (query.dtype not in _DTYPES or not (query.dtype == key.dtype == value.dtype), f"dtype {query.dtype}"),
        (query.shape[-1] != key.shape[-1] or value.shape[-1] > key.shape[-1],
         f"head dims q {query.shape[-1]}, k {key.shape[-1]}, v {value.shape[-1]}"),
        (query.shape[1] % key.shape[1] != 0, f"{query.shape[1]} query heads over {key.shape[1]} key heads"),
        (mask is not None and not _mask_shape_ok(mask, query, key),
         f"a mask of shape {tuple(mask.shape) if mask is not None else None}"),
    )  # fmt: skip
    return next((why for bad, why in checks if bad), None)


def _fallback(why: str, module, query, key, value, mask, dropout, scaling, kwargs):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    # sdpa has no sinks and no softcap (it ignores s_aux and softcap): a call with either runs the model's own eager
    own_eager = kwargs.get("s_aux") is not None or bool(kwargs.get("softcap"))
    fn = sys.modules[type(module).__module__].eager_attention_forward if own_eager else sdpa_attention_forward
    if not FALLBACKS[why]:
        logger.warning("ascendc_ops fused_attention: %s; this call and the like run HF's %s", why, fn.__name__)
    FALLBACKS[why] += 1
    if own_eager:  # eager adds a float mask, knows no is_causal: what sdpa_mask built (or left to is_causal) as one
        causal = kwargs.pop("is_causal", None)
        mask = _additive_mask(mask, query, key, getattr(module, "is_causal", True) if causal is None else causal)
    return fn(module, query, key, value, mask, dropout=dropout, scaling=scaling, **kwargs)


def _additive_mask(mask, query, key, causal: bool):
    """An eager attention's additive mask for what sdpa would read: a boolean mask (True = attend) or none with
    is_causal (top-left); a float mask as it is."""
    s_q, s_kv = query.shape[2], key.shape[2]
    if mask is None:
        if not causal or s_q == 1:
            return None
        mask = torch.ones(s_q, s_kv, dtype=torch.bool, device=query.device).tril()
    if mask.dtype != torch.bool:
        return mask
    return torch.zeros(mask.shape, dtype=query.dtype, device=query.device).masked_fill(
        ~mask, torch.finfo(query.dtype).min
    )


def _band(mask: torch.Tensor, window, causal: bool) -> int:
    """pre_tockens for a sliding-window layer's mask (next_tockens 0): the band lets the kernel skip the blocks
    outside the window. Only where the band masks nothing the mask does not (a causal square mask, every key
    ``window`` or more before its query masked), so the mask stays the one source of truth; else none."""
    s_q, s_kv = mask.shape[-2:]
    if not (causal and isinstance(window, int) and 0 < window < s_kv == s_q) or torch.compiler.is_compiling():
        return TOCKENS_MAX
    outside = torch.ones(s_q, s_kv, dtype=torch.bool, device=mask.device).tril(-window)
    return window - 1 if bool(mask[..., outside].all()) else TOCKENS_MAX


def _packed(query, key, kwargs) -> tuple[list[int], list[int]] | None:
    """The cumulative lengths (no leading 0) of a flattening collator's packed batch, or None (they do not add up
    to the tokens given, or a sequence has more queries than keys: not one causal square per sequence)."""
    cu_q, cu_k = kwargs.get("cu_seq_lens_q"), kwargs.get("cu_seq_lens_k")
    if cu_q is None or cu_k is None or query.shape[0] != 1 or kwargs.get("sliding_window") is not None:
        return None
    q, k = [int(x) for x in cu_q[1:].tolist()], [int(x) for x in cu_k[1:].tolist()]
    lens = zip(q, [0, *q], k, [0, *k], strict=False)
    if not q or len(q) != len(k) or any(a - a0 > b - b0 for a, a0, b, b0 in lens):
        return None
    return (q, k) if q[-1] == query.shape[2] and k[-1] == key.shape[2] else None


def fused_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """The ``ALL_ATTENTION_FUNCTIONS`` entry: HF's attention call on custom::fusion_attention (BNSD or TND)."""
    why = _unsupported_call(module, query, key, value, attention_mask, dropout, kwargs)
    mask = None
    if why is None and attention_mask is not None:
        mask = _boolean_mask(attention_mask)
        if mask is None:
            why = "a float mask with values other than 0 and -inf (a bias, not a mask)"
    if why is not None:
        kwargs["is_causal"] = is_causal
        return _fallback(why, module, query, key, value, attention_mask, dropout, scaling, kwargs)
    heads, s_q, s_kv, dim = query.shape[1], query.shape[2], key.shape[2], query.shape[-1]
    scale = scaling if scaling is not None else 1.0 / math.sqrt(dim)
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    sink = kwargs.get("s_aux")  # gpt-oss's sinks, a parameter in the model's dtype: the op takes them in fp32
    op = functools.partial(
        torch.ops.custom.fusion_attention.default,
        softcap=float(kwargs.get("softcap") or 0.0),
        sink=None if sink is None else sink.float(),
    )
    packed = _packed(query, key, kwargs) if causal and not torch.compiler.is_compiling() else None
    if packed is not None:
        q, k, v = (t[0].transpose(0, 1).contiguous() for t in (query, key, value))  # [T, N, D]
        out = op(q, k, v, heads, "TND", _compressed_mask(q.device), scale, TOCKENS_MAX, 0, packed[0], packed[1], 3)[0]
        return out.unsqueeze(0), None  # [1, T, N, D], contiguous
    q, k, v = (t.contiguous() for t in (query, key, value))
    if mask is None and causal and s_q > 1:  # sdpa's is_causal: top-left
        out = op(q, k, v, heads, "BNSD", _compressed_mask(q.device), scale, TOCKENS_MAX, 0, None, None, 2)[0]
    else:
        pre = TOCKENS_MAX
        if mask is not None:
            mask = mask.expand(query.shape[0], mask.shape[1], s_q, s_kv).contiguous()  # BNSS or B1SS
            pre = _band(mask, kwargs.get("sliding_window"), causal)
        out = op(q, k, v, heads, "BNSD", mask, scale, pre, TOCKENS_MAX if pre == TOCKENS_MAX else 0)[0]
    return out.transpose(1, 2).contiguous(), None  # as sdpa's: layers view it as [B, S, N * D]


# Where our name goes: transformers' attention functions, and its mask builders (there, HF's own sdpa_mask)
_REGISTRIES = {
    "transformers.modeling_utils": ("ALL_ATTENTION_FUNCTIONS", fused_attention_forward),
    "transformers.masking_utils": ("ALL_MASK_ATTENTION_FUNCTIONS", "sdpa_mask"),
}
for _module, (_registry, _fn) in _REGISTRIES.items():
    hf_registries.register_when_imported(_module, _registry, ATTN_IMPL, _fn)


def registered() -> bool:
    """Whether transformers' attention interface takes our name (importing transformers if no one has)."""
    return all(hf_registries.ensure(m, r, ATTN_IMPL) for m, (r, _) in _REGISTRIES.items())


def _forward_tree(cls: type) -> ast.Module | None:
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(cls.forward)))
    except (OSError, TypeError, SyntaxError):
        return None


def _calls_interface(cls: type) -> bool:
    """Whether the class's forward dispatches through HF's attention interface (by its source)."""
    tree = _forward_tree(cls)
    return tree is not None and any(
        isinstance(n, ast.Name) and n.id == "ALL_ATTENTION_FUNCTIONS" for n in ast.walk(tree)
    )


def _unread_arguments(cls: type) -> str | None:
    """Why the class's call of the attention function asks for what fusion_attention cannot give (None: it
    does not): keywords outside what we read or run elsewhere (sinks, position_bias, a sparse
    indexer's indices), or a forward that branches on the implementation's name (DeepSeek-V3.2's indexer goes
    into the mask only for "eager" / "sdpa", other names get ``indices`` to consume)."""
    tree = _forward_tree(cls)
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "attention_interface":
            extra = sorted(k.arg for k in n.keywords if k.arg and k.arg not in _READ_KWARGS)
            if extra:
                kws = ", ".join(f"{k}=" for k in extra)
                return f"passes {kws} to the attention function: fusion_attention has no such input"
        if isinstance(n, ast.Compare) and any(
            isinstance(x, ast.Attribute) and x.attr == "_attn_implementation" for x in (n.left, *n.comparators)
        ):
            return "its forward branches on config._attn_implementation (another name would change what it computes)"
        if _extends_mask(n):
            return (
                "its forward extends attention_mask with its own additive bias (torch.cat / F.pad): the boolean mask "
                "HF's sdpa_mask builds for us would read that bias inverted"
            )
    return None


def _extends_mask(node) -> bool:
    """An assignment `attention_mask = ...cat(...) / ...pad(...)` (DeepSeek-V4 appends its compressed keys' bias)."""
    if not (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "attention_mask" for t in node.targets)):
        return False
    calls = (c for c in ast.walk(node.value) if isinstance(c, ast.Call))
    return any(getattr(c.func, "attr", getattr(c.func, "id", None)) in ("cat", "pad") for c in calls)


def _passes_keyword(cls: type, name: str) -> bool:
    """Whether the class's forward passes `name=` to its attention_interface call."""
    tree = _forward_tree(cls)
    return tree is not None and any(
        isinstance(n, ast.Call) and getattr(n.func, "id", None) == "attention_interface"
        and any(k.arg == name for k in n.keywords)
        for n in ast.walk(tree)
    )  # fmt: skip


def _attention_modules(model: nn.Module):
    """Attention layers: modules with a config and q/k projections whose forward goes through the interface."""
    for name, m in model.named_modules():
        if hasattr(m, "config") and hasattr(m, "layer_idx") and _calls_interface(type(m)):
            yield name, m


def _unsupported_model(m: nn.Module) -> str | None:
    if (why := _unread_arguments(type(m))) is not None:
        return why
    cfg = m.config
    checks = (
        (
            isinstance(getattr(m, "sinks", None), torch.Tensor) and not _passes_keyword(type(m), "s_aux"),
            "attention sinks not passed to the attention function as s_aux=",
        ),
        (not hasattr(cfg, CONFIG_ATTR), "its config has no attention implementation setting"),
    )
    return next((why for bad, why in checks if bad), None)


def find(model: nn.Module) -> Found:
    found = Found(looked_for="attention layer calling transformers' attention interface")
    if not registered():
        found.refused["attention"] = "transformers has no attention interface (AttentionInterface, transformers >= 5)"
        return found
    configs = {}
    for _, m in _attention_modules(model):
        why = _unsupported_model(m)
        if why is not None:
            found.refused[type(m).__name__] = why
            continue
        configs.setdefault(id(m.config), m.config)
    for _, m in model.named_modules():  # transformers' own flag for taking any AttentionInterface function
        if getattr(type(m), "_supports_attention_backend", True) is False and id(getattr(m, "config", None)) in configs:
            found.refused[type(m).__name__] = (
                "its class does not declare _supports_attention_backend (transformers: no custom attention functions)"
            )
    # one setting per config object, read by every layer and by the mask builder: all layers or none
    found.targets = [] if found.refused else list(configs.values())
    if found.targets and model.__dict__.get("config") is not None:
        top = model.config
        found.targets = list({id(c): c for c in [top, *found.targets]}.values())
    return found


def routed_modules(model: nn.Module) -> int:
    return sum(getattr(m.config, CONFIG_ATTR, None) == ATTN_IMPL for _, m in _attention_modules(model))


def patch(model: nn.Module, targets: list) -> list:
    if not registered():
        raise KernelSkip("transformers has no attention interface (AttentionInterface, transformers >= 5)")
    return [set_instance_attr(cfg, CONFIG_ATTR, ATTN_IMPL) for cfg in targets]
