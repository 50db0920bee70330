// Host side of fusion_attention and fusion_attention_grad: the problem functions the torch bindings call
// (tiling/attention_problem.h, attention_grad_problem.h), then the tilings for the chip's cube cores; TND's
// cumulative lengths follow the tiling struct in the tiling buffer, where the kernels read them.
#pragma once
#include <cstring>

#include "attention_grad_problem.h"
#include "attention_grad_tiling.h"
#include "attention_problem.h"
#include "op_host_common.h"

namespace ascendc_ops_host {

// Both ops' attributes (op_proto_gen.h's FusionAttentionAttrs and FusionAttentionGradAttrs: index and default of
// each) as the one value the problem functions take.
template <typename Attrs>
tiling::AttentionAttrs AttentionAttrsOf(const gert::RuntimeAttrs* attrs, const Attrs& a) {
  return {ReadAttr(attrs, a.headNum),        ReadAttr(attrs, a.inputLayout), ReadAttr(attrs, a.scale),
          ReadAttr(attrs, a.preTockens),     ReadAttr(attrs, a.nextTockens), ReadAttr(attrs, a.actualSeqQlen),
          ReadAttr(attrs, a.actualSeqKvlen), ReadAttr(attrs, a.sparseMode),  ReadAttr(attrs, a.softcap)};
}

// fusion_attention: inputs query (0), key (1), value (2), atten_mask (3, optional), sink (4, optional), drop_mask
// (5, optional); its keep_prob besides the attrs both ops share.
template <typename Context>
tiling::AttentionArgs<int64_t> AttentionArgsOf(const Context* context, const tiling::OpSpec& op) {
  tiling::AttentionAttrs attrs = AttentionAttrsOf(context->GetAttrs(), ascendc_ops::kFusionAttentionAttrs);
  attrs.keepProb = ReadAttr(context->GetAttrs(), ascendc_ops::kFusionAttentionAttrs.keepProb);
  return tiling::CheckFusionAttention(op, InputArg(context, 0), InputArg(context, 1), InputArg(context, 2),
                                      InputArg(context, 3, true), attrs, {}, 3, InputArg(context, 4, true),
                                      InputArg(context, 5, true));
}

// A tiling's struct, blocks and workspace, then the varlen table right after the struct in the tiling buffer.
template <typename Tiling>
ge::graphStatus PublishAttention(gert::TilingContext* context, const Tiling& t) {
  if (Publish(context, t.data, t.blockDim, 0, size_t(t.workspaceBytes)) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  gert::TilingData* raw = context->GetRawTilingData();
  const size_t table = t.varlenTable.size() * sizeof(int64_t), bytes = sizeof(t.data) + table;
  if (raw == nullptr || raw->GetCapacity() < bytes) return ge::GRAPH_FAILED;
  if (table) std::memcpy(static_cast<uint8_t*>(raw->GetData()) + sizeof(t.data), t.varlenTable.data(), table);
  raw->SetDataSize(bytes);
  return ge::GRAPH_SUCCESS;
}

inline ge::graphStatus TileAttentionOp(gert::TilingContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    const tiling::AttentionTiling t =
        tiling::TileAttention(tiling::AttentionProblemOf(AttentionArgsOf(context, op)), NpuCubePlatform(context));
    if (t.blockDim == 0) return ge::GRAPH_FAILED;  // empty output: no launch
    return PublishAttention(context, t);
  });
}

// attention_out (0) in query's layout with Dv; softmax_max (1), softmax_sum (2).
inline ge::graphStatus InferAttentionShape(gert::InferShapeContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    const tiling::AttentionArgs<int64_t> args = AttentionArgsOf(context, op);
    if (SetOutputShape(context, 0, args.out) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    if (SetOutputShape(context, 1, args.stats) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    return SetOutputShape(context, 2, args.stats);
  });
}

// attention_out in query's dtype, the statistics fp32.
inline ge::graphStatus InferAttentionDtype(gert::InferDataTypeContext* context) {
  if (context->SetOutputDataType(0, context->GetInputDataType(0)) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  if (context->SetOutputDataType(1, ge::DT_FLOAT) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  return context->SetOutputDataType(2, ge::DT_FLOAT);
}

// fusion_attention_grad: inputs query (0), key (1), value (2), dy (3), atten_mask (4, optional), softmax_max (5),
// softmax_sum (6), attention_in (7), drop_mask (8, optional), sink (9, optional); the forward's attrs, keep_prob among
// them.
template <typename Context>
tiling::AttentionArgs<int64_t> AttentionGradArgsOf(const Context* context, const tiling::OpSpec& op) {
  tiling::AttentionAttrs attrs = AttentionAttrsOf(context->GetAttrs(), ascendc_ops::kFusionAttentionGradAttrs);
  attrs.keepProb = ReadAttr(context->GetAttrs(), ascendc_ops::kFusionAttentionGradAttrs.keepProb);
  return tiling::CheckFusionAttentionGrad(op, InputArg(context, 0), InputArg(context, 1), InputArg(context, 2),
                                          InputArg(context, 3), InputArg(context, 4, true), InputArg(context, 5),
                                          InputArg(context, 6), InputArg(context, 7), attrs, {},
                                          InputArg(context, 8, true), InputArg(context, 9, true));
}

// dsink (output 3) is optional: a graph without a sink may leave it out.
template <typename Context>
bool HasDsink(const Context* context) {
  return context->GetComputeNodeOutputNum() > 3;
}

inline ge::graphStatus TileAttentionGradOp(gert::TilingContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    const tiling::AttentionArgs<int64_t> a = AttentionGradArgsOf(context, op);
    if (a.sink && !HasDsink(context)) return ge::GRAPH_FAILED;  // a sink's gradient needs its output
    const tiling::AttentionGradTiling t =
        tiling::TileAttentionGrad(tiling::AttentionProblemOf(a), NpuCubePlatform(context));
    // no task: no query and no key rows, so dq / dk / dv are empty (an empty S1 or S2 alone still has tasks,
    // which write the zeros)
    if (t.blockDim == 0) return ge::GRAPH_FAILED;
    return PublishAttention(context, t);
  });
}

// dq, dk, dv (0-2): query's, key's and value's shapes, once the arguments pass the problem function; dsink (3, where
// given): sink's [N1], or [0] without a sink.
inline ge::graphStatus InferAttentionGradShape(gert::InferShapeContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    const tiling::AttentionArgs<int64_t> a = AttentionGradArgsOf(context, op);
    for (size_t k = 0; k < 3; ++k)
      if (SameShape(context, k, k) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    if (!HasDsink(context)) return ge::GRAPH_SUCCESS;
    return SetOutputShape(context, 3, std::vector<int64_t>{a.sink ? a.heads : 0});
  });
}

// dq, dk, dv in query's dtype, dsink (where given) fp32.
inline ge::graphStatus InferAttentionGradDtype(gert::InferDataTypeContext* context) {
  for (size_t k = 0; k < 3; ++k)
    if (SameDtype(context, 0, k) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  return HasDsink(context) ? context->SetOutputDataType(3, ge::DT_FLOAT) : ge::GRAPH_SUCCESS;
}

}  // namespace ascendc_ops_host
