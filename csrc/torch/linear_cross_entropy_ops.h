// Fused linear cross-entropy bindings (forward and backward) shared by the CPU-twin and NPU launchers: argument
// checks through the problem function, output and workspace allocation, tiling, each kernel's argument list.
#pragma once
#include <ATen/ATen.h>
#include <torch/library.h>

#include <tuple>
#include <vector>

#include "kernel_entries.h"
#include "linear_cross_entropy_problem.h"
#include "op_proto_gen.h"
#include "op_proto_table.h"

// The family's kernel entry lists (tiling/linear_cross_entropy_tiling_data.h), for ASCENDC_TWIN_KERNELS and
// ASCENDC_NPU_KERNELS.
#define LINEAR_CROSS_ENTROPY_KERNELS(X)                                             \
  X(LINEAR_CROSS_ENTROPY_DTYPES, linear_cross_entropy, LINEAR_CROSS_ENTROPY_PARAMS) \
  X(LINEAR_CROSS_ENTROPY_GRAD_DTYPES, linear_cross_entropy_grad, LINEAR_CROSS_ENTROPY_GRAD_PARAMS)

namespace ascendc_ops {

using LceStats = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
using LceGrads = std::tuple<at::Tensor, at::Tensor>;

struct LinearCrossEntropyLaunch {
  at::Tensor hidden, weight, target;                     // contiguous
  at::Tensor lse, gradSoftmax, gradTarget, gradUniform;  // backward: contiguous
  at::Tensor logitsMax, sumExp, targetLogit, logitSum;   // forward's outputs
  at::Tensor gradHidden, gradWeight;  // backward's outputs (zero-filled when there is no task)
  tiling::LinearCrossEntropyTiling tiling;

  // The kernels' GM tensors, <OP>_PARAMS but the workspace and tiling (EntryArgs).
  auto Tensors() const { return std::tie(hidden, weight, target, logitsMax, sumExp, targetLogit, logitSum); }
  auto GradTensors() const {
    return std::tie(hidden, weight, target, lse, gradSoftmax, gradTarget, gradUniform, gradHidden, gradWeight);
  }
};

// `grads` empty: the forward; else lse, grad_softmax, grad_target, grad_uniform.
ASCENDC_OPS_API LinearCrossEntropyLaunch PrepareLinearCrossEntropy(const at::Tensor& hidden, const at::Tensor& weight,
                                                                   const at::Tensor& target,
                                                                   const std::vector<at::Tensor>& grads,
                                                                   const tiling::LinearCrossEntropyAttrs& attrs,
                                                                   const tiling::CubePlatform& platform);

using LceForwardImpl = LceStats (*)(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                                    const tiling::LinearCrossEntropyAttrs& attrs);
using LceBackwardImpl = LceGrads (*)(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                                     const std::vector<at::Tensor>& grads,
                                     const tiling::LinearCrossEntropyAttrs& attrs);

// Registers both ops under one dispatch key (the twin's CPU, Meta, the NPU's).
template <LceForwardImpl Forward, LceBackwardImpl Backward>
void ImplLinearCrossEntropyOps(torch::Library& m) {
  m.impl("linear_cross_entropy",
         [](const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target, int64_t vocabStartIndex,
            double softcap) { return Forward(hidden, weight, target, {vocabStartIndex, softcap}); });
  m.impl("linear_cross_entropy_grad", [](const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                                         const at::Tensor& lse, const at::Tensor& gradSoftmax,
                                         const at::Tensor& gradTarget, const at::Tensor& gradUniform,
                                         int64_t vocabStartIndex, double softcap) {
    return Backward(hidden, weight, target, {lse, gradSoftmax, gradTarget, gradUniform}, {vocabStartIndex, softcap});
  });
}

}  // namespace ascendc_ops
