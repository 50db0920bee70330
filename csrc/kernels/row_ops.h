// Row-wise fp32 work of the mix kernels' AIVs (attention, linear cross-entropy): a block [rows, width] held `pitch`
// floats apart per row, with one value per row (a max, a sum, a scale) reduced out of it or applied to it. Each call is
// a few instructions that repeat over the rows (mask/repeat form: a repeat is one row's 64-column chunk), never one
// call per row: per-row calls leave the scalar unit issuing hundreds of instructions per block while the cube waits. A
// per-row value reaches its row as a 32-byte block (Brcb) read with block stride 0.
#pragma once
#include "kernel_operator.h"

using namespace AscendC;

namespace row_ops {
constexpr uint32_t kMaxRows = 64;  // rows of one call: one repeat each (a block of 128 rows, halved)
constexpr uint32_t kLanes = 64;  // fp32 lanes of one 256-byte repeat
constexpr uint32_t kBlock = 8;  // fp32 lanes of one 32-byte block
constexpr float kTanhClamp = 30.0f;  // |2 s / softcap| beyond it: tanh is +-1 in fp32, and exp stays finite
enum class Op { kAdd, kSub, kMul, kMax, kMin };

__aicore__ inline void Binary(Op op, const LocalTensor<float>& dst, const LocalTensor<float>& a,
                              const LocalTensor<float>& b, uint32_t lanes, uint32_t rows, const BinaryRepeatParams& p) {
  switch (op) {
    case Op::kAdd: Add(dst, a, b, uint64_t(lanes), uint8_t(rows), p); break;
    case Op::kSub: Sub(dst, a, b, uint64_t(lanes), uint8_t(rows), p); break;
    case Op::kMul: Mul(dst, a, b, uint64_t(lanes), uint8_t(rows), p); break;
    case Op::kMax: Max(dst, a, b, uint64_t(lanes), uint8_t(rows), p); break;
    default: Min(dst, a, b, uint64_t(lanes), uint8_t(rows), p); break;
  }
}
}  // namespace row_ops

// dst[r] = max (kSum: the sum) of x[r, 0:width); rows <= 64, pitch a multiple of 8 and at most 2040.
// Wider than 64 columns, the 64-column chunks are first folded into `fold` [rows, 64] (lane-wise). 64
// lanes a row then go through two BlockReduces (8 lanes to 1 per row into `red8` [Align8(rows) x 8, defined
// past the rows], then each row's 8: one instruction for 8 rows; a WholeReduce costs 7 cycles a row);
// fewer lanes through one WholeReduce. That is also the order of the sum: per lane over the chunks, then
// the reductions' pairwise trees.
template <bool kSum>
__aicore__ inline void RowReduce(const LocalTensor<float>& dst, const LocalTensor<float>& x,
                                 const LocalTensor<float>& fold, const LocalTensor<float>& red8, uint32_t rows,
                                 uint32_t width, uint32_t pitch) {
  using namespace row_ops;
  if (rows == 0 || width == 0) return;
  const uint8_t xRep = uint8_t(pitch / kBlock), fRep = uint8_t(kLanes / kBlock);
  const Op op = kSum ? Op::kAdd : Op::kMax;
  LocalTensor<float> in = x;
  uint32_t inPitch = pitch;
  if (width > kLanes) {
    // fold = chunk 0 (op) chunk 1, or chunk 0 alone (max(x, x) = x) when chunk 1 is partial
    uint32_t c = kLanes;
    if (width >= 2 * kLanes) {
      Binary(op, fold, x, x[kLanes], kLanes, rows, BinaryRepeatParams(1, 1, 1, fRep, xRep, xRep));
      c = 2 * kLanes;
    } else {
      Binary(Op::kMax, fold, x, x, kLanes, rows, BinaryRepeatParams(1, 1, 1, fRep, xRep, xRep));
    }
    for (; c < width; c += kLanes) {
      const uint32_t w = width - c < kLanes ? width - c : kLanes;  // lanes past w keep what they hold
      Binary(op, fold, fold, x[c], w, rows, BinaryRepeatParams(1, 1, 1, fRep, fRep, xRep));
    }
    in = fold, inPitch = kLanes;
  }
  const int32_t lanes = int32_t(width < kLanes ? width : kLanes), inRep = int32_t(inPitch / kBlock);
  if (lanes == int32_t(kLanes)) {
    const int32_t groups = int32_t((rows + kBlock - 1) / kBlock);
    if constexpr (kSum) {
      BlockReduceSum(red8, in, int32_t(rows), lanes, 1, 1, inRep);
      BlockReduceSum(dst, red8, groups, lanes, 1, 1, int32_t(kBlock));
    } else {
      BlockReduceMax(red8, in, int32_t(rows), lanes, 1, 1, inRep);
      BlockReduceMax(dst, red8, groups, lanes, 1, 1, int32_t(kBlock));
    }
  } else if constexpr (kSum) {
    WholeReduceSum(dst, in, lanes, int32_t(rows), 1, 1, inRep);
  } else {
    WholeReduceMax(dst, in, lanes, int32_t(rows), 1, 1, inRep, ReduceOrder::ORDER_ONLY_VALUE);
  }
}

// blocks[r * 8 .. r * 8 + 8) = v[r] for r < Align8(rows): the per-row values as 32-byte blocks.
__aicore__ inline void RowBlocks(const LocalTensor<float>& blocks, const LocalTensor<float>& v, uint32_t rows) {
  using namespace row_ops;
  if (rows > 0) Brcb(blocks, v, uint8_t((rows + kBlock - 1) / kBlock), BrcbRepeatParams(1, kBlock));
}

// x[r, 0:width) = x[r, c] op blocks[r] (one 32-byte block per row, RowBlocks).
__aicore__ inline void RowApply(row_ops::Op op, const LocalTensor<float>& x, const LocalTensor<float>& blocks,
                                uint32_t rows, uint32_t width, uint32_t pitch) {
  using namespace row_ops;
  if (rows == 0) return;
  const uint8_t xRep = uint8_t(pitch / kBlock);
  for (uint32_t c = 0; c < width; c += kLanes) {
    const uint32_t w = width - c < kLanes ? width - c : kLanes;
    Binary(op, x[c], x[c], blocks, w, rows, BinaryRepeatParams(1, 1, 0, xRep, xRep, 1));
  }
}

// x[r, 0:width) = x op= v[r]: RowBlocks into `blocks`, then RowApply.
__aicore__ inline void RowScale(row_ops::Op op, const LocalTensor<float>& x, const LocalTensor<float>& v,
                                const LocalTensor<float>& blocks, uint32_t rows, uint32_t width, uint32_t pitch) {
  RowBlocks(blocks, v, rows);
  RowApply(op, x, blocks, rows, width, pitch);
}

// One block s [rows, width] of an online softmax (attention's forward, linear cross-entropy's logsumexp):
// mNew = max(mOld, rowmax s); s = exp(s - mNew) in place (P, over the whole pitch); alpha = exp(mOld - mNew);
// l = l * alpha + rowsum P. red, fold, red8 and blocks are scratch (RowReduce, RowScale).
__aicore__ inline void OnlineSoftmaxBlock(const LocalTensor<float>& s, const LocalTensor<float>& mOld,
                                          const LocalTensor<float>& mNew, const LocalTensor<float>& alpha,
                                          const LocalTensor<float>& l, const LocalTensor<float>& red,
                                          const LocalTensor<float>& fold, const LocalTensor<float>& red8,
                                          const LocalTensor<float>& blocks, uint32_t rows, uint32_t width,
                                          uint32_t pitch) {
  const int32_t r = int32_t(rows);
  RowReduce<false>(red, s, fold, red8, rows, width, pitch);
  Max(mNew, mOld, red, r);
  RowScale(row_ops::Op::kSub, s, mNew, blocks, rows, width, pitch);
  Exp(s, s, int32_t(rows * pitch));
  Sub(alpha, mOld, mNew, r);
  Exp(alpha, alpha, r);
  RowReduce<true>(red, s, fold, red8, rows, width, pitch);
  Mul(l, l, alpha, r);
  Add(l, l, red, r);
}

// s = softcap * tanh(s / softcap) over n floats (Gemma 2/3's logit softcapping); w is scratch of max(n, 16) floats
// and, with `derivative`, holds d s_out / d s_in = 1 - tanh^2 afterwards. tanh(y) = (e - 1) / (e + 1), e = exp(2y),
// is exact but for e's rounding, which makes it tanh(y') with y' = ln(e) / 2; y - y' is recovered from ln(e) and
// added back to first order (t + (y - y') (1 - t^2)), so small scores keep their relative accuracy (e - 1 alone
// would leave an absolute error of an ulp of 1, a large relative one for |y| << 1). In chunks of half of w.
__aicore__ inline void SoftcapBlock(const LocalTensor<float>& s, const LocalTensor<float>& w, uint32_t n, float softcap,
                                    bool derivative) {
  const int32_t k = int32_t(n);
  Muls(s, s, 1.0f / softcap, k);
  Mins(s, s, 0.5f * row_ops::kTanhClamp, k);
  Maxs(s, s, -0.5f * row_ops::kTanhClamp, k);
  const uint32_t chunk = n / 2 / 8 * 8 > 8 ? n / 2 / 8 * 8 : 8;
  LocalTensor<float> e = w, d = w[chunk];
  for (uint32_t c = 0; c < n; c += chunk) {
    const int32_t m = int32_t(n - c < chunk ? n - c : chunk);
    LocalTensor<float> y = s[c];
    Muls(e, y, 2.0f, m);
    Exp(e, e, m);
    Ln(d, e, m);
    Muls(d, d, -0.5f, m);
    Add(d, d, y, m);  // y - y'
    Adds(y, e, -1.0f, m);
    Adds(e, e, 1.0f, m);
    Div(y, y, e, m);  // tanh(y')
    Mul(e, y, y, m);
    Muls(e, e, -1.0f, m);
    Adds(e, e, 1.0f, m);
    Mul(e, e, d, m);
    Add(y, y, e, m);
  }
  if (derivative) {
    Mul(w, s, s, k);
    Muls(w, w, -1.0f, k);
    Adds(w, w, 1.0f, k);
  }
  Muls(s, s, softcap, k);
}
