// Host side of the four RoPE ops (rotary_mul, rope_customer and their grads): one kernel, one
// tiling (tiling/rope_tiling.h); the ops differ in layout rules, mode and direction.
#pragma once
#include <array>
#include <cstring>

#include "op_host_common.h"
#include "rope_tiling.h"

namespace ascendc_ops_host {

// Rows of a [..., D] shape as three dims, padded with leading 1s to `rank` - 1 and then to 3
// (the layout the torch bindings build: csrc/torch/rope_ops.cpp).
inline std::array<int64_t, 3> RopeRowDims(const std::vector<int64_t>& shape, size_t rank) {
  std::array<int64_t, 3> dims{1, 1, 1};
  const size_t rows = rank - 1, pad = rank - shape.size();
  for (size_t k = 0; k < rows; ++k) dims[3 - rows + k] = k < pad ? 1 : shape[k - pad];
  return dims;
}

// Inputs 0 (x or dy), 1 (cos / r1), 2 (sin / r2). `tutorial`: rope_customer's [B, H, L, D] x with [L, D] cos.
inline ge::graphStatus TileRopeOp(gert::TilingContext* context, RopeMode mode, bool backward, bool tutorial) {
  std::vector<int64_t> x, cos, sin;
  tiling::DType dtype;
  if (!InputDims(context, 0, x) || !InputDims(context, 1, cos) || !InputDims(context, 2, sin) ||
      !InputDtype(context, 0, dtype))
    return ge::GRAPH_FAILED;
  if ((x.size() != 3 && x.size() != 4) || x.back() % 2 != 0 || cos != sin || cos.empty() || cos.size() > x.size() ||
      cos.back() != x.back() || (tutorial && (x.size() != 4 || cos.size() != 2)))
    return ge::GRAPH_FAILED;
  for (size_t k = 1; k < cos.size(); ++k) {
    const int64_t rk = cos[cos.size() - 1 - k], xk = x[x.size() - 1 - k];
    if (rk != 1 && rk != xk) return ge::GRAPH_FAILED;  // cos/sin must broadcast to x
  }
  const tiling::RopeProblem problem{
      RopeRowDims(x, x.size()), RopeRowDims(cos, x.size()), uint32_t(x.back()), dtype, mode, backward};
  int64_t numel = 1;
  for (int64_t d : x) numel *= d;
  if (numel == 0) {  // nothing to do: one block with no tasks
    RopeTilingData empty;
    std::memset(&empty, 0, sizeof(empty));
    empty.xBuffers = 2;  // the kernel's Init still carves its queues
    return Publish(context, empty, 1, mode);
  }
  try {
    const tiling::RopeTiling t = tiling::TileRope(problem, NpuPlatform(context));
    return Publish(context, t.data, t.blockDim, t.tilingKey);
  } catch (const tiling::TilingError&) {
    return ge::GRAPH_FAILED;  // e.g. a head_dim too wide for one row in UB
  }
}

// rotary_mul / rotary_mul_grad: attr 0 is rotary_mode, "half" or "interleave".
inline bool RopeModeAttr(const gert::TilingContext* context, RopeMode& mode) {
  const gert::RuntimeAttrs* attrs = context->GetAttrs();
  const char* value = attrs == nullptr ? nullptr : attrs->GetStr(0);
  if (value == nullptr || std::strcmp(value, "half") == 0) {
    mode = ROPE_MODE_HALF;
    return true;
  }
  mode = ROPE_MODE_INTERLEAVE;
  return std::strcmp(value, "interleave") == 0;
}

}  // namespace ascendc_ops_host
