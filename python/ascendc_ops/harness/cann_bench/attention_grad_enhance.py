"""cann-bench's omni-ops flash_attention_score_grad_enhance (bench_lab/omni-ops_bench/<task>/, spec only: no 910B2
time) on our fusion_attention_grad: FlashAttentionScoreGrad with TND (per-sequence lengths)
or BSND, sparse modes 0, 2, 3 and 4 (4: a band from the bottom-right corner), MLA's rope parts and sink tokens. The
semantics are the task's desc.md and golden.py (written here from them):

- query_rope / key_rope join query / key along D (the golden concatenates them; our op's v2 does the same), so the
  preset draws query and key joined (both parts uniform in the case's range, as cann-bench draws each) and judges
  dq and dk joined with their rope gradients (cann-bench judges dq, dk, dv; the rope parts are ours too);
- actual_seq_qlen / actual_seq_kvlen are per-sequence lengths (cann-bench's as_int_list reads lengths whose
  sum is the total) -> our cumulative ends;
- sparse mode 2 masks j > i (the golden slices its 2048 x 2048 mask top-left; the tokens unread), mode 3 masks
  j > i + Skv - Sq per sequence, mode 4 keeps Skv - Sq + i - pre <= j <= Skv - Sq + i + next
  (the golden's band), mode 0 with the default tokens masks nothing: our modes with the compressed mask;
- softmax_max, softmax_sum and attention_in are the forward's (cann-bench's get_input runs its forward): ours from
  our fusion_attention (the family's forward_* generators), not timed; the model times the grad launch;
- sink_num > 0 with TND: sink_num * 64 key / value rows in front of the packed key are sink tokens every
  sequence attends to (with their values): attention_sink_rows.py runs them as two launches of our grad (our
  op's own sink is a per-head logit with no value, gpt-oss's). With BSND the golden ignores sink_num.

The control is the golden's float32 autograd rounded to the dtype (the family's PyTorch backward on the inputs
widened to float32)."""

from __future__ import annotations

import numpy as np

from ..pipeline.calibration import DTYPE_BYTES, Work, tensor_bytes
from ..verify.case_fields import TensorSpec
from . import attention as A, attention_sink_rows as sink_rows

TASK = "flash_attention_score_grad_enhance"
OP = "fusion_attention_grad"  # the attention family's verify spec (harness/families/attention.py)
BIG = 1 << 30  # the golden's "no band" threshold on pre_tokens / next_tokens
SEMANTICS = (
    "dq, dk, dv of softmax(mask(scale * [q, q_rope] [k, k_rope]^T)) v as cann-bench's golden (float32 autograd, "
    "rounded once): TND lengths -> our cumulative actual_seq_qlen / kvlen, sparse modes 0 / 2 / 3 / 4 (band from the "
    "bottom-right) -> ours with the compressed mask; query / key drawn joined with their rope parts and dq / dk "
    "judged joined; the forward's statistics and output from our fusion_attention (untimed); TND sink tokens "
    "(sink_num > 0: sink_num x 64 key / value rows every sequence attends to) through two grad launches, both timed"
)


def _attrs(case: dict) -> dict:
    return case.get("attrs") or {}


def sink_rows_of(case: dict) -> int:
    """The key / value rows in front of the packed sequences every sequence attends to: sink_num * 64 with TND,
    none with BSND (the golden's sink_len)."""
    a = _attrs(case)
    tnd = a.get("input_layout", "TND") == "TND"
    return int(a.get("sink_num", 0) or 0) * sink_rows.ROWS_PER_SINK if tnd else 0


def op_of(case: dict) -> str:
    """Our verify op for a case: the grad, or with sink rows the preset's two launches of it."""
    return sink_rows.OP if sink_rows_of(case) else OP


def unsupported(case: dict) -> str | None:
    a = _attrs(case)
    if int(a.get("sparse_mode", 0)) not in (0, 2, 3, 4) or float(a.get("keep_prob", 1.0)) != 1.0:
        return f"sparse_mode {a.get('sparse_mode')} / keep_prob {a.get('keep_prob')}: not in the task's cases"
    return None


def lengths(value, total: int) -> list[int]:
    """Per-sequence lengths as cann-bench's as_int_list reads them: cumulative ends when non-decreasing and
    ending at the total, else lengths summing to it."""
    v = [int(x) for x in value]
    if all(a <= b for a, b in zip(v, v[1:], strict=False)) and v[-1] == total:
        return [b - a for a, b in zip([0, *v], v, strict=False)]
    if sum(v) != total:
        raise ValueError(f"{TASK}: sequence lengths {v} sum to {sum(v)}, the layout's total is {total}")
    return v


def _joined(shape, rope) -> tuple:
    return (*shape[:-1], shape[-1] + (rope[-1] if rope else 0))


def specs(case: dict, tensor, dtype_of) -> tuple[list, list, dict]:
    """(input TensorSpecs, declared output TensorSpecs, attrs) of our fusion_attention_grad for one case; `tensor`
    makes an input as the preset draws cann-bench's data: (name, shape, dtype, seed offset)."""
    a, shapes = _attrs(case), [tuple(s) for s in case["input_shape"]]
    dtype = dtype_of(case["dtype"][0])
    q_rope, k_rope = (shapes[4], shapes[5]) if len(shapes) >= 6 else (None, None)
    q, k = _joined(shapes[0], q_rope), _joined(shapes[1], k_rope)
    v, layout, n = shapes[2], str(a.get("input_layout", "TND")), int(a["head_num"])
    mode = int(a.get("sparse_mode", 0))
    attrs = {"head_num": n, "input_layout": layout, "scale": float(a.get("scale", a.get("scale_value", 1.0))),
             "pre_tockens": int(a.get("pre_tokens", 2147483647)), "next_tockens": int(a.get("next_tokens", 2147483647)),
             "sparse_mode": mode}  # fmt: skip
    if layout == "TND":
        for key, total in (("actual_seq_qlen", q[0]), ("actual_seq_kvlen", k[0])):
            attrs[key] = np.cumsum(lengths(a[key], total)).tolist()
    rows = sink_rows_of(case)
    if rows:  # the sink rows in front of key and value (their lengths above count the sequences' own rows)
        attrs["sink_rows"] = rows
        k, v = (rows + k[0], *k[1:]), (rows + v[0], *v[1:])
    ins = [tensor(name, s, dtype, i) for i, (name, s) in enumerate((("query", q), ("key", k), ("value", v)))]
    ins.append(tensor("dy", (*q[:-1], v[-1]), dtype, 3))
    if mode in (2, 3, 4):
        ins.append(TensorSpec("atten_mask", "uint8", A.CompressedMask.shape, value=A.CompressedMask()))
    stats = (q[0], n, 8) if layout == "TND" else (q[0], n, q[1], 8)
    ins += [TensorSpec(s, "float32", stats, value=f"forward_{s}") for s in ("softmax_max", "softmax_sum")]
    ins.append(TensorSpec("attention_in", dtype, (*q[:-1], v[-1]), value="forward_attention_out"))
    outs = [TensorSpec(name, dtype, s) for name, s in (("dq", q), ("dk", k), ("dv", v))]
    return ins, outs, attrs


def kept(sq: int, skv: int, mode: int, pre: int, nxt: int) -> int:
    """Score positions a sequence keeps: mode 2 j <= i, mode 3 j <= i + skv - sq, mode 4 the band around that
    diagonal, mode 0 with the default tokens all (the golden's masks)."""
    i = np.arange(sq)
    off = skv - sq
    if mode == 2:
        lo, hi = np.zeros(sq, np.int64), i
    elif mode == 3:
        lo, hi = np.zeros(sq, np.int64), i + off
    elif mode == 4:
        lo, hi = i + off - pre, i + off + nxt
    else:
        lo, hi = i + off - (pre if pre < BIG else skv), i + off + (nxt if nxt < BIG else skv)
    lo, hi = np.maximum(lo, 0), np.minimum(hi, skv - 1)
    return int(np.maximum(hi - lo + 1, 0).sum())


def builtin_work(task: str, case: dict) -> Work:
    """The least work of the grad: its inputs (q, k, v, dy, the rope parts, the forward's statistics and
    attention_in) read and dq, dk, dv (and the rope gradients) written once; per head and kept score the five
    GEMMs' 2 (3 (D + Dr) + 2 Dv) FLOPs (S and dQ, dK over the joined D; dP and dV over Dv). Sink rows: each query
    row keeps them all, and their k, v (rope) rows are read and their gradients written."""
    a, shapes = _attrs(case), [tuple(s) for s in case["input_shape"]]
    dtype = "float32" if case["dtype"][0] == "float" else case["dtype"][0]
    layout, n, mode = str(a.get("input_layout", "TND")), int(a["head_num"]), int(a.get("sparse_mode", 0))
    pre, nxt = int(a.get("pre_tokens", 2147483647)), int(a.get("next_tokens", 2147483647))
    dqk = shapes[0][-1] + (shapes[4][-1] if len(shapes) >= 6 else 0)
    dv = shapes[2][-1]
    if layout == "TND":
        seqs = zip(
            lengths(a["actual_seq_qlen"], shapes[0][0]), lengths(a["actual_seq_kvlen"], shapes[1][0]), strict=True
        )
        rows = shapes[0][0]
    else:
        seqs = [(shapes[0][1], shapes[1][1])] * shapes[0][0]
        rows = shapes[0][0] * shapes[0][1]
    rows = sink_rows_of(case)
    scores = sum(kept(sq, skv, mode, pre, nxt) for sq, skv in seqs) + shapes[0][0] * rows
    grads = sum(tensor_bytes(s, dtype) for s in shapes if s)  # dq, dk, dv, rope gradients: the inputs' shapes
    n2 = shapes[1][-2]
    grads += tensor_bytes((rows, n2, dqk + dv), dtype)  # the sink rows' k (with its rope part) and v
    extra = 2 * rows * n * 8 * 4 + rows * n * dv * DTYPE_BYTES[dtype]  # the fp32 [.., N, 8] stats, attention_in
    read = grads + extra
    written = grads - tensor_bytes(shapes[3], dtype)  # all but dy
    return Work(read + written, 2 * n * scores * (3 * dqk + 2 * dv), dtype, True, written)
