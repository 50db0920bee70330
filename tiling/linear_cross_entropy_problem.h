// linear_cross_entropy / linear_cross_entropy_grad arguments -> the problem and the outputs' shapes, or an ArgError
// naming the op, the argument, what was expected and what came. Called by the torch binding, its Meta kernel and
// the op_host. hidden [T, H] and weight [V, H] (a vocabulary shard from vocab_start_index) in one float dtype,
// target [T] int64; the backward adds the per-token fp32 [T] inputs lse, grad_softmax, grad_target, grad_uniform.
// Both take an optional bias [V] in hidden's dtype and optional class weights [V] fp32 (the shard's).
#pragma once
#include <cmath>
#include <vector>

#include "linear_cross_entropy_tiling.h"
#include "op_spec.h"

namespace tiling {

// The attributes of both ops (op_proto/cross_entropy/linear_cross_entropy*.json, in their order).
struct LinearCrossEntropyAttrs {
  int64_t vocabStartIndex;
  double softcap;
};

template <class Int>
struct LinearCrossEntropyArgs {
  LinearCrossEntropyAttrs attrs;
  DType dtype;
  Int tokens, hidden, vocab;
  std::vector<Int> stats;                   // forward: each of the four per-token statistics, [T]
  std::vector<Int> gradHidden, gradWeight;  // backward: hidden's and weight's shapes
  std::vector<Int> gradBias;                // backward: [V]
  bool hasBias, hasClassWeight;
};

// `grads`: the backward's four per-token inputs (lse, grad_softmax, grad_target, grad_uniform), else nullptr.
// `bias` and `classWeight`: !defined when absent.
template <class Int>
LinearCrossEntropyArgs<Int> CheckLinearCrossEntropy(const OpSpec& op, const TensorArg<Int>& hidden,
                                                    const TensorArg<Int>& weight, const TensorArg<Int>& target,
                                                    const NotDeduced<std::vector<TensorArg<Int>>>* grads,
                                                    const NotDeduced<TensorArg<Int>>& bias,
                                                    const NotDeduced<TensorArg<Int>>& classWeight,
                                                    const LinearCrossEntropyAttrs& attrs) {
  const auto matrix = [&](size_t index, const TensorArg<Int>& t, const char* shape) {
    if (t.dim() != 2) Fail(ArgError::kValue, op, op.inputs[index], " must be 2-D ", shape, ", got shape ", t.shape);
  };
  matrix(0, hidden, "[tokens, hidden]");
  matrix(1, weight, "[vocab, hidden]");
  if (weight.shape[1] != hidden.shape[1])
    Fail(ArgError::kValue, op, "weight must have hidden's ", hidden.shape[1], " columns (weight [vocab, hidden]), got ",
         "shape ", weight.shape, " for hidden ", hidden.shape);
  const auto perToken = [&](size_t index, const TensorArg<Int>& t) {
    if (t.dim() != 1 || t.shape[0] != hidden.shape[0])
      Fail(ArgError::kValue, op, op.inputs[index], " must have shape [", hidden.shape[0], "] (one per row of hidden), ",
           "got ", t.shape);
  };
  perToken(2, target);
  std::vector<DType> dtypes{hidden.dtype, weight.dtype, target.dtype};
  if (grads) {
    for (size_t k = 0; k < grads->size(); ++k) perToken(3 + k, (*grads)[k]), dtypes.push_back((*grads)[k].dtype);
  }
  CheckDtype(op, 0, hidden.dtype);
  CheckSameDtype(op, 1, weight.dtype, 0, hidden.dtype);
  CheckDtypes(op, dtypes);
  // the optional inputs follow the required ones (op_proto order): one per vocabulary row of this shard
  const size_t biasIndex = grads ? 7 : 3;
  for (size_t k = 0; k < 2; ++k) {
    const TensorArg<Int>& v = k == 0 ? bias : classWeight;
    if (!v.defined) continue;
    if (v.dim() != 1 || v.shape[0] != weight.shape[0])
      Fail(ArgError::kValue, op, op.inputs[biasIndex + k], " must have shape [", weight.shape[0],
           "] (one per row of weight), got ", v.shape);
    if (k == 0) CheckSameDtype(op, biasIndex, v.dtype, 0, hidden.dtype);
    else CheckDtype(op, biasIndex + k, v.dtype);
  }
  if (attrs.vocabStartIndex < 0)
    Fail(ArgError::kValue, op, "vocab_start_index must be >= 0 (the vocabulary id of weight's first row), got ",
         attrs.vocabStartIndex);
  if (!(attrs.softcap >= 0.0) || !std::isfinite(attrs.softcap))
    Fail(ArgError::kValue, op, "softcap must be a finite number >= 0 (0: none), got ", attrs.softcap);
  if (hidden.shape[1] > 65535)
    Fail(ArgError::kValue, op, "hidden must have at most 65535 columns (the cube's row load), got ", hidden.shape[1]);
  LinearCrossEntropyArgs<Int> a{attrs, hidden.dtype, hidden.shape[0], hidden.shape[1],    weight.shape[0], {}, {},
                                {},    {},           bias.defined,    classWeight.defined};
  a.stats = {hidden.shape[0]};
  a.gradHidden = hidden.shape;
  a.gradWeight = weight.shape;
  a.gradBias = {weight.shape[0]};
  return a;
}

inline LinearCrossEntropyProblem LinearCrossEntropyProblemOf(const LinearCrossEntropyArgs<int64_t>& a, bool backward) {
  return {a.dtype,   a.tokens,         a.hidden, a.vocab, a.attrs.vocabStartIndex, float(a.attrs.softcap),
          a.hasBias, a.hasClassWeight, backward};
}

}  // namespace tiling
