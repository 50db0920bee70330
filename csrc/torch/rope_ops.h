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

// apply_rotary_pos_emb(_grad): query and key as the kernel rotates them in place (the arguments
// themselves, or contiguous copies the launcher writes back), cos/sin in query's dtype, the tiling.
struct ApplyRopeLaunch {
  at::Tensor query, key, cos, sin;
  tiling::ApplyRopeTiling tiling;
};

ASCENDC_OPS_API ApplyRopeLaunch PrepareApplyRope(const OpProto& op, const at::Tensor& query, const at::Tensor& key,
                                                 const at::Tensor& cos, const at::Tensor& sin, std::string_view layout,
                                                 std::string_view rotaryMode, bool backward,
                                                 const tiling::PlatformInfo& platform);

// After the launch: query and key get the rotated rows where the kernel worked on copies.
ASCENDC_OPS_API void FinishApplyRope(const ApplyRopeLaunch& l, const at::Tensor& query, const at::Tensor& key);

}  // namespace ascendc_ops
