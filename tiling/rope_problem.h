// RoPE arguments (rotary_mul, rope_customer and their grads) -> the problem (x's rows as three dims,
// cos/sin's rows broadcast against them, head_dim, mode) and the output's shape, or an ArgError.
// Called by the torch binding, its Meta kernel and the op_host.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "op_spec.h"
#include "rope_tiling.h"

namespace tiling {

template <class Int>
struct RopeArgs {
  std::array<Int, 3> xDims;  // rows of x as three dims (rank-3 x gets a leading 1)
  std::array<Int, 3> rDims;  // rows of cos/sin, padded with leading 1s to x's rank
  Int headDim;               // D, even
  RopeMode mode;
  std::vector<Int> out;  // y / dx: x's shape (contiguous)
};

namespace detail {
// Rows of a [..., D] shape as three dims, padded with leading 1s to `rank` - 1 and then to 3.
template <class Int>
std::array<Int, 3> RopeRowDims(const std::vector<Int>& shape, int64_t rank) {
  std::array<Int, 3> dims{Int(1), Int(1), Int(1)};
  const int64_t rows = rank - 1, pad = rank - int64_t(shape.size());
  for (int64_t k = 0; k < rows; ++k) dims[3 - rows + k] = k < pad ? Int(1) : shape[k - pad];
  return dims;
}
inline bool IsFloating(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat64;
}
}  // namespace detail

// rotary_mul(_grad)'s rotary_mode attr: "half" or "interleave".
inline RopeMode RopeModeOf(const OpSpec& op, std::string_view rotaryMode) {
  if (rotaryMode == "half") return ROPE_MODE_HALF;
  if (rotaryMode == "interleave") return ROPE_MODE_INTERLEAVE;
  Fail(ArgError::kValue, op, "rotary_mode must be 'half' or 'interleave', got '", std::string(rotaryMode), "'");
}

// x (dy for the *_grad ops), cos (r1), sin (r2): inputs 0, 1, 2. `rotaryMode`: rotary_mul(_grad)'s
// attr; std::nullopt for rope_customer(_grad), the tutorial's op (x [B, H, L, D], cos/sin [L, D],
// each pair reading its even lane's cos/sin: ROPE_MODE_TUTORIAL). cos/sin of another floating dtype
// are accepted: the callers cast them to x's, as npu_rotary_mul does.
template <class Int>
RopeArgs<Int> CheckRope(const OpSpec& op, const TensorArg<Int>& x, const TensorArg<Int>& cos, const TensorArg<Int>& sin,
                        std::optional<std::string_view> rotaryMode) {
  const char *xName = op.inputs[0], *rName = op.inputs[1], *sName = op.inputs[2];
  const RopeMode mode = rotaryMode ? RopeModeOf(op, *rotaryMode) : ROPE_MODE_TUTORIAL;
  if (!rotaryMode) {
    if (x.dim() != 4) Fail(ArgError::kValue, op, xName, " must be [B, H, L, D], got shape ", x.shape);
    if (cos.dim() != 2) Fail(ArgError::kValue, op, rName, " must be [L, D], got shape ", cos.shape);
  }
  if (x.dim() != 3 && x.dim() != 4)
    Fail(ArgError::kValue, op, xName,
         " must have rank 3 ([T, N, D]) or 4 ([B, N, S, D], [B, S, N, D], [S, B, N, D]), got shape ", x.shape);
  const Int d = x.shape.back();
  if (d % 2 != 0) Fail(ArgError::kValue, op, "the last dim of ", xName, " (head_dim) must be even, got ", d);
  bool same = cos.shape.size() == sin.shape.size();
  for (size_t k = 0; same && k < cos.shape.size(); ++k) same = cos.shape[k] == sin.shape[k];
  if (!same)
    Fail(ArgError::kValue, op, rName, " and ", sName, " must have one shape, got ", cos.shape, " and ", sin.shape);
  if (cos.dim() < 1 || cos.dim() > x.dim() || cos.shape.back() != d)
    Fail(ArgError::kValue, op, rName, " must have rank <= ", x.dim(), " and last dim ", d, " like ", xName,
         ", got shape ", cos.shape);
  for (int64_t k = 1; k < cos.dim(); ++k) {
    const Int& rk = cos.shape[cos.dim() - 1 - k];
    const Int& xk = x.shape[x.dim() - 1 - k];
    if (rk != 1 && rk != xk)
      Fail(ArgError::kValue, op, rName, " of shape ", cos.shape, " does not broadcast to ", xName, " of shape ",
           x.shape, " (dim ", -1 - k, " is ", rk, ", expected 1 or ", xk, ")");
  }
  CheckDtype(op, 0, x.dtype);
  if (!detail::IsFloating(cos.dtype)) Fail(ArgError::kType, op, rName, " must be floating point, got ", cos.dtype);
  if (!detail::IsFloating(sin.dtype)) Fail(ArgError::kType, op, sName, " must be floating point, got ", sin.dtype);
  CheckDtypes(op, {x.dtype, x.dtype, x.dtype});  // cos/sin in x's dtype after the cast
  return {detail::RopeRowDims(x.shape, x.dim()), detail::RopeRowDims(cos.shape, x.dim()), d, mode, x.shape};
}

// apply_rotary_pos_emb(_grad): query's and key's RoPE problems over one cos/sin. Partial rotary
// (cos/sin's last dim R < head_dim D): the first R elements of each row rotate, the rest stay (in place).
template <class Int>
struct ApplyRopeArgs {
  RopeArgs<Int> query, key;  // headDim: R, the rotated elements per row
  Int rowElems;              // D, the elements per row of query and key
};

// layout attr -> the index of the head dim N in query/key (rank 4, or 3 for TND).
inline int64_t ApplyRopeHeadDimIndex(const OpSpec& op, std::string_view layout, int64_t& rank) {
  rank = layout == "TND" ? 3 : 4;
  if (layout == "BSND" || layout == "SBND") return 2;
  if (layout == "BNSD" || layout == "TND") return 1;
  Fail(ArgError::kValue, op, "layout must be 'BSND', 'SBND', 'BNSD' or 'TND', got '", std::string(layout), "'");
}

// query/key (dquery/dkey): inputs 0, 1; cos, sin: 2, 3. query and key differ only in N (GQA); cos/sin
// have query's rank with N = 1 and every other dim 1 or query's (torch_npu's 11SD, B1SD, 1S1D, BS1D,
// S11D, SB1D, T1D tables).
template <class Int>
ApplyRopeArgs<Int> CheckApplyRope(const OpSpec& op, const TensorArg<Int>& q, const TensorArg<Int>& k,
                                  const TensorArg<Int>& cos, const TensorArg<Int>& sin, std::string_view layout,
                                  std::string_view rotaryMode) {
  const char *qName = op.inputs[0], *kName = op.inputs[1], *cName = op.inputs[2], *sName = op.inputs[3];
  int64_t rank = 4;
  const int64_t n = ApplyRopeHeadDimIndex(op, layout, rank);
  const RopeMode mode = RopeModeOf(op, rotaryMode);
  const std::string lay(layout);
  if (q.dim() != rank) Fail(ArgError::kValue, op, qName, " must have rank ", rank, " (", lay, "), got shape ", q.shape);
  if (k.dim() != rank) Fail(ArgError::kValue, op, kName, " must have rank ", rank, " (", lay, "), got shape ", k.shape);
  for (int64_t i = 0; i < rank; ++i)
    if (i != n && k.shape[i] != q.shape[i])
      Fail(ArgError::kValue, op, kName, " must match ", qName, " in every dim but N (", lay, "), got ", k.shape,
           " and ", q.shape);
  bool same = cos.shape.size() == sin.shape.size();
  for (size_t i = 0; same && i < cos.shape.size(); ++i) same = cos.shape[i] == sin.shape[i];
  if (!same)
    Fail(ArgError::kValue, op, cName, " and ", sName, " must have one shape, got ", cos.shape, " and ", sin.shape);
  if (cos.dim() != rank)
    Fail(ArgError::kValue, op, cName, " must have rank ", rank, " (", lay, "), got shape ", cos.shape);
  const Int& d = q.shape.back();
  const Int& r = cos.shape.back();
  if (r % 2 != 0 || r > d || r < 2)
    Fail(ArgError::kValue, op, "the last dim of ", cName, " (rotary dim) must be even and in [2, ", d,
         "] (head_dim of ", qName, "), got ", r);
  for (int64_t i = 0; i + 1 < rank; ++i) {
    const bool ok = i == n ? cos.shape[i] == 1 : (cos.shape[i] == 1 || cos.shape[i] == q.shape[i]);
    if (!ok)
      Fail(ArgError::kValue, op, cName, " of shape ", cos.shape, " does not fit ", qName, " of shape ", q.shape, " (",
           lay, "): dim ", i, " is ", cos.shape[i], ", expected ", i == n ? "1" : "1 or the same");
  }
  CheckDtype(op, 0, q.dtype);
  CheckSameDtype(op, 1, k.dtype, 0, q.dtype);
  if (!detail::IsFloating(cos.dtype)) Fail(ArgError::kType, op, cName, " must be floating point, got ", cos.dtype);
  if (!detail::IsFloating(sin.dtype)) Fail(ArgError::kType, op, sName, " must be floating point, got ", sin.dtype);
  auto part = [&](const TensorArg<Int>& x) {
    return RopeArgs<Int>{detail::RopeRowDims(x.shape, rank), detail::RopeRowDims(cos.shape, rank), r, mode, x.shape};
  };
  return {part(q), part(k), d};
}

inline RopeProblem RopeProblemOf(const RopeArgs<int64_t>& a, DType dtype, bool backward) {
  return {a.xDims, a.rDims, uint32_t(a.headDim), dtype, a.mode, backward};
}

}  // namespace tiling
