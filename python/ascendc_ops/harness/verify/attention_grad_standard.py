"""The accuracy criterion of fusion_attention_grad's dq, dk and dv, shared by `verify` (families/attention.py)
and tests/ops/test_attention_grad.py: one implementation of the judge.

dS = P * (dP - D) sums to zero along each row, so dq and dk cancel (and dv = P^T dy sums dy's signs): an element's
relative error is unbounded where the golden is small against the terms that make it, and PyTorch's own fp16 /
bf16 backward misses the literal MERE. So each gradient is judged by

- the fp32 evaluation bound of the kernel's formula on every element (``grad_bounds``, which also charges the
  inputs' own error: attention_in and the softmax stats come from the forward, as in training); for fp16 / bf16
  the bounded fp32 result rounded once (precision.mare_within_rounding's allowance, here on every element, as it
  replaces MARE and the small values' fixed 2^-16 / 2^-30 where dS cancels);
- the double benchmark against PyTorch's backward in the same dtype (its ratios and sanity bound; the small
  values' ErrorCount left out for the reason above);
- the literal MERE wherever PyTorch's result in the same run meets it.
"""

from __future__ import annotations

import numpy as np
import torch

from ... import precision as P

NAME = "attention grad bound"
BLOCK_ELEMENTS = 1 << 21  # scores a chunk of query heads holds (a handful of float64 temporaries each)


def unit_roundoff(dtype) -> tuple[float, float]:
    """The rounding of P and dS on their way to the cube, (relative, absolute): half an epsilon of fp16 / bf16,
    and half the subnormal spacing (fp16: 2^-25, met by the tiny P of a peaked softmax); fp32 stays fp32."""
    name = P.dtype_name(dtype)
    return (0.0, 0.0) if name == "float32" else (P.EPS[name] / 2, float(P.half_ulp(P.MIN_NORMAL[name] / 2, name)))


# softcap * tanh(s / softcap) as the kernel evaluates it (2 s / softcap, exp, e - 1, e + 1, the quotient, times
# softcap: each within an fp32 rounding or two): at most this many fp32 units of softcap off, tanh being 1-Lipschitz
SOFTCAP_ULPS = 7
# 1 - tanh^2 likewise: the square, the subtraction and tanh's own error twice
SOFTCAP_GRAD_ULPS = 15
U32 = 2.0**-24


def grad_bounds(q, k, v, dy, o, smax, ssum, keep, scale, dtype, softcap=0.0, sink=None, drop=None):
    """The fp32 evaluation bounds of dq, dk, dv of one sequence ([N, s, D] tensors; smax / ssum [N, s1]; keep
    [N or 1, s1, s2], True = attend, or None) as the kernel computes them, per element, in float64, against the
    exact gradients of the dtype-rounded inputs. P is recomputed from the given stats (their error measured:
    exp(m - m_in) * l / l_in), on scores off by the fp32 dot product's bound es, and goes to the cube in the
    dtype; dP = dy v^T and D = rowsum(dy * o) are fp32 dots, D from the given o (its error measured); dS = P (dP
    - D) goes to the cube in the dtype; each sum of products costs gamma(terms + 16). With softcap, the scores are
    capped (SOFTCAP_ULPS more error) and dS is times w = 1 - tanh^2 (SOFTCAP_GRAD_ULPS). With sink (float64 [N1],
    joining P's sums), a 4th bound: d_sink's, -sum p_sink D with p_sink and D as erroneous as P's and D's in dS,
    summed in fp32 (the kernel's SinkPart). With dropout, drop (float64 [N1, s1, s2], keep / keep_prob) multiplies
    dP and, for dv, P, each product after fp32's rounding of 1 / keep_prob (two more units). Query heads in chunks
    of about BLOCK_ELEMENTS scores (few small ops: fast on a loaded machine, and bounded memory)."""
    n1, s1, d = q.shape
    n2, s2, dv = v.shape
    g, (u, tiny) = n1 // n2, unit_roundoff(dtype)
    b_dq, b_dk, b_dv = (torch.zeros(shape, dtype=torch.float64) for shape in ((n1, s1, d), (n2, s2, d), (n2, s2, dv)))
    b_sink = torch.zeros(n1, dtype=torch.float64)
    step = max(1, BLOCK_ELEMENTS // max(s1 * s2, 1))
    for h0 in range(0, n1 if s1 and s2 else 0, step):
        h1 = min(h0 + step, n1)
        kv = torch.arange(h0, h1) // g
        qh, dyh, oh = (t[h0:h1].double() for t in (q, dy, o))
        kh, vh = k[kv].double(), v[kv].double()  # each query head's kv head
        s = scale * (qh @ kh.transpose(1, 2))
        es = P.gamma(d) * scale * (qh.abs() @ kh.abs().transpose(1, 2)).amax(-1, keepdim=True)
        w, e_w = 1.0, 0.0
        if softcap:
            tc = torch.tanh(s / softcap)
            s, w = softcap * tc, 1 - tc * tc
            e_w = SOFTCAP_GRAD_ULPS * U32 + 2 * es / softcap  # |dw/ds| <= 2 |tanh| w / softcap <= 1 / softcap
            es = es + SOFTCAP_ULPS * U32 * softcap
        kept = torch.ones_like(s, dtype=torch.bool) if keep is None else keep[h0 : h1 if keep.shape[0] > 1 else 1]
        m = s.masked_fill(~kept, float("-inf")).amax(-1, keepdim=True)
        sink_h = None if sink is None else sink[h0:h1, None, None]
        if sink is not None:
            m = torch.maximum(m, sink_h)
        live = torch.isfinite(m)
        e = torch.exp(s - torch.where(live, m, 0.0)).masked_fill(~kept, 0.0)
        total = e.sum(-1, keepdim=True) + (0.0 if sink is None else torch.exp(sink_h - m))
        p = e / torch.where(live, total, 1.0)
        m_in, l_in = smax[h0:h1].double()[..., None], ssum[h0:h1].double()[..., None]
        stats = torch.where(live, (torch.exp(m - m_in) * total / l_in - 1).abs(), 0.0)
        eps_p = es + stats + P.gamma(4) + u
        z = 1.0 if drop is None else drop[h0:h1].double()
        o_exact = (p * z) @ vh
        dp = (dyh @ vh.transpose(1, 2)) * z
        t = dp - (dyh * o_exact).sum(-1, keepdim=True)
        e_o = (dyh * (oh - o_exact)).sum(-1, keepdim=True).abs()  # D's error from attention_in's
        e_d = P.gamma(dv + 2) * (dyh.abs() * oh.abs()).sum(-1, keepdim=True) + e_o
        e_t = P.gamma(dv + 2) * (dyh.abs() @ vh.abs().transpose(1, 2)) * z + e_d
        if drop is not None:
            e_t = e_t + 2 * U32 * dp.abs()
        if sink is not None:  # p_sink D per row, then the fp32 sum over the rows
            p_sink, d_abs = torch.exp(sink_h - m) / total, (dyh * oh).sum(-1, keepdim=True).abs() + e_o
            b_sink[h0:h1] = (p_sink * (eps_p * d_abs + e_d) + P.gamma(s1 + 16) * p_sink * d_abs).sum((1, 2))
        ds = (p * t).abs()
        d_p = tiny * kept  # P's absolute rounding below the dtype's normal range (0 where masked: exact)
        d_ds = p * (eps_p * t.abs() + e_t) + d_p * t.abs() + u * ds + d_p
        ds, d_ds = ds * w, d_ds * w + ds * e_w  # the gradient of the raw score
        ds_t, d_ds_t = ds.transpose(1, 2), d_ds.transpose(1, 2)
        b_dq[h0:h1] = scale * (d_ds @ kh.abs() + P.gamma(s2 + 16) * (ds @ kh.abs()))
        part_k = scale * (d_ds_t @ qh.abs() + P.gamma(g * s1 + 16) * (ds_t @ qh.abs()))
        e_pz = (eps_p * p + d_p) * z + (0.0 if drop is None else 2 * U32 * p * z)  # P Z, which dv sums
        part_v = e_pz.transpose(1, 2) @ dyh.abs() + P.gamma(g * s1 + 16) * ((p * z).transpose(1, 2) @ dyh.abs())
        for j in range(int(kv[0]), int(kv[-1]) + 1):  # a kv head sums its group's query heads
            b_dk[j] += part_k[kv == j].sum(0)
            b_dv[j] += part_v[kv == j].sum(0)
    return (b_dq, b_dk, b_dv) if sink is None else (b_dq, b_dk, b_dv, b_sink)


def check_cancelling(actual, golden, second, dtype, bound, label: str = NAME) -> P.Check:
    """One gradient (float64 arrays of ours, the golden, PyTorch's in the same dtype, and the per-element fp32
    evaluation bound) under the criterion of the module docstring; `label` names the verdict (the op's bound)."""
    a, g, s = (np.asarray(x, dtype=np.float64) for x in (actual, golden, second))
    name = P.dtype_name(dtype)
    err = np.abs(a - g)
    allowed = bound if name == "float32" else P.half_ulp(np.abs(g) + bound, name) + bound
    rt = P.check_ratio(a, s, g, name)
    failures = [f for f in rt.failures if not f.startswith("small-value ErrorCount")]
    beyond = ~(err <= allowed)
    if beyond.any():
        i = int(np.flatnonzero(beyond)[0])
        failures.append(
            f"{int(beyond.sum())} elements beyond the fp32 evaluation bound, e.g. flat {i}: got {a.flat[i]!r}, "
            f"golden {g.flat[i]!r}, error {err.flat[i]:.3g} > allowed {allowed.flat[i]:.3g}"
        )
    limit, ours, theirs = P.THRESHOLDS[name], rt.numbers["mere"], rt.numbers["second_mere"]
    if theirs < limit <= ours:
        failures.append(f"MERE {ours:.4g} >= {limit:.4g}, which the control meets ({theirs:.4g})")
    worst = float(np.max(err / np.maximum(allowed, np.finfo(np.float64).tiny))) if err.size else 0.0
    numbers = {**rt.numbers, "bound_use": worst}  # bound_use: the worst error over its allowance (<= 1 passes)
    return P.Check(label, not failures, numbers, {**rt.limits, "mere": limit}, tuple(failures))
