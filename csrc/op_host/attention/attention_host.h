// Host side of fusion_attention and fusion_attention_grad: the problem functions the torch bindings call
// (tiling/attention_problem.h, attention_grad_problem.h), then the tilings for the chip's cube cores; TND's
// cumulative lengths follow the tiling struct in the tiling buffer, where the kernels read them.
#pragma once
#include <cstring>
#include <string>
#include <vector>

#include "attention_grad_problem.h"
#include "attention_grad_tiling.h"
#include "attention_problem.h"
#include "op_host_common.h"

namespace ascendc_ops_host {

// The chip's cube cores (one core group each) and their L1 / L0 buffers.
inline tiling::CubePlatform AttentionCubePlatform(const gert::TilingContext* context) {
  platform_ascendc::PlatformAscendC soc(context->GetPlatformInfo());
  uint64_t l1 = 0, l0a = 0, l0b = 0, l0c = 0;
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L1, l1);
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L0_A, l0a);
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L0_B, l0b);
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L0_C, l0c);
  return {tiling::kA2Name, soc.GetCoreNumAic(), uint32_t(l1), uint32_t(l0a), uint32_t(l0b), uint32_t(l0c)};
}

// Inputs query (0), key (1), value (2), atten_mask (3, optional); attrs (both ops) head_num (0), input_layout (1),
// scale (2), pre_tockens (3), next_tockens (4), actual_seq_qlen (5), actual_seq_kvlen (6), sparse_mode (7).
struct AttentionAttrs {
  int64_t heads = 0, pre = 2147483647, next = 2147483647, mode = 0;
  std::string layout;
  double scale = 1.0;
  bool hasQlen = false, hasKvlen = false;
  std::vector<int64_t> qlen, kvlen;
};

inline AttentionAttrs AttentionAttrsOf(const gert::RuntimeAttrs* attrs) {
  AttentionAttrs a;
  if (attrs == nullptr) return a;
  if (const int64_t* v = attrs->GetInt(0)) a.heads = *v;
  if (const char* v = attrs->GetStr(1)) a.layout = v;
  if (const float* v = attrs->GetFloat(2)) a.scale = *v;
  if (const int64_t* v = attrs->GetInt(3)) a.pre = *v;
  if (const int64_t* v = attrs->GetInt(4)) a.next = *v;
  if (const auto* v = attrs->GetListInt(5); v != nullptr && v->GetSize() > 0)
    a.hasQlen = true, a.qlen.assign(v->GetData(), v->GetData() + v->GetSize());
  if (const auto* v = attrs->GetListInt(6); v != nullptr && v->GetSize() > 0)
    a.hasKvlen = true, a.kvlen.assign(v->GetData(), v->GetData() + v->GetSize());
  if (const int64_t* v = attrs->GetInt(7)) a.mode = *v;
  return a;
}

inline const std::vector<int64_t>* QlenOf(const AttentionAttrs& a) { return a.hasQlen ? &a.qlen : nullptr; }
inline const std::vector<int64_t>* KvlenOf(const AttentionAttrs& a) { return a.hasKvlen ? &a.kvlen : nullptr; }

template <typename Context>
tiling::AttentionArgs<int64_t> AttentionArgsOf(const Context* context, const tiling::OpSpec& op,
                                               const AttentionAttrs& a) {
  return tiling::CheckFusionAttention(op, InputArg(context, 0), InputArg(context, 1), InputArg(context, 2),
                                      InputArg(context, 3, true), a.heads, a.layout, a.pre, a.next, QlenOf(a),
                                      KvlenOf(a), a.mode);
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
    const AttentionAttrs a = AttentionAttrsOf(context->GetAttrs());
    const tiling::AttentionArgs<int64_t> args = AttentionArgsOf(context, op, a);
    const tiling::AttentionTiling t =
        tiling::TileAttention(tiling::AttentionProblemOf(args, InputArg(context, 0).dtype, a.scale, a.pre, a.next,
                                                         QlenOf(a), KvlenOf(a), a.mode, InputArg(context, 3, true)),
                              AttentionCubePlatform(context));
    if (t.blockDim == 0) return ge::GRAPH_FAILED;  // empty output: no launch
    return PublishAttention(context, t);
  });
}

// attention_out (0) in query's layout with Dv; softmax_max (1), softmax_sum (2).
inline ge::graphStatus InferAttentionShape(gert::InferShapeContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    const tiling::AttentionArgs<int64_t> args = AttentionArgsOf(context, op, AttentionAttrsOf(context->GetAttrs()));
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
// softmax_sum (6), attention_in (7); the forward's attrs.
template <typename Context>
tiling::AttentionArgs<int64_t> AttentionGradArgsOf(const Context* context, const tiling::OpSpec& op,
                                                   const AttentionAttrs& a) {
  return tiling::CheckFusionAttentionGrad(op, InputArg(context, 0), InputArg(context, 1), InputArg(context, 2),
                                          InputArg(context, 3), InputArg(context, 4, true), InputArg(context, 5),
                                          InputArg(context, 6), InputArg(context, 7), a.heads, a.layout, a.pre, a.next,
                                          QlenOf(a), KvlenOf(a), a.mode);
}

inline ge::graphStatus TileAttentionGradOp(gert::TilingContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    const AttentionAttrs a = AttentionAttrsOf(context->GetAttrs());
    const tiling::AttentionArgs<int64_t> args = AttentionGradArgsOf(context, op, a);
    const tiling::AttentionGradTiling t =
        tiling::TileAttentionGrad(tiling::AttentionProblemOf(args, InputArg(context, 0).dtype, a.scale, a.pre, a.next,
                                                             QlenOf(a), KvlenOf(a), a.mode, InputArg(context, 4, true)),
                                  AttentionCubePlatform(context));
    // no task: no query and no key rows, so dq / dk / dv are empty (an empty S1 or S2 alone still has tasks,
    // which write the zeros)
    if (t.blockDim == 0) return ge::GRAPH_FAILED;
    return PublishAttention(context, t);
  });
}

// dq, dk, dv (0-2): query's, key's and value's shapes, once the arguments pass the problem function.
inline ge::graphStatus InferAttentionGradShape(gert::InferShapeContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    (void)AttentionGradArgsOf(context, op, AttentionAttrsOf(context->GetAttrs()));
    for (size_t k = 0; k < 3; ++k)
      if (SameShape(context, k, k) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    return ge::GRAPH_SUCCESS;
  });
}

// dq, dk, dv in query's dtype.
inline ge::graphStatus InferAttentionGradDtype(gert::InferDataTypeContext* context) {
  for (size_t k = 0; k < 3; ++k)
    if (SameDtype(context, 0, k) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  return ge::GRAPH_SUCCESS;
}

}  // namespace ascendc_ops_host
