"""Independent float64 NumPy references (goldens) of the fused attention family: torch_npu's
``npu_fusion_attention`` and ``npu_fusion_attention_grad``.

No torch import, no compiled code: NumPy arrays (or torch tensors, read through ``.detach().cpu()
.double().numpy()``) in, float64 arrays out. The semantics are torch_npu's, each rule with its source
in docs/attention.md ("Semantics"); in short:

- layouts BSH, SBH, BSND, BNSD, TND (split and merged by ops/attention_args.py); ``head_num`` = Nq; GQA: q head
  h reads kv head ``h // (Nq/Nkv)``; Dq = Dk >= Dv; the output keeps query's layout with Dv.
- TND: ``actual_seq_qlen`` / ``actual_seq_kvlen`` are cumulative ends without a leading 0 (lengths 2,2,2
  -> [2, 4, 6]); each sequence attends only within itself, positions counted from its own start.
- ``atten_mask`` bool/uint8, nonzero = masked. With no mask, sparse_mode and the tockens are ignored.
  sparse_mode 0: mask OR the band ``j - i > next_tockens or i - j > pre_tockens`` (top-left origin);
  1: the mask alone; 2: ``j > i`` (top-left causal); 3: ``j > i + Skv - Sq`` (bottom-right causal);
  4: the band counted from the bottom-right corner. Modes 2-4 take the compressed causal mask
  (``attention_args.compressed_mask``) as a token of the mode; its content is only checked to be that matrix.
- rows whose every key is masked: output 0, softmax_max = -FLT_MAX, softmax_sum = FLT_MAX
  (CANN's invalid-row handling, ``inner_precise=2``).
- softmax_max/sum: ``rowmax(scale * Q K^T)`` over the unmasked keys and ``sum exp(x - max)``, each row
  value repeated 8 times: [B, N, Sq, 8]; TND [T, N, 8] holding, per sequence, an [N, s_b, 8] block
  (``softmax_layout=""``, torch_npu's default) or a true [T, N, 8] (``softmax_layout="TND"``).

- ``softcap`` (ours, Gemma 2/3): scores ``softcap * tanh(s / softcap)`` before the mask; ``sink`` (fp32 [Nq],
  gpt-oss's ``s_aux``): one more logit per head in every row's softmax, with no value (a row with no key then has
  max = sink, sum = 1, output 0); d_sink = -sum over the head's rows of p_sink * D.
- dropout (``keep_prob`` < 1 with an explicit ``drop_mask``, bit-packed uint8 over [B, N, S1, S2] as
  ``attention_args.pack_dropout_mask`` packs it; TND: each sequence's [N, s1_b, s2_b] after the ones before it):
  out = (P * keep / keep_prob) V with the statistics of the undropped P; the backward's dP and dV take the same
  factor, D = rowsum(dy * O) the dropped O's.

Functions: ``fusion_attention_reference`` (out, softmax_max, softmax_sum), ``fusion_attention_grad_reference``
(dq, dk, dv, analytically: P from the forward, D = rowsum(dy * O), dS = P * (dP - D); with a sink also d_sink
when asked), both taking the op's
arguments after its tensors as ``attention_args.AttentionAttrs`` does; ``expand_mask`` (the dense boolean
"masked" matrix any kernel's block skipping must agree with), ``check_sparse_params`` (the tockens / lengths
combinations torch_npu refuses).
The goldens work one head and a block of query rows at a time, so long sequences fit in memory.
"""

from __future__ import annotations

import numpy as np

from .attention_args import (
    COMPRESSED_MASK_SIZE,
    LAYOUTS,
    OP,
    TOCKENS_MAX,
    AttentionAttrs,
    compressed_mask,
    merge_heads,
    merge_sequences,
    seq_lengths,
    split_heads,
    split_sequences,
    unpack_dropout_mask,
)

FLT_MAX = float(np.finfo(np.float32).max)  # CANN writes +-FLT_MAX into max/sum of rows with no key
SOFTMAX_LANES = 8


def _f64(a) -> np.ndarray:
    if hasattr(a, "detach"):  # a torch tensor: read it without importing torch
        return a.detach().cpu().double().numpy()
    return np.asarray(a, dtype=np.float64)


def _mask_array(atten_mask) -> np.ndarray | None:
    if atten_mask is None:
        return None
    if hasattr(atten_mask, "detach"):
        atten_mask = atten_mask.detach().cpu().numpy()
    m = np.asarray(atten_mask)
    if m.dtype not in (np.bool_, np.uint8):
        raise TypeError(f"{OP}: atten_mask must be bool or uint8, got {m.dtype}")
    return m != 0


# ---- layouts: to per-batch [N, S, D] arrays and back ----
def _split_heads(x: np.ndarray, layout: str, n: int | None, name: str) -> np.ndarray:
    """[B, N, S, D] view of a BSH/SBH/BSND/BNSD tensor (n heads for the H layouts), its rank and H checked."""
    if x.ndim != (3 if layout in ("BSH", "SBH") else 4):
        raise ValueError(f"{OP}: {name} must be {len(layout)}-D for input_layout {layout}, got shape {x.shape}")
    if layout in ("BSH", "SBH") and x.shape[2] % n:
        raise ValueError(f"{OP}: {name} hidden size {x.shape[2]} must be a multiple of {n} heads")
    return split_heads(x, layout, n)


class _Problem:
    """The call, canonicalised: per batch q [Nq, s1, D], k [Nkv, s2, D], v [Nkv, s2, Dv]."""

    def __init__(self, query, key, value, head_num, input_layout, actual_seq_qlen, actual_seq_kvlen):
        if input_layout not in LAYOUTS:
            raise ValueError(f"{OP}: input_layout must be one of {LAYOUTS}, got {input_layout!r}")
        self.layout = input_layout
        q, k, v = _f64(query), _f64(key), _f64(value)
        if input_layout == "TND":
            if q.ndim != 3 or k.ndim != 3 or v.ndim != 3:
                raise ValueError(f"{OP}: TND query/key/value must be 3-D, got {q.shape}, {k.shape}, {v.shape}")
            self.q_lens = seq_lengths(actual_seq_qlen, "actual_seq_qlen")
            self.kv_lens = seq_lengths(actual_seq_kvlen, "actual_seq_kvlen")
            if self.q_lens.size != self.kv_lens.size:
                raise ValueError(
                    f"{OP}: actual_seq_qlen and actual_seq_kvlen must have the same length, "
                    f"got {self.q_lens.size} and {self.kv_lens.size}"
                )
            for name, t, lens in (("query", q, self.q_lens), ("key", k, self.kv_lens), ("value", v, self.kv_lens)):
                if t.shape[0] != lens.sum():
                    raise ValueError(
                        f"{OP}: {name} T must equal the last cumulative length {lens.sum()}, got {t.shape[0]}"
                    )
            self.qb = split_sequences(q, self.q_lens)
            self.kb, self.vb = split_sequences(k, self.kv_lens), split_sequences(v, self.kv_lens)
            nq, nkv, dq, dk, dv = q.shape[1], k.shape[1], q.shape[2], k.shape[2], v.shape[2]
            if v.shape[1] != nkv:
                raise ValueError(f"{OP}: value must have key's {nkv} heads, got {v.shape[1]}")
        else:
            qs = _split_heads(q, input_layout, head_num, "query")
            dq = qs.shape[3]
            # BSH/SBH: key's heads follow from D (Dq = Dk), value's Dv from key's heads
            nkv = k.shape[2] // dq if input_layout in ("BSH", "SBH") else None
            if input_layout in ("BSH", "SBH") and (nkv == 0 or k.shape[2] % dq):
                raise ValueError(f"{OP}: key hidden size {k.shape[2]} must be a multiple of D={dq}")
            ks = _split_heads(k, input_layout, nkv, "key")
            vs = _split_heads(v, input_layout, ks.shape[1], "value")
            nq, nkv, dk, dv = qs.shape[1], ks.shape[1], ks.shape[3], vs.shape[3]
            if not (qs.shape[0] == ks.shape[0] == vs.shape[0]):
                raise ValueError(
                    f"{OP}: query, key, value must share B, got {qs.shape[0]}, {ks.shape[0]}, {vs.shape[0]}"
                )
            if ks.shape[:3] != vs.shape[:3]:
                raise ValueError(f"{OP}: key and value must agree except in D, got {k.shape} and {v.shape}")
            b = qs.shape[0]
            self.q_lens = np.full(b, qs.shape[2], np.int64)
            self.kv_lens = np.full(b, ks.shape[2], np.int64)
            self.qb, self.kb, self.vb = list(qs), list(ks), list(vs)
        if nq != head_num:
            raise ValueError(f"{OP}: head_num must equal query's {nq} heads, got {head_num}")
        if nkv == 0 or nq % nkv:
            raise ValueError(f"{OP}: query heads {nq} must be a multiple of key/value heads {nkv}")
        if dq != dk or dv > dk:
            raise ValueError(f"{OP}: head dims must satisfy Dq == Dk >= Dv, got Dq={dq}, Dk={dk}, Dv={dv}")
        self.nq, self.nkv, self.group, self.dv = nq, nkv, nq // nkv, dv

    def split_like_output(self, x: np.ndarray, name: str) -> list[np.ndarray]:
        """An array in the output's layout and shape (dy) -> per-batch [N, s1, Dv]."""
        want = self.output([np.empty((self.nq, q.shape[1], self.dv)) for q in self.qb]).shape
        if x.shape != want:
            raise ValueError(f"{OP}: {name} must have attention_out's shape {list(want)}, got {list(x.shape)}")
        if self.layout != "TND":
            return list(_split_heads(x, self.layout, self.nq, name))
        return split_sequences(x, self.q_lens)

    def output(self, per_batch: list[np.ndarray]) -> np.ndarray:
        """Per-batch [N, S, d] -> the layout (TND: [T, N, d])."""
        if self.layout == "TND":
            return merge_sequences(per_batch)
        return merge_heads(np.stack(per_batch), self.layout)


# ---- masks ----
def _position_mask(mode: int, s1: int, s2: int, pre: int, nxt: int) -> np.ndarray | None:
    """Masked-by-position [s1, s2] of one sequence for a sparse mode (None: the mode has no band)."""
    i = np.arange(s1)[:, None]
    j = np.arange(s2)[None, :]
    if mode == 0:
        return (j - i > nxt) | (i - j > pre)  # band counted from the top-left corner
    if mode == 2:
        return j > i
    if mode == 3:
        return j > i + (s2 - s1)
    if mode == 4:
        d = s2 - s1  # band counted from the bottom-right corner: the diagonal j = i + (s2 - s1)
        return (j - i - d > nxt) | (i + d - j > pre)
    return None


def _check_mode(sparse_mode: int, varlen: bool) -> None:
    allowed = (0, 1, 2, 3, 4, 6, 7, 8) if varlen else (0, 1, 2, 3, 4, 5, 6)
    if sparse_mode not in allowed:
        layout = "TND" if varlen else "BSH/SBH/BSND/BNSD"
        raise ValueError(f"{OP}: sparse_mode must be one of {allowed} for {layout}, got {sparse_mode}")
    if sparse_mode >= 5:
        names = {
            5: "prefix",
            6: "prefix compressed",
            7: "varlen split right-down causal",
            8: "varlen split left-up causal",
        }
        raise NotImplementedError(f"{OP}: sparse_mode {sparse_mode} ({names[sparse_mode]}) is not supported")


def _band_check(pre: int, nxt: int, s1: int, s2: int, what: str) -> None:
    """CANN's band check on top-left tockens: some row must keep a key."""
    ok = (
        (pre >= 0 and nxt >= 0)
        or (pre < 0 and nxt >= 0 and nxt >= -pre and -pre < s2)
        or (pre >= 0 and nxt < 0 and -nxt <= pre and -nxt < s1)
    )
    if not ok:
        raise ValueError(f"{OP}: pre_tockens/next_tockens {what} leave no valid block for Sq={s1}, Skv={s2}")


def check_sparse_params(sparse_mode, q_lens, kv_lens, pre_tockens, next_tockens, varlen, has_mask) -> None:
    """Raise as torch_npu's kernel tiling does for (mode, tockens, lengths); nothing to check without a mask."""
    _check_mode(sparse_mode, varlen)
    if not has_mask:
        return
    pre, nxt = int(pre_tockens), int(next_tockens)
    given = f"({pre}, {nxt})"
    if not varlen:
        s1, s2 = int(q_lens[0]), int(kv_lens[0])
        if sparse_mode == 0 and not (pre >= s1 and (nxt == 0 or nxt >= s2)):
            _band_check(pre, nxt, s1, s2, given)
        elif sparse_mode == 4:
            _band_check(pre + s1 - s2, nxt + s2 - s1, s1, s2, f"{given} (from the bottom-right corner)")
        return
    live = [(int(a), int(b)) for a, b in zip(q_lens, kv_lens, strict=True) if a and b]
    if sparse_mode == 0 and not (pre >= max(q_lens) and (nxt == 0 or nxt >= max(kv_lens))):
        if nxt < 0 or (pre < 0 and nxt < -pre):
            raise ValueError(f"{OP}: TND pre_tockens/next_tockens {given} leave no valid block")
        for s1, s2 in live:
            if s2 + pre < s1:
                raise ValueError(
                    f"{OP}: TND sequence Sq={s1}, Skv={s2} would have a row with no key under pre_tockens={pre}"
                )
    elif sparse_mode == 3:
        for s1, s2 in zip(q_lens, kv_lens, strict=True):
            if s1 > s2:
                raise ValueError(f"{OP}: TND sparse_mode 3 needs Sq <= Skv in every sequence, got Sq={s1}, Skv={s2}")
    elif sparse_mode == 4:
        if pre < 0 or (nxt < 0 and pre + nxt < 0):
            raise ValueError(f"{OP}: TND sparse_mode 4 pre_tockens/next_tockens {given} leave no valid block")
        for s1, s2 in live:
            if s1 - nxt > s2:
                raise ValueError(
                    f"{OP}: TND sequence Sq={s1}, Skv={s2} would have a row with no key under next_tockens={nxt}"
                )


def _check_mask_shape(m: np.ndarray, sparse_mode: int, b: int, n: int, s1: int, s2: int, varlen: bool) -> None:
    if sparse_mode in (2, 3, 4):
        c = COMPRESSED_MASK_SIZE
        if m.shape not in ((c, c), (1, 1, c, c)):
            raise ValueError(
                f"{OP}: sparse_mode {sparse_mode} takes the compressed [{c}, {c}] atten_mask, got {list(m.shape)}"
            )
        if not np.array_equal(m.reshape(c, c), compressed_mask()):
            raise ValueError(
                f"{OP}: sparse_mode {sparse_mode} takes atten_mask = triu(ones({c}, {c}), 1), got another matrix"
            )
        return
    shapes = [(s1, s2)] if varlen else [(b, n, s1, s2), (b, 1, s1, s2), (1, 1, s1, s2), (s1, s2)]
    if m.shape not in shapes:
        raise ValueError(
            f"{OP}: atten_mask must have shape {' or '.join(str(list(s)) for s in shapes)}, got {list(m.shape)}"
        )


class _Masks:
    """The "masked" matrices of a call, one sequence at a time: ``masks(b)`` is bool [1 or N, s1, s2]
    (a mask without a head axis stays unbroadcast, so nothing of size N * S * S is made for it)."""

    def __init__(self, q_lens, kv_lens, head_num, atten_mask, sparse_mode, pre_tockens, next_tockens, varlen):
        self.q_lens = np.asarray(q_lens, np.int64).reshape(-1)
        self.kv_lens = np.asarray(kv_lens, np.int64).reshape(-1)
        self.shape = (self.q_lens.size, head_num, int(self.q_lens.max(initial=0)), int(self.kv_lens.max(initial=0)))
        m = _mask_array(atten_mask)
        check_sparse_params(sparse_mode, self.q_lens, self.kv_lens, pre_tockens, next_tockens, varlen, m is not None)
        self.active = m is not None  # no mask: sparse_mode and the tockens are ignored (full attention)
        self.mode, self.pre, self.nxt, self.given = sparse_mode, int(pre_tockens), int(next_tockens), None
        if m is not None:
            _check_mask_shape(m, sparse_mode, *self.shape, varlen)
            if sparse_mode not in (2, 3, 4):  # the compressed mask only names the mode
                self.given = m.reshape((1,) * (4 - m.ndim) + m.shape)

    def __call__(self, b: int) -> np.ndarray:
        s1, s2 = int(self.q_lens[b]), int(self.kv_lens[b])
        masked = np.zeros((1, s1, s2), bool)
        if not self.active:
            return masked
        if self.given is not None:
            masked = masked | self.given[b if self.given.shape[0] > 1 else 0, :, :s1, :s2]
        band = _position_mask(self.mode, s1, s2, self.pre, self.nxt)
        return masked if band is None else masked | band


def expand_mask(
    q_lens,
    kv_lens,
    head_num: int,
    atten_mask=None,
    sparse_mode: int = 0,
    pre_tockens: int = TOCKENS_MAX,
    next_tockens: int = TOCKENS_MAX,
    varlen: bool = False,
) -> np.ndarray:
    """The dense boolean "masked" matrix [B, N, max Sq, max Skv] of a call: True where query row i of
    sequence b may not see key j (positions counted within each sequence). q_lens/kv_lens are the
    per-sequence lengths (not cumulative; ``seq_lengths`` converts): [Sq] * B for the fixed layouts. For
    TND (``varlen``) the positions past a sequence's own lengths are True. Checks as ``check_sparse_params``."""
    masks = _Masks(q_lens, kv_lens, head_num, atten_mask, sparse_mode, pre_tockens, next_tockens, varlen)
    out = np.ones(masks.shape, bool)
    for b, (s1, s2) in enumerate(zip(masks.q_lens, masks.kv_lens, strict=True)):
        out[b, :, :s1, :s2] = masks(b)
    return out


# ---- forward and backward, one head and a block of query rows at a time (memory stays bounded) ----
BLOCK_ELEMENTS = 1 << 22  # scores held at once: rows * Skv


def _scores(q, k, scale, softcap):
    """(S, dS_capped / dS) of q [r, D], k [s2, D]: scale q k^T, then softcap * tanh(s / softcap) if softcap > 0."""
    s = scale * (q @ k.T)
    if not softcap:
        return s, 1.0
    t = np.tanh(s / softcap)
    return softcap * t, 1.0 - t * t


def _forward_rows(q, k, v, masked, scale, softcap, sink=None, drop=None):
    """q [r, D], k [s2, D], v [s2, Dv], masked [r, s2], the head's sink logit or None, the dropout factors
    (keep / keep_prob) [r, s2] or None -> out [r, Dv], P [r, s2] (undropped), row max and sum [r]."""
    s, _ = _scores(q, k, scale, softcap)
    keep = ~masked
    row_max = np.where(keep, s, -np.inf).max(axis=-1, initial=-np.inf if sink is None else sink)
    empty = ~np.isfinite(row_max)  # rows with no key (and no sink)
    safe_max = np.where(empty, 0.0, row_max)
    e = np.where(keep, np.exp(np.where(keep, s - safe_max[:, None], 0.0)), 0.0)
    row_sum = e.sum(axis=-1) + (0.0 if sink is None else np.exp(sink - safe_max))
    p = e / np.where(empty, 1.0, row_sum)[:, None]
    out = (p if drop is None else p * drop) @ v  # the statistics stay the undropped softmax's
    return out, p, np.where(empty, -FLT_MAX, row_max), np.where(empty, FLT_MAX, row_sum)


def _blocks(problem: _Problem, masks: _Masks, scale: float, softcap: float, sink=None, drops=None):
    """Yield (b, h, kv head, rows, q rows, k, forward of those rows, their dropout factors or None) over every
    sequence and q head."""
    for b, (q, k, v) in enumerate(zip(problem.qb, problem.kb, problem.vb, strict=True)):
        mb = masks(b)
        step = max(1, BLOCK_ELEMENTS // max(k.shape[1], 1))
        for h in range(problem.nq):
            kvh = h // problem.group  # GQA: q head h reads kv head h // (Nq / Nkv)
            for r0 in range(0, q.shape[1], step):
                rows = slice(r0, r0 + step)
                drop = None if drops is None else drops[b][h, rows] / drops.keep_prob
                fwd = _forward_rows(
                    q[h, rows], k[kvh], v[kvh], mb[h if mb.shape[0] > 1 else 0, rows], scale, softcap,
                    None if sink is None else float(sink[h]), drop,
                )  # fmt: skip
                yield b, h, kvh, rows, q[h, rows], k[kvh], fwd, drop


def _softmax_stats(problem: _Problem, stats: list[np.ndarray], softmax_layout: str) -> np.ndarray:
    """Per-batch [N, s1] -> torch_npu's softmax_max/sum array, the row value in 8 lanes."""
    if problem.layout != "TND":
        return np.repeat(np.stack(stats)[..., None], SOFTMAX_LANES, axis=-1)  # [B, N, Sq, 8]
    if softmax_layout == "TND":
        flat = np.concatenate([s.T for s in stats], axis=0)  # [T, N]
    else:  # default: each sequence's block holds [N, s_b] in order, the tensor is declared [T, N, 8]
        flat = np.concatenate([s.reshape(-1) for s in stats]).reshape(-1, problem.nq)
    return np.repeat(flat[..., None], SOFTMAX_LANES, axis=-1)


class _Dropout(list):
    """Per batch the keep matrix [N, s1, s2] (bool) of an explicit dropout mask, and keep_prob."""

    keep_prob = 1.0


def _dropout(problem: _Problem, drop_mask, keep_prob) -> _Dropout | None:
    """The dropout of a call, None without one. keep_prob 1 applies none (CANN reads a given mask only below 1);
    below 1 the mask must be given (torch_npu draws its own on the device, which no reference can reproduce)."""
    keep_prob = float(keep_prob)
    if not 0.0 < keep_prob <= 1.0:
        raise ValueError(f"{OP}: keep_prob must be in (0, 1], got {keep_prob}")
    if keep_prob == 1.0:
        return None
    if drop_mask is None:
        raise NotImplementedError(f"{OP}: keep_prob {keep_prob} needs an explicit drop_mask")
    if problem.layout == "TND":  # each sequence's [N, s1_b, s2_b] block after the ones before it
        shapes = [(problem.nq, int(a), int(c)) for a, c in zip(problem.q_lens, problem.kv_lens, strict=True)]
        flat = unpack_dropout_mask(drop_mask, (sum(int(np.prod(x)) for x in shapes),))
        ends = np.cumsum([int(np.prod(x)) for x in shapes])
        drops = _Dropout(flat[e - int(np.prod(x)) : e].reshape(x) for x, e in zip(shapes, ends, strict=True))
    else:
        b, s1, s2 = len(problem.qb), int(problem.q_lens[0]), int(problem.kv_lens[0])
        drops = _Dropout(unpack_dropout_mask(drop_mask, (b, problem.nq, s1, s2)))
    drops.keep_prob = keep_prob
    return drops


def _setup(query, key, value, attrs: AttentionAttrs, pse, softmax_layout):
    if pse is not None:
        raise NotImplementedError(f"{OP}: pse (positional encoding added to the scores) is not supported")
    layout = attrs.input_layout
    if softmax_layout not in ("", "TND") or (softmax_layout == "TND" and layout != "TND"):
        raise ValueError(f"{OP}: softmax_layout must be '' or, with input_layout TND, 'TND'; got {softmax_layout!r}")
    problem = _Problem(query, key, value, attrs.head_num, layout, attrs.actual_seq_qlen, attrs.actual_seq_kvlen)
    mode, pre, nxt = attrs.band()
    masks = _Masks(problem.q_lens, problem.kv_lens, problem.nq, attrs.atten_mask, mode, pre, nxt, layout == "TND")
    return problem, masks


def fusion_attention_reference(query, key, value, *attrs, pse=None, softmax_layout="", **named):
    """torch_npu ``npu_fusion_attention``'s first three outputs in float64:
    (attention_out in query's layout with Dv, softmax_max, softmax_sum). After the tensors, the op's arguments
    (AttentionAttrs: head_num, input_layout, atten_mask=None, scale=1.0, pre_tockens, next_tockens,
    actual_seq_qlen, actual_seq_kvlen, sparse_mode=0, softcap=0.0, keep_prob=1.0, sink, drop_mask). keep_prob < 1
    with a bit-packed uint8 drop_mask (attention_args.pack_dropout_mask): out = (P * keep / keep_prob) V, the
    statistics P's."""
    attrs = AttentionAttrs(*attrs, **named)
    problem, masks = _setup(query, key, value, attrs, pse, softmax_layout)
    drops = _dropout(problem, attrs.drop_mask, attrs.keep_prob)
    outs = [np.zeros((problem.nq, q.shape[1], problem.dv)) for q in problem.qb]
    maxes = [np.zeros((problem.nq, q.shape[1])) for q in problem.qb]
    sums = [np.zeros((problem.nq, q.shape[1])) for q in problem.qb]
    for b, h, _, rows, _, _, (o, _, row_max, row_sum), _ in _blocks(
        problem, masks, float(attrs.scale), float(attrs.softcap), _sink(attrs), drops
    ):
        outs[b][h, rows], maxes[b][h, rows], sums[b][h, rows] = o, row_max, row_sum
    return (
        problem.output(outs),
        _softmax_stats(problem, maxes, softmax_layout),
        _softmax_stats(problem, sums, softmax_layout),
    )


def _sink(attrs: AttentionAttrs):
    return None if attrs.sink is None else _f64(attrs.sink).reshape(-1)


def fusion_attention_grad_reference(query, key, value, dy, *attrs, pse=None, with_sink=False, **named):
    """torch_npu ``npu_fusion_attention_grad``'s (dq, dk, dv) in float64, in the inputs' layouts, for the
    forward's arguments (AttentionAttrs) after dy, derived by hand: with P the forward's probabilities (0 on
    masked keys and on rows with no key), dV = P^T dy, dP = dy V^T, D = rowsum(dy * O), dS = P * (dP - D),
    dQ = scale * dS K, dK = scale * dS^T Q; a kv head's dK/dV sum over its group of q heads. With softcap,
    dS is also multiplied by 1 - tanh^2 of the capped scores. with_sink: (dq, dk, dv, d_sink), d_sink [Nq] =
    -sum over the head's rows of p_sink * D, p_sink = exp(sink - max) / sum. Dropout (keep_prob < 1 with
    drop_mask, Z = keep / keep_prob): dV = (P Z)^T dy, dP = (dy V^T) Z, D = rowsum(dy * O) of the dropped O,
    dS = P * (dP - D)."""
    attrs = AttentionAttrs(*attrs, **named)
    problem, masks = _setup(query, key, value, attrs, pse, "")
    drops = _dropout(problem, attrs.drop_mask, attrs.keep_prob)
    dy_b = problem.split_like_output(_f64(dy), "dy")
    scale = float(attrs.scale)
    dqs = [np.zeros(q.shape) for q in problem.qb]
    dks = [np.zeros(k.shape) for k in problem.kb]
    dvs = [np.zeros(v.shape) for v in problem.vb]
    softcap, sink = float(attrs.softcap), _sink(attrs)
    d_sink = np.zeros(problem.nq)
    for b, h, kvh, rows, q, k, (o, p, row_max, row_sum), z in _blocks(problem, masks, scale, softcap, sink, drops):
        g = dy_b[b][h, rows]
        dp = g @ problem.vb[b][kvh].T
        pz = p if z is None else p * z  # the dropped probabilities, which multiplied V
        dp = dp if z is None else dp * z
        d = (g * o).sum(axis=-1, keepdims=True)
        ds = p * (dp - d) * _scores(q, k, scale, softcap)[1]
        if sink is not None:
            d_sink[h] -= (np.exp(sink[h] - row_max) / row_sum * d[:, 0]).sum()
        dqs[b][h, rows] = scale * (ds @ k)
        dks[b][kvh] += scale * (ds.T @ q)
        dvs[b][kvh] += pz.T @ g
    grads = problem.output(dqs), problem.output(dks), problem.output(dvs)
    return (*grads, d_sink) if with_sink else grads
