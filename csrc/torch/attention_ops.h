// Fused attention bindings (forward and backward) shared by the CPU-twin and NPU launchers: argument checks
// through the problem functions, output and workspace allocation, tiling.
#pragma once
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "attention_grad_problem.h"
#include "attention_grad_tiling.h"
#include "attention_problem.h"
#include "op_proto_gen.h"
#include "op_proto_table.h"

namespace ascendc_ops {

// What both ops' bindings share (attention_ops.cpp).
inline std::optional<std::vector<int64_t>> AttentionListOf(at::OptionalIntArrayRef list) {
  if (!list.has_value()) return std::nullopt;
  return list->vec();
}

// sparse_mode 2-4 take the compressed causal mask, whose shape the problem function checks and whose values
// this does: it must be triu(ones(2048, 2048), 1).
void CheckCompressedAttentionMask(const OpProto& op, const at::Tensor& attenMask, int64_t sparseMode);

// The tiling struct, then TND's cumulative lengths (int64), as one byte tensor the kernel reads.
template <typename Data>
at::Tensor AttentionTilingBytes(const Data& data, const std::vector<int64_t>& varlenTable) {
  const size_t table = varlenTable.size() * sizeof(int64_t);
  at::Tensor bytes = at::empty({int64_t(sizeof(Data) + table)}, at::kByte);
  std::memcpy(bytes.data_ptr(), &data, sizeof(Data));
  if (table) std::memcpy(bytes.data_ptr<uint8_t>() + sizeof(Data), varlenTable.data(), table);
  return bytes;
}

// The twin's cube core groups: the modelled chip's (set_tiling_platform's cube_cores), else one per torch thread.
tiling::CubePlatform TwinCubePlatform();

struct FusionAttentionLaunch {
  at::Tensor query, key, value, mask;  // contiguous; mask undefined when absent
  at::Tensor out, softmaxMax, softmaxSum;
  at::Tensor tilingBytes;  // the tiling struct, then TND's cumulative lengths (int64), as the kernel reads them
  tiling::AttentionTiling tiling;
};

ASCENDC_OPS_API FusionAttentionLaunch PrepareFusionAttention(const at::Tensor& query, const at::Tensor& key,
                                                             const at::Tensor& value, const at::Tensor& attenMask,
                                                             int64_t headNum, const std::string& inputLayout,
                                                             double scale, int64_t preTokens, int64_t nextTokens,
                                                             at::OptionalIntArrayRef actualSeqQlen,
                                                             at::OptionalIntArrayRef actualSeqKvlen, int64_t sparseMode,
                                                             const tiling::CubePlatform& platform);

using FusionAttentionImpl = std::tuple<at::Tensor, at::Tensor, at::Tensor> (*)(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const at::Tensor& attenMask,
    int64_t headNum, const std::string& inputLayout, double scale, int64_t preTokens, int64_t nextTokens,
    at::OptionalIntArrayRef actualSeqQlen, at::OptionalIntArrayRef actualSeqKvlen, int64_t sparseMode);

// Registers `Impl` for fusion_attention under one dispatch key (the twin's CPU, Meta).
template <FusionAttentionImpl Impl>
void ImplFusionAttention(torch::Library& m) {
  m.impl("fusion_attention",
         [](const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, int64_t headNum,
            c10::string_view inputLayout, const c10::optional<at::Tensor>& attenMask, double scale, int64_t preTokens,
            int64_t nextTokens, at::OptionalIntArrayRef actualSeqQlen, at::OptionalIntArrayRef actualSeqKvlen,
            int64_t sparseMode) {
           return Impl(query, key, value, attenMask.value_or(at::Tensor()), headNum, std::string(inputLayout), scale,
                       preTokens, nextTokens, actualSeqQlen, actualSeqKvlen, sparseMode);
         });
}

struct FusionAttentionGradLaunch {
  at::Tensor query, key, value, dy, mask, softmaxMax, softmaxSum, attentionIn;  // contiguous; mask may be undefined
  at::Tensor dq, dk, dv;  // zero-filled when tiling.blockDim == 0 (no task; an empty S1 or S2 alone has tasks)
  at::Tensor tilingBytes;  // AttentionGradTilingData, then TND's cumulative lengths (int64)
  tiling::AttentionGradTiling tiling;
};

ASCENDC_OPS_API FusionAttentionGradLaunch PrepareFusionAttentionGrad(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const at::Tensor& dy,
    const at::Tensor& softmaxMax, const at::Tensor& softmaxSum, const at::Tensor& attentionIn,
    const at::Tensor& attenMask, int64_t headNum, const std::string& inputLayout, double scale, int64_t preTokens,
    int64_t nextTokens, at::OptionalIntArrayRef actualSeqQlen, at::OptionalIntArrayRef actualSeqKvlen,
    int64_t sparseMode, const tiling::CubePlatform& platform);

using FusionAttentionGradImpl = std::tuple<at::Tensor, at::Tensor, at::Tensor> (*)(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const at::Tensor& dy,
    const at::Tensor& softmaxMax, const at::Tensor& softmaxSum, const at::Tensor& attentionIn,
    const at::Tensor& attenMask, int64_t headNum, const std::string& inputLayout, double scale, int64_t preTokens,
    int64_t nextTokens, at::OptionalIntArrayRef actualSeqQlen, at::OptionalIntArrayRef actualSeqKvlen,
    int64_t sparseMode);

// Registers `Impl` for fusion_attention_grad under one dispatch key (the twin's CPU, Meta, the NPU's).
template <FusionAttentionGradImpl Impl>
void ImplFusionAttentionGrad(torch::Library& m) {
  m.impl("fusion_attention_grad", [](const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                     const at::Tensor& dy, const at::Tensor& softmaxMax, const at::Tensor& softmaxSum,
                                     const at::Tensor& attentionIn, int64_t headNum, c10::string_view inputLayout,
                                     const c10::optional<at::Tensor>& attenMask, double scale, int64_t preTokens,
                                     int64_t nextTokens, at::OptionalIntArrayRef actualSeqQlen,
                                     at::OptionalIntArrayRef actualSeqKvlen, int64_t sparseMode) {
    return Impl(query, key, value, dy, softmaxMax, softmaxSum, attentionIn, attenMask.value_or(at::Tensor()), headNum,
                std::string(inputLayout), scale, preTokens, nextTokens, actualSeqQlen, actualSeqKvlen, sparseMode);
  });
}

}  // namespace ascendc_ops
