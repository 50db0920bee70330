// cross_entropy_loss / cross_entropy_loss_grad arguments -> the problem and the outputs' shapes, or an ArgError
// naming the op, the argument, what was expected and what came. Called by the torch binding, its Meta kernel and
// the op_host. Only what shapes, dtypes and attributes show is checked here; a target value outside [0, C) that is
// not ignore_index is the binding's to refuse (it needs the values).
#pragma once
#include <cstring>
#include <string>
#include <vector>

#include "cross_entropy_tiling.h"
#include "op_spec.h"

namespace tiling {

// The attributes both ops share (the forward's return_zloss too), as op_proto/cross_entropy/*.json declares them.
struct CrossEntropyAttrs {
  std::string reduction = "mean";
  int64_t ignoreIndex = -100;
  float labelSmoothing = 0.0f;
  float lseSquareScale = 0.0f;
  bool returnZloss = false;
};

template <class Int>
struct CrossEntropyArgs {
  Int rows, cols;
  CrossEntropyReduction reduction;
  // forward: loss ([N] for 'none', else [1]), log_prob [N, C], zloss (loss's shape with return_zloss, else [0]),
  // lse_for_zloss ([N] with a z-loss scale, else [0]); backward: x_grad [N, C] in `logProb`
  std::vector<Int> loss, logProb, zloss, lse;
};

namespace detail {
inline CrossEntropyReduction ReductionOf(const OpSpec& op, const std::string& r) {
  if (r == "mean") return CROSS_ENTROPY_MEAN;
  if (r == "sum") return CROSS_ENTROPY_SUM;
  if (r == "none") return CROSS_ENTROPY_NONE;
  Fail(ArgError::kValue, op, "reduction must be one of 'mean', 'sum', 'none', got '", r, "'");
}

template <class Int>
void CheckAttrs(const OpSpec& op, const CrossEntropyAttrs& a, const Int& cols) {
  // torch_npu: ignore_index "must be less than C"; negative means no class is ignored (only that value is)
  if (cols <= Int(a.ignoreIndex))
    Fail(ArgError::kValue, op, "ignore_index must be < C = ", cols, ", got ", a.ignoreIndex);
  if (!(a.labelSmoothing >= 0.0f && a.labelSmoothing < 1.0f))
    Fail(ArgError::kValue, op, "label_smoothing must be in [0.0, 1.0), got ", a.labelSmoothing);
  if (!(a.lseSquareScale >= 0.0f && a.lseSquareScale < 1.0f))
    Fail(ArgError::kValue, op, "lse_square_scale_for_zloss must be in [0.0, 1.0), got ", a.lseSquareScale);
}

// input / log_prob (input `index`) must be [N, C] with C > 0; target [N]; weight, when given, [C].
template <class Int>
void CheckLogits(const OpSpec& op, size_t index, const TensorArg<Int>& x, const TensorArg<Int>& target,
                 size_t targetIndex, const TensorArg<Int>& weight, size_t weightIndex) {
  const char* name = op.inputs[index];
  if (x.dim() != 2) Fail(ArgError::kValue, op, name, " must be 2-D [N, C], got shape ", x.shape);
  if (x.shape[1] == Int(0))
    Fail(ArgError::kValue, op, name, " must have C = ", name, ".size(1) > 0, got shape ", x.shape);
  CheckDtype(op, index, x.dtype);
  CheckDtype(op, targetIndex, target.dtype);
  if (target.dim() != 1 || target.shape[0] != x.shape[0])
    Fail(ArgError::kValue, op, op.inputs[targetIndex], " must have shape [N] = [", x.shape[0], "] (", name, " shape ",
         x.shape, "), got ", target.shape);
  if (weight.defined) {
    CheckDtype(op, weightIndex, weight.dtype);
    if (weight.dim() != 1 || weight.shape[0] != x.shape[1])
      Fail(ArgError::kValue, op, op.inputs[weightIndex], " must have shape [C] = [", x.shape[1], "] (", name, " shape ",
           x.shape, "), got ", weight.shape);
  }
}

// grad_loss / grad_zloss: [N] for 'none', else one value ([] or [1]), in log_prob's dtype.
template <class Int>
void CheckLossGrad(const OpSpec& op, size_t index, const TensorArg<Int>& g, const TensorArg<Int>& logProb,
                   CrossEntropyReduction r) {
  CheckSameDtype(op, index, g.dtype, 1, logProb.dtype);
  const bool ok = r == CROSS_ENTROPY_NONE ? g.dim() == 1 && g.shape[0] == logProb.shape[0]
                                          : g.dim() == 0 || (g.dim() == 1 && g.shape[0] == Int(1));
  if (!ok) {
    if (r == CROSS_ENTROPY_NONE)
      Fail(ArgError::kValue, op, op.inputs[index], " must have shape [N] = [", logProb.shape[0],
           "] for reduction 'none', got ", g.shape);
    Fail(ArgError::kValue, op, op.inputs[index], " must have shape [] or [1] for reduction '",
         r == CROSS_ENTROPY_MEAN ? "mean" : "sum", "', got ", g.shape);
  }
}
}  // namespace detail

template <class Int>
CrossEntropyArgs<Int> CheckCrossEntropyLoss(const OpSpec& op, const TensorArg<Int>& input, const TensorArg<Int>& target,
                                            const NotDeduced<TensorArg<Int>>& weight, const CrossEntropyAttrs& a) {
  detail::CheckLogits(op, 0, input, target, 1, weight, 2);
  CrossEntropyArgs<Int> out{input.shape[0], input.shape[1], detail::ReductionOf(op, a.reduction), {}, {}, {}, {}};
  detail::CheckAttrs(op, a, out.cols);
  out.loss = out.reduction == CROSS_ENTROPY_NONE ? std::vector<Int>{out.rows} : std::vector<Int>{Int(1)};
  out.logProb = input.shape;
  out.zloss = a.returnZloss ? out.loss : std::vector<Int>{Int(0)};
  out.lse = a.lseSquareScale != 0.0f ? std::vector<Int>{out.rows} : std::vector<Int>{Int(0)};
  return out;
}

// Inputs: grad_loss, log_prob, target, weight, grad_zloss, lse_for_zloss (the optional ones !defined when absent).
template <class Int>
CrossEntropyArgs<Int> CheckCrossEntropyLossGrad(const OpSpec& op, const TensorArg<Int>& gradLoss,
                                                const NotDeduced<TensorArg<Int>>& logProb,
                                                const NotDeduced<TensorArg<Int>>& target,
                                                const NotDeduced<TensorArg<Int>>& weight,
                                                const NotDeduced<TensorArg<Int>>& gradZloss,
                                                const NotDeduced<TensorArg<Int>>& lse, const CrossEntropyAttrs& a) {
  detail::CheckLogits(op, 1, logProb, target, 2, weight, 3);
  CrossEntropyArgs<Int> out{logProb.shape[0], logProb.shape[1], detail::ReductionOf(op, a.reduction), {}, {}, {}, {}};
  detail::CheckAttrs(op, a, out.cols);
  detail::CheckLossGrad(op, 0, gradLoss, logProb, out.reduction);
  if (gradZloss.defined) detail::CheckLossGrad(op, 4, gradZloss, logProb, out.reduction);
  if (a.lseSquareScale != 0.0f) {
    if (!lse.defined)
      Fail(ArgError::kValue, op, op.inputs[5],
           " (the forward's lse_for_zloss, [N]) is required when "
           "lse_square_scale_for_zloss != 0, got None (lse_square_scale_for_zloss = ",
           a.lseSquareScale, ")");
    CheckSameDtype(op, 5, lse.dtype, 1, logProb.dtype);
    if (lse.dim() != 1 || lse.shape[0] != logProb.shape[0])
      Fail(ArgError::kValue, op, op.inputs[5], " must have shape [N] = [", logProb.shape[0], "], got ", lse.shape);
  }
  out.logProb = logProb.shape;
  return out;
}

inline CrossEntropyProblem CrossEntropyProblemOf(const CrossEntropyArgs<int64_t>& args, DType dtype, bool hasWeight,
                                                 bool backward, const CrossEntropyAttrs& a) {
  return {args.rows,        args.cols,        dtype,        hasWeight, backward, args.reduction, a.ignoreIndex,
          a.labelSmoothing, a.lseSquareScale, a.returnZloss};
}

}  // namespace tiling
