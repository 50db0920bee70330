// RMSNorm bindings shared by the CPU-twin and NPU launchers: argument checks, output allocation
// and tiling for rms_norm, add_rms_norm and their *_grad ops.
#pragma once
#include <ATen/ATen.h>

#include "rms_norm_tiling.h"
#include "op_proto_table.h"

namespace ascendc_ops {

// Contiguous inputs, allocated outputs (rstd already NaN where rows are empty) and the tiling;
// x2 / xOut are undefined for rms_norm.
struct NormForwardLaunch {
  at::Tensor x1, x2, gamma, y, rstd, xOut;
  tiling::NormTiling tiling;
};

// dxOut is undefined for rms_norm_grad; dgamma starts at zero (the sum over no rows).
struct NormBackwardLaunch {
  at::Tensor dy, x, rstd, gamma, dxOut, dx, dgamma;
  tiling::NormTiling tiling;
};

// Checks (x1[, x2], gamma, epsilon) for `op` and tiles it for `platform` (x2 null: rms_norm).
ASCENDC_OPS_API NormForwardLaunch PrepareNormForward(const OpProto& op, const at::Tensor& x1, const at::Tensor* x2,
                                                     const at::Tensor& gamma, double epsilon,
                                                     const tiling::PlatformInfo& platform);

// Checks (dy, x, rstd, gamma[, dxOut]) for `op` and tiles it for `platform` (dxOut null: rms_norm_grad).
ASCENDC_OPS_API NormBackwardLaunch PrepareNormBackward(const OpProto& op, const at::Tensor& dy, const at::Tensor& x,
                                                       const at::Tensor& rstd, const at::Tensor& gamma,
                                                       const at::Tensor* dxOut, const tiling::PlatformInfo& platform);

}  // namespace ascendc_ops
