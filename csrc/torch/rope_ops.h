// RoPE bindings shared by the CPU-twin and NPU launchers: argument checks and tiling.
#pragma once
#include <ATen/ATen.h>

#include "op_proto_table.h"
#include "rope_tiling.h"

namespace ascendc_ops {

// Everything a launcher needs: contiguous inputs in x's dtype, the output, and the tiling.
struct RopeLaunch {
  at::Tensor x, cos, sin, y;
  tiling::RopeTiling tiling;
};

// Checks (x, cos, sin) for `op` and tiles it for `platform`; `forceMode` is the tutorial
// op's fixed interleave layout, otherwise `mode` ("half" / "interleave") decides.
ASCENDC_OPS_API RopeLaunch PrepareRope(const OpProto& op, const at::Tensor& x, const at::Tensor& cos,
                                       const at::Tensor& sin, c10::string_view mode, bool backward,
                                       const tiling::PlatformInfo& platform);

// The tutorial op's layout: x [B, H, L, D] with cos/sin [L, D].
ASCENDC_OPS_API void CheckTutorialLayout(const OpProto& op, const at::Tensor& x, const at::Tensor& cos);

}  // namespace ascendc_ops
