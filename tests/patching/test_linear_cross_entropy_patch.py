"""fused_linear_cross_entropy: a causal LM's training loss on custom::linear_cross_entropy, no logits made.

Against the unpatched model on tiny random models of several families -- Llama, Qwen2 with tied embeddings, Gemma 2
(final logit softcap), Cohere (logit_scale) and Granite (logits_scaling divides), Mixtral and Qwen2-MoE with their
routers' auxiliary loss -- the loss and every parameter gradient by the fp32 double benchmark (coverage._judge:
golden = the unpatched model in float64); num_items_in_batch (gradient accumulation), a collator's shift_labels,
logits_to_keep (int and positions), labels given positionally, return_dict=False; no op output of [tokens, vocab]
in a training step; without labels or in eval mode the model's own forward (logits and greedy generation
identical); an lm_head swapped in after the patch; bf16; LoRA in either order; 20 AdamW steps in lockstep;
torch.compile(fullgraph=True); deepcopy; revert; the switch, "auto" leaving it out; what is refused and the probe
refusing a wrong reading."""

from __future__ import annotations

import copy

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

transformers = pytest.importorskip("transformers")
from pinned import only_pinned  # noqa: E402

import ascendc_ops.patching as K  # noqa: E402
from ascendc_ops.patching import coverage, linear_cross_entropy as LCE, lm_head_tail  # noqa: E402
from test_patching import ALL, max_rel, tiny  # noqa: E402
from training import Calls, CompileRecorder, assert_fp32_step, lockstep  # noqa: E402

KERNEL = "fused_linear_cross_entropy"
VOCAB, SEQ = 512, 16
# family -> (model type, config values over coverage's tiny config): each with a different logit path
FAMILIES = {
    "llama": ("llama", {}),
    "qwen2_tied": ("qwen2", {"tie_word_embeddings": True}),
    # this tiny model's logits are ~0.2: Gemma 2's cap of 30 would not bend them, 0.2 does
    "gemma2": ("gemma2", {"final_logit_softcapping": 0.2}),
    "cohere": ("cohere", {"logit_scale": 0.25}),
    "granite": ("granite", {"logits_scaling": 4.0}),
    "mixtral": ("mixtral", {"output_router_logits": True, "router_aux_loss_coef": 0.5}),
    "qwen2_moe": ("qwen2_moe", {"output_router_logits": True, "router_aux_loss_coef": 0.5}),  # + shared expert
}


def build(family="llama", dtype=torch.float32, **over):
    """A tiny random model of the family in training mode (its dropouts are 0)."""
    model_type, values = FAMILIES[family]
    config = coverage.tiny_config(model_type)
    for k, v in {"vocab_size": VOCAB, **values, **over}.items():
        setattr(config, k, v)
    torch.manual_seed(0)
    model = getattr(transformers, coverage.decoder_types()[model_type])(config).to(dtype)
    if config.tie_word_embeddings:
        model.tie_weights()
    return model.train()


def ids(batch=2, seq=SEQ, seed=1):
    return torch.randint(0, VOCAB, (batch, seq), generator=torch.Generator().manual_seed(seed))


def patched(model):
    report = K.apply_kernel(KERNEL, model)
    assert report.applied == [KERNEL] and report.patched_modules[KERNEL] == 1, report
    return model


def step(model, *args, **kw):
    """(output, loss, {parameter: gradient}) of one loss step."""
    model.zero_grad(set_to_none=True)
    out = model(*args, **kw)
    out.loss.backward()
    grads = {n.removeprefix("_orig_mod."): p.grad.detach().double() for n, p in model.named_parameters()}
    return out, out.loss.detach().double(), grads


def assert_parity(ref_model, x, **kw):
    """The patched copy's loss and gradients against ref_model's, gold = ref_model in float64; no logits."""
    ours_model = patched(copy.deepcopy(ref_model))
    gold = step(coverage.golden_model(ref_model), x, **kw)
    ref = step(ref_model, x, **kw)
    with Calls() as calls:
        out, loss, grads = step(ours_model, x, **kw)
    assert calls.calls["custom::linear_cross_entropy"] == calls.calls["custom::linear_cross_entropy_grad"] == 1
    assert out.logits is None and ref[0].logits is not None
    ok, why = coverage._judge(loss.numpy().reshape(1), ref[1].numpy().reshape(1), gold[1].numpy().reshape(1))
    assert ok, why
    assert grads.keys() == ref[2].keys()
    assert not coverage._grad_failures(*({n: g.numpy() for n, g in d.items()} for d in (grads, ref[2], gold[2])))
    return out, ref[0]


@only_pinned
@pytest.mark.parametrize("family", list(FAMILIES))
def test_loss_and_gradient_parity(family):
    model = build(family)
    assert_parity(model, ids(), labels=ids())


class _LogitShapes(TorchDispatchMode):
    """The shapes of op outputs as wide as the vocabulary in their last dimension with more than one row: logits
    or their gradient (the LM head's weight and its gradient are [V, H])."""

    def __init__(self):
        super().__init__()
        self.shapes = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, tuple | list) else (out,):
            if isinstance(t, torch.Tensor) and t.dim() >= 2 and t.shape[-1] == VOCAB and t.numel() > VOCAB:
                self.shapes.append((str(func), tuple(t.shape)))
        return out


def test_no_tokens_by_vocab_tensor_in_a_training_step():
    x = ids()
    with _LogitShapes() as unpatched:
        step(build(), x, labels=x)
    with _LogitShapes() as fused:
        step(patched(build()), x, labels=x)
    assert unpatched.shapes and not fused.shapes, fused.shapes  # HF's: logits, their fp32 copy and gradient


def test_tied_embedding_gets_the_gradient():
    model = patched(build("qwen2_tied"))
    assert model.lm_head.weight is model.model.embed_tokens.weight
    x = ids()
    model(x, labels=x).loss.backward()
    hidden_only = build("qwen2_tied")
    hidden_only.model(x).last_hidden_state.sum().backward()  # the embedding's own gradient, without the head
    grad = model.model.embed_tokens.weight.grad
    assert grad is not None and not torch.equal(grad, hidden_only.model.embed_tokens.weight.grad)


@only_pinned
@pytest.mark.parametrize("family", ["mixtral", "qwen2_moe"])
def test_router_aux_loss_is_added(family):
    model = build(family)
    x = ids()
    out, ref = assert_parity(model, x, labels=x)
    assert out.aux_loss is not None and torch.equal(out.aux_loss, ref.aux_loss)
    without = build(family, output_router_logits=False)(x, labels=x).loss
    assert abs(ref.loss - without).item() > 1e-3  # the aux term is in the loss compared


def test_num_items_in_batch_sums_then_divides():
    x, labels = ids(), ids(seed=2)
    labels[:, :5] = -100
    for n in (torch.tensor(37), 11):  # a tensor (Trainer's) or a plain int
        assert_parity(build(), x, labels=labels, num_items_in_batch=n)


def test_shift_labels_of_a_packing_collator():
    x = ids()
    shift = torch.roll(x, -1, dims=1)
    shift[:, -1] = -100
    shift[0, 6] = -100  # a boundary between two packed sequences
    assert_parity(build(), x, labels=x, shift_labels=shift)


def test_logits_to_keep_int_and_positions():
    x = ids()
    assert_parity(build(), x, labels=x[:, -5:], logits_to_keep=5)
    keep = torch.tensor([0, 3, 4, 9, 15])
    assert_parity(build(), x, labels=x[:, keep], logits_to_keep=keep)
    with pytest.raises(ValueError, match="one target per position kept.*expected 10, got 32"):
        patched(build())(x, labels=x, logits_to_keep=5)


def test_labels_given_positionally():
    model = build()
    x = ids()
    ref = model(x, None, None, None, None, x).loss
    out = patched(model)(x, None, None, None, None, x)
    assert out.logits is None and abs(out.loss - ref).item() <= 1e-5


def test_return_dict_false_keeps_the_tuple():
    model = build()
    x = ids()
    ref = model(x, labels=x).loss
    loss, logits, *_ = patched(model)(x, labels=x, return_dict=False)
    assert abs(loss - ref).item() <= 1e-5 and logits.shape == (2, SEQ, 0)  # the LM head's empty placeholder


@pytest.mark.parametrize("order", ["patch_then_lora", "lora_then_patch"])
def test_lora_training_in_either_order(order):
    """peft's LoRA on the attention and MLP: the LoRA training of test_lora matches the unpatched model's, the op
    running in every step; applied to the PeftModel, the kernel finds the causal LM inside it (and only it)."""
    lora = pytest.importorskip("test_lora")  # needs peft
    ref = lora.train(lora.with_lora(tiny("qwen3")))
    if order == "patch_then_lora":
        model = lora.with_lora(patched(tiny("qwen3")))
    else:
        model = patched(lora.with_lora(tiny("qwen3")))
    with Calls() as calls:
        got = lora.train(model)
    assert calls.calls["custom::linear_cross_entropy"] == lora.STEPS
    lora.assert_same_training(got, ref)


def test_without_labels_or_in_eval_the_models_own_forward():
    ref_model, model = build(), patched(build())
    x = ids()
    assert torch.equal(model(x).logits, ref_model(x).logits)  # training, no labels
    ref_model.eval()
    model.eval()
    with Calls() as calls:
        out = model(x, labels=x)  # eval with labels (an evaluation loop reading logits)
    ref = ref_model(x, labels=x)
    assert not calls.calls["custom::linear_cross_entropy"]
    assert torch.equal(out.logits, ref.logits) and torch.equal(out.loss, ref.loss)
    kw = dict(attention_mask=torch.ones(2, 6, dtype=torch.long), max_new_tokens=8, do_sample=False, pad_token_id=0)
    assert torch.equal(model.generate(x[:, :6], **kw), ref_model.generate(x[:, :6], **kw))


def test_bf16():
    """A bf16 model: the op reads bf16 hidden states and weight, accumulates in fp32 (test_patching's bf16 bounds)."""
    x = ids()
    ref = step(build(dtype=torch.bfloat16), x, labels=x)
    out, loss, grads = step(patched(build(dtype=torch.bfloat16)), x, labels=x)
    assert out.loss.dtype == ref[0].loss.dtype == torch.float32
    assert abs(loss - ref[1]).item() <= 1e-2
    for n in ref[2]:
        assert max_rel(grads[n], ref[2][n]) <= 6e-2, n


def test_twenty_training_steps_lockstep():
    """20 AdamW steps of the unpatched model; at each, the patched copy's loss and gradients match (fp32 bounds
    of test_convergence), with the other kernels applied too."""
    ref, ours = build(), build()
    assert K.apply_default_kernels(ours, [*ALL, KERNEL]).applied == [*ALL, KERNEL]
    data = torch.randint(0, VOCAB, (4, 2, SEQ), generator=torch.Generator().manual_seed(1))

    def compare(x):
        (out, *got), (_, *want) = step(ours, x, labels=x), step(ref, x, labels=x)
        assert out.logits is None
        assert_fp32_step((None, *got), (None, *want))
        return want[0].item()

    losses = lockstep(ref, ours, data, compare)
    assert losses[-1] < losses[0] - 0.5, losses


def test_torch_compile_fullgraph_train_step():
    torch._dynamo.reset()
    model = build()
    x = ids()
    _, ref_loss, ref_grads = step(model, x, labels=x)
    rec = CompileRecorder()
    compiled = torch.compile(patched(model), fullgraph=True, backend=rec)  # a graph break is an error
    out, loss, grads = step(compiled, x, labels=x)
    assert len(rec.graphs) == 1 and any(o.startswith("custom.linear_cross_entropy") for o in rec.ops()), rec.ops()
    assert out.logits is None
    assert_fp32_step((None, loss, grads), (None, ref_loss, ref_grads))
    torch._dynamo.reset()


def test_deepcopy_is_patched_on_its_own():
    model = patched(build())
    twin = copy.deepcopy(model)
    assert twin.forward.__self__ is twin and twin.__dict__[LCE.STATE_ATTR].forward.__self__ is twin
    assert twin.lm_head.__dict__[LCE.STATE_ATTR] is twin.__dict__[LCE.STATE_ATTR]
    x = ids()
    out = twin(x, labels=x)
    assert out.logits is None and torch.equal(out.loss, model(x, labels=x).loss)


def test_a_head_swapped_in_after_the_patch_runs_unfused():
    """A new lm_head (a wrapper's, a resized vocabulary) makes real logits: HF's loss on them, logits returned."""
    model = patched(build())
    model.lm_head = torch.nn.Linear(64, VOCAB, bias=False)
    x = ids()
    with Calls() as calls:
        out = model(x, labels=x)
    logits = torch.nn.functional.linear(model.model(x).last_hidden_state, model.lm_head.weight)
    want = model.__dict__[LCE.STATE_ATTR].loss(logits, x, VOCAB)
    assert not calls.calls["custom::linear_cross_entropy"] and torch.equal(out.logits, logits)
    assert torch.equal(out.loss, want)


def test_revert_restores_the_original_forward():
    model, ref = build(), build()
    x = ids()
    patched(model)
    assert K.revert_kernels(model) == [KERNEL]
    for m in (model, model.lm_head):
        assert not {"forward", "_loss_function", LCE.STATE_ATTR} & set(m.__dict__)
    out = model(x, labels=x)
    assert torch.equal(out.logits, ref(x, labels=x).logits) and out.loss.grad_fn is not None


def test_switch_disable_and_not_in_auto():
    model = build()
    assert KERNEL not in K.apply_default_kernels(model).applied  # "auto" leaves it out: it drops the logits
    report = K.apply_default_kernels(model, KERNEL, use_fused_linear_cross_entropy=False)
    assert report.applied == [] and report.skipped == {KERNEL: "disabled by use_fused_linear_cross_entropy=False"}
    report = K.apply_default_kernels(model, KERNEL, disable_kernels=KERNEL)
    assert report.skipped == {KERNEL: f"disabled by disable_kernels={KERNEL}"}
    assert K.apply_default_kernels(model, KERNEL).applied == [KERNEL]
    assert K.apply_kernel(KERNEL, model).skipped == {KERNEL: "already applied to this model"}


@pytest.mark.parametrize("family", ["llama", "cohere"])
def test_lm_head_with_a_bias(family):
    """An LM head with a bias (Cohere's scale on top): the bias goes to the op, its gradient against the unpatched
    model's with every other one."""
    model = build(family)
    torch.manual_seed(3)
    model.lm_head = torch.nn.Linear(model.config.hidden_size, VOCAB)
    assert_parity(model, ids(), labels=ids())


def test_refused_with_the_reason():
    model = build()
    model.lm_head.register_forward_hook(lambda *a: None)
    assert "lm_head has forward hooks" in K.apply_kernel(KERNEL, model).skipped[KERNEL]
    model = build()
    model.loss_function = lambda logits, labels, vocab_size, **kw: logits.sum()
    assert "its loss_function is not ForCausalLMLoss" in K.apply_kernel(KERNEL, model).skipped[KERNEL]
    bart = transformers.BartForCausalLM(coverage.tiny_config("bart"))
    assert "without self.loss_function" in K.apply_kernel(KERNEL, bart).skipped[KERNEL]
    assert not any("forward" in m.__dict__ for m in (*model.modules(), *bart.modules()))


def test_the_recorder_refuses_what_the_op_cannot_do():
    def tail(self, logits):
        return logits * 2.0 / 8.0

    assert lm_head_tail.reduce(tail, None) == (0.25, None)
    for bad, why in (
        (lambda self, logits: torch.sigmoid(logits), "applies sigmoid"),
        (lambda self, logits: logits[..., :10], "uses logits.__getitem__|not subscriptable"),
        (lambda self, logits: torch.tanh(logits) * 3.0 + 1.0, "fails on the recorder"),
        (lambda self, logits: logits * torch.ones(()), "multiplies the logits by a tensor"),
    ):
        with pytest.raises(lm_head_tail.Refusal, match=why):
            lm_head_tail.reduce(bad, None)


@only_pinned
def test_the_probe_refuses_a_wrong_reading(monkeypatch):
    """Gemma 2 read as if it had no softcap: the probe (its own logit statements and ForCausalLMLoss against
    our op) sees the difference, and nothing is patched."""
    monkeypatch.setattr(lm_head_tail, "reduce", lambda tail, model: (1.0, None))
    model = build("gemma2")
    why = K.apply_kernel(KERNEL, model).skipped[KERNEL]
    assert "not ForCausalLMLoss on softcap(1 * logits, None)" in why and "differs on the probe" in why, why
