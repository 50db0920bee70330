"""fusion_attention_grad's binding (csrc/torch/attention_grad_ops.cpp) and fusion_attention's autograd
(ops/attention.py): each bad argument raises an error naming the op, the argument, what was expected and what
came, FakeTensor raising the same; the Meta kernel's shapes on symbolic sizes; empty axes (no keys: zero dq, no
queries: zero dk / dv, no rows at all: no launch); the autograd formula wired to the grad op. Accuracy is
test_attention_grad.py's."""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.library import opcheck

import ascendc_ops
from ascendc_ops.ops.attention_args import COMPRESSED_MASK_SIZE as SIDE, TOCKENS_MAX, compressed_mask
from bad_inputs import bad_input_tests

COMPRESSED = torch.from_numpy(compressed_mask())  # sparse modes 2-4
F32 = torch.float32


def grad_inputs(q=(1, 2, 8, 64), k=(1, 2, 8, 64), v=(1, 2, 8, 64), layout="BNSD", heads=2, **kw):
    """Consistent backward inputs from a forward run: (q, k, v, dy, softmax_max, softmax_sum, attention_out)."""
    query, key, value = torch.randn(q), torch.randn(k), torch.randn(v)
    out, smax, ssum = ascendc_ops.fusion_attention(query, key, value, heads, layout, **kw)
    return query, key, value, torch.randn_like(out), smax, ssum, out


def fag(change=None, heads=2, layout="BNSD", mask=None, shapes=None, **kw):
    """A bad call whose tensors are made inside it (so FakeTensorMode sees fakes): the inputs of a 2-head BNSD
    problem (or `shapes`), each replaced by change[name]() where given (also "sink", else none)."""
    names = ("query", "key", "value", "dy", "softmax_max", "softmax_sum", "attention_in")
    shapes = shapes or dict(zip(names, [(1, 2, 8, 64)] * 4 + [(1, 2, 8, 8)] * 2 + [(1, 2, 8, 64)], strict=True))

    def call():
        given = {name: torch.randn(shapes[name]) for name in names}
        given.update({name: make() for name, make in (change or {}).items()})
        return ascendc_ops.fusion_attention_grad(
            *(given[name] for name in names),
            heads,
            layout,
            atten_mask=None if mask is None else mask(),
            sink=given.get("sink"),
            **kw,
        )

    return call


def t(*shape, dtype=F32):
    return lambda: torch.randn(shape).to(dtype)


TND = {name: (6, 2, 64) for name in ("query", "key", "value", "dy", "attention_in")} | {
    "softmax_max": (6, 2, 8),
    "softmax_sum": (6, 2, 8),
}
BAD = [
    (fag({"dy": t(1, 2, 8, 32)}), ValueError, "dy must have attention_out's shape [1, 2, 8, 64], got [1, 2, 8, 32]"),
    (fag({"dy": t(1, 2, 8, 64, dtype=torch.float16)}), TypeError, "dy must have query's dtype float32, got float16"),
    (
        fag({"softmax_max": t(1, 2, 8, 1)}),
        ValueError,
        "softmax_max must have the forward's softmax_max shape [1, 2, 8, 8], got [1, 2, 8, 1]",
    ),
    (
        fag({"softmax_sum": t(1, 2, 9, 8)}),
        ValueError,
        "softmax_sum must have the forward's softmax_sum shape [1, 2, 8, 8], got [1, 2, 9, 8]",
    ),
    (fag({"softmax_sum": t(1, 2, 8, 8, dtype=torch.float16)}), TypeError, "softmax_sum must be one of float32"),
    (
        fag({"attention_in": t(2, 2, 8, 64)}),
        ValueError,
        "attention_in must have attention_out's shape [1, 2, 8, 64], got [2, 2, 8, 64]",
    ),
    (
        fag({"attention_in": t(1, 2, 8, 64, dtype=torch.bfloat16)}),
        TypeError,
        "attention_in must have query's dtype float32, got bfloat16",
    ),
    # the forward's checks, under the backward's name
    (fag(layout="BNS"), ValueError, "input_layout must be one of 'BSH', 'SBH', 'BSND', 'BNSD', 'TND', got 'BNS'"),
    (fag(heads=4), ValueError, "head_num must equal query's N = 2, got 4"),
    (fag({"key": t(1, 2, 8, 32)}), ValueError, "key's head dim Dk must equal query's Dq = 64, got 32"),
    (fag(sparse_mode=6), ValueError, "sparse_mode 6 (prefix) is not supported"),
    (fag(mask=lambda: torch.zeros(8, 8)), TypeError, "atten_mask must be one of bool, uint8, got float32"),
    (
        fag(mask=lambda: torch.zeros(8, 8, dtype=torch.bool), sparse_mode=2),
        ValueError,
        "atten_mask must be the compressed [2048, 2048] causal mask for sparse_mode 2, got shape [8, 8]",
    ),
    (
        fag(mask=lambda: torch.zeros(SIDE, SIDE, dtype=torch.bool), sparse_mode=3),
        ValueError,
        "atten_mask must be triu(ones(2048, 2048), 1) for sparse_mode 3 (the compressed causal mask), got another",
    ),
    (fag(layout="TND", shapes=TND), ValueError, "input_layout='TND' needs actual_seq_qlen and actual_seq_kvlen"),
    (fag({"sink": t(3)}), ValueError, "sink must be [N1] = [2] (one logit per query head), got shape [3]"),
    (fag({"sink": t(2, dtype=torch.float16)}), TypeError, "sink must be one of float32, got float16"),
]


# Checked on the values on the host (the compressed mask's content): no fake sees them.
DATA_DEPENDENT = ("triu(ones(2048, 2048), 1)",)


test_bad_input_is_a_readable_error, test_fake_and_real_calls_raise_one_message = bad_input_tests(
    BAD, DATA_DEPENDENT, prefix="fusion_attention_grad: "
)


def test_inputs_on_two_devices_name_the_one_apart():
    q, k, v, dy, smax, ssum, out = grad_inputs()
    with pytest.raises(ValueError, match="fusion_attention_grad: softmax_sum is on meta but query is on cpu"):
        ascendc_ops.fusion_attention_grad(q, k, v, dy, smax, ssum.to("meta"), out, 2, "BNSD")


# ---------------------------------------------------------------- Meta kernel
def test_meta_gives_the_inputs_shapes_and_dtype():
    m = {"device": "meta", "dtype": torch.bfloat16}
    # BSH: 4 query heads over 2 kv heads, D = 32, Dv = 24
    q, k, v = torch.empty(2, 20, 128, **m), torch.empty(2, 30, 64, **m), torch.empty(2, 30, 48, **m)
    dy, out = torch.empty(2, 20, 96, **m), torch.empty(2, 20, 96, **m)
    stats = torch.empty(2, 4, 20, 8, device="meta")
    dq, dk, dv, dsink = ascendc_ops.fusion_attention_grad(q, k, v, dy, stats, stats, out, 4, "BSH")
    assert (dq.shape, dk.shape, dv.shape) == (q.shape, k.shape, v.shape)
    assert {dq.dtype, dk.dtype, dv.dtype} == {torch.bfloat16} and dq.device.type == "meta"
    assert dsink.shape == (0,) and dsink.dtype == torch.float32
    sink = torch.empty(4, device="meta")
    dsink = ascendc_ops.fusion_attention_grad(q, k, v, dy, stats, stats, out, 4, "BSH", sink=sink)[3]
    assert dsink.shape == (4,) and dsink.dtype == torch.float32 and dsink.device.type == "meta"


def test_meta_on_symbolic_shapes():
    """make_fx traces through the Meta kernel with symbolic sizes: dq / dk / dv keep query's / key's / value's."""
    q, k, v, dy, smax, ssum, out = grad_inputs(q=(1, 4, 12, 64), k=(1, 2, 20, 64), v=(1, 2, 20, 32), heads=4)

    def f(q, k, v, dy, smax, ssum, out):
        return ascendc_ops.fusion_attention_grad(q, k, v, dy, smax, ssum, out, 4, "BNSD", scale=0.125)

    graph = make_fx(f, tracing_mode="symbolic")(q, k, v, dy, smax, ssum, out)
    inputs = [n.meta["val"] for n in graph.graph.nodes if n.op == "placeholder"]
    (result,) = [n for n in graph.graph.nodes if n.op == "output"]
    grads = [n.meta["val"] for n in result.args[0]][:3]
    assert any(isinstance(s, torch.SymInt) for s in inputs[0].shape)
    for got, like in zip(grads, inputs[:3], strict=True):
        assert [str(s) for s in got.shape] == [str(s) for s in like.shape]


# ---------------------------------------------------------------- empty tensors
def test_no_keys_gives_zero_query_gradients():
    q, k, v, dy, smax, ssum, out = grad_inputs(k=(1, 2, 0, 64), v=(1, 2, 0, 64))
    dq, dk, dv, _ = ascendc_ops.fusion_attention_grad(q, k, v, dy, smax, ssum, out, 2, "BNSD")
    assert dq.shape == q.shape and bool((dq == 0).all())
    assert dk.shape == (1, 2, 0, 64) and dv.shape == (1, 2, 0, 64)


def test_no_queries_gives_zero_key_and_value_gradients():
    q, k, v, dy, smax, ssum, out = grad_inputs(q=(1, 2, 0, 64), v=(1, 2, 8, 32))
    dq, dk, dv, _ = ascendc_ops.fusion_attention_grad(q, k, v, dy, smax, ssum, out, 2, "BNSD")
    assert dq.shape == (1, 2, 0, 64)
    assert dk.shape == k.shape and dv.shape == v.shape and bool((dk == 0).all()) and bool((dv == 0).all())


def test_no_batches():
    q, k, v, dy, smax, ssum, out = grad_inputs(q=(0, 5, 64), k=(0, 7, 64), v=(0, 7, 64), layout="BSH", heads=1)
    grads = ascendc_ops.fusion_attention_grad(q, k, v, dy, smax, ssum, out, 1, "BSH")
    assert [g.shape for g in grads] == [q.shape, k.shape, v.shape, (0,)]
    dsink = ascendc_ops.fusion_attention_grad(q, k, v, dy, smax, ssum, out, 1, "BSH", sink=torch.ones(1))[3]
    assert torch.equal(dsink, torch.zeros(1))  # no rows: an empty sum


# ---------------------------------------------------------------- autograd
def test_the_forward_has_an_autograd_formula():
    assert torch._C._dispatch_has_kernel_for_dispatch_key("custom::fusion_attention", "Autograd")


def test_statistics_do_not_require_grad():
    q = torch.randn(1, 2, 8, 64, requires_grad=True)
    out, smax, ssum = ascendc_ops.fusion_attention(q, q, q, 2, "BNSD")
    assert out.requires_grad and not smax.requires_grad and not ssum.requires_grad


NEEDS_KERNEL = "needs the fusion_attention_grad kernel (csrc/kernels/attention_grad.cpp)"


def test_backward_is_the_grad_op_on_the_forward_results():
    """The autograd formula hands the grad op the forward's inputs, attrs and results (here TND with a causal
    mask, GQA and a scale), and only query / key / value get gradients."""
    torch.manual_seed(0)
    cq, ck = [5, 12], [7, 20]
    kw = {"atten_mask": COMPRESSED, "scale": 0.3, "actual_seq_qlen": cq, "actual_seq_kvlen": ck, "sparse_mode": 3}
    q, k, v = torch.randn(12, 4, 64), torch.randn(20, 2, 64), torch.randn(20, 2, 32)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    out, smax, ssum = ascendc_ops.fusion_attention(*leaves, 4, "TND", **kw)
    dy = torch.randn_like(out)
    out.backward(dy)
    want = ascendc_ops.fusion_attention_grad(q, k, v, dy, smax, ssum, out.detach(), 4, "TND", **kw)
    for leaf, w in zip(leaves, want[:3], strict=True):
        assert torch.equal(leaf.grad, w)


def test_grad_of_key_only():
    q, k, v = torch.randn(1, 2, 8, 64), torch.randn(1, 2, 8, 64, requires_grad=True), torch.randn(1, 2, 8, 64)
    out, smax, ssum = ascendc_ops.fusion_attention(q, k, v, 2, "BNSD")
    (dk,) = torch.autograd.grad(out.sum(), k)
    want = ascendc_ops.fusion_attention_grad(
        q, k.detach(), v, torch.ones_like(out), smax, ssum, out.detach(), 2, "BNSD"
    )
    assert torch.equal(dk, want[1])


def test_opcheck():
    q, k, v, dy, smax, ssum, out = grad_inputs(q=(1, 4, 20, 64), k=(1, 2, 30, 64), v=(1, 2, 30, 64), heads=4)
    opcheck(torch.ops.custom.fusion_attention_grad, (q, k, v, dy, smax, ssum, out, 4, "BNSD", None, 0.125))
    q, k, v, dy, smax, ssum, out = grad_inputs(
        q=(1, 4, 20, 64), k=(1, 2, 30, 64), v=(1, 2, 30, 64), heads=4, atten_mask=COMPRESSED, sparse_mode=3
    )
    args = (q, k, v, dy, smax, ssum, out, 4, "BNSD", COMPRESSED, 1.0, TOCKENS_MAX, 0, None, None, 3)
    opcheck(torch.ops.custom.fusion_attention_grad, args)
    # the forward again, now that it has an autograd formula (opcheck's autograd tests need requires_grad)
    leaves = [torch.randn(1, 4, 20, 64, requires_grad=True), *[torch.randn(1, 2, 30, 64, requires_grad=True)] * 2]
    opcheck(torch.ops.custom.fusion_attention, (*leaves, 4, "BNSD", None, 0.125))


def test_torch_compile_forward_and_backward():
    """AOTAutograd traces the backward through the grad op's Meta kernel (dynamic shapes, one forward graph); the
    compiled gradients are the eager ones."""
    q, k, v = torch.randn(1, 4, 20, 64), torch.randn(1, 2, 30, 64), torch.randn(1, 2, 30, 32)

    def loss(q, k, v):
        out = ascendc_ops.fusion_attention(q, k, v, 4, "BNSD", atten_mask=COMPRESSED, scale=0.125, sparse_mode=3)[0]
        return out.square().sum()

    compiled = torch.compile(loss, fullgraph=True, dynamic=True, backend="aot_eager")
    grads = []
    for fn in (compiled, loss):
        leaves = [x.clone().requires_grad_() for x in (q, k, v)]
        fn(*leaves).backward()
        grads.append([x.grad for x in leaves])
    for g, w in zip(*grads, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
