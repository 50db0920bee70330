"""ascendc_ops.npu in place of torch_npu: each function vs a float64 reference written here, the
npu_grouped_matmul modes its callers use (split M / split K / independent, list or tensor group_list,
transposed weight views), and torch_npu-style call sequences (a GMM autograd.Function, the fused experts
forward) run through a module installed as ``sys.modules["torch_npu"]``. A dispatch recorder checks
that the work reaches our kernels (custom::*), not an aten matmul."""

from __future__ import annotations

import sys

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import ascendc_ops.npu as npu


# ---- float64 references ----
def ref_permute(tokens, indices, num_out=None):
    flat = indices.reshape(-1)
    order = torch.argsort(flat, stable=True)
    sorted_indices = torch.argsort(order).to(torch.int32)
    permuted = tokens.double()[order // indices.reshape(tokens.shape[0], -1).shape[1]]
    return (permuted if num_out is None else permuted[:num_out]), sorted_indices


def ref_unpermute(permuted, sorted_indices, probs=None, topk=1):
    rows = sorted_indices.long().reshape(-1, probs.shape[1] if probs is not None else topk)
    p = permuted.double()
    padded = torch.cat((p, p.new_zeros(1, p.shape[1])))  # indices past the kept rows read zeros
    g = padded[rows.clamp(max=p.shape[0])]
    w = probs.double() if probs is not None else torch.ones(rows.shape, dtype=torch.float64)
    return (g * w[..., None]).sum(1)


def ref_gmm(x, w, counts):
    """x [M, K] @ w[e] ([K, N]) for consecutive row groups; rows past the groups are zero."""
    y = torch.zeros(x.shape[0], w.shape[-1], dtype=torch.float64)
    start = 0
    for e, c in enumerate(counts):
        y[start : start + c] = x[start : start + c].double() @ w[e].double()
        start += c
    return y


def close(a, b, dtype=torch.float32):
    tol = {torch.float32: (1e-5, 1e-5), torch.bfloat16: (2e-2, 2e-2), torch.float16: (2e-3, 2e-3)}[dtype]
    torch.testing.assert_close(a.double(), b.double(), atol=tol[0], rtol=tol[1])


class Recorder(TorchDispatchMode):
    """Records the ops that reach dispatch (inside our ops only custom::* ops and copies should appear)."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func.overloadpacket))
        return func(*args, **(kwargs or {}))

    def matmuls(self):
        return [o for o in self.ops if o.split(".")[-1] in ("mm", "bmm", "matmul", "addmm", "baddbmm", "_grouped_mm")]


@pytest.fixture
def torch_npu(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_npu", npu)
    import torch_npu as mod

    return mod


# ---- the module itself ----
def test_is_a_real_module_standing_in_for_torch_npu(torch_npu):
    assert torch_npu is npu and isinstance(npu, type(sys))
    for name in npu.PROVIDED:  # functions, and torch_npu's optim subpackage
        assert callable(getattr(torch_npu, name)) or isinstance(getattr(torch_npu, name), type(sys)), name
    assert not hasattr(torch_npu, "npu_prompt_flash_attention")  # a torch_npu name we do not provide
    with pytest.raises(AttributeError, match="no 'npu_format_cast'.*provides npu_rotary_mul"):
        _ = torch_npu.npu_format_cast
    from torch_npu import npu_swiglu  # noqa: F401  (from-import works too)


def test_rotary_mul_rms_norm_swiglu(torch_npu):
    x = torch.randn(2, 4, 8, 16)
    ang = torch.randn(1, 1, 8, 8)
    cos, sin = torch.cat((ang, ang), -1).cos(), torch.cat((ang, ang), -1).sin()
    rot = torch.cat((-x[..., 8:], x[..., :8]), -1)
    close(torch_npu.npu_rotary_mul(x, cos, sin), x.double() * cos.double() + rot.double() * sin.double())
    # r1/r2 of another dtype are cast to x's, as torch_npu does
    xb = x.bfloat16()
    assert torch_npu.npu_rotary_mul(xb, cos, sin).dtype == torch.bfloat16
    with pytest.raises(NotImplementedError, match="rotate"):
        torch_npu.npu_rotary_mul(x, cos, sin, rotate=torch.eye(16))
    dy = torch.randn_like(x)
    dx, dr1, dr2 = torch_npu.npu_rotary_mul_backward(dy, x, cos, sin)
    assert dr1.shape == cos.shape
    close(dr1, (dy.double() * x.double()).sum((0, 1), keepdim=True))
    close(dx, dy.double() * cos.double() + torch.cat((dy[..., 8:] * sin[..., 8:], -dy[..., :8] * sin[..., :8]), -1))

    h, g = torch.randn(3, 5, 64), torch.rand(64) + 0.5
    y, rstd = torch_npu.npu_rms_norm(h, g, epsilon=1e-5)
    want_rstd = torch.rsqrt(h.double().pow(2).mean(-1, keepdim=True) + 1e-5)
    close(rstd, want_rstd)
    close(y, h.double() * want_rstd * g.double())
    hh = h.detach().requires_grad_()
    gg = g.detach().requires_grad_()
    dy = torch.randn_like(h)
    torch.autograd.backward(torch_npu.npu_rms_norm(hh, gg)[0], dy)
    dx, dg = torch_npu.npu_rms_norm_backward(dy, h, g, torch_npu.npu_rms_norm(h, g)[1])
    close(dx, hh.grad)
    close(dg, gg.grad)
    y, rstd, s = torch_npu.npu_add_rms_norm(h, h * 0.5, g)
    close(s, h.double() * 1.5)
    y, rstd = torch_npu.npu_gemma_rms_norm(h, g - 1, 1e-5)  # weight 1 + (g - 1)
    close(rstd, want_rstd)
    close(y, h.double() * want_rstd * (1 + (g - 1).double()))

    u = torch.randn(4, 6, 32)
    close(torch_npu.npu_swiglu(u, dim=-1), F.silu(u[..., :16].double()) * u[..., 16:].double())
    close(torch_npu.npu_swiglu(u, 1), F.silu(u[:, :3].double()) * u[:, 3:].double())
    uu = u.detach().requires_grad_()
    dy = torch.randn(4, 6, 16)
    torch.autograd.backward(F.silu(uu[..., :16]) * uu[..., 16:], dy)
    close(torch_npu.npu_swiglu_backward(dy, u, -1), uu.grad)


# ---- MoE routing ----
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("idx_dtype", [torch.int32, torch.int64])
def test_permute_unpermute(torch_npu, dtype, idx_dtype):
    T, K, E, H = 13, 3, 5, 24
    tokens = torch.randn(T, H).to(dtype)
    idx = torch.stack([torch.randperm(E)[:K] for _ in range(T)]).to(idx_dtype)
    idx[:4] = torch.tensor([0, 1, 2], dtype=idx_dtype)  # duplicates across tokens: the sort must be stable
    permuted, sorted_indices = torch_npu.npu_moe_token_permute(tokens, idx)
    want_p, want_s = ref_permute(tokens, idx)
    assert sorted_indices.dtype == torch.int32 and torch.equal(sorted_indices, want_s)
    assert torch.equal(permuted.double(), want_p)  # a pure row gather: exact
    probs = torch.rand(T, K).to(dtype)
    out = torch_npu.npu_moe_token_unpermute(permuted, sorted_indices, probs=probs)
    close(out, ref_unpermute(permuted, sorted_indices, probs), dtype)
    # num_out_tokens keeps the first rows (capacity); probs=None sums with restore_shape's topK
    p2, s2 = torch_npu.npu_moe_token_permute(tokens, idx, num_out_tokens=20)
    assert torch.equal(p2.double(), want_p[:20])
    close(
        torch_npu.npu_moe_token_unpermute(permuted, sorted_indices, restore_shape=[T, H]),
        ref_unpermute(permuted, sorted_indices, None, K),
        dtype,
    )


def test_permute_unpermute_autograd_and_grad_function(torch_npu):
    T, K, E, H = 9, 2, 4, 16
    tokens = torch.randn(T, H, requires_grad=True)
    idx = torch.randint(0, E, (T, K))
    probs = torch.rand(T, K, requires_grad=True)
    permuted, s = torch_npu.npu_moe_token_permute(tokens, idx)
    out = torch_npu.npu_moe_token_unpermute(permuted * 2.0, s, probs=probs)
    dy = torch.randn(T, H)
    out.backward(dy)
    # out[t] = 2 * sum_k probs[t,k] * tokens[t]
    close(tokens.grad, 2 * dy.double() * probs.detach().double().sum(1, keepdim=True))
    close(probs.grad, 2 * (dy.double() @ tokens.detach().double().T).diagonal()[:, None].expand(T, K))
    dperm, dprobs = torch_npu.npu_moe_token_unpermute_grad(permuted.detach(), dy, s, probs.detach())
    close(dprobs, (dy.double()[:, None, :] * ref_permute(tokens.detach(), idx)[0][s.long()].view(T, K, H)).sum(-1))
    assert dperm.shape == permuted.shape


# ---- grouped matmul ----
def _groups(E, empty=(1,)):
    counts = torch.randint(1, 6, (E,))
    for e in empty:
        counts[e] = 0
    return counts


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("group_list_type", [0, 1])
def test_gmm_split_m(torch_npu, dtype, group_list_type):
    E, K, N = 4, 24, 40
    counts = _groups(E)
    M = int(counts.sum())
    x = torch.randn(M, K).to(dtype)
    w = torch.randn(E, K, N).to(dtype)
    gl = counts if group_list_type == 1 else counts.cumsum(0)
    (y,) = torch_npu.npu_grouped_matmul(
        [x], [w], bias=None, group_list=gl, split_item=2, group_type=0, group_list_type=group_list_type
    )
    close(y, ref_gmm(x, w, counts.tolist()), dtype)
    # split_item 0: one tensor per group (empty groups give [0, N])
    ys = torch_npu.npu_grouped_matmul(
        [x], [w], group_list=gl, split_item=0, group_type=0, group_list_type=group_list_type
    )
    assert [t.shape[0] for t in ys] == counts.tolist()
    close(torch.cat(ys), y.double(), dtype)
    bias = [torch.randn(N).to(dtype) for _ in range(E)]
    (yb,) = torch_npu.npu_grouped_matmul(
        [x], [w], bias=bias, group_list=gl, split_item=2, group_type=0, group_list_type=group_list_type
    )
    close(yb, ref_gmm(x, w, counts.tolist()) + torch.stack(bias).double().repeat_interleave(counts, 0), dtype)


def test_gmm_transposed_views_and_weight_lists(torch_npu):
    """HF's [E, N, K] weights as transposed views, per-expert weight lists (MindSpeed), cumulative lists."""
    E, K, N = 3, 16, 20
    counts = _groups(E, empty=())
    M = int(counts.sum())
    x = torch.randn(M, K)
    w_nk = torch.randn(E, N, K)
    want = ref_gmm(x, w_nk.transpose(1, 2), counts.tolist())
    with Recorder() as rec:
        (y,) = torch_npu.npu_grouped_matmul(
            [x], [w_nk.transpose(1, 2)], group_list=counts, split_item=2, group_type=0, group_list_type=1
        )
    close(y, want)
    assert not rec.matmuls() and "custom.grouped_matmul" in rec.ops and "aten.clone" not in rec.ops
    # E weights [K, N], each a transposed view of one expert's [N, K] (w.chunk(E) -> w[0].T): read in place
    per_expert = [c[0].T for c in w_nk.chunk(E, dim=0)]
    with torch.no_grad(), Recorder() as rec:
        (y2,) = torch_npu.npu_grouped_matmul(
            [x], per_expert, group_list=counts, split_item=3, group_type=0, group_list_type=1
        )
    close(y2, want)
    assert "aten.stack" not in rec.ops and not rec.matmuls()
    # separate tensors (no common storage) are stacked
    (y3,) = torch_npu.npu_grouped_matmul(
        [x], [w.T.clone().T for w in per_expert], group_list=counts.cumsum(0), split_item=2, group_type=0
    )
    close(y3, want)
    # the .List overload: cumulative ends as Python ints, group_type None
    (y4,) = torch_npu.npu_grouped_matmul(
        [x], [w_nk.transpose(1, 2)], group_list=counts.cumsum(0).tolist(), split_item=2
    )
    close(y4, want)


@pytest.mark.parametrize("group_list_type", [0, 1])
def test_gmm_split_k_weight_gradient(torch_npu, group_list_type):
    E, K, N = 4, 12, 18
    counts = _groups(E)
    M = int(counts.sum())
    x, dy = torch.randn(M, K), torch.randn(M, N)
    gl = counts if group_list_type == 1 else counts.cumsum(0)
    with Recorder() as rec:
        (dw,) = torch_npu.npu_grouped_matmul(
            [x.T], [dy], bias=None, group_list=gl, split_item=3, group_type=2, group_list_type=group_list_type
        )
    assert dw.shape == (E, K, N) and not rec.matmuls()
    start, want = 0, torch.zeros(E, K, N, dtype=torch.float64)
    for e, c in enumerate(counts.tolist()):
        want[e] = x[start : start + c].double().T @ dy[start : start + c].double()
        start += c
    close(dw, want)
    assert torch.equal(dw[1], torch.zeros(K, N))  # the empty group's gradient is exactly zero


def test_gmm_independent_lists(torch_npu):
    xs = [torch.randn(5, 8), torch.randn(0, 8), torch.randn(2, 3, 8)]
    ws = [torch.randn(8, 6), torch.randn(8, 6), torch.randn(8, 6)]
    with Recorder() as rec:
        ys = torch_npu.npu_grouped_matmul(xs, ws, bias=None, group_list=None, split_item=0, group_type=-1)
    assert not rec.matmuls()
    for x, w, y in zip(xs, ws, ys, strict=True):
        assert y.shape == (*x.shape[:-1], 6)
        close(y, x.double() @ w.double())
    # different K and N per pair, weights as transposed views (w.t() of [N, K])
    xs = [torch.randn(4, 8), torch.randn(3, 10)]
    w_nk = [torch.randn(7, 8), torch.randn(5, 10)]
    ys = torch_npu.npu_grouped_matmul(xs, [w.t() for w in w_nk], group_list=None, split_item=0, group_type=-1)
    for x, w, y in zip(xs, w_nk, ys, strict=True):
        close(y, x.double() @ w.double().T)
    bias = [torch.randn(7), torch.randn(5)]
    ys = torch_npu.npu_grouped_matmul(xs, [w.t() for w in w_nk], bias=bias, split_item=0, group_type=-1)
    close(ys[1], xs[1].double() @ w_nk[1].double().T + bias[1].double())


def test_gmm_errors(torch_npu):
    x, w, gl = torch.randn(6, 4), torch.randn(2, 4, 3), torch.tensor([2, 4])
    with pytest.raises(ValueError, match="group_type must be passed"):
        torch_npu.npu_grouped_matmul([x], [w], group_list=gl, split_item=2)
    with pytest.raises(NotImplementedError, match="antiquant_scale"):
        torch_npu.npu_grouped_matmul([x], [w], antiquant_scale=[torch.ones(3)], group_list=gl, group_type=0)
    with pytest.raises(TypeError, match="int64 tensor.*histc"):
        torch_npu.npu_grouped_matmul([x], [w], group_list=gl.float(), split_item=2, group_type=0)
    with pytest.raises(ValueError, match="3 groups but weight has 2 experts"):
        torch_npu.npu_grouped_matmul([x], [w], group_list=torch.tensor([1, 2, 3]), split_item=2, group_type=0)
    with pytest.raises(TypeError, match="list of tensors"):
        torch_npu.npu_grouped_matmul(x, [w], group_list=gl, split_item=2, group_type=0)
    with pytest.raises(TypeError, match="weight\\[0\\] is torch.bfloat16"):
        torch_npu.npu_grouped_matmul([x], [w.bfloat16()], group_list=gl, split_item=2, group_type=0)
    with pytest.raises(ValueError, match="split_item must be 2 or 3"):
        torch_npu.npu_grouped_matmul([x.T], [torch.randn(6, 3)], group_list=gl, split_item=0, group_type=2)
    with pytest.raises(NotImplementedError, match="act_type"):
        torch_npu.npu_grouped_matmul([x], [w], group_list=gl, split_item=2, group_type=0, act_type=5)


# ---- torch_npu-style call sequences (written from reading LLaMA-Factory's NPU MoE plugin) ----
class Gmm(torch.autograd.Function):
    """The usual hand-written GMM autograd on torch_npu: dx = GMM(dy, w^T) split M, dW = GMM split K."""

    @staticmethod
    def forward(ctx, x, weight, group_list):
        import torch_npu

        ctx.save_for_backward(x, weight, group_list)
        return torch_npu.npu_grouped_matmul(
            [x], [weight], bias=None, group_list=group_list, split_item=2, group_type=0, group_list_type=1
        )[0]

    @staticmethod
    def backward(ctx, dy):
        import torch_npu

        x, weight, group_list = ctx.saved_tensors
        dx = torch_npu.npu_grouped_matmul(
            [dy],
            [weight.transpose(1, 2)],
            bias=None,
            group_list=group_list,
            split_item=2,
            group_type=0,
            group_list_type=1,
        )[0]
        dw = torch_npu.npu_grouped_matmul(
            [x.T], [dy], bias=None, group_list=group_list, split_item=3, group_type=2, group_list_type=1
        )[0]
        return dx, dw, None


def experts_on_torch_npu(hidden, idx, probs, gate_up_kn, down_kn, num_experts):
    """permute -> GMM -> npu_swiglu -> GMM -> unpermute, weights [E, K, N] (as the Qwen3-VL-MoE experts store them)."""
    import torch_npu

    permuted, row_map = torch_npu.npu_moe_token_permute(hidden, idx.to(torch.int32))
    counts = torch.histc(idx.float(), bins=num_experts, min=0, max=num_experts).long()
    inter = torch_npu.npu_swiglu(Gmm.apply(permuted, gate_up_kn, counts), dim=-1)
    return torch_npu.npu_moe_token_unpermute(Gmm.apply(inter, down_kn, counts), row_map, probs=probs)


def experts_eager(hidden, idx, probs, gate_up_kn, down_kn):
    out = torch.zeros_like(hidden)
    for t in range(hidden.shape[0]):
        for k in range(idx.shape[1]):
            e = idx[t, k]
            gate, up = (hidden[t] @ gate_up_kn[e]).chunk(2)
            out[t] += probs[t, k] * ((F.silu(gate) * up) @ down_kn[e])
    return out


def test_llamafactory_style_fused_experts_forward_and_backward(torch_npu):
    T, K, E, H, inter = 11, 2, 4, 16, 12
    hidden = torch.randn(T, H, dtype=torch.float64)
    idx = torch.randint(0, E, (T, K))
    idx[:, 0] = torch.where(idx[:, 0] == 3, 0, idx[:, 0])
    idx[:, 1] = torch.where(idx[:, 1] == 3, 1, idx[:, 1])  # expert 3 gets no token
    probs = torch.rand(T, K, dtype=torch.float64).softmax(-1)
    gate_up = torch.randn(E, H, 2 * inter, dtype=torch.float64) / 4
    down = torch.randn(E, inter, H, dtype=torch.float64) / 4
    leaves = [t.float().requires_grad_() for t in (hidden, probs, gate_up, down)]
    refs = [t.clone().requires_grad_() for t in (hidden, probs, gate_up, down)]
    with Recorder() as rec:
        out = experts_on_torch_npu(leaves[0], idx, leaves[1], leaves[2], leaves[3], E)
        dy = torch.randn(T, H)
        out.backward(dy)
    want = experts_eager(refs[0], idx, refs[1], refs[2], refs[3])
    want.backward(dy.double())
    close(out, want)
    for got, ref in zip(leaves, refs, strict=True):
        close(got.grad, ref.grad)
    assert not rec.matmuls(), rec.matmuls()
    for op in (
        "custom.moe_token_permute",
        "custom.grouped_matmul",
        "custom.swiglu",
        "custom.moe_token_unpermute",
        "custom.swiglu_grad",
        "custom.moe_token_unpermute_grad",
    ):
        assert op in rec.ops, op


def test_hybrid_gmm_independent_per_expert_calls(torch_npu):
    """Per-expert lists (split sizes from a histogram), as the transformers-4 Qwen3-MoE NPU path does it."""
    E, H, N = 3, 8, 10
    sizes = [4, 0, 3]
    xs = list(torch.randn(sum(sizes), H).split(sizes))
    ws = [torch.randn(N, H) for _ in range(E)]  # nn.Linear weights
    ys = torch_npu.npu_grouped_matmul(xs, [w.t() for w in ws], bias=None, group_list=None, split_item=0, group_type=-1)
    for x, w, y in zip(xs, ws, ys, strict=True):
        close(y, x.double() @ w.double().T)
    (dw,) = torch_npu.npu_grouped_matmul(
        [torch.cat(xs).t()],
        [torch.cat(ys)],
        bias=None,
        group_list=torch.tensor(sizes),
        split_item=3,
        group_type=2,
        group_list_type=1,
    )
    assert dw.shape == (E, H, N)
    close(dw[2], xs[2].double().T @ ys[2].double())
