// Host side of the four RoPE ops (rotary_mul, rope_customer and their grads): one kernel, one
// tiling (tiling/rope_tiling.h); the problem function (tiling/rope_problem.h) the torch binding
// calls, on inputs 0 (x or dy), 1 (cos / r1), 2 (sin / r2) and rotary_mul(_grad)'s attr 0,
// rotary_mode ("half" when absent); rope_customer(_grad) have no attr (the tutorial's layout).
#pragma once
#include <cstring>
#include <optional>
#include <string_view>

#include "op_host_common.h"
#include "rope_problem.h"

namespace ascendc_ops_host {

// `tutorial`: rope_customer(_grad); else rotary_mul(_grad), whose mode is attr 0.
template <typename Context>
tiling::RopeArgs<int64_t> RopeArgsOf(const Context* context, const tiling::OpSpec& op, bool tutorial) {
  std::optional<std::string_view> mode;
  if (!tutorial) {
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    const char* value = attrs == nullptr ? nullptr : attrs->GetStr(0);
    mode = value == nullptr ? std::string_view("half") : std::string_view(value);
  }
  return tiling::CheckRope(op, InputArg(context, 0), InputArg(context, 1), InputArg(context, 2), mode);
}

inline ge::graphStatus TileRopeOp(gert::TilingContext* context, const tiling::OpSpec& op, bool backward,
                                  bool tutorial) {
  return Checked([&] {
    const tiling::RopeArgs<int64_t> a = RopeArgsOf(context, op, tutorial);
    int64_t numel = 1;
    for (int64_t d : a.out) numel *= d;
    if (numel == 0) {  // nothing to do: one block with no tasks
      RopeTilingData empty;
      std::memset(&empty, 0, sizeof(empty));
      empty.xBuffers = 2;  // the kernel's Init still carves its queues
      empty.tileLines = 1;
      return Publish(context, empty, 1, a.mode);
    }
    const tiling::RopeTiling t =
        tiling::TileRope(tiling::RopeProblemOf(a, InputArg(context, 0).dtype, backward), NpuPlatform(context));
    return Publish(context, t.data, t.blockDim, t.tilingKey);
  });
}

inline ge::graphStatus InferRopeShape(gert::InferShapeContext* context, const tiling::OpSpec& op, bool tutorial) {
  return Checked([&] { return SetOutputShape(context, 0, RopeArgsOf(context, op, tutorial).out); });
}

}  // namespace ascendc_ops_host
