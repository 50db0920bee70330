"""ascendc_ops.npu's current torch_npu attention surface (npu/attention.py): npu_fusion_attention's trailing
dropout_mask / seed / offset, npu_fusion_attention_v2 / _grad_v2 (query_rope / key_rope, pse_type, start indices)
and _v3 / _grad_v3 (tensor sequence ends, seed, offset): op-plugin's signatures and tuples, the float64 golden,
the grads against our autograd, and the refusals by name."""

from __future__ import annotations

import inspect

import pytest
import torch

import ascendc_ops
import ascendc_ops.npu as tnpu
from test_npu_attention import CAUSAL, close, golden, yaml_parameters

# Ascend/op-plugin 517f2e7d op_plugin/config/op_plugin_functions.yaml, the declarations (npu_fusion_attention_grad's
# is test_npu_attention.GRAD_YAML)
_COMMON = (
    "float keep_prob=1., int pre_tockens=2147483647, int next_tockens=2147483647, int inner_precise=0, "
    "{prefix} prefix=None, {lens} actual_seq_qlen=None, {lens} actual_seq_kvlen=None, int sparse_mode=0, "
    'bool gen_mask_parallel=True, bool sync=False, str softmax_layout="", Tensor? sink=None'
)
_HEAD = (
    "(Tensor query, Tensor key, Tensor value, int head_num, str input_layout, Tensor? pse=None, "
    "Tensor? padding_mask=None, Tensor? atten_mask=None, float scale=1., "
)
YAML = {
    "npu_fusion_attention": (
        f"npu_fusion_attention{_HEAD}{_COMMON.format(prefix='int[]?', lens='int[]?')}, Tensor? dropout_mask=None, "
        "int seed=0, int offset=0) -> (Tensor, Tensor, Tensor, Tensor, int, int, int)"
    ),
    "npu_fusion_attention_v3": (
        f"npu_fusion_attention_v3{_HEAD}{_COMMON.format(prefix='SymInt[]?', lens='Tensor?')}) "
        "-> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)"
    ),
    "npu_fusion_attention_grad_v3": "npu_fusion_attention_grad_v3(Tensor query, Tensor key, Tensor value, "
    "Tensor dy, int head_num, str input_layout, *, Tensor? pse=None, Tensor? padding_mask=None, "
    "Tensor? atten_mask=None, Tensor? softmax_max=None, Tensor? softmax_sum=None, Tensor? softmax_in=None, "
    "Tensor? attention_in=None, float scale_value=1., float keep_prob=1., int pre_tockens=2147483647, "
    "int next_tockens=2147483647, int inner_precise=0, Tensor? seed=None, Tensor? offset=None, "
    "SymInt[]? prefix=None, Tensor? actual_seq_qlen=None, Tensor? actual_seq_kvlen=None, int sparse_mode=0, "
    'bool gen_mask_parallel=True, bool sync=False, str softmax_layout="", Tensor? sink=None) '
    "-> (Tensor, Tensor, Tensor, Tensor, Tensor)",
    "npu_fusion_attention_v2": "npu_fusion_attention_v2(Tensor query, Tensor key, Tensor value, int head_num, "
    "str input_layout, *, Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, "
    "Tensor? query_rope=None, Tensor? key_rope=None, float scale=1., float keep_prob=1., "
    "int pre_tokens=2147483647, int next_tokens=2147483647, int inner_precise=0, int[]? prefix=None, "
    "int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, bool gen_mask_parallel=True, "
    "bool sync=False, int pse_type=1, int[]? q_start_idx=None, int[]? kv_start_idx=None, "
    'str softmax_layout="", Tensor? sink=None, Tensor? dropout_mask=None, int seed=0, int offset=0) '
    "-> (Tensor, Tensor, Tensor, Tensor, int, int, int)",
    "npu_fusion_attention_grad_v2": "npu_fusion_attention_grad_v2(Tensor query, Tensor key, Tensor value, "
    "Tensor dy, int head_num, str input_layout, *, Tensor? pse=None, Tensor? padding_mask=None, "
    "Tensor? atten_mask=None, Tensor? softmax_max=None, Tensor? softmax_sum=None, Tensor? softmax_in=None, "
    "Tensor? attention_in=None, Tensor? query_rope=None, Tensor? key_rope=None, float scale_value=1., "
    "float keep_prob=1., int pre_tokens=2147483647, int next_tokens=2147483647, int inner_precise=0, int seed=0, "
    "int offset=0, int numels=0, int[]? prefix=None, int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, "
    "int sparse_mode=0, bool gen_mask_parallel=True, bool sync=False, int pse_type=1, int[]? q_start_idx=None, "
    'int[]? kv_start_idx=None, str softmax_layout="", Tensor? sink=None) '
    "-> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)",
}


@pytest.mark.parametrize("name", sorted(YAML))
def test_signatures_are_op_plugins(name):
    params = inspect.signature(getattr(tnpu, name)).parameters.values()
    got = [(p.name, p.kind is inspect.Parameter.KEYWORD_ONLY, p.default) for p in params]
    assert got == list(yaml_parameters(YAML[name]))
    assert name in tnpu.PROVIDED


def test_dropout_mask_seed_offset_with_keep_prob_one():
    torch.manual_seed(10)
    q, k = torch.randn(1, 6, 2, 16), torch.randn(1, 9, 2, 16)
    plain = tnpu.npu_fusion_attention(q, k, k, 2, "BSND")
    mask = torch.randint(0, 256, (2 * 6 * 9 // 8,), dtype=torch.uint8)  # bit-packed, as _npu_dropout_gen_mask's
    given = tnpu.npu_fusion_attention(q, k, k, 2, "BSND", dropout_mask=mask, seed=7, offset=3)
    assert torch.equal(given[0], plain[0])  # keep_prob 1: no dropout, the mask goes unused
    assert given[4:] == (7, 3, 2 * 6 * 9)  # seed and offset as given (op-plugin overwrites them only on a draw)
    mask = torch.randint(0, 256, (16,), dtype=torch.uint8)  # one 128-bit draw holds the 108 elements
    dropped = tnpu.npu_fusion_attention(q, k, k, 2, "BSND", dropout_mask=mask, keep_prob=0.9, seed=7, offset=3)
    ours = ascendc_ops.fusion_attention(q, k, k, 2, "BSND", keep_prob=0.9, drop_mask=mask)
    for a, b in zip(dropped[:3], ours, strict=True):
        assert torch.equal(a, b)  # keep_prob < 1: the given mask is applied
    assert not torch.equal(dropped[0], plain[0])
    with pytest.raises(NotImplementedError, match="npu_fusion_attention: keep_prob 0.9 < 1 needs an explicit"):
        tnpu.npu_fusion_attention(q, k, k, 2, "BSND", keep_prob=0.9)


def rope_inputs(layout):
    """q, k, v and the rope parts: 4 query heads over 2 kv heads, D 32, Dr 16, Dv 24; BSH merges N and d."""
    torch.manual_seed(11)
    q, k, v = torch.randn(2, 7, 4, 32), torch.randn(2, 10, 2, 32), torch.randn(2, 10, 2, 24)
    qr, kr = torch.randn(2, 7, 4, 16), torch.randn(2, 10, 2, 16)
    return tuple(x.flatten(-2) if layout == "BSH" else x for x in (q, k, v, qr, kr))


@pytest.mark.parametrize("layout", ["BSND", "BSH"])
def test_v2_rope_is_the_product_of_the_joined_heads(layout):
    q, k, v, qr, kr = rope_inputs(layout)
    kw = {"atten_mask": CAUSAL, "sparse_mode": 3}
    out, smax, ssum, softmax_out, seed, offset, numels = tnpu.npu_fusion_attention_v2(
        q, k, v, 4, layout, query_rope=qr, key_rope=kr, scale=0.1, pre_tokens=5, **kw
    )
    # scale * (q k^T + q_rope k_rope^T): the golden on each head's [q, q_rope] and [k, k_rope]
    heads = lambda x, n: x.unflatten(-1, (n, -1)) if layout == "BSH" else x  # noqa: E731
    qj, kj = torch.cat((heads(q, 4), heads(qr, 4)), -1), torch.cat((heads(k, 2), heads(kr, 2)), -1)
    want = golden(qj, kj, heads(v, 2), 4, "BSND", scale=0.1, pre_tockens=5, **kw)
    close(heads(out, 4), want[0]), close(smax, want[1]), close(ssum, want[2])
    assert softmax_out.shape == (0,) and (seed, offset, numels) == (0, 0, 2 * 4 * 7 * 10)


@pytest.mark.parametrize("rope", [True, False])
def test_grad_v2_against_our_autograd(rope):
    q, k, v, qr, kr = rope_inputs("BSH")
    leaves = [x.clone().requires_grad_() for x in (q, k, v, qr, kr)]
    ropes = {"query_rope": leaves[3], "key_rope": leaves[4]} if rope else {}
    out, smax, ssum, *_ = tnpu.npu_fusion_attention_v2(*leaves[:3], 4, "BSH", scale=0.2, **ropes)
    dy = torch.randn_like(out)
    out.backward(dy)
    got = tnpu.npu_fusion_attention_grad_v2(
        q, k, v, dy, 4, "BSH", softmax_max=smax, softmax_sum=ssum, attention_in=out.detach(), scale_value=0.2,
        **({"query_rope": qr, "key_rope": kr} if rope else {}),
    )  # fmt: skip
    dq, dk, dv, dpse, dq_rope, dk_rope, dsink = got
    for g, leaf in zip((dq, dk, dv, dq_rope, dk_rope), leaves, strict=True):
        if leaf.grad is None:
            assert g is None  # no rope part: op-plugin's dq_rope / dk_rope stay undefined
        else:
            torch.testing.assert_close(g, leaf.grad, atol=1e-6, rtol=1e-5)
    assert dpse is None and dsink.shape == (0,) and dsink.dtype == torch.float32


def test_v3_tensor_sequence_ends_and_grad_v3_against_our_autograd():
    torch.manual_seed(12)
    cq, ck = torch.tensor([3, 8, 12]), torch.tensor([5, 11, 15])  # as op-plugin's tests pass them: tensors
    q, k, v = torch.randn(12, 4, 16), torch.randn(15, 2, 16), torch.randn(15, 2, 16)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    kw = {"actual_seq_qlen": cq, "actual_seq_kvlen": ck, "atten_mask": CAUSAL, "sparse_mode": 3}
    result = tnpu.npu_fusion_attention_v3(*leaves, 4, "TND", scale=0.25, softmax_layout="TND", **kw)
    out, smax, ssum, softmax_out, seed, offset = result
    lists = {"actual_seq_qlen": cq.tolist(), "actual_seq_kvlen": ck.tolist()}
    want = tnpu.npu_fusion_attention(q, k, v, 4, "TND", scale=0.25, softmax_layout="TND", **{**kw, **lists})
    for a, b in zip(result[:4], want[:4], strict=True):
        assert torch.equal(a, b)
    # seed / offset: op-plugin's int64 [1] CPU tensors
    assert seed.dtype == offset.dtype == torch.int64 and seed.shape == offset.shape == (1,)
    dy = torch.randn_like(out)
    out.backward(dy)
    dq, dk, dv, dpse, dsink = tnpu.npu_fusion_attention_grad_v3(
        q, k, v, dy, 4, "TND", softmax_max=smax, softmax_sum=ssum, softmax_in=softmax_out,
        attention_in=out.detach(), scale_value=0.25, seed=seed, offset=offset, softmax_layout="TND", **kw,
    )  # fmt: skip
    for g, leaf in zip((dq, dk, dv), leaves, strict=True):
        torch.testing.assert_close(g, leaf.grad, atol=1e-6, rtol=1e-5)
    assert dpse is None and dsink.shape == (0,)


# (v2 keyword arguments, the error kind, what the message names)
V2_REFUSED = [
    ({"q_start_idx": [4]}, NotImplementedError, "q_start_idx other than 0"),
    ({"kv_start_idx": [0, 2]}, NotImplementedError, "kv_start_idx other than 0"),
    ({"pse_type": 4}, ValueError, "pse_type must be 0, 1, 2 or 3"),
    ({"query_rope": torch.zeros(1, 4, 4, 8)}, ValueError, "got only query_rope"),
    ({"key_rope": torch.zeros(1, 4, 2, 8)}, ValueError, "got only key_rope"),
    ({"pse": torch.zeros(1)}, NotImplementedError, "pse is not supported"),
    ({"keep_prob": 0.5}, NotImplementedError, "keep_prob 0.5 < 1"),
]


@pytest.mark.parametrize("kwargs, kind, names", V2_REFUSED)
@pytest.mark.parametrize("grad", [False, True])
def test_v2_refusals_name_the_argument(kwargs, kind, names, grad):
    q, k = torch.randn(1, 4, 4, 16), torch.randn(1, 4, 2, 16)
    out, smax, ssum, *_ = tnpu.npu_fusion_attention_v2(q, k, k, 4, "BSND", q_start_idx=[0], kv_start_idx=[0])
    op = "npu_fusion_attention_grad_v2" if grad else "npu_fusion_attention_v2"
    with pytest.raises(kind, match=f"{op}: .*{names}"):
        if grad:
            stats = {"softmax_max": smax, "softmax_sum": ssum, "attention_in": out}
            tnpu.npu_fusion_attention_grad_v2(q, k, k, out, 4, "BSND", **stats, **kwargs)
        else:
            tnpu.npu_fusion_attention_v2(q, k, k, 4, "BSND", **kwargs)


def test_v3_refusals_name_the_op():
    q = torch.randn(1, 4, 2, 16)
    with pytest.raises(NotImplementedError, match="npu_fusion_attention_v3: prefix"):
        tnpu.npu_fusion_attention_v3(q, q, q, 2, "BSND", prefix=[1])
    with pytest.raises(NotImplementedError, match="npu_fusion_attention_grad_v3: keep_prob"):
        tnpu.npu_fusion_attention_grad_v3(q, q, q, q, 2, "BSND", keep_prob=0.9, seed=torch.zeros(1))


def test_a_joined_head_dim_the_kernel_cannot_take_names_the_rope_parts():
    """DeepSeek's 512 + 64 in fp32 leaves the backward no block: the kernel's error, with the rope parts named."""
    q, qr, v = torch.randn(1, 4, 1, 512), torch.randn(1, 4, 1, 64), torch.randn(1, 4, 1, 128)
    out, smax, ssum, *_ = tnpu.npu_fusion_attention_v2(q, q, v, 1, "BSND", query_rope=qr, key_rope=qr)
    with pytest.raises(ValueError, match="npu_fusion_attention_grad_v2: with query_rope / key_rope .* D = 576"):
        tnpu.npu_fusion_attention_grad_v2(
            q, q, v, out, 1, "BSND", query_rope=qr, key_rope=qr, softmax_max=smax, softmax_sum=ssum, attention_in=out
        )
