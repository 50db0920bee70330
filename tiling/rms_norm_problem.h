// rms_norm / add_rms_norm / gated_rms_norm / rms_norm_grad / add_rms_norm_grad arguments -> the problem (x viewed as
// [rows, hidden]: gamma's dims are x's trailing dims, hidden their product) and the outputs' shapes,
// or an ArgError. Called by the torch bindings, their Meta kernels and the op_host.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include "op_spec.h"
#include "rms_norm_tiling.h"

namespace tiling {

template <class Int>
struct NormArgs {
  Int rows, hidden;        // rows: product of x's leading dims; hidden: of gamma's (the normalized) dims
  std::vector<Int> x;      // y, add_rms_norm's x output and dx: x's shape
  std::vector<Int> rstd;   // rstd (fp32): x's shape with the normalized dims set to 1 (keepdim)
  std::vector<Int> gamma;  // dgamma (gamma's dtype): gamma's shape
  DType xDtype, gammaDtype;
};

namespace norm_detail {

template <class Int>
bool SameShape(const std::vector<Int>& a, const std::vector<Int>& b) {
  bool same = a.size() == b.size();
  for (size_t k = 0; same && k < a.size(); ++k) same = a[k] == b[k];
  return same;
}

// x (input xIndex) is [..., *gamma.shape] (gamma input gammaIndex), of rank at most 8.
template <class Int>
NormArgs<Int> Shapes(const OpSpec& op, size_t xIndex, const TensorArg<Int>& x, size_t gammaIndex,
                     const TensorArg<Int>& gamma) {
  const char *xName = op.inputs[xIndex], *gName = op.inputs[gammaIndex];
  if (gamma.dim() < 1)
    Fail(ArgError::kValue, op, gName, " must have at least one dim (the normalized dims), got shape ", gamma.shape);
  if (x.dim() < gamma.dim() || x.dim() > 8)
    Fail(ArgError::kValue, op, xName, " must have rank ", gamma.dim(), "..8 (its trailing dims are ", gName,
         "'s), got shape ", x.shape);
  const int64_t lead = x.dim() - gamma.dim();
  if (!SameShape(std::vector<Int>(x.shape.begin() + lead, x.shape.end()), gamma.shape))
    Fail(ArgError::kValue, op, gName, " of shape ", gamma.shape, " must equal the trailing dims of ", xName,
         " of shape ", x.shape);
  NormArgs<Int> a{Int(1), Int(1), x.shape, x.shape, gamma.shape, x.dtype, gamma.dtype};
  for (int64_t k = 0; k < lead; ++k) a.rows = a.rows * x.shape[k];
  for (int64_t k = lead; k < x.dim(); ++k) a.hidden = a.hidden * x.shape[k], a.rstd[k] = Int(1);
  if (a.hidden > int64_t(std::numeric_limits<int32_t>::max()))
    Fail(ArgError::kValue, op, gName, " has ", a.hidden, " elements; at most 2^31 - 1 are supported");
  return a;
}

}  // namespace norm_detail

// rms_norm (x2 nullptr: inputs x, gamma) and add_rms_norm (inputs x1, x2, gamma).
template <class Int>
NormArgs<Int> CheckRmsNorm(const OpSpec& op, const TensorArg<Int>& x1, const NotDeduced<TensorArg<Int>>* x2,
                           const TensorArg<Int>& gamma, double epsilon) {
  if (x2) {
    CheckDtypes(op, {x1.dtype, x2->dtype, gamma.dtype});
    if (!norm_detail::SameShape(x1.shape, x2->shape))
      Fail(ArgError::kValue, op, op.inputs[0], " and ", op.inputs[1], " must have one shape, got ", x1.shape, " and ",
           x2->shape);
  } else {
    CheckDtypes(op, {x1.dtype, gamma.dtype});
  }
  if (!(std::isfinite(epsilon) && epsilon >= 0))
    Fail(ArgError::kValue, op, "epsilon must be finite and >= 0, got ", epsilon);
  return norm_detail::Shapes(op, 0, x1, x2 ? 2 : 1, gamma);
}

// gated_rms_norm (inputs x, gamma, z): rms_norm's checks, and the gate z of x's shape (and dtype, the prototype's).
template <class Int>
NormArgs<Int> CheckGatedRmsNorm(const OpSpec& op, const TensorArg<Int>& x, const TensorArg<Int>& gamma,
                                const TensorArg<Int>& z, double epsilon) {
  CheckDtypes(op, {x.dtype, gamma.dtype, z.dtype});
  if (!(std::isfinite(epsilon) && epsilon >= 0))
    Fail(ArgError::kValue, op, "epsilon must be finite and >= 0, got ", epsilon);
  NormArgs<Int> a = norm_detail::Shapes(op, 0, x, 1, gamma);
  if (!norm_detail::SameShape(z.shape, x.shape))
    Fail(ArgError::kValue, op, op.inputs[2], " must have ", op.inputs[0], "'s shape ", x.shape, ", got ", z.shape);
  return a;
}

// rms_norm_grad (dxOut nullptr: inputs dy, x, rstd, gamma) and add_rms_norm_grad (then dx_out).
template <class Int>
NormArgs<Int> CheckRmsNormGrad(const OpSpec& op, const TensorArg<Int>& dy, const TensorArg<Int>& x,
                               const TensorArg<Int>& rstd, const TensorArg<Int>& gamma,
                               const NotDeduced<TensorArg<Int>>* dxOut) {
  std::vector<DType> dtypes{dy.dtype, x.dtype, rstd.dtype, gamma.dtype};
  if (dxOut) dtypes.push_back(dxOut->dtype);
  CheckDtypes(op, dtypes);
  const NormArgs<Int> a = norm_detail::Shapes(op, 1, x, 3, gamma);
  if (!norm_detail::SameShape(dy.shape, x.shape))
    Fail(ArgError::kValue, op, op.inputs[0], " must have ", op.inputs[1], "'s shape ", x.shape, ", got ", dy.shape);
  if (dxOut && !norm_detail::SameShape(dxOut->shape, x.shape))
    Fail(ArgError::kValue, op, op.inputs[4], " must have ", op.inputs[1], "'s shape ", x.shape, ", got ", dxOut->shape);
  if (!norm_detail::SameShape(rstd.shape, a.rstd))
    Fail(ArgError::kValue, op, op.inputs[2], " must have shape ", a.rstd, " (", op.inputs[1],
         "'s with the normalized dims set to 1), got ", rstd.shape);
  return a;
}

// The gemma_rms_norm ops weight by (1 + gamma) (Gemma's RMSNorm); the others by gamma.
inline float NormGammaOffset(const OpSpec& op) {
  return std::string_view(op.name).rfind("gemma_", 0) == 0 ? 1.0f : 0.0f;
}

// The gated_rms_norm ops multiply by silu(z), z an input of x's shape.
inline bool NormGated(const OpSpec& op) { return std::string_view(op.name).rfind("gated_", 0) == 0; }

// `add`: add_rms_norm[_grad]; the backward ops have no epsilon (0); `gammaOffset`: 1 for gemma_rms_norm[_grad];
// `gated`: gated_rms_norm[_grad].
inline NormProblem NormProblemOf(const NormArgs<int64_t>& a, bool add, bool backward, double epsilon,
                                 float gammaOffset = 0.0f, bool gated = false) {
  return {a.rows, uint32_t(a.hidden), a.xDtype, a.gammaDtype, add, backward, float(epsilon), gammaOffset, gated};
}

}  // namespace tiling
