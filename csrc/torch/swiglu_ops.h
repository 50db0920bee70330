// SwiGLU bindings shared by the CPU-twin and NPU launchers: argument checks, output allocation, tiling.
#pragma once
#include <ATen/ATen.h>

#include "op_proto_table.h"
#include "swiglu_tiling.h"

namespace ascendc_ops {

// Everything a launcher needs: contiguous inputs, the output, and the tiling.
struct SwigluLaunch {
  at::Tensor dy, x, out;  // dy is undefined for the forward op
  tiling::SwigluTiling tiling;
};

// Checks `op`'s arguments (forward: x; backward: dy and x) and tiles it for `platform`.
// Forward: out = silu(A) * B with `dim` halved; backward: out = dx, x's shape.
ASCENDC_OPS_API SwigluLaunch PrepareSwiglu(const OpProto& op, const at::Tensor& dy, const at::Tensor& x, int64_t dim,
                                           bool backward, const tiling::PlatformInfo& platform);

}  // namespace ascendc_ops
