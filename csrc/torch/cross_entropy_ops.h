// The cross-entropy family's bindings shared by the CPU-twin and NPU launchers: argument checks, output allocation,
// tiling, each kernel's argument list. cross_entropy_loss (on logits) also has the [N]-sized steps around its
// kernels (the reduction over rows, the backward's per-row coefficients); linear_cross_entropy (the LM head and its
// loss without the logits) returns per-token statistics, which Python turns into the loss.
#pragma once
#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>
#include <tuple>
#include <vector>

#include "cross_entropy_problem.h"
#include "kernel_entries.h"
#include "linear_cross_entropy_problem.h"
#include "op_proto_gen.h"
#include "op_proto_table.h"

// The family's kernel entry lists (tiling/cross_entropy_tiling_data.h, linear_cross_entropy_tiling_data.h), for
// ASCENDC_TWIN_KERNELS and ASCENDC_NPU_KERNELS.
#define CROSS_ENTROPY_KERNELS(X)                                              \
  X(CROSS_ENTROPY_LOSS_DTYPES, cross_entropy_loss, CROSS_ENTROPY_LOSS_PARAMS) \
  X(CROSS_ENTROPY_LOSS_GRAD_DTYPES, cross_entropy_loss_grad, CROSS_ENTROPY_LOSS_GRAD_PARAMS)
#define LINEAR_CROSS_ENTROPY_KERNELS(X)                                             \
  X(LINEAR_CROSS_ENTROPY_DTYPES, linear_cross_entropy, LINEAR_CROSS_ENTROPY_PARAMS) \
  X(LINEAR_CROSS_ENTROPY_GRAD_DTYPES, linear_cross_entropy_grad, LINEAR_CROSS_ENTROPY_GRAD_PARAMS)

namespace ascendc_ops {

using CrossEntropyOutputs = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

inline tiling::CrossEntropyAttrs CrossEntropyAttrsOf(c10::string_view reduction, int64_t ignoreIndex, double smoothing,
                                                     double zlossScale, bool returnZloss) {
  return {std::string(reduction.data(), reduction.size()), ignoreIndex, float(smoothing), float(zlossScale),
          returnZloss};
}

// The forward launch: inputs (contiguous), log_prob and the per-row results rowStats [N, 4] (fp32) it writes.
struct CrossEntropyLaunch {
  at::Tensor input, target, weight, logProb, rowStats;
  tiling::CrossEntropyAttrs attrs;
  tiling::CrossEntropyArgs<int64_t> args;
  tiling::CrossEntropyTiling tiling;
  auto Tensors() const { return std::tie(input, target, weight, logProb, rowStats); }  // CROSS_ENTROPY_LOSS_PARAMS
};

// The backward launch: log_prob, target, weight, the per-row coefficients rowCoef [3, N] (fp32) and x_grad.
struct CrossEntropyGradLaunch {
  at::Tensor logProb, target, weight, rowCoef, xGrad;
  tiling::CrossEntropyTiling tiling;
  auto Tensors() const { return std::tie(logProb, target, weight, rowCoef, xGrad); }  // CROSS_ENTROPY_LOSS_GRAD_PARAMS
};

ASCENDC_OPS_API CrossEntropyLaunch PrepareCrossEntropyLoss(const OpProto& op, const at::Tensor& input,
                                                           const at::Tensor& target,
                                                           const c10::optional<at::Tensor>& weight,
                                                           const tiling::CrossEntropyAttrs& attrs,
                                                           const tiling::PlatformInfo& platform);
// After the forward kernel: loss, log_prob, zloss, lse_for_zloss from rowStats (torch on [N] vectors, fp32).
ASCENDC_OPS_API CrossEntropyOutputs FinishCrossEntropyLoss(const CrossEntropyLaunch& l);

ASCENDC_OPS_API CrossEntropyGradLaunch PrepareCrossEntropyLossGrad(
    const OpProto& op, const at::Tensor& gradLoss, const at::Tensor& logProb, const at::Tensor& target,
    const c10::optional<at::Tensor>& weight, const c10::optional<at::Tensor>& gradZloss,
    const c10::optional<at::Tensor>& lse, const tiling::CrossEntropyAttrs& attrs, const tiling::PlatformInfo& platform);

// Registers both ops on one backend from its Run(op, input, target, weight, attrs) and
// RunGrad(op, grad_loss, log_prob, target, weight, grad_zloss, lse_for_zloss, attrs).
template <auto Run, auto RunGrad>
void ImplCrossEntropyOps(torch::Library& m) {
  m.impl("cross_entropy_loss",
         [](const at::Tensor& input, const at::Tensor& target, const c10::optional<at::Tensor>& weight,
            c10::string_view reduction, int64_t ignoreIndex, double smoothing, double zlossScale, bool returnZloss) {
           return Run(kCrossEntropyLoss, input, target, weight,
                      CrossEntropyAttrsOf(reduction, ignoreIndex, smoothing, zlossScale, returnZloss));
         });
  m.impl("cross_entropy_loss_grad",
         [](const at::Tensor& gradLoss, const at::Tensor& logProb, const at::Tensor& target,
            const c10::optional<at::Tensor>& weight, const c10::optional<at::Tensor>& gradZloss,
            const c10::optional<at::Tensor>& lse, c10::string_view reduction, int64_t ignoreIndex, double smoothing,
            double zlossScale) {
           return RunGrad(kCrossEntropyLossGrad, gradLoss, logProb, target, weight, gradZloss, lse,
                          CrossEntropyAttrsOf(reduction, ignoreIndex, smoothing, zlossScale, false));
         });
}

// ---------------------------------------------------------------- linear_cross_entropy

using LceStats = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
using LceGrads = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

// The optional inputs, undefined tensors when absent: bias [V] (hidden's dtype), class weights [V] (fp32).
struct LceVocabInputs {
  at::Tensor bias, classWeight;
};

struct LinearCrossEntropyLaunch {
  at::Tensor hidden, weight, target;  // contiguous
  at::Tensor bias, classWeight;  // contiguous, or undefined (the kernels get nullptr)
  at::Tensor lse, gradSoftmax, gradTarget, gradUniform;  // backward: contiguous
  at::Tensor logitsMax, sumExp, targetLogit, logitSum;  // forward's outputs (filled when there is no task)
  at::Tensor gradHidden, gradWeight, gradBias;  // backward's outputs (filled when there is no task)
  tiling::LinearCrossEntropyTiling tiling;

  // The kernels' GM tensors, <OP>_PARAMS but the workspace and tiling (EntryArgs).
  auto Tensors() const {
    return std::tie(hidden, weight, target, bias, classWeight, logitsMax, sumExp, targetLogit, logitSum);
  }
  auto GradTensors() const {
    return std::tie(hidden, weight, target, lse, gradSoftmax, gradTarget, gradUniform, bias, classWeight, gradHidden,
                    gradWeight, gradBias);
  }
};

// `grads` empty: the forward; else lse, grad_softmax, grad_target, grad_uniform.
ASCENDC_OPS_API LinearCrossEntropyLaunch PrepareLinearCrossEntropy(
    const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target, const std::vector<at::Tensor>& grads,
    const LceVocabInputs& vocab, const tiling::LinearCrossEntropyAttrs& attrs, const tiling::CubePlatform& platform);

using LceForwardImpl = LceStats (*)(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                                    const LceVocabInputs& vocab, const tiling::LinearCrossEntropyAttrs& attrs);
using LceBackwardImpl = LceGrads (*)(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                                     const std::vector<at::Tensor>& grads, const LceVocabInputs& vocab,
                                     const tiling::LinearCrossEntropyAttrs& attrs);

inline LceVocabInputs LceVocabInputsOf(const c10::optional<at::Tensor>& bias,
                                       const c10::optional<at::Tensor>& classWeight) {
  return {bias.has_value() ? *bias : at::Tensor(), classWeight.has_value() ? *classWeight : at::Tensor()};
}

// Registers both ops under one dispatch key (the twin's CPU, Meta, the NPU's).
template <LceForwardImpl Forward, LceBackwardImpl Backward>
void ImplLinearCrossEntropyOps(torch::Library& m) {
  m.impl("linear_cross_entropy", [](const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                                    const c10::optional<at::Tensor>& bias, const c10::optional<at::Tensor>& classWeight,
                                    int64_t vocabStartIndex, double softcap) {
    return Forward(hidden, weight, target, LceVocabInputsOf(bias, classWeight), {vocabStartIndex, softcap});
  });
  m.impl("linear_cross_entropy_grad",
         [](const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target, const at::Tensor& lse,
            const at::Tensor& gradSoftmax, const at::Tensor& gradTarget, const at::Tensor& gradUniform,
            const c10::optional<at::Tensor>& bias, const c10::optional<at::Tensor>& classWeight,
            int64_t vocabStartIndex, double softcap) {
           return Backward(hidden, weight, target, {lse, gradSoftmax, gradTarget, gradUniform},
                           LceVocabInputsOf(bias, classWeight), {vocabStartIndex, softcap});
         });
}

}  // namespace ascendc_ops
