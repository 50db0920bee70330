"""fusion_attention_grad (dq, dk, dv) against the float64 golden (ops/attention_reference.py,
fusion_attention_grad_reference) under the accuracy standard, with the double benchmark against PyTorch's own
attention backward (autograd of eager attention) in the same dtype, measured in the same run.

dS = P * (dP - D) sums to zero along each row, so dq and dk cancel (and dv = P^T dy sums dy's signs): an
element's relative error is unbounded where the golden is small against the terms that make it, and PyTorch's own
fp16 / bf16 backward misses the literal MERE. So each gradient is judged (`assert_cancelling`) by the harness's
criterion (harness/verify/attention_grad_standard.py, which `ascendc-ops verify` applies to
fusion_attention_grad too): the fp32 evaluation bound of the kernel's formula on every element (`grad_bounds`,
which also charges the inputs' own error: attention_in and the softmax stats come from our forward, as in
training), the double benchmark (its ratios and sanity bound), and the literal MERE wherever PyTorch's result in
the same run meets it; PyTorch's backward and the per-sequence split are harness/families/attention.py's.

Cases: fp16/bf16/fp32, every layout, GQA groups 1-16, head dims 64-256 and Dv < Dk, Sq != Skv under both causal
alignments and bands, full masks with fully masked rows (their dq and the unattended keys' dk/dv exactly 0),
packed TND sequences of 1..2048 tokens, outlier inputs, stats from the golden; autograd through fusion_attention
equals a direct fusion_attention_grad call; opcheck. The judge itself is checked on the golden
rounded to the dtype (passes) and on perturbed gradients (fail). The twin's sanitizer is on."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace

import numpy as np
import pytest
import torch
from torch.library import opcheck

import test_attention as F
from accuracy import np64
from ascendc_ops import precision as P
from ascendc_ops.harness.families import attention as G
from ascendc_ops.harness.verify import attention_grad_standard as S
from ascendc_ops.ops import attention_reference as R
from ascendc_ops.ops.attention_args import TOCKENS_MAX

MAX = TOCKENS_MAX
COMPRESSED = F.COMPRESSED


@dataclass
class Case:
    """One backward problem in its layout: inputs, our forward's outputs, and what the judge compares with."""

    name: str
    dtype: torch.dtype
    layout: str
    n1: int
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    dy: torch.Tensor
    kw: dict  # fusion_attention's keyword arguments after head_num and input_layout
    fwd: tuple = ()  # (attention_out, softmax_max, softmax_sum) of our forward
    judged: dict = field(default_factory=dict)

    def args(self, grads=False):
        """fusion_attention_grad's positional arguments (the forward's outputs taken back) or the forward's."""
        kw = self.kw
        tail = (kw["atten_mask"], kw["scale"], kw["pre_tockens"], kw["next_tockens"])
        tail += (kw["actual_seq_qlen"], kw["actual_seq_kvlen"], kw["sparse_mode"], kw.get("softcap", 0.0))
        if not grads:
            return (self.q, self.k, self.v, self.n1, self.layout, *tail, 1.0, kw.get("sink"))  # keep_prob 1
        out, smax, ssum = self.fwd
        sink = () if kw.get("sink") is None else (1.0, None, kw["sink"])  # keep_prob, drop_mask, sink
        return (self.q, self.k, self.v, self.dy, smax, ssum, out, self.n1, self.layout, *tail, *sink)

    def golden(self, with_sink=False):
        kw = {**self.kw, "atten_mask": None if self.kw["atten_mask"] is None else self.kw["atten_mask"].numpy()}
        return R.fusion_attention_grad_reference(
            np64(self.q), np64(self.k), np64(self.v), np64(self.dy), self.n1, self.layout, with_sink=with_sink, **kw
        )


def make(
    dtype,
    layout,
    b,
    n1,
    n2,
    s1,
    s2,
    d,
    dv=None,
    mask=None,
    mode=0,
    pre=MAX,
    nxt=MAX,
    data=None,
    label="",
    softcap=0.0,
    sink=None,
):
    """A BSH/SBH/BSND/BNSD case of random N(0, 1) inputs (or `data`, [B, N, S, D] each) through our forward."""
    dv = dv or d
    torch.manual_seed(zlib.crc32(repr((layout, b, n1, n2, s1, s2, d, dv, mode, label)).encode()))
    q, k, v = data or (torch.randn(b, n1, s1, d), torch.randn(b, n2, s2, d), torch.randn(b, n2, s2, dv))
    dy = torch.randn(b, n1, s1, dv)
    q, k, v, dy = (F.to_layout(t.to(dtype), layout) for t in (q, k, v, dy))
    kw = dict(atten_mask=mask, scale=1.0 / d**0.5, pre_tockens=pre, next_tockens=nxt)
    kw.update(actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=mode, softcap=softcap)
    name = f"{label or layout} {F.dname(dtype)} b{b} n{n1}/{n2} s{s1}x{s2} d{d}/{dv} mode{mode} cap{softcap}"
    if sink is not None:
        kw["sink"], name = sink, name + " sink"
    return forward(Case(name, dtype, layout, n1, q, k, v, dy, kw))


def make_tnd(
    lens_q, lens_k, n1, n2, d, dtype=torch.float16, mask=None, mode=0, pre=MAX, nxt=MAX, label="TND", zeros=0, sink=None
):
    """Packed sequences of N(0, 1) inputs through our forward; `zeros` trailing 0s end the cumulative lengths."""
    torch.manual_seed(sum(lens_q) * 31 + mode)
    q, k, v = torch.randn(sum(lens_q), n1, d), torch.randn(sum(lens_k), n2, d), torch.randn(sum(lens_k), n2, d)
    dy = torch.randn(sum(lens_q), n1, d)
    ends = [np.cumsum(lens).tolist() + [0] * zeros for lens in (lens_q, lens_k)]
    kw = dict(atten_mask=mask, scale=1.0 / d**0.5, pre_tockens=pre, next_tockens=nxt)
    kw.update(actual_seq_qlen=ends[0], actual_seq_kvlen=ends[1], sparse_mode=mode)
    name = f"{label} {F.dname(dtype)} n{n1}/{n2} lens {lens_q}x{lens_k} d{d} mode{mode}"
    if sink is not None:
        kw["sink"], name = sink, name + " sink"
    return forward(Case(name, dtype, "TND", n1, *(t.to(dtype) for t in (q, k, v, dy)), kw))


def forward(case: Case) -> Case:
    case.fwd = tuple(torch.ops.custom.fusion_attention(*case.args()))
    return case


# ---------------------------------------------------------------- the judge (the harness's, one implementation)
def reference(case: Case):
    """(golden, PyTorch's grads, bounds), each (dq, dk, dv) in the case's layout; computed once per case."""
    if not case.judged:
        out, smax, ssum = case.fwd
        t = dict(query=case.q, key=case.k, value=case.v, dy=case.dy, atten_mask=case.kw["atten_mask"])
        t.update(softmax_max=smax, softmax_sum=ssum, attention_in=out)
        attrs = {"head_num": case.n1, "input_layout": case.layout, **case.kw}
        second = G.torch_fusion_attention_grad(t, attrs)
        case.judged.update(golden=case.golden(), second=second, bounds=G.fusion_attention_grad_bounds(t, attrs))
    return case.judged["golden"], case.judged["second"], case.judged["bounds"]


def assert_cancelling(actual, golden, second, dtype, label, bound) -> None:
    """One gradient of `dtype` (shape and dtype checked) under the harness's criterion, check_cancelling: the fp32
    evaluation bound `bound` on every element, the double benchmark against `second`, the literal MERE where
    `second` (the control, this run) meets it."""
    assert tuple(actual.shape) == golden.shape and actual.dtype == dtype, (label, actual.shape, actual.dtype)
    check = S.check_cancelling(np64(actual), golden, np64(second), dtype, bound)
    assert check.passed, f"{label}: {'; '.join(check.failures)}\n  {check.describe()}"


def judge(case: Case, grads, how="") -> None:
    """dq, dk and dv by assert_cancelling: dv = P^T dy is a signed sum too (dy's signs), and PyTorch's own fp16
    dv misses the literal MERE as its dq and dk do."""
    golden, second, bounds = reference(case)
    for name, got, g, s, b in zip(("dq", "dk", "dv"), grads, golden, second[:3], bounds[:3], strict=True):
        assert_cancelling(got, g, s, case.dtype, f"{case.name}{how} {name}", bound=b)


def judge_sink(case: Case, dsink, how="") -> None:
    """d_sink (fp32 [N1]) against the golden's, PyTorch's in the dtype and its fp32 bound: judged in the inputs'
    dtype, since D comes from attention_out in it."""
    golden = case.golden(with_sink=True)[3]
    _, second, bounds = reference(case)
    assert dsink.dtype == torch.float32 and tuple(dsink.shape) == (case.n1,), (case.name, dsink.shape, dsink.dtype)
    check = S.check_cancelling(np64(dsink), golden, np64(second[3]), case.dtype, bounds[3])
    assert check.passed, f"{case.name}{how} d_sink: {'; '.join(check.failures)}\n  {check.describe()}"


def run(case: Case):
    """dq, dk, dv of the direct call, judged, and its dsink (judged with a sink, else an empty fp32 tensor);
    (dq, dk, dv) returned."""
    *grads, dsink = torch.ops.custom.fusion_attention_grad(*case.args(grads=True))
    for got, t in zip(grads, (case.q, case.k, case.v), strict=True):
        assert got.shape == t.shape and got.dtype == t.dtype and got.is_contiguous(), case.name
    judge(case, grads)
    if case.kw.get("sink") is None:
        assert dsink.shape == (0,) and dsink.dtype == torch.float32, case.name
    else:
        judge_sink(case, dsink)
    return tuple(grads)


# ---------------------------------------------------------------- the judge on a stand-in
def rounded_golden(case: Case):
    return tuple(torch.from_numpy(g).to(case.dtype) for g in reference(case)[0])


@pytest.mark.parametrize("dtype", F.DTYPES, ids=F.dname)
def test_the_judge_passes_the_rounded_golden_and_fails_a_wrong_gradient(dtype):
    """The golden rounded to the dtype passes; dk off by 4 MERE limits of the dtype, or dq / dk / dv of the
    unmasked problem (a mask ignored), fail: the judge can fail."""
    mask = torch.rand(1, 1, 40, 70) < 0.2
    case = make(dtype, "BSND", 1, 4, 2, 40, 70, 64, mask=mask, mode=1, label="judge")
    dq, dk, dv = rounded_golden(case)
    judge(case, (dq, dk, dv))
    with pytest.raises(AssertionError, match="dk"):
        judge(case, (dq, dk * (1 + 4 * P.THRESHOLDS[P.dtype_name(dtype)]), dv))
    unmasked = forward(replace(case, kw={**case.kw, "atten_mask": None}, judged={}))
    with pytest.raises(AssertionError):
        judge(case, rounded_golden(unmasked))


# ---------------------------------------------------------------- accuracy
@pytest.mark.parametrize("dtype", F.DTYPES, ids=F.dname)
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH", "SBH"])
def test_layouts_and_dtypes(dtype, layout):
    run(make(dtype, layout, 2, 4, 2, 100, 150, 64))


@pytest.mark.parametrize("dtype", F.DTYPES, ids=F.dname)
@pytest.mark.parametrize("d", [64, 128, 256, 80, 96])
def test_head_dims(dtype, d):
    run(make(dtype, "BNSD", 1, 2, 1, 130, 200, d))


@pytest.mark.parametrize("d", [320, 512])
def test_head_dims_past_256(d):
    """Past D 256 an S block holds fewer than 8 rows of dy: D's passes take the few-rows path (they hung before)."""
    run(make(torch.bfloat16, "BNSD", 1, 2, 1, 40, 70, d))


def test_a_head_dim_with_no_backward_block_is_refused():
    q = torch.randn(1, 2, 8, 576, dtype=torch.bfloat16)
    out, smax, ssum = torch.ops.custom.fusion_attention(q, q, q, 2, "BNSD")
    with pytest.raises(ValueError, match="D = 576, Dv = 576 in bfloat16 leave no attention backward block that fits"):
        torch.ops.custom.fusion_attention_grad(q, q, q, out, smax, ssum, out, 2, "BNSD")


@pytest.mark.parametrize("d,dv", [(192, 128), (128, 64), (96, 64)])
def test_value_dim_below_key_dim(d, dv):
    run(make(torch.bfloat16, "BSND", 1, 2, 2, 64, 96, d, dv=dv))


@pytest.mark.parametrize("dtype", F.DTYPES, ids=F.dname)
@pytest.mark.parametrize("mask,mode", [(None, 0), (COMPRESSED, 3)], ids=["no mask", "causal"])
def test_softcap(dtype, mask, mode):
    """Softcapped scores (Gemma 2/3): dS times 1 - tanh^2; keys 83 leave padding in the last block."""
    gen = torch.Generator().manual_seed(5)
    data = tuple(c * torch.randn(2, n, s, 40, generator=gen) for c, n, s in ((3, 4, 77), (3, 2, 83), (1, 2, 83)))
    run(make(dtype, "BSND", 2, 4, 2, 77, 83, 40, mask=mask, mode=mode, data=data, softcap=1.5))


SINK = torch.tensor([-2.0, 0.0, 1.5, 4.0])  # gpt-oss's sinks, one a head
MASKED_ROWS = torch.zeros(150, 140, dtype=torch.bool)
MASKED_ROWS[[3, 131]] = True  # a row with every key masked in each S1 block
SINK_CASES = {
    "bnsd": lambda dtype: make(dtype, "BNSD", 2, 4, 2, 70, 50, 64, sink=SINK),
    # bottom-right causal with Sq > Skv: rows with no key put all their weight on the sink
    "sbh_causal_rows_without_keys": lambda dtype: make(dtype, "SBH", 2, 4, 2, 70, 50, 64, mask=COMPRESSED, mode=3,
                                                       sink=SINK),
    "bsnd_gqa4_masked_rows": lambda dtype: make(dtype, "BSND", 1, 4, 1, 150, 140, 64, mask=MASKED_ROWS, mode=1,
                                                sink=SINK),
    "tnd_causal": lambda dtype: make_tnd([5, 130, 0, 64], [7, 130, 0, 70], 4, 2, 64, dtype=dtype, mask=COMPRESSED,
                                         mode=3, sink=SINK),
}  # fmt: skip


@pytest.mark.parametrize("dtype", F.DTYPES, ids=F.dname)
@pytest.mark.parametrize("which", SINK_CASES)
def test_sink(dtype, which):
    """gpt-oss's sinks: dq, dk, dv and the kernel's d_sink from the grad op (the forward's statistics hold the sinks),
    judged against the golden's, PyTorch's in the dtype and its fp32 bound (run); autograd hands back the op's
    d_sink and dq, dk, dv bit for bit."""
    case = SINK_CASES[which](dtype)
    grads = run(case)
    dsink = torch.ops.custom.fusion_attention_grad(*case.args(grads=True))[3]
    q, k, v, s = (t.detach().clone().requires_grad_() for t in (case.q, case.k, case.v, SINK))
    out = torch.ops.custom.fusion_attention(q, k, v, *case.args()[3:-1], s)[0]
    out.backward(case.dy)
    assert torch.equal(s.grad, dsink), case.name
    for got, want in zip((q.grad, k.grad, v.grad), grads, strict=True):  # autograd is the grad op
        assert torch.equal(got, want), case.name


def test_the_sink_judge_fails_a_wrong_d_sink():
    """d_sink off by 4 MERE limits in one head, or without its minus sign, fails judge_sink: it can fail."""
    case = SINK_CASES["bnsd"](torch.float32)
    dsink = torch.ops.custom.fusion_attention_grad(*case.args(grads=True))[3]
    judge_sink(case, dsink)
    off = dsink.clone()
    off[2] *= 1 + 4 * P.THRESHOLDS["float32"]
    for wrong in (off, -dsink):
        with pytest.raises(AssertionError, match="d_sink"):
            judge_sink(case, wrong)


@pytest.mark.parametrize("groups", [1, 2, 4, 8, 16])
def test_gqa_groups(groups):
    """dk / dv of a kv head sum over its group of query heads."""
    run(make(torch.float16, "BSND", 1, groups * (2 if groups < 16 else 1), 2 if groups < 16 else 1, 40, 200, 64))


@pytest.mark.parametrize("dtype", F.DTYPES, ids=F.dname)
@pytest.mark.parametrize("mode", [2, 3])
@pytest.mark.parametrize("s1,s2", [(200, 200), (70, 300), (300, 70)])
def test_causal_both_alignments(dtype, mode, s1, s2):
    """Top-left and bottom-right causal with Sq != Skv; with Sq > Skv mode 3 leaves rows with no key."""
    run(make(dtype, "BNSD", 1, 2, 1, s1, s2, 64, mask=COMPRESSED, mode=mode))


@pytest.mark.parametrize("pre,nxt", [(16, 0), (40, 8), (0, 200)])
def test_band_mode_4(pre, nxt):
    run(make(torch.float16, "BNSD", 1, 2, 1, 300, 260, 64, mask=COMPRESSED, mode=4, pre=pre, nxt=nxt))


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("shape", [(2, 4, 90, 140), (2, 1, 90, 140), (90, 140)])
def test_full_masks(mode, shape):
    torch.manual_seed(3)
    mask = torch.rand(shape) < 0.3
    run(make(torch.float16, "BNSD", 2, 4, 2, 90, 140, 64, mask=mask, mode=mode))


def test_band_mode_0_with_a_mask():
    mask = torch.rand(1, 1, 100, 100) < 0.1
    run(make(torch.bfloat16, "BNSD", 1, 2, 1, 100, 100, 64, mask=mask, mode=0, pre=20, nxt=5))


@pytest.mark.parametrize("dtype", F.DTYPES, ids=F.dname)
def test_unattended_rows_and_keys_get_exact_zeros(dtype):
    """Rows with every key masked give dq exactly 0; keys no row attends give dk and dv exactly 0 (the stats
    of such rows are -FLT_MAX / FLT_MAX, so the recomputed P is 0 there, never a uniform average)."""
    mask = torch.zeros(1, 1, 50, 70, dtype=torch.bool)
    mask[..., 3, :] = True
    mask[..., 40:, :] = True
    mask[..., :, 10:20] = True
    dq, dk, dv = run(make(dtype, "BNSD", 1, 4, 2, 50, 70, 64, mask=mask, mode=1, label="unattended"))
    assert (dq[:, :, 3] == 0).all() and (dq[:, :, 40:] == 0).all()
    assert (dk[:, :, 10:20] == 0).all() and (dv[:, :, 10:20] == 0).all()
    assert (dq[:, :, :3] != 0).any() and (dk[:, :, :10] != 0).any()


@pytest.mark.parametrize("groups", [1, 3, 24])
@pytest.mark.parametrize("mode,s1,s2", [(3, 400, 100), (2, 100, 400)], ids=["rows without keys", "keys without rows"])
def test_any_deal_gives_the_same_bits(groups, mode, s1, s2):
    """The tasks dealt to 1, 3 or 24 core groups (snake order per pass; a group's steps one stream across its tasks
    and both passes, the cube a step ahead of the AIVs): judged, and the same dq, dk, dv bit for bit as the twin's
    own deal, since each output's sum runs in the order the blocks fix, whichever group takes it; d_sink too (its
    partials' slots and their sum's order are the tiling's). Causal bottom-right with S1 > S2 leaves query tasks
    whose rows keep no key, top-left with S2 > S1 key tasks no row attends: both are written (zeros) in their turn
    between tasks with steps in flight."""
    case = make(torch.bfloat16, "BSND", 1, 4, 2, s1, s2, 64, mask=COMPRESSED, mode=mode, label="deal", sink=SINK)
    want = torch.ops.custom.fusion_attention_grad(*case.args(grads=True))
    torch.ops.ascendc_ops.set_tiling_platform("Ascend910B", 2 * groups, groups, 196352)
    try:
        got = (*run(case), torch.ops.custom.fusion_attention_grad(*case.args(grads=True))[3])
    finally:
        torch.ops.ascendc_ops.reset_tiling_platform()
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True)), case.name
    dq, dk, _, _ = got
    edge = (dq[:, : s1 - s2] if s1 > s2 else dk[:, s1:]).float()
    assert edge.abs().max() == 0 and dq.float().abs().max() > 0


def test_outlier_inputs():
    """FlashAttention-3's outliers: N(0, 1) + N(0, 100) * Bernoulli(0.001)."""
    torch.manual_seed(7)

    def outliers(*shape):
        return torch.randn(*shape) + torch.randn(*shape) * 10 * (torch.rand(*shape) < 0.001)

    data = (outliers(1, 4, 256, 128), outliers(1, 2, 256, 128), outliers(1, 2, 256, 128))
    run(make(torch.bfloat16, "BNSD", 1, 4, 2, 256, 256, 128, data=data, mask=COMPRESSED, mode=3, label="outliers"))


def test_stats_from_the_golden_give_the_same_judgement():
    """softmax_max / softmax_sum as fp32 roundings of the golden's instead of our forward's: the kernel takes
    any stats holding the forward's rows, and the result stays within the same judge."""
    case = make(torch.float16, "BSH", 1, 4, 4, 120, 90, 64, mask=COMPRESSED, mode=3, label="golden stats")
    _, g_max, g_sum = R.fusion_attention_reference(
        *(np64(t) for t in (case.q, case.k, case.v)), 4, "BSH", COMPRESSED.numpy(), case.kw["scale"], sparse_mode=3
    )
    case.fwd = (case.fwd[0], torch.from_numpy(g_max).float(), torch.from_numpy(g_sum).float())
    run(case)


# ---------------------------------------------------------------- TND
@pytest.mark.parametrize("mode", [0, 2, 3, 4])
def test_tnd(mode):
    """Packed sequences (lengths 1..300, an empty one, a trailing zero) under each mask mode."""
    lens_q, lens_k = [5, 130, 0, 1, 64, 300], [7, 130, 0, 3, 64, 310]
    mask, pre, nxt = COMPRESSED, MAX, MAX
    if mode == 0:
        torch.manual_seed(5)
        mask = torch.rand(max(lens_q), max(lens_k)) < 0.2
    if mode == 4:
        pre, nxt = 20, 3
    run(make_tnd(lens_q, lens_k, 4, 2, 64, mask=mask, mode=mode, pre=pre, nxt=nxt, zeros=1))


def test_tnd_lengths_up_to_2048():
    """One packed batch of sequences of 1 to 2048 tokens, causal (bottom-right): the file's one long case."""
    lens = [1, 2048, 17, 640]
    run(make_tnd(lens, lens, 2, 1, 64, mask=COMPRESSED, mode=3))


def test_tnd_matches_each_sequence_alone():
    """TND gives each sequence bit for bit what BSND gives it alone (no sum crosses a sequence's end)."""
    lens_q, lens_k = [5, 130, 1, 64], [7, 130, 3, 64]
    case = make_tnd(lens_q, lens_k, 4, 2, 64, mask=COMPRESSED, mode=3)
    grads = torch.ops.custom.fusion_attention_grad(*case.args(grads=True))[:3]
    starts = [np.concatenate(([0], np.cumsum(lens))) for lens in (lens_q, lens_k)]
    for i, (a, b) in enumerate(zip(lens_q, lens_k, strict=True)):
        sq, sk = int(starts[0][i]), int(starts[1][i])
        one = [t[None, s : s + n] for t, s, n in ((case.q, sq, a), (case.k, sk, b), (case.v, sk, b), (case.dy, sq, a))]
        out, smax, ssum = torch.ops.custom.fusion_attention(*one[:3], 4, "BSND", COMPRESSED, case.kw["scale"],
                                                            sparse_mode=3)  # fmt: skip
        alone = torch.ops.custom.fusion_attention_grad(
            *one, smax, ssum, out, 4, "BSND", COMPRESSED, case.kw["scale"], sparse_mode=3
        )[:3]
        for got, want, s, n in zip(grads, alone, (sq, sk, sk), (a, b, b), strict=True):
            assert torch.equal(got[s : s + n], want[0]), f"sequence {i}"


# ---------------------------------------------------------------- autograd
@pytest.mark.parametrize(
    "case",
    [
        lambda: make(torch.bfloat16, "BSH", 2, 8, 2, 70, 90, 64, mask=COMPRESSED, mode=3, label="autograd"),
        lambda: make_tnd([5, 0, 40, 77], [9, 0, 40, 80], 4, 1, 64, mask=COMPRESSED, mode=2, label="autograd TND"),
        lambda: make(torch.float32, "BNSD", 1, 4, 4, 50, 70, 128, dv=64, mask=torch.rand(50, 70) < 0.3, mode=1),
    ],
    ids=["bsh_gqa_causal", "tnd", "fp32_dv_below_dk_mask"],
)
def test_autograd_equals_the_direct_call(case):
    """torch.autograd.grad through torch.ops.custom.fusion_attention gives what a direct fusion_attention_grad
    call on the forward's outputs gives, bit for bit, and is judged as the direct call."""
    case = case()
    leaves = [t.detach().requires_grad_() for t in (case.q, case.k, case.v)]
    out, smax, ssum = torch.ops.custom.fusion_attention(*leaves, *case.args()[3:])
    assert torch.equal(out, case.fwd[0]) and torch.equal(smax, case.fwd[1]) and torch.equal(ssum, case.fwd[2])
    grads = torch.autograd.grad(out, leaves, case.dy)
    direct = torch.ops.custom.fusion_attention_grad(*case.args(grads=True))
    for name, a, b in zip(("dq", "dk", "dv"), grads, direct[:3], strict=True):
        assert torch.equal(a, b), f"{case.name} {name}: autograd != the direct call"
    judge(case, grads, " (autograd)")


# ---------------------------------------------------------------- API
# (bad arguments, empty tensors, the Meta kernel and BNSD opchecks: test_attention_grad_binding.py)
OPCHECK = [
    lambda: make(torch.float16, "BSND", 1, 4, 2, 20, 30, 64, mask=COMPRESSED, mode=3, label="opcheck"),
    lambda: make(torch.bfloat16, "SBH", 2, 2, 1, 20, 30, 64, mask=COMPRESSED, mode=4, pre=8, nxt=0, label="opcheck"),
    lambda: make_tnd([5, 0, 7], [6, 0, 9], 2, 2, 64, dtype=torch.float32, mask=COMPRESSED, mode=2, label="opcheck"),
    lambda: make(torch.float16, "BNSD", 1, 4, 2, 20, 30, 64, mask=COMPRESSED, mode=3, label="opcheck", sink=SINK),
]
OPCHECK_IDS = ["bsnd_causal", "sbh_band", "tnd", "bnsd_causal_sink"]


@pytest.mark.parametrize("i", range(len(OPCHECK)), ids=OPCHECK_IDS)
def test_opcheck_grad(i):
    opcheck(torch.ops.custom.fusion_attention_grad, OPCHECK[i]().args(grads=True))


@pytest.mark.parametrize("i", range(len(OPCHECK)), ids=OPCHECK_IDS)
def test_opcheck_forward_with_autograd(i):
    """The forward with inputs that need a gradient: opcheck also checks the autograd registration
    (test_autograd_registration, test_aot_dispatch_dynamic)."""
    case = OPCHECK[i]()
    leaves = [t.detach().requires_grad_() for t in (case.q, case.k, case.v)]
    opcheck(torch.ops.custom.fusion_attention, (*leaves, *case.args()[3:]))
