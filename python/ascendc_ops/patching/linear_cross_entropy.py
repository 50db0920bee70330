"""fused_linear_cross_entropy: a causal LM's training loss from its final hidden states and ``lm_head.weight`` on
``torch.ops.custom.linear_cross_entropy``, without the ``[tokens, vocab]`` logits.

Found by structure: every module with an ``lm_head`` (a plain ``nn.Linear``, with or without bias, no hooks) whose
forward calls ``logits = self.lm_head(hidden_states)`` once and passes those logits, after at most a constant scale
and a softcap (Cohere's ``logit_scale``, Granite's ``logits_scaling``, Gemma's ``final_logit_softcapping``), to
``self.loss_function(logits, labels, ...)`` under ``if labels is not None`` (``lm_head_tail.py`` reads it), with
transformers' ``ForCausalLMLoss`` as that loss function. It is patched only if a probe agrees: random hidden
states and LM head, the forward's own logit statements and ``ForCausalLMLoss`` against our op, per sequence,
within the fp32 standard (``probe.disagreement``). The probe compares losses: the op's statistics are judged on
their own in tests/ops; here the question is whether the model's formula is the one we compute.

How it runs (instance attributes only: the model's ``forward``, its ``_loss_function`` -- which
``PreTrainedModel.loss_function`` returns when set -- and the LM head's ``forward``): when the model is in
training mode and ``labels`` are given, the patched forward runs the model's own forward with the LM head
capturing its input and returning an empty ``[..., 0]`` tensor, so everything else -- the base model's call,
``logits_to_keep``'s slicing, MoE auxiliary losses added to the loss, the output class -- is the model's own code;
the loss function then computes ForCausalLMLoss's loss from the captured hidden states and the head's weight and
bias (labels shifted with
``ignore_index`` padding unless a collator passed ``shift_labels``; mean, or sum / ``num_items_in_batch``). The
output's ``logits`` is None (in a ``return_dict=False`` tuple, the empty tensor). In eval mode, or without labels
(generation), the model's forward runs unchanged. The tied embedding's gradient arrives through ``lm_head.weight``,
which is the embedding's Parameter.

Not in ``"auto"``: it drops the logits of a training forward, which code reading ``outputs.logits`` during training
needs (TRL's SFT token-accuracy metrics, a custom ``compute_loss``); request it by id (LLaMA-Factory likewise turns
Liger's fused cross-entropy off where a stage requires logits). Differences from ForCausalLMLoss: a mean over no
counted token is 0 (PyTorch: NaN); the statistics are fp32 whatever the model's dtype.
"""

from __future__ import annotations

import dataclasses
import inspect
import types

import torch
from torch import nn

from ..ops.linear_cross_entropy import linear_cross_entropy
from . import lm_head_tail, probe
from .base import Found, KernelSkip, set_instance_attr

STATE_ATTR = "_ascendc_flce"
PROBE_VOCAB, PROBE_BATCH, PROBE_SEQ = 96, 4, 7
HIDDEN_GAIN = 8.0  # probe logits of std ~24: a softcap of 30 bends them, a missing scale or cap shows


@dataclasses.dataclass
class State:
    """Per patched model: how to call what the patch wraps, the op's knobs, and the hidden states in flight."""

    forward: object  # the model's forward before the patch (bound)
    loss: object  # its loss function before the patch (ForCausalLMLoss)
    scale: float
    softcap: float | None
    labels_at: int  # labels' position in forward(*args)
    capturing: bool = False
    hidden: torch.Tensor | None = None
    weight: torch.Tensor | None = None
    bias: torch.Tensor | None = None


def fused_loss(hidden, weight, labels, vocab_size, num_items_in_batch=None, ignore_index=-100, shift_labels=None, *,
               scale=1.0, softcap=None, bias=None):  # fmt: skip
    """transformers' ForCausalLMLoss on ``logits = softcap(scale * (hidden @ weight.T + bias))`` without making the
    logits:
    labels shifted left with ``ignore_index`` padding (unless ``shift_labels`` is given), mean over the counted
    tokens, or their sum over ``num_items_in_batch`` (gradient accumulation)."""
    if vocab_size != weight.shape[0]:
        raise ValueError(
            f"fused_linear_cross_entropy: vocab_size must be the LM head's {weight.shape[0]} rows, got {vocab_size}"
        )
    if shift_labels is None:
        shift_labels = nn.functional.pad(labels, (0, 1), value=ignore_index)[..., 1:]
    target = shift_labels.reshape(-1).to(hidden.device)
    h = hidden.reshape(-1, hidden.shape[-1])
    if h.shape[0] != target.shape[0]:
        raise ValueError(
            f"fused_linear_cross_entropy: labels must give one target per position kept (logits_to_keep), "
            f"expected {h.shape[0]}, got {target.shape[0]}"
        )
    reduction = "sum" if num_items_in_batch is not None else "mean"
    if scale != 1.0:  # scale (h W^T + b) = (scale h) W^T + scale b
        h, bias = h * scale, None if bias is None else bias * scale
    loss = linear_cross_entropy(
        h,
        weight,
        target,
        bias,
        ignore_index=ignore_index,
        softcap=softcap,
        reduction=reduction,
    )
    if num_items_in_batch is not None:  # fixed_cross_entropy's gradient-accumulation normalisation
        if torch.is_tensor(num_items_in_batch):
            num_items_in_batch = num_items_in_batch.to(loss.device)
        loss = loss / num_items_in_batch
    return loss


def _loss_function(self, logits, labels, vocab_size, num_items_in_batch=None, ignore_index=-100, shift_labels=None,
                   **kwargs):  # fmt: skip
    """The model's ``_loss_function``: ForCausalLMLoss's signature; the fused loss when the LM head captured."""
    state: State = self.__dict__[STATE_ATTR]
    hidden, weight, bias = state.hidden, state.weight, state.bias
    if hidden is None:  # the head made real logits (eval mode, or a head swapped in after the patch)
        return state.loss(logits, labels, vocab_size, num_items_in_batch, ignore_index, shift_labels, **kwargs)
    state.hidden = state.weight = state.bias = None
    if vocab_size == logits.shape[-1] == 0:  # read off the placeholder's width (Inkling: logits.shape[-1])
        vocab_size = weight.shape[0]
    return fused_loss(
        hidden, weight, labels, vocab_size, num_items_in_batch, ignore_index, shift_labels,
        scale=state.scale, softcap=state.softcap, bias=bias,
    )  # fmt: skip


def _head_forward(self, x: torch.Tensor) -> torch.Tensor:
    """The LM head's forward: while its model's fused forward runs, keep the input and make no logits."""
    state: State = self.__dict__[STATE_ATTR]
    if state.capturing:
        state.hidden, state.weight, state.bias = x, self.weight, self.bias
        return x.new_empty((*x.shape[:-1], 0))
    return nn.Linear.forward(self, x)


def _forward(self, *args, **kwargs):
    """The model's forward: its own, with the LM head capturing when training on labels (module docstring)."""
    state: State = self.__dict__[STATE_ATTR]
    labels = kwargs["labels"] if "labels" in kwargs else args[state.labels_at] if len(args) > state.labels_at else None
    if labels is None or not self.training:
        return state.forward(*args, **kwargs)
    state.capturing = True
    try:
        out = state.forward(*args, **kwargs)
    finally:
        state.capturing, state.hidden, state.weight, state.bias = False, None, None, None
    logits = out.get("logits") if not isinstance(out, tuple) else None
    if logits is None or logits.shape[-1] != 0:  # a tuple, or real logits (an lm_head swapped in since the patch)
        return out
    return type(out)(**{k: v for k, v in out.items() if k != "logits"})  # the placeholder's slot: None


def _refusal(m: nn.Module) -> tuple[str | None, object]:
    """(why this causal LM cannot take the fused loss, None) or (None, its tail function)."""
    from transformers.loss.loss_utils import ForCausalLMLoss

    head = getattr(m, lm_head_tail.HEAD)
    module = nn.modules.module
    hooks = head._forward_hooks or head._forward_pre_hooks or module._global_forward_hooks
    hooks = hooks or module._global_forward_pre_hooks
    checks = (
        (type(head) is not nn.Linear, f"lm_head is {type(head).__name__}, not a plain nn.Linear"),
        (bool(hooks), "lm_head has forward hooks (they would see no logits)"),
        ("forward" in head.__dict__, "lm_head's forward is already patched"),
        (getattr(m, "loss_function", None) is not ForCausalLMLoss, "its loss_function is not ForCausalLMLoss"),
        ("labels" not in _params(m), "its forward takes no labels"),
    )
    why = next((why for bad, why in checks if bad), None)
    if why is not None:
        return why, None
    try:
        return None, lm_head_tail.read(type(m))
    except lm_head_tail.Refusal as e:
        return str(e), None


def _params(m: nn.Module) -> list[str]:
    try:
        return list(inspect.signature(type(m).forward).parameters)[1:]
    except (TypeError, ValueError):
        return []


def _probe(m: nn.Module, tail, scale: float, softcap: float | None) -> str | None:
    """The model's logit statements + ForCausalLMLoss vs our op, one loss per sequence (module docstring)."""
    head = m.lm_head
    vocab, hidden = head.out_features, head.in_features
    width, probe_vocab = (min(hidden, probe.HIDDEN), PROBE_VOCAB) if vocab != hidden else (hidden, vocab)
    gen = probe.generator()
    params = probe.random_params(head, gen, {vocab: probe_vocab, hidden: width})
    shape = (PROBE_BATCH, PROBE_SEQ)
    x = HIDDEN_GAIN * torch.randn(*shape, width, generator=gen, dtype=torch.float64)
    labels = torch.randint(0, probe_vocab, shape, generator=gen)
    labels[:, 2] = -100  # an ignored token in every sequence

    def theirs(part, h, y):
        logits = tail(m, part(h))
        return torch.stack([m.loss_function(logits[i : i + 1], y[i : i + 1], probe_vocab) for i in range(len(y))])

    def ours(part, h, y):
        each = [fused_loss(h[i : i + 1], part.weight, y[i : i + 1], probe_vocab, scale=scale, softcap=softcap,
                           bias=part.bias) for i in range(len(y))]  # fmt: skip
        return torch.stack(each)

    return probe.disagreement(head, theirs, ours, (x, labels), params)


def _causal_lms(model: nn.Module):
    """Modules with an lm_head child (its own: peft's wrappers reach their base model's by __getattr__)."""
    for m in model.modules():
        if isinstance(m._modules.get(lm_head_tail.HEAD), nn.Module) and hasattr(m, "loss_function"):
            yield m


def find(model: nn.Module) -> Found:
    found = Found(looked_for="causal LM with an lm_head feeding self.loss_function")
    for m in _causal_lms(model):
        if STATE_ATTR in m.__dict__:
            continue
        why, tail = _refusal(m)
        if why is None:
            try:
                scale, softcap = lm_head_tail.reduce(tail, m)
            except lm_head_tail.Refusal as e:
                why = str(e)
        if why is None:
            why = _probe(m, tail, scale, softcap)
            if why is not None:
                why = f"not ForCausalLMLoss on softcap({scale:g} * logits, {softcap}): {why}"
        if why is None:
            found.targets.append((m, scale, softcap))
        else:
            found.refused[type(m).__name__] = why
    return found


def patched_models(model: nn.Module) -> int:
    """How many causal LMs in this model compute their loss on the fused op now."""
    return sum(STATE_ATTR in m.__dict__ for m in _causal_lms(model))


def patch(model: nn.Module, targets: list) -> list:
    if not targets:
        raise KernelSkip("no causal LM to patch")
    records = []
    for m, scale, softcap in targets:
        head = m.lm_head
        state = State(m.forward, m.loss_function, scale, softcap, _params(m).index("labels"))
        records += [
            set_instance_attr(m, STATE_ATTR, state),
            set_instance_attr(head, STATE_ATTR, state),
            set_instance_attr(head, "forward", types.MethodType(_head_forward, head)),
            set_instance_attr(m, "_loss_function", types.MethodType(_loss_function, m)),
            set_instance_attr(m, "forward", types.MethodType(_forward, m)),
        ]
    return records
