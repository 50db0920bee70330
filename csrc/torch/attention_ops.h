// Fused attention bindings shared by the CPU-twin (and, later, NPU) launchers: argument checks through the
// problem function, output and workspace allocation, tiling.
#pragma once
#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "attention_problem.h"
#include "op_proto_gen.h"
#include "op_proto_table.h"

namespace ascendc_ops {

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

}  // namespace ascendc_ops
