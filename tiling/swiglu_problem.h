// swiglu / swiglu_grad arguments -> the problem (x viewed as [outer, 2, inner] around `dim`) and the
// output's shape, or an ArgError. Called by the torch binding, its Meta kernel and the op_host.
#pragma once
#include "op_spec.h"
#include "swiglu_tiling.h"

namespace tiling {

template <class Int>
struct SwigluArgs {
  Int outer, inner;
  std::vector<Int> out;  // forward: x with `dim` halved; backward: dx, x's shape
};

// dy is the backward op's first input (nullptr for the forward op); x follows it.
template <class Int>
SwigluArgs<Int> CheckSwiglu(const OpSpec& op, const NotDeduced<TensorArg<Int>>* dy, const TensorArg<Int>& x,
                            int64_t dim) {
  const size_t xIndex = dy ? 1 : 0;
  const char* xName = op.inputs[xIndex];
  if (x.dim() < 1) Fail(ArgError::kValue, op, xName, " must have at least 1 dim to split, got a 0-dim tensor");
  const int64_t d = NormalizeDim(op, xIndex, x, dim);
  if (x.shape[d] % 2 != 0)
    Fail(ArgError::kValue, op, xName, ".size(", dim, ") must be even to split into two halves, got ", x.shape[d], " (",
         xName, " shape ", x.shape, ")");
  std::vector<Int> half = x.shape;
  half[d] = x.shape[d] / 2;
  if (dy) {
    bool same = dy->shape.size() == half.size();
    for (size_t k = 0; same && k < half.size(); ++k) same = dy->shape[k] == half[k];
    if (!same)
      Fail(ArgError::kValue, op, op.inputs[0], " must have shape ", half, " (", xName, " shape ", x.shape, " with dim ",
           dim, " halved), got ", dy->shape);
    CheckDtype(op, xIndex, x.dtype);
    CheckDtypes(op, {dy->dtype, x.dtype});
  } else {
    CheckDtype(op, 0, x.dtype);
  }
  SwigluArgs<Int> a{Int(1), half[d], dy ? x.shape : half};
  for (int64_t k = 0; k < d; ++k) a.outer = a.outer * x.shape[k];
  for (int64_t k = d + 1; k < x.dim(); ++k) a.inner = a.inner * x.shape[k];
  return a;
}

inline SwigluProblem SwigluProblemOf(const SwigluArgs<int64_t>& a, DType dtype, bool backward) {
  return {a.outer, a.inner, dtype, backward};
}

}  // namespace tiling
