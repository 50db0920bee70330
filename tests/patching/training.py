"""What the model tests share: the tiny models' common config, a few steps of AdamW training (free-running or
in lockstep with a patched copy), the fp32 single-step parity bounds, a torch.compile backend that keeps its
graphs (to look for our ops) and a dispatch mode that counts the ops called."""

from __future__ import annotations

import collections

import torch
from torch.utils._python_dispatch import TorchDispatchMode

VOCAB = 128
# every tiny test model: 2 layers 64 wide, 4 query heads over 2 kv heads, untied embeddings
TINY = dict(
    vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
    rms_norm_eps=1e-6, tie_word_embeddings=False,
)  # fmt: skip


def adamw_steps(model, data, steps: int, lr: float, after_step=None) -> torch.Tensor:
    """`steps` AdamW steps of the LM loss on data[step % len(data)]; the losses. `after_step()` runs
    after each step (e.g. to collect what hooks recorded)."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    losses = []
    for step in range(steps):
        x = data[step % len(data)]
        loss = model(x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if after_step is not None:
            after_step()
    return torch.tensor(losses)


def lockstep(ref, ours, data, compare, steps: int = 20, lr: float = 3e-3) -> list[float]:
    """AdamW training of the unpatched `ref`; before each step `ours` takes ref's weights and `compare(x)` runs
    both on the batch (leaving ref's gradients for the step); what `compare` returned at each step (ref's loss)."""
    opt = torch.optim.AdamW(ref.parameters(), lr=lr, weight_decay=0.01)
    losses = []
    for step in range(steps):
        x = data[step % len(data)]
        ours.load_state_dict(ref.state_dict())
        losses.append(compare(x))
        opt.step()
    return losses


def assert_fp32_step(got, want, atol: float = 1e-5) -> None:
    """One step's (logits, loss, gradients) against the unpatched model's at the fp32 parity bounds (logits None:
    a fused loss made none)."""
    (logits, loss, grads), (ref_logits, ref_loss, ref_grads) = got, want
    if logits is not None:
        assert (logits - ref_logits).abs().max().item() <= atol
    assert abs(loss - ref_loss).item() <= atol
    assert grads.keys() == ref_grads.keys()
    for n in ref_grads:
        torch.testing.assert_close(grads[n], ref_grads[n], atol=atol, rtol=1e-4, msg=n)


class CompileRecorder:
    """A torch.compile backend: keeps the Dynamo graphs (to look for our ops) and runs them via aot_eager."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return torch._dynamo.lookup_backend("aot_eager")(gm, example_inputs)

    def ops(self):
        """Every called op, also inside the subgraphs of higher-order ops (an autograd.Function's forward)."""
        mods = [m for g in self.graphs for m in g.modules() if isinstance(m, torch.fx.GraphModule)]
        return {str(n.target) for m in mods for n in m.graph.nodes if n.op == "call_function"}


class Calls(TorchDispatchMode):
    """Counts the ops called under it by name without overload (custom ones and aten's: add.Tensor -> add)."""

    def __init__(self):
        super().__init__()
        self.calls = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls[func.name().split(".")[0]] += 1
        return func(*args, **(kwargs or {}))
