// moe_token_permute / moe_token_unpermute / moe_token_unpermute_grad arguments -> the problem
// (tokens T, topK K, hidden H, rows) and the outputs' shapes, or an ArgError. Called by the torch
// bindings, their Meta kernels and the op_host. The index values live on the device: the bindings
// check their ranges where they read them (run time).
#pragma once
#include <optional>
#include <vector>

#include "moe_routing_tiling.h"
#include "op_spec.h"

namespace tiling {

constexpr int64_t kMoeMaxTopK = MOE_MAX_TOPK;  // tiling/moe_routing_tiling_data.h

inline void CheckMoeNotPadded(const OpSpec& op, bool paddedMode) {
  if (paddedMode)
    Fail(ArgError::kValue, op, "padded_mode=True is not supported (as on the NPU); pass padded_mode=False");
}

template <class Int>
struct PermuteArgs {
  Int tokens, topK, hidden, numOut;
  std::vector<Int> permuted;       // permuted_tokens [num_out, H]
  std::vector<Int> sortedIndices;  // sorted_indices [T * K], int32
};

// tokens [T, H], indices [T, K] or [T] (K = 1); num_out_tokens (absent or 0: keep all T * K rows).
template <class Int>
PermuteArgs<Int> CheckMoeTokenPermute(const OpSpec& op, const TensorArg<Int>& tokens, const TensorArg<Int>& indices,
                                      std::optional<int64_t> numOutTokens, bool paddedMode) {
  CheckMoeNotPadded(op, paddedMode);
  if (tokens.dim() != 2) Fail(ArgError::kValue, op, op.inputs[0], " must be 2-D [T, H], got shape ", tokens.shape);
  if (indices.dim() != 1 && indices.dim() != 2)
    Fail(ArgError::kValue, op, op.inputs[1], " must be [T, topK] or [T], got shape ", indices.shape);
  const Int &t = tokens.shape[0], &h = tokens.shape[1];
  const Int k = indices.dim() == 2 ? indices.shape[1] : Int(1);
  if (indices.shape[0] != t)
    Fail(ArgError::kValue, op, op.inputs[1], " must have T = ", t, " rows (", op.inputs[0], ".size(0)), got shape ",
         indices.shape);
  if (k < 1 || k > kMoeMaxTopK)
    Fail(ArgError::kValue, op, "topK (", op.inputs[1], ".size(1)) must be in [1, ", kMoeMaxTopK, "], got ", k);
  CheckDtype(op, 0, tokens.dtype);
  CheckDtype(op, 1, indices.dtype);
  CheckDtypes(op, {tokens.dtype, indices.dtype});
  const Int n = t * k;
  Int numOut = n;
  if (numOutTokens) {
    if (*numOutTokens < 0) Fail(ArgError::kValue, op, "num_out_tokens must be >= 0 (0: keep all), got ", *numOutTokens);
    if (*numOutTokens > 0 && n > *numOutTokens) numOut = Int(*numOutTokens);
  }
  return {t, k, h, numOut, {numOut, h}, {n}};
}

inline MoeRoutingProblem MoeRoutingProblemOf(const PermuteArgs<int64_t>& a, DType dtype) {
  return {a.tokens, a.topK, a.hidden, a.numOut, dtype, false, false};
}

template <class Int>
struct UnpermuteArgs {
  Int tokens, topK, hidden, rows;
  bool hasProbs;
  // moe_token_unpermute: out = unpermuted_tokens [T, H]. The grad: out = permuted_tokens_grad
  // (permuted_tokens' shape [rows, H]) and probsGrad = probs_grad ([T, K], or [0] without probs).
  std::vector<Int> out, probsGrad;
};

// permuted_tokens [rows, H], sorted_indices [T * K], probs [T, K] (nullptr: absent); T and K come from
// probs, else from restore_shape [T, H] (empty: absent), else K = 1. The grad op (dout: its
// unpermuted_tokens_grad, [T, H]; nullptr for the forward op) takes dout as its second input.
template <class Int>
UnpermuteArgs<Int> CheckMoeTokenUnpermute(const OpSpec& op, const TensorArg<Int>& permuted,
                                          const NotDeduced<TensorArg<Int>>* dout, const TensorArg<Int>& sortedIndices,
                                          const NotDeduced<TensorArg<Int>>* probs, bool paddedMode,
                                          const std::vector<int64_t>& restoreShape) {
  const bool grad = dout != nullptr, hasProbs = probs != nullptr && probs->defined;
  const size_t sIdx = grad ? 2 : 1, pIdx = grad ? 3 : 2;
  const char* pn = op.inputs[0];
  const char* sn = op.inputs[sIdx];
  CheckMoeNotPadded(op, paddedMode);
  if (permuted.dim() != 2) Fail(ArgError::kValue, op, pn, " must be 2-D [rows, H], got shape ", permuted.shape);
  if (sortedIndices.dim() != 1)
    Fail(ArgError::kValue, op, sn, " must be 1-D [T * topK], got shape ", sortedIndices.shape);
  const Int &rows = permuted.shape[0], &h = permuted.shape[1], &n = sortedIndices.shape[0];
  Int t = n, k = Int(1);
  if (hasProbs) {
    const bool twoD = probs->dim() == 2;
    if (!twoD || probs->shape[0] * probs->shape[1] != n)
      Fail(ArgError::kValue, op, op.inputs[pIdx], " must be 2-D [T, topK] with T * topK = ", n, " (", sn,
           " length), got shape ", probs->shape);
    t = probs->shape[0], k = probs->shape[1];
  } else if (!restoreShape.empty()) {
    if (restoreShape.size() != 2 || restoreShape[0] <= 0 || n % restoreShape[0] != 0 || restoreShape[1] != h)
      Fail(ArgError::kValue, op, "restore_shape must be [T, H] with H = ", h, " and T dividing ", n, " (", sn,
           " length), got ", restoreShape);
    t = Int(restoreShape[0]), k = n / restoreShape[0];
  }
  if (k > kMoeMaxTopK) Fail(ArgError::kValue, op, "topK must be at most ", kMoeMaxTopK, ", got ", k);
  if (rows > n) Fail(ArgError::kValue, op, pn, " has ", rows, " rows, more than the ", n, " entries of ", sn);
  if (grad) {
    bool same = dout->dim() == 2;
    same = same && dout->shape[0] == t && dout->shape[1] == h;
    if (!same) Fail(ArgError::kValue, op, op.inputs[1], " must have shape [", t, ", ", h, "], got ", dout->shape);
  }
  CheckDtype(op, 0, permuted.dtype);
  CheckDtype(op, sIdx, sortedIndices.dtype);
  if (grad) CheckSameDtype(op, 1, dout->dtype, 0, permuted.dtype);
  if (hasProbs) {
    CheckDtype(op, pIdx, probs->dtype);
    if (probs->dtype != permuted.dtype && probs->dtype != DType::kFloat32)
      Fail(ArgError::kType, op, op.inputs[pIdx], " must have ", pn, "' dtype ", permuted.dtype, " or float32, got ",
           probs->dtype);
    if (grad) CheckDtypes(op, {permuted.dtype, dout->dtype, sortedIndices.dtype, probs->dtype});
    else CheckDtypes(op, {permuted.dtype, sortedIndices.dtype, probs->dtype});
  }
  UnpermuteArgs<Int> a{t, k, h, rows, hasProbs, {t, h}, {}};
  if (grad) {
    a.out = permuted.shape;
    a.probsGrad = hasProbs ? std::vector<Int>{t, k} : std::vector<Int>{Int(0)};
  }
  return a;
}

inline MoeRoutingProblem MoeRoutingProblemOf(const UnpermuteArgs<int64_t>& a, DType dtype) {
  return {a.tokens, a.topK, a.hidden, a.rows, dtype, a.hasProbs, true};
}

}  // namespace tiling
