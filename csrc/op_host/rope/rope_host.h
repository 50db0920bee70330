// Host side of the RoPE ops: one kernel, one tiling (tiling/rope_tiling.h) and the problem functions
// (tiling/rope_problem.h) the torch binding calls. rotary_mul, rope_customer and their grads: inputs 0
// (x or dy), 1 (cos / r1), 2 (sin / r2) and rotary_mul(_grad)'s attr rotary_mode; rope_customer(_grad)
// have no attr (the tutorial's layout). apply_rotary_pos_emb(_grad):
// inputs 0, 1 (query, key or their grads, also outputs 0, 1), 2, 3 (cos, sin), attrs layout, rotary_mode.
#pragma once
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "op_host_common.h"
#include "rope_problem.h"

namespace ascendc_ops_host {

// `tutorial`: rope_customer(_grad); else rotary_mul(_grad), which have a rotary_mode.
template <typename Context>
tiling::RopeArgs<int64_t> RopeArgsOf(const Context* context, const tiling::OpSpec& op, bool tutorial) {
  const bool grad = &op == &ascendc_ops::kRotaryMulGrad;
  const std::string mode = tutorial ? ""
                                    : ReadAttr(context->GetAttrs(), grad ? ascendc_ops::kRotaryMulGradAttrs.rotaryMode
                                                                         : ascendc_ops::kRotaryMulAttrs.rotaryMode);
  return tiling::CheckRope(op, InputArg(context, 0), InputArg(context, 1), InputArg(context, 2),
                           tutorial ? std::nullopt : std::optional<std::string_view>(mode));
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

// Absent attrs take op_proto/rope/apply_rotary_pos_emb*.json's defaults.
template <typename Context>
tiling::ApplyRopeArgs<int64_t> ApplyRopeArgsOf(const Context* context, const tiling::OpSpec& op) {
  const gert::RuntimeAttrs* attrs = context->GetAttrs();
  const bool grad = &op == &ascendc_ops::kApplyRotaryPosEmbGrad;
  const auto& fwd = ascendc_ops::kApplyRotaryPosEmbAttrs;
  const auto& bwd = ascendc_ops::kApplyRotaryPosEmbGradAttrs;
  const std::string layout = ReadAttr(attrs, grad ? bwd.layout : fwd.layout);
  const std::string mode = ReadAttr(attrs, grad ? bwd.rotaryMode : fwd.rotaryMode);
  return tiling::CheckApplyRope(op, InputArg(context, 0), InputArg(context, 1), InputArg(context, 2),
                                InputArg(context, 3), layout, mode);
}

// One launch for both parts, as the torch binding tiles it (csrc/torch/rope_ops.cpp, PrepareApplyRope).
inline ge::graphStatus TileApplyRopeOp(gert::TilingContext* context, const tiling::OpSpec& op, bool backward) {
  return Checked([&] {
    const tiling::ApplyRopeArgs<int64_t> a = ApplyRopeArgsOf(context, op);
    int64_t elems = 0;
    for (const tiling::RopeArgs<int64_t>* part : {&a.query, &a.key}) {
      int64_t n = 1;
      for (int64_t d : part->out) n *= d;
      elems += n;
    }
    if (elems == 0) {  // nothing to do: one block with no tasks in either part
      ApplyRopeTilingData empty;
      std::memset(&empty, 0, sizeof(empty));
      return Publish(context, empty, 1, a.query.mode);
    }
    const tiling::DType dtype = InputArg(context, 0).dtype;
    tiling::RopeProblem q = tiling::RopeProblemOf(a.query, dtype, backward);
    tiling::RopeProblem k = tiling::RopeProblemOf(a.key, dtype, backward);
    q.rowElems = k.rowElems = uint32_t(a.rowElems);
    const tiling::ApplyRopeTiling t = tiling::TileApplyRope(q, k, NpuPlatform(context));
    return Publish(context, t.data, t.blockDim, t.tilingKey);
  });
}

// Outputs 0, 1 are inputs 0, 1 (ref tensors), once the arguments pass.
inline ge::graphStatus InferApplyRopeShape(gert::InferShapeContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    ApplyRopeArgsOf(context, op);
    const ge::graphStatus q = SameShape(context, 0, 0);
    return q == ge::GRAPH_SUCCESS ? SameShape(context, 1, 1) : q;
  });
}

inline ge::graphStatus ApplyRopeDtypes(gert::InferDataTypeContext* context) {
  const ge::graphStatus q = SameDtype(context, 0, 0);
  return q == ge::GRAPH_SUCCESS ? SameDtype(context, 1, 1) : q;
}

}  // namespace ascendc_ops_host
