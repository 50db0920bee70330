// Host side of the RMSNorm ops (rms_norm, add_rms_norm and their grads): one tiling
// (tiling/rms_norm_tiling.h). x is [..., *gamma.shape]: rows = product of x's leading dims.
#pragma once
#include <algorithm>

#include "rms_norm_tiling.h"
#include "op_host_common.h"

namespace ascendc_ops_host {

// Tiles a norm op whose x is input `xIndex` and gamma input `gammaIndex`.
inline ge::graphStatus TileNormOp(gert::TilingContext* context, size_t xIndex, size_t gammaIndex, bool add,
                                  bool backward) {
  std::vector<int64_t> x, gamma;
  tiling::DType xDtype, gammaDtype;
  if (!InputDims(context, xIndex, x) || !InputDims(context, gammaIndex, gamma) ||
      !InputDtype(context, xIndex, xDtype) || !InputDtype(context, gammaIndex, gammaDtype))
    return ge::GRAPH_FAILED;
  if (gamma.empty() || x.size() < gamma.size() || !std::equal(gamma.begin(), gamma.end(), x.end() - gamma.size()))
    return ge::GRAPH_FAILED;  // gamma's dims must be x's trailing dims
  int64_t rows = 1, hidden = 1;
  for (size_t k = 0; k < x.size() - gamma.size(); ++k) rows *= x[k];
  for (int64_t d : gamma) hidden *= d;
  float epsilon = 0.0f;
  if (!backward) {
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    const float* eps = attrs == nullptr ? nullptr : attrs->GetFloat(0);
    epsilon = eps == nullptr ? 1e-6f : *eps;
  }
  try {
    const tiling::NormTiling t =
        tiling::TileNorm({rows, uint32_t(hidden), xDtype, gammaDtype, add, backward, epsilon}, NpuPlatform(context));
    // No rows or empty rows: the torch path fills rstd / dgamma without a kernel; the op
    // package does not take such shapes.
    if (t.blockDim == 0) return ge::GRAPH_FAILED;
    if (!backward) return Publish(context, t.data, t.blockDim, t.tilingKey);
    // Backward is one launch: row phase, SyncAll, dgamma phase, so every block must be resident
    // at once (batch schedule mode); the fp32 dgamma partials [blockDim, hidden] are the workspace.
    context->SetScheduleMode(1);
    const uint32_t blocks = std::max(t.blockDim, t.reduceBlockDim);
    return Publish(context, t.data, blocks, t.tilingKey, size_t(t.blockDim) * size_t(hidden) * sizeof(float));
  } catch (const tiling::TilingError&) {
    return ge::GRAPH_FAILED;
  }
}

// Forward outputs: y (x's shape and dtype), rstd (x's shape with gamma's dims set to 1, fp32),
// and for add_rms_norm x (x1's shape and dtype).
inline ge::graphStatus InferNormForwardShape(gert::InferShapeContext* context, size_t gammaIndex, bool add) {
  const gert::Shape* gamma = context->GetInputShape(gammaIndex);
  if (gamma == nullptr) return ge::GRAPH_FAILED;
  if (SameShape(context, 0, 0) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  if (KeepDimShape(context, 0, gamma->GetDimNum(), 1) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  return add ? SameShape(context, 0, 2) : ge::GRAPH_SUCCESS;
}

inline ge::graphStatus InferNormForwardDtype(gert::InferDataTypeContext* context, bool add) {
  if (SameDtype(context, 0, 0) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  if (context->SetOutputDataType(1, ge::DT_FLOAT) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  return add ? SameDtype(context, 0, 2) : ge::GRAPH_SUCCESS;
}

// Backward inputs (dy, x, rstd, gamma[, dx_out]) -> outputs dx (x's), dgamma (gamma's).
inline ge::graphStatus InferNormBackwardShape(gert::InferShapeContext* context) {
  if (SameShape(context, 1, 0) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  return SameShape(context, 3, 1);
}

inline ge::graphStatus InferNormBackwardDtype(gert::InferDataTypeContext* context) {
  if (SameDtype(context, 1, 0) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  return SameDtype(context, 3, 1);
}

}  // namespace ascendc_ops_host
