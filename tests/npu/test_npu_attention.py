"""ascendc_ops.npu.npu_fusion_attention and npu_fusion_attention_grad (npu/attention.py): torch_npu's signatures
and tuples, their refusals by name, gradients through npu_fusion_attention's autograd, and transformers' Ascend
FlashAttention integration (npu_flash_attn_func / npu_flash_attn_varlen_func) running on it with ascendc_ops.npu
standing in for torch_npu, each against the float64 golden."""

from __future__ import annotations

import importlib
import inspect
import sys

import numpy as np
import pytest
import torch

import ascendc_ops
import ascendc_ops.npu as tnpu
from ascendc_ops.ops import attention_reference as R
from ascendc_ops.ops.attention_args import compressed_mask

CAUSAL = torch.from_numpy(compressed_mask())
TOL = {"atol": 2e-5, "rtol": 1e-4}  # fp32 kernel against the float64 golden, inputs of size ~1


def golden(q, k, v, n, layout, **kw):
    mask = kw.pop("atten_mask", None)
    return R.fusion_attention_reference(
        q.double().numpy(), k.double().numpy(), v.double().numpy(), n, layout,
        None if mask is None else mask.numpy(), **kw,
    )  # fmt: skip


def close(got, want):
    torch.testing.assert_close(got, torch.from_numpy(np.asarray(want)).float(), **TOL)


def test_the_seven_tuple_of_a_fixed_layout():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 33, 4, 64), torch.randn(2, 47, 2, 64), torch.randn(2, 47, 2, 64)
    out, smax, ssum, softmax_out, seed, offset, numels = tnpu.npu_fusion_attention(
        q, k, v, 4, "BSND", atten_mask=CAUSAL, scale=0.125, sparse_mode=3
    )
    g = golden(q, k, v, 4, "BSND", atten_mask=CAUSAL, scale=0.125, sparse_mode=3)
    close(out, g[0]), close(smax, g[1]), close(ssum, g[2])
    assert softmax_out.shape == (0,) and softmax_out.dtype == q.dtype
    # keep_prob 1: no dropout mask drawn; numels is the [B, N, S1, S2] mask's size (op-plugin's dropout_gen_mask)
    assert (seed, offset, numels) == (0, 0, 2 * 4 * 33 * 47)


@pytest.mark.parametrize("layout", ["BSH", "SBH", "BNSD"])
def test_numels_in_every_layout(layout):
    q = {"BSH": (2, 5, 48), "SBH": (5, 2, 48), "BNSD": (2, 3, 5, 16)}[layout]
    k = {"BSH": (2, 7, 16), "SBH": (7, 2, 16), "BNSD": (2, 1, 7, 16)}[layout]
    result = tnpu.npu_fusion_attention(torch.randn(q), torch.randn(k), torch.randn(k), 3, layout)
    assert result[6] == 2 * 3 * 5 * 7


@pytest.mark.parametrize("softmax_layout", ["", "TND"])
def test_tnd_and_its_softmax_layouts(softmax_layout):
    torch.manual_seed(1)
    cq, ck = [5, 12, 30], [7, 15, 40]
    q, k, v = torch.randn(30, 4, 32), torch.randn(40, 2, 32), torch.randn(40, 2, 32)
    kw = {"atten_mask": CAUSAL, "scale": 0.2, "actual_seq_qlen": cq, "actual_seq_kvlen": ck, "sparse_mode": 3}
    out, smax, ssum, _, _, _, numels = tnpu.npu_fusion_attention(q, k, v, 4, "TND", **kw, softmax_layout=softmax_layout)
    g = golden(q, k, v, 4, "TND", **kw, softmax_layout=softmax_layout)
    close(out, g[0]), close(smax, g[1]), close(ssum, g[2])
    assert numels == 4 * (5 * 7 + 7 * 8 + 18 * 25)


# what both ops refuse by name: (keyword arguments, the names the error gives)
REFUSED = [
    ({"pse": torch.zeros(1)}, "pse"),
    ({"padding_mask": torch.zeros(1)}, "padding_mask"),
    ({"prefix": [1]}, "prefix"),
    ({"sparse_mode": 5}, "sparse_mode 5"),
    ({"keep_prob": 0.9}, "keep_prob"),
    ({"softmax_layout": "TND"}, "softmax_layout"),
    ({"softmax_layout": "NTD"}, "softmax_layout"),
]


@pytest.mark.parametrize("kwargs, names", [*REFUSED, ({"sparse_mode": 8}, "sparse_mode 8")])
def test_refusals_name_the_argument(kwargs, names):
    q, k = torch.randn(1, 4, 4, 16), torch.randn(1, 4, 2, 16)
    with pytest.raises(RuntimeError, match=f"npu_fusion_attention: .*{names}"):
        tnpu.npu_fusion_attention(q, k, k, 4, "BSND", **kwargs)


def test_the_op_checks_reach_the_caller():
    q, k = torch.randn(1, 4, 3, 16), torch.randn(1, 4, 2, 16)  # 3 query heads over 2 kv heads
    with pytest.raises(ValueError, match="fusion_attention: query's heads N1 = 3 must be a multiple"):
        tnpu.npu_fusion_attention(q, k, k, 3, "BSND")


@pytest.fixture
def hf_npu_attention(monkeypatch):
    """transformers' npu_flash_attention with ascendc_ops.npu as torch_npu: the module imports
    npu_fusion_attention from torch_npu only when an NPU is available, so the name is bound as that import
    would bind it."""
    pytest.importorskip("transformers")
    monkeypatch.setitem(sys.modules, "torch_npu", tnpu)
    module = importlib.import_module("transformers.integrations.npu_flash_attention")
    from torch_npu import npu_fusion_attention  # the stand-in, through sys.modules

    monkeypatch.setattr(module, "npu_fusion_attention", npu_fusion_attention, raising=False)
    return module


@pytest.mark.parametrize("causal", [False, True])
def test_transformers_npu_flash_attn_func(hf_npu_attention, causal):
    torch.manual_seed(2)
    q, k, v = torch.randn(2, 40, 4, 64), torch.randn(2, 40, 4, 64), torch.randn(2, 40, 4, 64)
    out = hf_npu_attention.npu_flash_attn_func(q, k, v, causal=causal)
    kw = {"atten_mask": CAUSAL, "sparse_mode": hf_npu_attention.SPARSE_MODE} if causal else {}
    close(out, golden(q, k, v, 4, "BSND", scale=1 / 8, **kw)[0])


@pytest.mark.parametrize("causal", [False, True])
def test_transformers_npu_flash_attn_varlen_func(hf_npu_attention, causal):
    torch.manual_seed(3)
    cu = torch.tensor([0, 9, 25, 31], dtype=torch.int32)
    q, k, v = torch.randn(31, 4, 64), torch.randn(31, 2, 64), torch.randn(31, 2, 64)
    out = hf_npu_attention.npu_flash_attn_varlen_func(q, k, v, cu, cu, causal=causal)
    kw = {"atten_mask": CAUSAL, "sparse_mode": hf_npu_attention.SPARSE_MODE} if causal else {}
    lens = {"actual_seq_qlen": [9, 25, 31], "actual_seq_kvlen": [9, 25, 31]}
    close(out, golden(q, k, v, 4, "TND", scale=1 / 8, **lens, **kw)[0])


def test_the_forward_matches_the_custom_op():
    q = torch.randn(1, 2, 9, 16)
    got = tnpu.npu_fusion_attention(q, q, q, 2, "BNSD", scale=0.25)[:3]
    for a, b in zip(got, ascendc_ops.fusion_attention(q, q, q, 2, "BNSD", scale=0.25), strict=True):
        assert torch.equal(a, b)


# ---------------------------------------------------------------- npu_fusion_attention_grad
# op-plugin's op_plugin_functions.yaml, the version whose npu_fusion_attention takes softmax_layout and sink
GRAD_YAML = (
    "npu_fusion_attention_grad(Tensor query, Tensor key, Tensor value, Tensor dy, int head_num, str input_layout, *, "
    "Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, Tensor? softmax_max=None, "
    "Tensor? softmax_sum=None, Tensor? softmax_in=None, Tensor? attention_in=None, float scale_value=1., "
    "float keep_prob=1., int pre_tockens=2147483647, int next_tockens=2147483647, int inner_precise=0, int seed=0, "
    "int offset=0, int numels=0, int[]? prefix=None, int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, "
    'int sparse_mode=0, bool gen_mask_parallel=True, bool sync=False, str softmax_layout="", Tensor? sink=None) '
    "-> (Tensor, Tensor, Tensor, Tensor, Tensor)"
)
YAML_DEFAULTS = {"None": None, "True": True, "False": False, '""': ""}


def yaml_default(text: str):
    if not text:
        return inspect.Parameter.empty
    if text in YAML_DEFAULTS:
        return YAML_DEFAULTS[text]
    return float(text) if "." in text else int(text)


def yaml_parameters(schema: str):
    """(name, keyword-only, default) of a yaml signature's arguments."""
    kw_only = False
    for arg in schema[schema.index("(") + 1 : schema.index(") ->")].split(", "):
        if arg == "*":
            kw_only = True
        else:
            name, _, default = arg.split(" ")[-1].partition("=")
            yield name, kw_only, yaml_default(default)


def test_grad_signature_is_torch_npus():
    params = list(inspect.signature(tnpu.npu_fusion_attention_grad).parameters.values())
    got = [(p.name, p.kind is inspect.Parameter.KEYWORD_ONLY, p.default) for p in params]
    assert got == list(yaml_parameters(GRAD_YAML))
    assert GRAD_YAML.endswith("-> (Tensor, Tensor, Tensor, Tensor, Tensor)")  # dq, dk, dv, dpse, dsink


def grad_golden(q, k, v, dy, n, layout, **kw):
    mask = kw.pop("atten_mask", None)
    return R.fusion_attention_grad_reference(
        q.double().numpy(), k.double().numpy(), v.double().numpy(), dy.double().numpy(), n, layout,
        None if mask is None else mask.numpy(), **kw,
    )  # fmt: skip


@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_sink_through_the_torch_npu_names(layout):
    """sink (fp32 [N1]) reaches the op: npu_fusion_attention equals custom::fusion_attention with it, and
    npu_fusion_attention_grad's dsink (and dq, dk, dv) equal the op's autograd; TND with softmax_layout 'TND', whose
    true [T, N, 8] statistics the grad takes back."""
    gen = torch.Generator().manual_seed(8)
    shape_q, shape_k = ((2, 33, 4, 64), (2, 47, 2, 64)) if layout == "BSND" else ((40, 4, 64), (40, 2, 64))
    q, k, v = (
        torch.randn(*shape_q, generator=gen),
        torch.randn(*shape_k, generator=gen),
        torch.randn(*shape_k, generator=gen),
    )
    sink = torch.tensor([-1.0, 0.5, 2.0, 0.0])
    kw = {"atten_mask": CAUSAL, "scale": 0.125, "sparse_mode": 3}
    if layout == "TND":
        kw.update(actual_seq_qlen=[15, 40], actual_seq_kvlen=[15, 40], softmax_layout="TND")
    out, smax, ssum, *_ = tnpu.npu_fusion_attention(q, k, v, 4, layout, sink=sink, **kw)
    leaves = [t.clone().requires_grad_() for t in (q, k, v, sink)]
    lens = {n: kw.get(n) for n in ("actual_seq_qlen", "actual_seq_kvlen")}
    want = ascendc_ops.fusion_attention(*leaves[:3], 4, layout, CAUSAL, 0.125, sparse_mode=3, sink=leaves[3], **lens)[0]
    assert torch.equal(out, want.detach())
    dy = torch.randn(out.shape, generator=gen)
    want.backward(dy)
    grad_kw = {k: v for k, v in kw.items() if k != "scale"}
    dq, dk, dv, dpse, dsink = tnpu.npu_fusion_attention_grad(
        q, k, v, dy, 4, layout, softmax_max=smax, softmax_sum=ssum, attention_in=out, scale_value=0.125, sink=sink,
        **grad_kw,
    )  # fmt: skip
    for got, leaf in zip((dq, dk, dv, dsink), leaves, strict=True):
        torch.testing.assert_close(got, leaf.grad, rtol=0, atol=0)
    assert dpse is None and dsink.dtype == torch.float32


def test_grad_the_five_tuple():
    torch.manual_seed(4)
    q, k, v = torch.randn(2, 33, 4, 64), torch.randn(2, 47, 2, 64), torch.randn(2, 47, 2, 48)
    kw = {"atten_mask": CAUSAL, "scale": 0.125, "sparse_mode": 3}
    out, smax, ssum, softmax_out, *_ = tnpu.npu_fusion_attention(q, k, v, 4, "BSND", **kw)
    dy = torch.randn_like(out)
    dq, dk, dv, dpse, dsink = tnpu.npu_fusion_attention_grad(
        q, k, v, dy, 4, "BSND", softmax_max=smax, softmax_sum=ssum, softmax_in=softmax_out, attention_in=out,
        atten_mask=CAUSAL, scale_value=0.125, sparse_mode=3, numels=2 * 4 * 33 * 47,
    )  # fmt: skip
    for got, want in zip((dq, dk, dv), grad_golden(q, k, v, dy, 4, "BSND", **kw), strict=True):
        close(got, want)
    # op-plugin without pse / sink: an undefined dpse (None), an empty fp32 dsink (FlashAttentionKernelNpuOpApi.cpp)
    assert dpse is None and dsink.shape == (0,) and dsink.dtype == torch.float32


def test_grad_takes_the_tnd_statistics_in_either_softmax_layout():
    torch.manual_seed(5)
    cq, ck = [5, 12, 30], [7, 15, 40]
    q, k, v = torch.randn(30, 4, 32), torch.randn(40, 2, 32), torch.randn(40, 2, 32)
    kw = {"atten_mask": CAUSAL, "actual_seq_qlen": cq, "actual_seq_kvlen": ck, "sparse_mode": 3}
    dy = torch.randn(30, 4, 32)
    want = grad_golden(q, k, v, dy, 4, "TND", scale=0.2, **kw)
    for softmax_layout in ("", "TND"):
        forward = tnpu.npu_fusion_attention(q, k, v, 4, "TND", scale=0.2, softmax_layout=softmax_layout, **kw)
        out, smax, ssum = forward[:3]
        got = tnpu.npu_fusion_attention_grad(
            q, k, v, dy, 4, "TND", softmax_max=smax, softmax_sum=ssum, attention_in=out, scale_value=0.2,
            softmax_layout=softmax_layout, **kw,
        )[:3]  # fmt: skip
        for g, w in zip(got, want, strict=True):
            close(g, w)


def test_tnd_statistics_layouts_invert_each_other():
    from ascendc_ops.npu import attention as A

    cq = [5, 12, 30]
    q, k = torch.randn(30, 4, 32), torch.randn(40, 2, 32)
    _, smax, _ = ascendc_ops.fusion_attention(q, k, k, 4, "TND", actual_seq_qlen=cq, actual_seq_kvlen=[7, 15, 40])
    true_tnd = A._stats_tnd(smax, cq, 4)
    assert not torch.equal(true_tnd, smax)  # the layouts differ once a sequence has several rows
    assert torch.equal(A._stats_from_tnd(true_tnd, cq, 4), smax)


def test_gradients_through_npu_fusion_attention():
    """torch_npu's autograd wires npu_fusion_attention to its grad; ours does the same with the custom ops."""
    torch.manual_seed(6)
    q, k, v = torch.randn(1, 24, 64), torch.randn(1, 40, 32), torch.randn(1, 40, 32)  # BSH: 2 query heads, 1 kv head
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    out = tnpu.npu_fusion_attention(*leaves, 2, "BSH", scale=0.125, atten_mask=CAUSAL, sparse_mode=2)[0]
    dy = torch.randn_like(out)
    out.backward(dy)
    want = grad_golden(q, k, v, dy, 2, "BSH", scale=0.125, atten_mask=CAUSAL, sparse_mode=2)
    for leaf, w in zip(leaves, want, strict=True):
        close(leaf.grad, w)


def grad_args():
    q, k = torch.randn(1, 4, 4, 16), torch.randn(1, 4, 2, 16)
    out, smax, ssum = ascendc_ops.fusion_attention(q, k, k, 4, "BSND")
    return (q, k, k, torch.randn_like(out), 4, "BSND"), {"softmax_max": smax, "softmax_sum": ssum, "attention_in": out}


@pytest.mark.parametrize(
    "kwargs, names",
    [
        *REFUSED,
        ({"sparse_mode": 7}, "sparse_mode 7"),
        ({"softmax_max": None}, "softmax_max"),
        ({"softmax_sum": None, "attention_in": None}, "softmax_sum, attention_in"),
    ],
)
def test_grad_refusals_name_the_argument(kwargs, names):
    args, given = grad_args()
    with pytest.raises(RuntimeError, match=f"npu_fusion_attention_grad: .*{names}"):
        tnpu.npu_fusion_attention_grad(*args, **{**given, **kwargs})


def test_grad_op_checks_reach_the_caller():
    args, given = grad_args()
    given["softmax_sum"] = given["softmax_sum"][..., :1]
    with pytest.raises(ValueError, match=r"fusion_attention_grad: softmax_sum must have the forward's softmax_sum"):
        tnpu.npu_fusion_attention_grad(*args, **given)
