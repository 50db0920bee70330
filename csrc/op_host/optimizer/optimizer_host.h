// Host side of apply_adam_w, foreach_adam_w and foreach_norm: the problem function (tiling/optimizer_problem.h) the
// torch binding calls, on the inputs and the attrs, then the tiling.
#pragma once
#include "op_host_common.h"
#include "optimizer_problem.h"

namespace ascendc_ops_host {

// Both ops' attributes (apply_adam_w's and foreach_adam_w's prototypes list the same ones in the same order).
inline tiling::AdamWHyper AdamWHyperOf(const gert::RuntimeAttrs* attrs) {
  const auto& a = ascendc_ops::kApplyAdamWAttrs;
  static_assert(sizeof(ascendc_ops::kForeachAdamWAttrs) == sizeof(a), "the two ops' attributes differ");
  return {ReadAttr(attrs, a.lr),  ReadAttr(attrs, a.beta1), ReadAttr(attrs, a.beta2),   ReadAttr(attrs, a.weightDecay),
          ReadAttr(attrs, a.eps), ReadAttr(attrs, a.step),  ReadAttr(attrs, a.amsgrad), ReadAttr(attrs, a.maximize)};
}

// The element count of (var, m, v, grad, max_grad_norm), checked as the torch binding checks them.
template <typename Context>
int64_t AdamWElemsOf(const Context* context, const tiling::OpSpec& op, const tiling::AdamWHyper& hyper) {
  tiling::CheckAdamWHyper(op, hyper);
  tiling::TensorArg<int64_t> maxV = InputArg(context, 4, true);
  if (!hyper.amsgrad) maxV.defined = false;
  return tiling::CheckAdamW(op, InputArg(context, 0), InputArg(context, 1), InputArg(context, 2), InputArg(context, 3),
                            maxV, hyper.amsgrad);
}

inline ge::graphStatus TileApplyAdamWOp(gert::TilingContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    const tiling::AdamWHyper hyper = AdamWHyperOf(context->GetAttrs());
    const int64_t n = AdamWElemsOf(context, op, hyper);
    const tiling::AdamWTiling t = tiling::TileAdamW({n, 1, InputArg(context, 0).dtype, hyper}, NpuPlatform(context));
    if (t.blockDim == 0) return ge::GRAPH_FAILED;  // empty var: no launch (aclnn skips empty outputs)
    return Publish(context, t.data, t.blockDim, 0);
  });
}

// The outputs are the inputs updated in place: each keeps its shape and dtype.
inline ge::graphStatus InferApplyAdamWShape(gert::InferShapeContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    AdamWElemsOf(context, op, AdamWHyperOf(context->GetAttrs()));
    for (size_t k = 0; k < 3; ++k)
      if (SameShape(context, k, k) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    if (context->GetOptionalInputShape(4) != nullptr && context->GetOutputShape(3) != nullptr)
      return SameShape(context, 4, 3);
    return ge::GRAPH_SUCCESS;
  });
}

inline ge::graphStatus ApplyAdamWDtypes(gert::InferDataTypeContext* context) {
  for (size_t k = 0; k < 3; ++k)
    if (SameDtype(context, k, k) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  return SameDtype(context, 4, 3);
}

// Dynamic input `irIndex` (a list of tensors) as the problem functions see it.
template <typename Context>
std::vector<tiling::TensorArg<int64_t>> DynamicInputArgs(const Context* context, size_t irIndex) {
  std::vector<tiling::TensorArg<int64_t>> out;
  const gert::AnchorInstanceInfo* info = context->GetIrInputInstanceInfo(irIndex);
  const size_t n = info == nullptr ? 0 : info->GetInstanceNum();
  for (size_t i = 0; i < n; ++i) {
    const auto* shape = context->GetDynamicInputShape(irIndex, i);
    const auto* desc = context->GetDynamicInputDesc(irIndex, i);
    tiling::TensorArg<int64_t> arg{{}, tiling::DType::kOther, shape != nullptr};
    if (shape != nullptr) arg.shape = Dims(PlainShape(*shape));
    if (desc == nullptr || !TilingDtype(desc->GetDataType(), arg.dtype)) arg.dtype = tiling::DType::kOther;
    out.push_back(arg);
  }
  return out;
}

// foreach_adam_w: each tensor's element count, checked as the torch binding checks the lists.
template <typename Context>
std::vector<int64_t> ForeachAdamWCountsOf(const Context* context, const tiling::OpSpec& op,
                                          const tiling::AdamWHyper& hyper) {
  tiling::CheckAdamWHyper(op, hyper);
  return tiling::CheckForeachAdamW(op, DynamicInputArgs(context, 0), DynamicInputArgs(context, 1),
                                   DynamicInputArgs(context, 2), DynamicInputArgs(context, 3),
                                   DynamicInputArgs(context, 4), hyper.amsgrad, DynamicInputArgs(context, 5));
}

// The kernel reads the tensors' addresses and shapes from CANN's lists (ListTensorDesc); the tiling needs their
// total and count.
inline ge::graphStatus TileForeachAdamWOp(gert::TilingContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    const tiling::AdamWHyper hyper = AdamWHyperOf(context->GetAttrs());
    const std::vector<int64_t> counts = ForeachAdamWCountsOf(context, op, hyper);
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    const tiling::DType dtype = counts.empty() ? tiling::DType::kFloat32 : DynamicInputArgs(context, 0)[0].dtype;
    const bool master = !DynamicInputArgs(context, 5).empty();
    const tiling::AdamWTiling t =
        tiling::TileAdamW({total, int64_t(counts.size()), dtype, hyper, master}, NpuPlatform(context));
    if (t.blockDim == 0) return ge::GRAPH_FAILED;  // nothing to update: no launch
    return Publish(context, t.data, t.blockDim, 0);
  });
}

// Output list k is input list k updated in place (var, m, v, max_grad_norm, master): each keeps its shape, dtype.
inline ge::graphStatus InferForeachAdamWShape(gert::InferShapeContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    ForeachAdamWCountsOf(context, op, AdamWHyperOf(context->GetAttrs()));
    for (size_t k = 0; k < 5; ++k) {
      const size_t in = k < 3 ? k : k + 1;
      const gert::AnchorInstanceInfo* info = context->GetIrOutputInstanceInfo(k);
      for (size_t i = 0; info != nullptr && i < info->GetInstanceNum(); ++i) {
        const gert::Shape* from = context->GetDynamicInputShape(in, i);
        gert::Shape* to = context->GetOutputShape(info->GetInstanceStart() + i);
        if (from == nullptr || to == nullptr) return ge::GRAPH_FAILED;
        *to = *from;
      }
    }
    return ge::GRAPH_SUCCESS;
  });
}

inline ge::graphStatus ForeachAdamWDtypes(gert::InferDataTypeContext* context) {
  for (size_t k = 0; k < 5; ++k) {
    const size_t in = k < 3 ? k : k + 1;
    const gert::AnchorInstanceInfo* info = context->GetIrOutputInstanceInfo(k);
    for (size_t i = 0; info != nullptr && i < info->GetInstanceNum(); ++i)
      if (context->SetOutputDataType(info->GetInstanceStart() + i, context->GetDynamicInputDataType(in, i)) !=
          ge::GRAPH_SUCCESS)
        return ge::GRAPH_FAILED;
  }
  return ge::GRAPH_SUCCESS;
}

// foreach_norm: the list's element counts and the norm's kind.
template <typename Context>
std::vector<int64_t> ForeachNormCountsOf(const Context* context, const tiling::OpSpec& op, ForeachNormKind& kind) {
  const double p = ReadAttr(context->GetAttrs(), ascendc_ops::kForeachNormAttrs.scalar);
  return tiling::CheckForeachNorm(op, DynamicInputArgs(context, 0), p, kind);
}

// The pieces' phase, SyncAll, then block 0's finish (op_package/optimizer/foreach_norm.cpp): every block resident
// at once (batch schedule mode); the user workspace holds the slots, 32 bytes each.
inline ge::graphStatus TileForeachNormOp(gert::TilingContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    ForeachNormKind kind = FOREACH_NORM_L2;
    const std::vector<int64_t> counts = ForeachNormCountsOf(context, op, kind);
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    const tiling::DType dtype = counts.empty() ? tiling::DType::kFloat32 : DynamicInputArgs(context, 0)[0].dtype;
    const tiling::ForeachNormTiling t =
        tiling::TileForeachNorm({total, int64_t(counts.size()), dtype, kind}, NpuPlatform(context));
    if (t.blockDim == 0) return ge::GRAPH_FAILED;  // no element: nothing for the kernel to read
    context->SetScheduleMode(1);
    const size_t slots = counts.size() + t.blockDim;
    return Publish(context, t.data, t.blockDim, 0, slots * kForeachNormSlotFloats * sizeof(float));
  });
}

// Each norm is a 0-dim tensor in x's dtype.
inline ge::graphStatus InferForeachNormShape(gert::InferShapeContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    ForeachNormKind kind;
    const std::vector<int64_t> counts = ForeachNormCountsOf(context, op, kind);
    const gert::AnchorInstanceInfo* info = context->GetIrOutputInstanceInfo(0);
    for (size_t i = 0; info != nullptr && i < info->GetInstanceNum(); ++i)
      if (SetOutputShape(context, info->GetInstanceStart() + i, {}) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    return ge::GRAPH_SUCCESS;
  });
}

inline ge::graphStatus ForeachNormDtypes(gert::InferDataTypeContext* context) {
  const gert::AnchorInstanceInfo* info = context->GetIrOutputInstanceInfo(0);
  for (size_t i = 0; info != nullptr && i < info->GetInstanceNum(); ++i)
    if (context->SetOutputDataType(info->GetInstanceStart() + i, context->GetDynamicInputDataType(0, i)) !=
        ge::GRAPH_SUCCESS)
      return ge::GRAPH_FAILED;
  return ge::GRAPH_SUCCESS;
}

// foreach_clip_by_total_norm's total_norm (IR input 2): its instance index follows the two lists' tensors.
template <typename Context>
tiling::TensorArg<int64_t> TotalNormArg(const Context* context) {
  const gert::AnchorInstanceInfo* info = context->GetIrInputInstanceInfo(2);
  if (info == nullptr || info->GetInstanceNum() != 1) return {{}, tiling::DType::kOther, false};
  return InputArg(context, info->GetInstanceStart());
}

// foreach_clip_by_total_norm: x's element counts, checked as the torch binding checks them.
template <typename Context>
std::vector<int64_t> ForeachClipCountsOf(const Context* context, const tiling::OpSpec& op, ForeachNormKind& kind) {
  const auto& a = ascendc_ops::kForeachClipByTotalNormAttrs;
  return tiling::CheckForeachClip(op, DynamicInputArgs(context, 0), DynamicInputArgs(context, 1), TotalNormArg(context),
                                  ReadAttr(context->GetAttrs(), a.normType), kind);
}

// Every block reads the norms and scales its run of x (op_package/optimizer/foreach_clip_by_total_norm.cpp); at
// least one block, which writes the total.
inline ge::graphStatus TileForeachClipOp(gert::TilingContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    const auto& a = ascendc_ops::kForeachClipByTotalNormAttrs;
    ForeachNormKind kind = FOREACH_NORM_L2;
    const std::vector<int64_t> counts = ForeachClipCountsOf(context, op, kind);
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    const int64_t norms = int64_t(DynamicInputArgs(context, 1).size());
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    const tiling::ForeachClipTiling t =
        tiling::TileForeachClip({total, int64_t(counts.size()), norms, TotalNormArg(context).dtype, kind,
                                 ReadAttr(attrs, a.maxNorm), ReadAttr(attrs, a.errorIfNonfinite)},
                                NpuPlatform(context));
    return Publish(context, t.data, t.blockDim, 0);
  });
}

// The outputs are x and total_norm updated in place: each keeps its shape.
inline ge::graphStatus InferForeachClipShape(gert::InferShapeContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    ForeachNormKind kind;
    ForeachClipCountsOf(context, op, kind);
    const gert::AnchorInstanceInfo* info = context->GetIrOutputInstanceInfo(0);
    for (size_t i = 0; info != nullptr && i < info->GetInstanceNum(); ++i) {
      const gert::Shape* from = context->GetDynamicInputShape(0, i);
      gert::Shape* to = context->GetOutputShape(info->GetInstanceStart() + i);
      if (from == nullptr || to == nullptr) return ge::GRAPH_FAILED;
      *to = *from;
    }
    const gert::AnchorInstanceInfo* total = context->GetIrOutputInstanceInfo(1);
    const gert::AnchorInstanceInfo* totalIn = context->GetIrInputInstanceInfo(2);
    if (total == nullptr || totalIn == nullptr) return ge::GRAPH_FAILED;
    const gert::Shape* from = context->GetInputShape(totalIn->GetInstanceStart());
    gert::Shape* to = context->GetOutputShape(total->GetInstanceStart());
    if (from == nullptr || to == nullptr) return ge::GRAPH_FAILED;
    *to = *from;
    return ge::GRAPH_SUCCESS;
  });
}

inline ge::graphStatus ForeachClipDtypes(gert::InferDataTypeContext* context) {
  const gert::AnchorInstanceInfo* info = context->GetIrOutputInstanceInfo(0);
  for (size_t i = 0; info != nullptr && i < info->GetInstanceNum(); ++i)
    if (context->SetOutputDataType(info->GetInstanceStart() + i, context->GetDynamicInputDataType(0, i)) !=
        ge::GRAPH_SUCCESS)
      return ge::GRAPH_FAILED;
  const gert::AnchorInstanceInfo* total = context->GetIrOutputInstanceInfo(1);
  const gert::AnchorInstanceInfo* totalIn = context->GetIrInputInstanceInfo(2);
  if (total == nullptr || totalIn == nullptr) return ge::GRAPH_FAILED;
  return context->SetOutputDataType(total->GetInstanceStart(), context->GetInputDataType(totalIn->GetInstanceStart()));
}

}  // namespace ascendc_ops_host
