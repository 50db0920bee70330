// RoPE bindings shared by the CPU-twin and NPU launchers: the problem function
// (tiling/rope_problem.h), allocation and tiling.
#pragma once
#include <ATen/ATen.h>

#include <optional>
#include <string_view>

#include "op_proto_table.h"
#include "rope_tiling.h"

namespace ascendc_ops {

// Everything a launcher needs: contiguous inputs in x's dtype, the output, and the tiling.
struct RopeLaunch {
  at::Tensor x, cos, sin, y;
  tiling::RopeTiling tiling;
};

// Checks (x, cos, sin) for `op` and tiles it for `platform`. `rotaryMode`: rotary_mul(_grad)'s
// "half" / "interleave"; std::nullopt for rope_customer(_grad), the tutorial's fixed layout and mode.
ASCENDC_OPS_API RopeLaunch PrepareRope(const OpProto& op, const at::Tensor& x, const at::Tensor& cos,
                                       const at::Tensor& sin, std::optional<std::string_view> rotaryMode, bool backward,
                                       const tiling::PlatformInfo& platform);

}  // namespace ascendc_ops
