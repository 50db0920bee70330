// SwiGLU bindings shared by the CPU-twin and NPU launchers: argument checks, output allocation, tiling.
#pragma once
#include <ATen/ATen.h>
#include <torch/library.h>

#include <tuple>

#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "op_proto_table.h"
#include "swiglu_tiling.h"

// The family's kernel entry lists (tiling/swiglu_tiling_data.h), for ASCENDC_TWIN_KERNELS and ASCENDC_NPU_KERNELS.
#define SWIGLU_KERNELS(X) X(SWIGLU_DTYPES, swiglu, SWIGLU_PARAMS) X(SWIGLU_GRAD_DTYPES, swiglu_grad, SWIGLU_GRAD_PARAMS)

namespace ascendc_ops {

// Everything a launcher needs: contiguous inputs, the output, and the tiling.
struct SwigluLaunch {
  at::Tensor dy, x, out;  // dy is undefined for the forward op
  tiling::SwigluTiling tiling;

  // The kernels' GM tensors (EntryArgs, no workspace): SWIGLU_PARAMS, SWIGLU_GRAD_PARAMS.
  auto Tensors() const { return std::tie(x, out); }
  auto GradTensors() const { return std::tie(dy, x, out); }
};

// Checks `op`'s arguments (forward: x; backward: dy and x) and tiles it for `platform`.
// Forward: out = silu(A) * B with `dim` halved; backward: out = dx, x's shape.
ASCENDC_OPS_API SwigluLaunch PrepareSwiglu(const OpProto& op, const at::Tensor& dy, const at::Tensor& x, int64_t dim,
                                           bool backward, const tiling::PlatformInfo& platform);

// Registers both ops on one backend (CPU twin, NPU, Meta) from its Run(op, dy (undefined: swiglu), x, dim, backward).
template <auto Run>
void ImplSwigluOps(torch::Library& m) {
  m.impl("swiglu", [](const at::Tensor& x, int64_t dim) { return Run(kSwiglu, at::Tensor(), x, dim, false); });
  m.impl("swiglu_grad",
         [](const at::Tensor& dy, const at::Tensor& x, int64_t dim) { return Run(kSwigluGrad, dy, x, dim, true); });
}

}  // namespace ascendc_ops
