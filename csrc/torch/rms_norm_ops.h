// RMSNorm bindings shared by the CPU-twin and NPU launchers: the problem function
// (tiling/rms_norm_problem.h), output allocation and tiling for rms_norm, add_rms_norm and their
// *_grad ops, and their registration for one backend.
#pragma once
#include <ATen/ATen.h>
#include <torch/library.h>

#include <tuple>
#include <utility>

#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "op_proto_table.h"
#include "rms_norm_tiling.h"

// The family's kernel entry lists (tiling/rms_norm_tiling_data.h), for ASCENDC_TWIN_KERNELS and ASCENDC_NPU_KERNELS.
#define RMS_NORM_KERNELS(X)                                                      \
  X(RMS_NORM_DTYPES, rms_norm, RMS_NORM_PARAMS)                                  \
  X(ADD_RMS_NORM_DTYPES, add_rms_norm, ADD_RMS_NORM_PARAMS)                      \
  X(GATED_RMS_NORM_DTYPES, gated_rms_norm, GATED_RMS_NORM_PARAMS)                \
  X(RMS_NORM_GRAD_DTYPES, rms_norm_grad, RMS_NORM_GRAD_PARAMS)                   \
  X(ADD_RMS_NORM_GRAD_DTYPES, add_rms_norm_grad, ADD_RMS_NORM_GRAD_PARAMS)       \
  X(GATED_RMS_NORM_GRAD_DTYPES, gated_rms_norm_grad, GATED_RMS_NORM_GRAD_PARAMS) \
  X(RMS_NORM_DGAMMA_DTYPES, rms_norm_dgamma, RMS_NORM_DGAMMA_PARAMS)

namespace ascendc_ops {

// Contiguous inputs, allocated outputs (rstd already NaN where rows are empty) and the tiling;
// x2 / xOut are undefined for rms_norm, z (the gate) but for gated_rms_norm.
struct NormForwardLaunch {
  at::Tensor x1, x2, gamma, y, rstd, xOut;
  tiling::NormTiling tiling;
  at::Tensor z;

  // Each entry's GM tensors (EntryArgs, no workspace): RMS_NORM_PARAMS, ADD_RMS_NORM_PARAMS, GATED_RMS_NORM_PARAMS.
  auto RmsNormTensors() const { return std::tie(x1, gamma, y, rstd); }
  auto AddRmsNormTensors() const { return std::tie(x1, x2, gamma, y, rstd, xOut); }
  auto GatedRmsNormTensors() const { return std::tie(x1, gamma, z, y, rstd); }
};

// dxOut is undefined for rms_norm_grad; dgamma starts at zero (the sum over no rows); z and dz (the gate and
// its gradient) but for gated_rms_norm_grad.
struct NormBackwardLaunch {
  at::Tensor dy, x, rstd, gamma, dxOut, dx, dgamma;
  tiling::NormTiling tiling;
  at::Tensor z, dz;

  // The row kernels' GM tensors (EntryArgs, the fp32 dgamma partials as the workspace): RMS_NORM_GRAD_PARAMS,
  // ADD_RMS_NORM_GRAD_PARAMS, GATED_RMS_NORM_GRAD_PARAMS; the dgamma reduction's (RMS_NORM_DGAMMA_PARAMS, no
  // workspace).
  auto RmsNormGradTensors() const { return std::tie(dy, x, rstd, gamma, dx); }
  auto AddRmsNormGradTensors() const { return std::tie(dy, x, rstd, gamma, dxOut, dx); }
  auto GatedRmsNormGradTensors() const { return std::tie(dy, x, rstd, gamma, z, dx, dz); }
  auto DgammaTensors(const at::Tensor& partials) const { return std::tie(partials, dgamma); }
};

// Checks (x1[, x2], gamma, epsilon) for `op` and tiles it for `platform` (x2 null: rms_norm).
ASCENDC_OPS_API NormForwardLaunch PrepareNormForward(const OpProto& op, const at::Tensor& x1, const at::Tensor* x2,
                                                     const at::Tensor& gamma, double epsilon,
                                                     const tiling::PlatformInfo& platform);

// Checks (x, gamma, z, epsilon) for gated_rms_norm and tiles it for `platform`.
ASCENDC_OPS_API NormForwardLaunch PrepareGatedNormForward(const OpProto& op, const at::Tensor& x,
                                                          const at::Tensor& gamma, const at::Tensor& z, double epsilon,
                                                          const tiling::PlatformInfo& platform);

// Checks (dy, x, rstd, gamma[, dxOut]) for `op` and tiles it for `platform` (dxOut null: rms_norm_grad).
ASCENDC_OPS_API NormBackwardLaunch PrepareNormBackward(const OpProto& op, const at::Tensor& dy, const at::Tensor& x,
                                                       const at::Tensor& rstd, const at::Tensor& gamma,
                                                       const at::Tensor* dxOut, const tiling::PlatformInfo& platform);

// Checks (dy, x, rstd, gamma, z) for gated_rms_norm_grad and tiles it for `platform`.
ASCENDC_OPS_API NormBackwardLaunch PrepareGatedNormBackward(const OpProto& op, const at::Tensor& dy,
                                                            const at::Tensor& x, const at::Tensor& rstd,
                                                            const at::Tensor& gamma, const at::Tensor& z,
                                                            const tiling::PlatformInfo& platform);

// Registers the ops on one backend (CPU twin, NPU, Meta) from its four functions:
//   Forward(op, x1, x2 or nullptr, gamma, epsilon) -> (y, rstd, x out or undefined)
//   Backward(op, dy, x, rstd, gamma, dx_out or nullptr) -> (dx, dgamma)
//   GatedForward(op, x, gamma, z, epsilon) -> (y, rstd)
//   GatedBackward(op, dy, x, rstd, gamma, z) -> (dx, dgamma, dz)
template <auto Forward, auto Backward, auto GatedForward, auto GatedBackward>
void ImplNormOps(torch::Library& m) {
  m.impl("rms_norm", [](const at::Tensor& x, const at::Tensor& gamma, double epsilon) {
    auto [y, rstd, unused] = Forward(kRmsNorm, x, nullptr, gamma, epsilon);
    return std::make_tuple(y, rstd);
  });
  m.impl("add_rms_norm", [](const at::Tensor& x1, const at::Tensor& x2, const at::Tensor& gamma, double epsilon) {
    return Forward(kAddRmsNorm, x1, &x2, gamma, epsilon);
  });
  m.impl("rms_norm_grad", [](const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                             const at::Tensor& gamma) { return Backward(kRmsNormGrad, dy, x, rstd, gamma, nullptr); });
  m.impl("add_rms_norm_grad",
         [](const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd, const at::Tensor& gamma,
            const at::Tensor& dxOut) { return Backward(kAddRmsNormGrad, dy, x, rstd, gamma, &dxOut); });
  // Gemma's (1 + gamma): the rms_norm kernels with NormTilingData::gammaOffset = 1 (tiling::NormGammaOffset)
  m.impl("gemma_rms_norm", [](const at::Tensor& x, const at::Tensor& gamma, double epsilon) {
    auto [y, rstd, unused] = Forward(kGemmaRmsNorm, x, nullptr, gamma, epsilon);
    return std::make_tuple(y, rstd);
  });
  m.impl("gemma_rms_norm_grad",
         [](const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd, const at::Tensor& gamma) {
           return Backward(kGemmaRmsNormGrad, dy, x, rstd, gamma, nullptr);
         });
  // rms_norm(x, gamma) * silu(z): rms_norm's forward kernel with a z queue (KernelRmsNorm's GATE)
  m.impl("gated_rms_norm", [](const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& z, double epsilon) {
    return GatedForward(kGatedRmsNorm, x, gamma, z, epsilon);
  });
  m.impl("gated_rms_norm_grad",
         [](const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd, const at::Tensor& gamma,
            const at::Tensor& z) { return GatedBackward(kGatedRmsNormGrad, dy, x, rstd, gamma, z); });
}

}  // namespace ascendc_ops
