// fusion_attention's arguments -> the problem and the outputs' shapes, or an ArgError naming the op, the
// argument, what was expected and what came. Called by the torch binding, its Meta kernel and the op_host,
// each with the attributes as one AttentionAttrs, which the checked arguments carry on to the tiling.
// Layouts, head counts, sequence lengths, masks and sparse modes as torch_npu's npu_fusion_attention
// defines them (op-plugin FlashAttentionKernelNpuOpApi.cpp and its doc).
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attention_tiling.h"
#include "op_spec.h"

namespace tiling {

// The compressed causal mask sparse modes 2, 3 and 4 take: [2048, 2048], triu(1) (True = masked).
constexpr int64_t kAttentionCompressedMask = 2048;

// The attributes of fusion_attention and fusion_attention_grad (op_proto/attention/*.json, in their order): the
// one value the torch binding and its Meta kernel build from the schema's arguments and the op_host reads from
// its RuntimeAttrs (by op_proto_gen.h's FusionAttentionAttrs), and the checks and the tiling read.
struct AttentionAttrs {
  int64_t headNum;
  std::string inputLayout;
  double scale;
  int64_t preTokens, nextTokens;                                      // pre_tockens, next_tockens
  std::optional<std::vector<int64_t>> actualSeqQlen, actualSeqKvlen;  // TND's cumulative ends
  int64_t sparseMode;
  double softcap;  // > 0: scores become softcap * tanh(score / softcap) before the mask (Gemma 2/3); 0: none
  double keepProb = 1.0;  // keep_prob (fusion_attention's; the grad's 1): < 1 applies drop_mask (dropout)
};

// atten_mask's bytes on the host (row-major, bool or uint8), for the value check of sparse_mode 2-4's compressed
// mask: asked for only then, by callers that can read them (the torch binding; Meta and the op_host cannot).
using AttentionMaskBytes = std::function<const uint8_t*()>;

// The checked arguments: the attributes as given, what the tensors say, the outputs' shapes.
template <class Int>
struct AttentionArgs {
  AttentionAttrs attrs;
  AttentionLayout layout;
  DType dtype;            // query's (key's, value's)
  TensorArg<Int> mask;    // atten_mask (!defined: none)
  Int batch, heads, kvHeads, headDim, valueDim, s1, s2;
  std::vector<Int> out, stats;  // attention_out; softmax_max and softmax_sum
  bool sink = false;            // per-head sink logits given
  bool dropout = false;         // keep_prob < 1 with drop_mask
};

inline AttentionLayout AttentionLayoutOf(const OpSpec& op, const std::string& layout) {
  if (layout == "BSH") return kLayoutBSH;
  if (layout == "SBH") return kLayoutSBH;
  if (layout == "BSND") return kLayoutBSND;
  if (layout == "BNSD") return kLayoutBNSD;
  if (layout == "TND") return kLayoutTND;
  Fail(ArgError::kValue, op, "input_layout must be one of 'BSH', 'SBH', 'BSND', 'BNSD', 'TND', got '", layout, "'");
}

inline const char* AttentionLayoutShape(AttentionLayout l) {
  switch (l) {
    case kLayoutBSH: return "[B, S, H]";
    case kLayoutSBH: return "[S, B, H]";
    case kLayoutBSND: return "[B, S, N, D]";
    case kLayoutBNSD: return "[B, N, S, D]";
    default: return "[T, N, D]";
  }
}

// One of query / key / value read by its layout: batch, rows, heads, head dim. BSH and SBH carry heads x
// head dim in H: `headDim` (> 0) splits it (query: H / head_num), else `heads` does (value: H / N2).
template <class Int>
struct AttentionOperand {
  Int batch, rows, heads, dim;
};

template <class Int>
AttentionOperand<Int> ReadAttentionOperand(const OpSpec& op, size_t index, const TensorArg<Int>& t, AttentionLayout l) {
  const int64_t rank = l == kLayoutBSND || l == kLayoutBNSD ? 4 : 3;
  if (t.dim() != rank)
    Fail(ArgError::kValue, op, op.inputs[index], " must be ", rank, "-D ", AttentionLayoutShape(l),
         " for input_layout='",
         l == kLayoutBSH    ? "BSH"
         : l == kLayoutSBH  ? "SBH"
         : l == kLayoutBSND ? "BSND"
         : l == kLayoutBNSD ? "BNSD"
                            : "TND",
         "', got shape ", t.shape);
  const std::vector<Int>& s = t.shape;
  switch (l) {
    case kLayoutBSH: return {s[0], s[1], Int(0), s[2]};  // heads filled in by the caller (dim holds H)
    case kLayoutSBH: return {s[1], s[0], Int(0), s[2]};
    case kLayoutBSND: return {s[0], s[1], s[2], s[3]};
    case kLayoutBNSD: return {s[0], s[2], s[1], s[3]};
    default: return {Int(1), s[0], s[1], s[2]};
  }
}

// A cumulative length list (actual_seq_qlen / actual_seq_kvlen): non-decreasing from >= 0, trailing zeros
// dropping batches (torch_npu's [2, 5, 9, 0, 0]), its last non-zero entry `total` (the TND tensor's tokens).
template <class Int>
void CheckAttentionCumulative(const OpSpec& op, const char* name, const std::vector<int64_t>& cum, const Int& total,
                              const char* of) {
  size_t used = cum.size();
  while (used > 0 && cum[used - 1] == 0) --used;
  int64_t prev = 0;
  for (size_t b = 0; b < used; ++b) {
    if (cum[b] < prev)
      Fail(ArgError::kValue, op, name, " must be cumulative sequence ends (non-decreasing, from >= 0, no leading 0, ",
           "trailing 0s allowed), got ", cum, ": entry ", b, " = ", cum[b], " is below ", prev);
    prev = cum[b];
  }
  if (total != prev)
    Fail(ArgError::kValue, op, name, " must end at ", of, "'s T = ", total, " tokens, got ", cum, " (ending at ", prev,
         ")");
}

// Per-sequence lengths of a cumulative list (trailing zeros: empty batches).
inline std::vector<int64_t> AttentionLengths(const std::vector<int64_t>& cum) {
  std::vector<int64_t> lens(cum.size(), 0);
  int64_t prev = 0;
  for (size_t b = 0; b < cum.size(); ++b)
    if (cum[b] != 0) lens[b] = cum[b] - prev, prev = cum[b];
  return lens;
}

// CANN's check of a top-left band (pre, next) on an s1 x s2 problem: some row must keep a key.
template <class Int>
bool AttentionBandKeepsKeys(const Int& pre, const Int& next, const Int& s1, const Int& s2) {
  const Int zero = Int(0);
  return (pre >= zero && next >= zero) || (pre < zero && next >= zero && next >= zero - pre && zero - pre < s2) ||
         (pre >= zero && next < zero && zero - next <= pre && zero - next < s1);
}

// The tokens torch_npu's tiling refuses for a mode (only with a mask: without one they are ignored).
template <class Int>
void CheckAttentionBand(const OpSpec& op, int64_t mode, int64_t pre, int64_t next, const Int& s1, const Int& s2,
                        const std::vector<int64_t>* qLens, const std::vector<int64_t>* kvLens) {
  if (qLens == nullptr) {
    const bool wide = Int(pre) >= s1 && (next == 0 || Int(next) >= s2);
    if ((mode == 0 && !wide && !AttentionBandKeepsKeys(Int(pre), Int(next), s1, s2)) ||
        (mode == 4 && !AttentionBandKeepsKeys(Int(pre) + s1 - s2, Int(next) + s2 - s1, s1, s2)))
      Fail(ArgError::kValue, op, "pre_tockens = ", pre, ", next_tockens = ", next,
           " leave no valid block for sparse_mode ", mode, " with S1 = ", s1, ", S2 = ", s2);
    return;
  }
  int64_t maxQ = 0, maxKv = 0;
  for (size_t b = 0; b < qLens->size(); ++b) maxQ = std::max(maxQ, (*qLens)[b]), maxKv = std::max(maxKv, (*kvLens)[b]);
  for (size_t b = 0; b < qLens->size(); ++b) {
    const int64_t q = (*qLens)[b], kv = (*kvLens)[b];
    const bool live = q > 0 && kv > 0;
    if (mode == 0 && !(pre >= maxQ && (next == 0 || next >= maxKv))) {
      if (next < 0 || (pre < 0 && next < -pre))
        Fail(ArgError::kValue, op, "pre_tockens = ", pre, ", next_tockens = ", next, " leave no valid block (TND)");
      if (live && kv + pre < q)
        Fail(ArgError::kValue, op, "sequence ", b, " (S1 = ", q, ", S2 = ", kv, ") would have a row with no key under ",
             "pre_tockens = ", pre);
    } else if (mode == 3 && q > kv) {
      Fail(ArgError::kValue, op, "sparse_mode 3 with input_layout='TND' needs S1 <= S2 in every sequence, got S1 = ", q,
           ", S2 = ", kv, " in sequence ", b);
    } else if (mode == 4) {
      if (pre < 0 || (next < 0 && pre + next < 0))
        Fail(ArgError::kValue, op, "pre_tockens = ", pre, ", next_tockens = ", next,
             " leave no valid block for sparse_mode 4 (TND)");
      if (live && q - next > kv)
        Fail(ArgError::kValue, op, "sequence ", b, " (S1 = ", q, ", S2 = ", kv, ") would have a row with no key under ",
             "next_tockens = ", next);
    }
  }
}

// sparse_mode 2-4's atten_mask (its shape checked) must be triu(ones(2048, 2048), 1): True (a non-zero byte)
// exactly above the diagonal.
inline void CheckAttentionCompressedMask(const OpSpec& op, int64_t sparseMode, const uint8_t* bytes) {
  const int64_t c = kAttentionCompressedMask;
  const auto set = [](uint8_t b) { return b != 0; };
  for (int64_t i = 0; i < c; ++i) {
    const uint8_t* row = bytes + i * c;
    if (std::any_of(row, row + i + 1, set) || !std::all_of(row + i + 1, row + c, set))
      Fail(ArgError::kValue, op, "atten_mask must be triu(ones(", c, ", ", c, "), 1) for sparse_mode ", sparseMode,
           " (the compressed causal mask), got another matrix");
  }
}

// keep_prob in (0, 1]; below 1 (CANN reads drop_mask only then) drop_mask must be uint8 with a bit for each score
// element, B * N1 * S1 * S2, or for TND (qLens / kvLens given) N1 * sum_b s1_b * s2_b (docs/attention.md,
// "Dropout"), and `a` gets dropout.
template <class Int>
void CheckAttentionDropout(const OpSpec& op, double keepProb, const TensorArg<Int>& dropMask, size_t dropIndex,
                           const std::vector<int64_t>* qLens, const std::vector<int64_t>* kvLens,
                           AttentionArgs<Int>& a) {
  if (!(keepProb > 0.0 && keepProb <= 1.0)) Fail(ArgError::kValue, op, "keep_prob must be in (0, 1], got ", keepProb);
  if (keepProb == 1.0) return;
  if (!dropMask.defined)
    Fail(ArgError::kValue, op, "keep_prob ", keepProb,
         " < 1 needs drop_mask (uint8, one bit a score element), got None: the device's own draw is not reproduced");
  CheckDtype(op, dropIndex, dropMask.dtype);
  Int bytes = Int(int64_t(1));
  for (const Int& d : dropMask.shape) bytes = bytes * d;
  int64_t scores = 0;  // TND: each sequence's s1_b x s2_b
  for (size_t b = 0; qLens && b < qLens->size(); ++b) scores += (*qLens)[b] * (*kvLens)[b];
  const Int elements = qLens ? a.heads * Int(scores) : a.batch * a.heads * a.s1 * a.s2,
            needed = (elements + Int(int64_t(7))) / Int(int64_t(8));
  if (bytes < needed)
    Fail(ArgError::kValue, op,
         qLens ? "drop_mask must hold N1 * sum(s1_b * s2_b) = " : "drop_mask must hold B * N1 * S1 * S2 = ", elements,
         " bits (", needed, " bytes), got ", bytes, " bytes (shape ", dropMask.shape, ")");
  a.dropout = true;
}

// query, key, value, atten_mask (defined = false: none) and the attrs of fusion_attention; `maskBytes` (may be
// empty) for sparse_mode 2-4's mask values; sink (input sinkIndex: fusion_attention's 4, the grad's 9) and
// drop_mask (input dropIndex).
template <class Int>
AttentionArgs<Int> CheckFusionAttention(const OpSpec& op, const TensorArg<Int>& q, const TensorArg<Int>& k,
                                        const TensorArg<Int>& v, const TensorArg<Int>& mask,
                                        const AttentionAttrs& attrs, const AttentionMaskBytes& maskBytes = {},
                                        size_t maskIndex = 3, const TensorArg<Int>& sink = {{}, DType::kOther, false},
                                        const TensorArg<Int>& dropMask = {{}, DType::kOther, false},
                                        size_t dropIndex = 5, size_t sinkIndex = 4) {
  const int64_t headNum = attrs.headNum, sparseMode = attrs.sparseMode;
  const std::optional<std::vector<int64_t>>&actualSeqQlen = attrs.actualSeqQlen, &actualSeqKvlen = attrs.actualSeqKvlen;
  const AttentionLayout l = AttentionLayoutOf(op, attrs.inputLayout);
  if (headNum <= 0) Fail(ArgError::kValue, op, "head_num must be positive, got ", headNum);
  if (!(attrs.softcap >= 0.0 && attrs.softcap <= 3.4e38))  // also NaN
    Fail(ArgError::kValue, op, "softcap must be 0 (none) or a positive finite number, got ", attrs.softcap);
  if (sparseMode == 5 || sparseMode == 6)
    Fail(ArgError::kValue, op, "sparse_mode ", sparseMode, " (prefix) is not supported; supported: 0-4");
  if (sparseMode == 7 || sparseMode == 8)
    Fail(ArgError::kValue, op, "sparse_mode ", sparseMode,
         " (varlen split across cards) is not supported; supported: 0-4");
  if (sparseMode < 0 || sparseMode > 8)
    Fail(ArgError::kValue, op, "sparse_mode must be 0-4 (5-8 are torch_npu's prefix and split modes), got ",
         sparseMode);
  CheckDtype(op, 0, q.dtype);
  CheckSameDtype(op, 1, k.dtype, 0, q.dtype);
  CheckSameDtype(op, 2, v.dtype, 0, q.dtype);
  AttentionOperand<Int> qo = ReadAttentionOperand(op, 0, q, l), ko = ReadAttentionOperand(op, 1, k, l),
                        vo = ReadAttentionOperand(op, 2, v, l);
  const bool packedH = l == kLayoutBSH || l == kLayoutSBH;
  if (packedH) {  // H = N x D: query's by head_num, key's by query's D, value's by key's heads
    if (qo.dim % headNum != 0) Fail(ArgError::kValue, op, "head_num = ", headNum, " must divide query's H = ", qo.dim);
    qo.heads = Int(headNum), qo.dim = qo.dim / headNum;
    if (qo.dim == 0) Fail(ArgError::kValue, op, "query's head dim must be positive, got H = 0");
    if (ko.dim % qo.dim != 0)
      Fail(ArgError::kValue, op, "key's H = ", ko.dim, " must be a whole number of query's head dim D = ", qo.dim,
           " (Dk = Dq)");
    ko.heads = ko.dim / qo.dim, ko.dim = qo.dim;
    if (ko.heads == 0) Fail(ArgError::kValue, op, "key must have at least one head, got H = 0");
    if (vo.dim % ko.heads != 0)
      Fail(ArgError::kValue, op, "value's H = ", vo.dim, " must be a whole number of key's ", ko.heads, " heads");
    vo.heads = ko.heads, vo.dim = vo.dim / ko.heads;
  } else if (qo.heads != headNum) {
    Fail(ArgError::kValue, op, "head_num must equal query's N = ", qo.heads, ", got ", headNum);
  }
  if (l != kLayoutTND && (k.shape[l == kLayoutSBH ? 1 : 0] != qo.batch || v.shape[l == kLayoutSBH ? 1 : 0] != qo.batch))
    Fail(ArgError::kValue, op, "query, key and value must have one batch size B = ", qo.batch, ", got key ", k.shape,
         " and value ", v.shape);
  if (vo.rows != ko.rows)
    Fail(ArgError::kValue, op, "value must have key's ", l == kLayoutTND ? "T = " : "S = ", ko.rows, " rows, got ",
         vo.rows, " (shape ", v.shape, ")");
  if (ko.heads == 0 || qo.heads % ko.heads != 0)
    Fail(ArgError::kValue, op, "query's heads N1 = ", qo.heads, " must be a multiple of key's heads N2 = ", ko.heads);
  if (vo.heads != ko.heads)
    Fail(ArgError::kValue, op, "value must have key's N2 = ", ko.heads, " heads, got ", vo.heads);
  if (ko.dim != qo.dim)
    Fail(ArgError::kValue, op, "key's head dim Dk must equal query's Dq = ", qo.dim, ", got ", ko.dim);
  if (qo.dim == 0 || vo.dim == 0)
    Fail(ArgError::kValue, op, "head dims must be positive, got Dq = ", qo.dim, ", Dv = ", vo.dim);
  if (vo.dim > ko.dim)
    Fail(ArgError::kValue, op, "value's head dim Dv must be at most Dk = ", ko.dim, ", got ", vo.dim);

  AttentionArgs<Int> a{attrs, l, q.dtype, mask, qo.batch, qo.heads, ko.heads, qo.dim, vo.dim, qo.rows, ko.rows, {}, {}};
  if (sink.defined) {  // torch_npu: "per-head bias, shape [head_num], dtype float32"
    CheckDtype(op, sinkIndex, sink.dtype);
    if (sink.dim() != 1 || sink.shape[0] != a.heads)
      Fail(ArgError::kValue, op, "sink must be [N1] = [", a.heads, "] (one logit per query head), got shape ",
           sink.shape);
    a.sink = true;
  }
  if (l == kLayoutTND) {
    if (!actualSeqQlen || !actualSeqKvlen)
      Fail(ArgError::kValue, op,
           "input_layout='TND' needs actual_seq_qlen and actual_seq_kvlen (cumulative ends), got ",
           !actualSeqQlen ? "actual_seq_qlen=None" : "actual_seq_kvlen=None");
    if (actualSeqQlen->size() != actualSeqKvlen->size() || actualSeqQlen->empty())
      Fail(ArgError::kValue, op, "actual_seq_qlen and actual_seq_kvlen must have one entry per batch (equal, >= 1), ",
           "got ", actualSeqQlen->size(), " and ", actualSeqKvlen->size());
    CheckAttentionCumulative(op, "actual_seq_qlen", *actualSeqQlen, qo.rows, "query");
    CheckAttentionCumulative(op, "actual_seq_kvlen", *actualSeqKvlen, ko.rows, "key");
    a.batch = Int(int64_t(actualSeqQlen->size()));
  } else if (actualSeqQlen || actualSeqKvlen) {
    Fail(ArgError::kValue, op, "actual_seq_qlen / actual_seq_kvlen are for input_layout='TND' only, got input_layout='",
         attrs.inputLayout, "'");
  }

  std::vector<int64_t> qLens, kvLens;
  if (l == kLayoutTND) qLens = AttentionLengths(*actualSeqQlen), kvLens = AttentionLengths(*actualSeqKvlen);
  CheckAttentionDropout(op, attrs.keepProb, dropMask, dropIndex, l == kLayoutTND ? &qLens : nullptr,
                        l == kLayoutTND ? &kvLens : nullptr, a);
  if (mask.defined) {
    CheckDtype(op, maskIndex, mask.dtype);
    const std::vector<Int>& m = mask.shape;
    const int64_t c = kAttentionCompressedMask;
    if (sparseMode >= 2) {
      const bool square = m.size() >= 2 && m[m.size() - 2] == c && m[m.size() - 1] == c;
      if (!square || !(mask.dim() == 2 || (mask.dim() == 4 && m[0] == 1 && m[1] == 1)))
        Fail(ArgError::kValue, op, "atten_mask must be the compressed [", c, ", ", c, "] causal mask for sparse_mode ",
             sparseMode, ", got shape ", m);
      if (maskBytes) CheckAttentionCompressedMask(op, sparseMode, maskBytes());
    } else if (l == kLayoutTND) {  // one [max S1, max S2] mask, each sequence reading its top-left corner
      const int64_t s1 = *std::max_element(qLens.begin(), qLens.end()),
                    s2 = *std::max_element(kvLens.begin(), kvLens.end());
      if (mask.dim() != 2 || m[0] != s1 || m[1] != s2)
        Fail(ArgError::kValue, op, "atten_mask must be [max S1, max S2] = [", s1, ", ", s2,
             "] for input_layout='TND', got shape ", m);
    } else {
      const bool ss = m.size() >= 2 && m[m.size() - 2] == a.s1 && m[m.size() - 1] == a.s2;
      const bool lead =
          mask.dim() == 2 ||
          (mask.dim() == 4 && ((m[0] == a.batch && (m[1] == a.heads || m[1] == 1)) || (m[0] == 1 && m[1] == 1)));
      if (!ss || !lead)
        Fail(ArgError::kValue, op, "atten_mask must be [B, N, S1, S2], [B, 1, S1, S2], [1, 1, S1, S2] or [S1, S2] = [",
             a.s1, ", ", a.s2, "] (B = ", a.batch, ", N = ", a.heads, "), got shape ", m);
    }
    CheckAttentionBand(op, sparseMode, attrs.preTokens, attrs.nextTokens, a.s1, a.s2,
                       l == kLayoutTND ? &qLens : nullptr, l == kLayoutTND ? &kvLens : nullptr);
  }

  const Int outH = packedH ? a.heads * a.valueDim : a.valueDim;
  switch (l) {
    case kLayoutBSH: a.out = {a.batch, a.s1, outH}; break;
    case kLayoutSBH: a.out = {a.s1, a.batch, outH}; break;
    case kLayoutBSND: a.out = {a.batch, a.s1, a.heads, a.valueDim}; break;
    case kLayoutBNSD: a.out = {a.batch, a.heads, a.s1, a.valueDim}; break;
    default: a.out = {a.s1, a.heads, a.valueDim};
  }
  a.stats = l == kLayoutTND ? std::vector<Int>{a.s1, a.heads, Int(kAttentionStatLanes)}
                            : std::vector<Int>{a.batch, a.heads, a.s1, Int(kAttentionStatLanes)};
  return a;
}

// The tiling's problem from checked arguments (concrete sizes).
inline AttentionProblem AttentionProblemOf(const AttentionArgs<int64_t>& a) {
  const AttentionAttrs& at = a.attrs;
  AttentionProblem p{a.layout,      a.dtype,        a.batch,     a.heads, a.kvHeads,       a.headDim,     a.valueDim,
                     a.s1,          a.s2,           {},          {},      float(at.scale), at.sparseMode, at.preTokens,
                     at.nextTokens, a.mask.defined, a.mask.shape};
  p.softcap = float(at.softcap), p.sinkDefined = a.sink;
  p.keepProb = a.dropout ? float(at.keepProb) : 1.0f;
  if (a.layout == kLayoutTND) {  // trailing zeros (empty batches) become the last end: length 0
    p.cumQ = *at.actualSeqQlen, p.cumKv = *at.actualSeqKvlen;
    const std::vector<int64_t> q = AttentionLengths(p.cumQ), kv = AttentionLengths(p.cumKv);
    int64_t endQ = 0, endKv = 0;
    p.s1 = 0, p.s2 = 0;
    for (size_t b = 0; b < q.size(); ++b) {
      p.cumQ[b] = endQ += q[b], p.cumKv[b] = endKv += kv[b];
      p.s1 = std::max(p.s1, q[b]), p.s2 = std::max(p.s2, kv[b]);
    }
  }
  return p;
}

}  // namespace tiling
