"""The simulated NPU (ascendc_ops.testing.simulated_npu, csrc/sim_npu): tensors on "npu" run the real
PrivateUse1 launchers of csrc/torch/npu (allocation, NPU tiling for 48 vector / 24 cube cores, host
reads, launch order), with the ACL launch replaced by the twin kernel on the same host memory. Every
result is compared with the same call on CPU; launch counts prove the launcher, not a CPU fallback, ran.
Unverified here: the ACL launch itself, streams and asynchrony, device numbers, real device memory.

The cases run in a fresh process (test_every_case_in_a_fresh_process): torch's autograd engine sizes
its per-device queues at the first backward of a process, so the device must exist before it, and the
renamed PrivateUse1 device must not leak into the other test files (opcheck then asks torch.npu for RNG state)."""

import contextlib
import os
import re
import subprocess
import sys

import pytest
import torch

import ascendc_ops
from ascendc_ops import testing
from ascendc_ops._backends import CPU_TWIN, NPU
from ascendc_ops.ops.attention_args import compressed_mask

transformers = pytest.importorskip("transformers")
import ascendc_ops.patching as K  # noqa: E402
from test_moe_models import tiny_moe  # noqa: E402
from test_patching import ALL as DENSE_KERNELS, fwd_bwd, ids, tiny  # noqa: E402

FRESH_PROCESS = "ASCENDC_OPS_SIMULATED_NPU_PROCESS"


@pytest.fixture(scope="module")
def npu():
    if os.environ.get(FRESH_PROCESS) != "1":
        pytest.skip("runs in its own process: test_every_case_in_a_fresh_process")
    testing.simulated_npu()
    return torch.device(testing.NAME)


@pytest.mark.slow
def test_every_case_in_a_fresh_process():
    if os.environ.get(FRESH_PROCESS) == "1":
        pytest.skip("this is the fresh process")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__],
        env={**os.environ, FRESH_PROCESS: "1"},
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
    # every case ran there: the only skip is this runner itself
    assert re.search(r"^\d+ passed, 1 skipped in", result.stdout, re.M), result.stdout[-2000:]


@contextlib.contextmanager
def launched(kernel):
    """Asserts `kernel` went through the simulated ACL launch while the block ran."""
    before = testing.launch_count(kernel)
    yield
    assert testing.launch_count(kernel) > before, f"{kernel} was not launched on the simulated NPU"


def same(got, ref):
    """Equal to the CPU result, tensor for tensor (nested tuples / lists), with got on "npu"."""
    if isinstance(ref, (tuple, list)):
        assert len(got) == len(ref)
        for g, r in zip(got, ref, strict=True):
            same(g, r)
    else:
        assert got.device.type == testing.NAME
        torch.testing.assert_close(got.cpu(), ref)


def test_a_plain_import_has_no_npu_and_the_simulator_adds_it(npu):
    probe = "import ascendc_ops, torch; print(ascendc_ops.backends(), torch._C._get_privateuse1_backend_name())"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == [f"['{CPU_TWIN}']", "privateuseone"]
    assert ascendc_ops.backends() == [CPU_TWIN, NPU]
    x = torch.randn(3, 8)
    y = x.to("npu")
    assert y.device == torch.device("npu", 0) and y.is_npu
    torch.testing.assert_close((y.t() @ y).cpu(), x.t() @ x)  # views and a CPU-fallback matmul


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_npu_names_forward_and_backward(npu, dtype):
    tnpu = ascendc_ops.npu
    suffix = "float" if dtype == torch.float32 else "bfloat16"
    x, dy = torch.randn(4, 6, 64, dtype=dtype), torch.randn(4, 6, 32, dtype=dtype)
    with launched(f"swiglu_{suffix}"):
        same(tnpu.npu_swiglu(x.to(npu)), tnpu.npu_swiglu(x))
    with launched(f"swiglu_grad_{suffix}"):
        same(tnpu.npu_swiglu_backward(dy.to(npu), x.to(npu)), tnpu.npu_swiglu_backward(dy, x))
    q, cos, sin = (
        torch.randn(2, 6, 4, 16, dtype=dtype),
        torch.randn(1, 6, 1, 16, dtype=dtype),
        torch.randn(1, 6, 1, 16, dtype=dtype),
    )
    with launched(f"rope_{suffix}"):
        same(tnpu.npu_rotary_mul(q.to(npu), cos.to(npu), sin.to(npu)), tnpu.npu_rotary_mul(q, cos, sin))
    k = torch.randn(2, 6, 2, 16, dtype=dtype)
    with launched(f"apply_rope_{suffix}"):  # in place: the "npu" tensors themselves hold the result
        qn, kn = q.to(npu), k.to(npu)
        got = tnpu.npu_apply_rotary_pos_emb(qn, kn, cos.to(npu), sin.to(npu))
        assert got[0] is qn and got[1] is kn
        same((qn, kn), tnpu.npu_apply_rotary_pos_emb(q.clone(), k.clone(), cos, sin))
    g = torch.rand(64, dtype=dtype) + 0.5
    with launched(f"rms_norm_{suffix}_{suffix}"):
        same(tnpu.npu_rms_norm(x.to(npu), g.to(npu)), tnpu.npu_rms_norm(x, g))
    with launched(f"add_rms_norm_{suffix}_{suffix}"):
        same(tnpu.npu_add_rms_norm(x.to(npu), x.to(npu), g.to(npu)), tnpu.npu_add_rms_norm(x, x, g))
    with launched(f"rms_norm_{suffix}_{suffix}"):  # the gemma op is rms_norm's kernel with gammaOffset 1
        same(tnpu.npu_gemma_rms_norm(x.to(npu), g.to(npu)), tnpu.npu_gemma_rms_norm(x, g))
    gated = torch.ops.custom.gated_rms_norm  # no torch_npu name
    with launched(f"gated_rms_norm_{suffix}_{suffix}"):
        same(gated(x.to(npu), g.to(npu), x.to(npu)), gated(x, g, x))
    _, grstd = gated(x, g, x)
    with launched(f"gated_rms_norm_grad_{suffix}_{suffix}"), launched(f"rms_norm_dgamma_{suffix}"):
        args = (x, x, grstd, g, x)
        same(
            torch.ops.custom.gated_rms_norm_grad(*(t.to(npu) for t in args)),
            torch.ops.custom.gated_rms_norm_grad(*args),
        )
    y, rstd = tnpu.npu_rms_norm(x, g)
    with launched(f"rms_norm_dgamma_{suffix}"):
        same(
            tnpu.npu_rms_norm_backward(x.to(npu), x.to(npu), g.to(npu), rstd.to(npu)),
            tnpu.npu_rms_norm_backward(x, x, g, rstd),
        )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cross_entropy_launchers(npu, dtype):
    """npu_cross_entropy_loss (its [N]-sized reduction in torch on the device) and its backward, with a weight,
    label smoothing, ignored rows and the z-loss, rows over 48 vector cores and C in chunks."""
    tnpu = ascendc_ops.npu
    suffix = "float" if dtype == torch.float32 else "bfloat16"
    x, t, w = torch.randn(7, 20000, dtype=dtype), torch.randint(0, 20000, (7,)), torch.rand(20000) + 0.5
    t[2] = -100
    kw = dict(label_smoothing=0.1, lse_square_scale_for_zloss=1e-3)
    for reduction in ("mean", "none"):
        with launched(f"cross_entropy_loss_{suffix}"):
            on = tnpu.npu_cross_entropy_loss(x.to(npu), t.to(npu), w.to(npu), reduction, **kw, return_zloss=True)
            same(on, tnpu.npu_cross_entropy_loss(x, t, w, reduction, **kw, return_zloss=True))
        loss, logp, zloss, lse = (o.cpu() for o in on)
        gl, gz = torch.rand(loss.shape).to(dtype), torch.rand(zloss.shape).to(dtype)
        args = (gl, logp, t, w, gz, lse)
        with launched(f"cross_entropy_loss_grad_{suffix}"):
            same(
                tnpu.npu_cross_entropy_loss_backward(*(a.to(npu) for a in args), reduction=reduction, **kw),
                tnpu.npu_cross_entropy_loss_backward(*args, reduction=reduction, **kw),
            )


def test_autograd_through_the_launchers(npu):
    def grads(device):
        x = torch.randn(8, 64, generator=torch.Generator().manual_seed(0)).to(device).requires_grad_()
        g = torch.linspace(0.5, 1.5, 64).to(device).requires_grad_()
        y, _ = ascendc_ops.rms_norm(ascendc_ops.swiglu(torch.cat((x, x * 2), -1)), g, 1e-6)
        y.square().sum().backward()
        return x.grad, g.grad

    ref = grads("cpu")
    with launched("rms_norm_grad_float_float"), launched("rms_norm_dgamma_float"), launched("swiglu_grad_float"):
        same(grads(npu), ref)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_moe_ops_and_their_host_reads(npu, dtype):
    tnpu = ascendc_ops.npu
    suffix = "float" if dtype == torch.float32 else "bfloat16"
    tokens, experts = torch.randn(10, 32, dtype=dtype), 4
    indices = torch.randint(0, experts, (10, 2), dtype=torch.int32)
    with launched("moe_sort_chunks_int32"), launched(f"moe_token_permute_{suffix}"):
        permuted, order = tnpu.npu_moe_token_permute(tokens.to(npu), indices.to(npu))
    ref_permuted, ref_order = tnpu.npu_moe_token_permute(tokens, indices)
    same((permuted, order), (ref_permuted, ref_order))
    probs = torch.softmax(torch.randn(10, 2), -1).to(dtype)
    with launched(f"moe_token_unpermute_{suffix}_{suffix}"):
        same(
            tnpu.npu_moe_token_unpermute(permuted, order, probs.to(npu)),
            tnpu.npu_moe_token_unpermute(ref_permuted, ref_order, probs),
        )
    w = torch.randn(experts, 32, 16, dtype=dtype) * 0.1
    counts = torch.bincount(indices.flatten().long(), minlength=experts)
    # split_item 0: one output per expert, so the wrapper reads group_list back to the host (.tolist())
    with launched(f"grouped_matmul_{suffix}"):
        got = tnpu.npu_grouped_matmul(
            [permuted], [w.to(npu)], group_list=counts.to(npu), group_type=0, group_list_type=1, split_item=0
        )
    same(
        got,
        tnpu.npu_grouped_matmul([ref_permuted], [w], group_list=counts, group_type=0, group_list_type=1, split_item=0),
    )
    dy = torch.randn(20, 16, dtype=dtype)
    with launched(f"grouped_matmul_weight_grad_{suffix}"):
        same(
            tnpu.npu_grouped_matmul(
                [permuted.T], [dy.to(npu)], group_list=counts.to(npu), group_type=2, group_list_type=1, split_item=3
            ),
            tnpu.npu_grouped_matmul(
                [ref_permuted.T], [dy], group_list=counts, group_type=2, group_list_type=1, split_item=3
            ),
        )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_fusion_attention_launches_the_mix_kernel(npu, dtype):
    """The typed MIX_AIC_1_2 launch on the NPU tiling (24 core groups): GQA BSND causal, and TND with its
    cumulative lengths in the tiling bytes, each equal to the CPU twin's result."""
    suffix = {torch.float32: "float", torch.bfloat16: "bfloat16"}[dtype]
    causal = torch.from_numpy(compressed_mask())
    q, k, v = (torch.randn(2, s, n, 64).to(dtype) for s, n in ((70, 4), (90, 2), (90, 2)))
    args = {"atten_mask": causal, "scale": 0.125, "sparse_mode": 3}
    with launched(f"fusion_attention_{suffix}"):
        got = ascendc_ops.fusion_attention(
            q.to(npu), k.to(npu), v.to(npu), 4, "BSND", **{**args, "atten_mask": causal.to(npu)}
        )
    same(got, ascendc_ops.fusion_attention(q, k, v, 4, "BSND", **args))
    lens = {"actual_seq_qlen": [30, 70], "actual_seq_kvlen": [40, 90]}
    tq, tk, tv = q[0], k[0], v[0]
    with launched(f"fusion_attention_{suffix}"):
        got = ascendc_ops.fusion_attention(
            tq.to(npu), tk.to(npu), tv.to(npu), 4, "TND", **{**args, "atten_mask": causal.to(npu)}, **lens
        )
    same(got, ascendc_ops.fusion_attention(tq, tk, tv, 4, "TND", **args, **lens))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_fusion_attention_grad_launches_the_mix_kernel(npu, dtype):
    """The backward's typed MIX_AIC_1_2 launch on the NPU tiling: GQA BSND causal with sinks (dsink too) and TND,
    each equal to the CPU twin's (the sums' order does not depend on the core count); no keys: zero dq."""
    suffix = {torch.float32: "float", torch.bfloat16: "bfloat16"}[dtype]
    causal = torch.from_numpy(compressed_mask())
    args = {"atten_mask": causal, "scale": 0.125, "sparse_mode": 3}
    lens = {"actual_seq_qlen": [30, 70], "actual_seq_kvlen": [40, 90]}
    bsnd = [torch.randn(2, s, n, 64).to(dtype) for s, n in ((70, 4), (90, 2), (90, 2))]
    for qkv, layout, extra in ((bsnd, "BSND", {"sink": torch.randn(4)}), ([x[0] for x in bsnd], "TND", lens)):
        out, smax, ssum = ascendc_ops.fusion_attention(*qkv, 4, layout, **args, **extra)
        inputs = (*qkv, torch.randn_like(out), smax, ssum, out)
        on_npu = {name: x.to(npu) if torch.is_tensor(x) else x for name, x in {**args, **extra}.items()}
        with launched(f"fusion_attention_grad_{suffix}"):
            got = ascendc_ops.fusion_attention_grad(*(x.to(npu) for x in inputs), 4, layout, **on_npu)
        want = ascendc_ops.fusion_attention_grad(*inputs, 4, layout, **args, **extra)
        assert want[3].shape == ((4,) if extra.get("sink") is not None else (0,))
        same(got, want)
    # no keys: the dq tasks find no key block and write zeros
    q, k = torch.randn(1, 2, 3, 64).to(dtype), torch.randn(1, 2, 0, 64).to(dtype)
    out, smax, ssum = ascendc_ops.fusion_attention(q, k, k, 2, "BNSD")
    inputs = (q, k, k, torch.randn_like(out), smax, ssum, out)
    with launched(f"fusion_attention_grad_{suffix}"):
        got = ascendc_ops.fusion_attention_grad(*(x.to(npu) for x in inputs), 2, "BNSD")
    same(got, ascendc_ops.fusion_attention_grad(*inputs, 2, "BNSD"))
    assert bool((got[0].cpu() == 0).all())


def test_fusion_attention_dropout_launches_on_npu(npu):
    """Dropout (keep_prob < 1 with drop_mask) through the NPU launchers of both kernels: the mask reaches the
    kernels as their drop_mask input, each result equal to the CPU twin's."""
    torch.manual_seed(12)
    q, k, v = (torch.randn(1, 2, s, 64) for s in (37, 45, 45))  # BNSD, odd S2: rows at every bit shift
    mask = torch.randint(0, 256, ((2 * 37 * 45 + 7) // 8,), dtype=torch.uint8)
    args = {"scale": 0.125, "keep_prob": 0.8}
    with launched("fusion_attention_float"):
        got = ascendc_ops.fusion_attention(q.to(npu), k.to(npu), v.to(npu), 2, "BNSD", drop_mask=mask.to(npu), **args)
    want = ascendc_ops.fusion_attention(q, k, v, 2, "BNSD", drop_mask=mask, **args)
    same(got, want)
    inputs = (q, k, v, torch.randn_like(want[0]), want[1], want[2], want[0])
    with launched("fusion_attention_grad_float"):
        got = ascendc_ops.fusion_attention_grad(*(x.to(npu) for x in inputs), 2, "BNSD", drop_mask=mask.to(npu), **args)
    same(got, ascendc_ops.fusion_attention_grad(*inputs, 2, "BNSD", drop_mask=mask, **args))


def test_patching_a_model_on_npu_applies_every_kernel(npu):
    """The backend-name contract: a model whose parameters are on "npu" is patched (it was not when
    backends() said "npu-direct-launch" and the kernels asked for "npu")."""
    model = tiny()
    x = ids()
    ref = fwd_bwd(model, x)
    on_npu = tiny().to(npu)
    report = K.apply_default_kernels(on_npu)
    assert report.applied == DENSE_KERNELS and not report.skipped, report
    with launched("apply_rope_float"), launched("rms_norm_grad_float_float"), launched("swiglu_grad_float"):
        got = fwd_bwd(on_npu, x.to(npu))
    (logits, loss, grads), (ref_logits, ref_loss, ref_grads) = got, ref
    torch.testing.assert_close(logits.cpu(), ref_logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(loss.cpu(), ref_loss, atol=1e-5, rtol=0)
    for n in ref_grads:
        torch.testing.assert_close(grads[n].cpu(), ref_grads[n], atol=1e-5, rtol=1e-4, msg=n)


def test_moe_model_on_npu(npu):
    model = tiny_moe("qwen3_moe")
    x = ids()
    ref = fwd_bwd(model, x)
    on_npu = tiny_moe("qwen3_moe").to(npu)
    report = K.apply_default_kernels(on_npu)
    assert "fused_moe" in report.applied, report
    with launched("grouped_matmul_float"), launched("grouped_matmul_weight_grad_float"):
        got = fwd_bwd(on_npu, x.to(npu))
    torch.testing.assert_close(got[0].cpu(), ref[0], atol=1e-5, rtol=0)
    for n in ref[2]:
        torch.testing.assert_close(got[2][n].cpu(), ref[2][n], atol=1e-5, rtol=1e-4, msg=n)


def test_torch_compile_fullgraph_aot_eager_on_npu(npu):
    torch._dynamo.reset()
    model = tiny()
    x = ids()
    ref = fwd_bwd(model, x)
    on_npu = tiny().to(npu)
    K.apply_default_kernels(on_npu)
    compiled = torch.compile(on_npu, fullgraph=True, backend="aot_eager")  # any graph break is an error
    with launched("rms_norm_float_float"), launched("swiglu_grad_float"):
        logits, loss, grads = fwd_bwd(compiled, x.to(npu))
    torch.testing.assert_close(logits.cpu(), ref[0], atol=1e-5, rtol=0)
    for n in ref[2]:
        torch.testing.assert_close(grads[n].cpu(), ref[2][n], atol=1e-5, rtol=1e-4, msg=n)
    torch._dynamo.reset()
