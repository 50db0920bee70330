// Fused attention bindings (forward and backward) shared by the CPU-twin and NPU launchers: the attributes as one
// tiling::AttentionAttrs, argument checks through the problem functions, output and workspace allocation, tiling,
// and each kernel's argument list.
#pragma once
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "attention_grad_problem.h"
#include "attention_grad_tiling.h"
#include "attention_problem.h"
#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "op_proto_table.h"

namespace ascendc_ops {

// The attributes as both ops' schemas pass them.
inline tiling::AttentionAttrs AttentionAttrsOf(int64_t headNum, c10::string_view inputLayout, double scale,
                                               int64_t preTokens, int64_t nextTokens,
                                               at::OptionalIntArrayRef actualSeqQlen,
                                               at::OptionalIntArrayRef actualSeqKvlen, int64_t sparseMode,
                                               double softcap) {
  const auto list = [](at::OptionalIntArrayRef l) {
    return l.has_value() ? std::optional<std::vector<int64_t>>(l->vec()) : std::nullopt;
  };
  return {headNum,
          std::string(inputLayout),
          scale,
          preTokens,
          nextTokens,
          list(actualSeqQlen),
          list(actualSeqKvlen),
          sparseMode,
          softcap};
}

// atten_mask's bytes for the problem function's value check (sparse_mode 2-4), copied to the host into `host`
// only if it asks; none on symbolic shapes (Meta).
template <class Int>
tiling::AttentionMaskBytes AttentionMaskBytesOf(const at::Tensor& mask, at::Tensor& host) {
  if constexpr (std::is_same_v<Int, int64_t>) {
    return [&mask, &host] {
      host = mask.to(at::kCPU).contiguous();
      return static_cast<const uint8_t*>(host.data_ptr());
    };
  } else {
    return {};
  }
}

// The tiling struct, then TND's cumulative lengths (int64), as one byte tensor the kernel reads.
template <typename Data>
at::Tensor AttentionTilingBytes(const Data& data, const std::vector<int64_t>& varlenTable) {
  const size_t table = varlenTable.size() * sizeof(int64_t);
  at::Tensor bytes = at::empty({int64_t(sizeof(Data) + table)}, at::kByte);
  std::memcpy(bytes.data_ptr(), &data, sizeof(Data));
  if (table) std::memcpy(bytes.data_ptr<uint8_t>() + sizeof(Data), varlenTable.data(), table);
  return bytes;
}

struct FusionAttentionLaunch {
  at::Tensor query, key, value, mask, sink, dropMask;  // contiguous; mask, sink, dropMask undefined when absent
  at::Tensor out, softmaxMax, softmaxSum;
  at::Tensor tilingBytes;  // the tiling struct, then TND's cumulative lengths (int64), as the kernel reads them
  tiling::AttentionTiling tiling;

  // The kernel's GM tensors, FUSION_ATTENTION_PARAMS but the workspace and tiling (EntryArgs).
  auto Tensors() const { return std::tie(query, key, value, mask, sink, dropMask, out, softmaxMax, softmaxSum); }
};

ASCENDC_OPS_API FusionAttentionLaunch PrepareFusionAttention(const at::Tensor& query, const at::Tensor& key,
                                                             const at::Tensor& value, const at::Tensor& attenMask,
                                                             const at::Tensor& sink, const at::Tensor& dropMask,
                                                             const tiling::AttentionAttrs& attrs,
                                                             const tiling::CubePlatform& platform);

using FusionAttentionImpl = std::tuple<at::Tensor, at::Tensor, at::Tensor> (*)(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const at::Tensor& attenMask,
    const at::Tensor& sink, const at::Tensor& dropMask, const tiling::AttentionAttrs& attrs);

// Registers `Impl` for fusion_attention under one dispatch key (the twin's CPU, Meta, the NPU's).
template <FusionAttentionImpl Impl>
void ImplFusionAttention(torch::Library& m) {
  m.impl("fusion_attention",
         [](const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, int64_t headNum,
            c10::string_view inputLayout, const c10::optional<at::Tensor>& attenMask, double scale, int64_t preTokens,
            int64_t nextTokens, at::OptionalIntArrayRef actualSeqQlen, at::OptionalIntArrayRef actualSeqKvlen,
            int64_t sparseMode, double softcap, double keepProb, const c10::optional<at::Tensor>& sink,
            const c10::optional<at::Tensor>& dropMask) {
           tiling::AttentionAttrs attrs = AttentionAttrsOf(headNum, inputLayout, scale, preTokens, nextTokens,
                                                           actualSeqQlen, actualSeqKvlen, sparseMode, softcap);
           attrs.keepProb = keepProb;
           return Impl(query, key, value, attenMask.value_or(at::Tensor()), sink.value_or(at::Tensor()),
                       dropMask.value_or(at::Tensor()), attrs);
         });
}

struct FusionAttentionGradLaunch {
  // contiguous; mask, dropMask, sink may be undefined
  at::Tensor query, key, value, dy, mask, softmaxMax, softmaxSum, attentionIn, dropMask, sink;
  at::Tensor dq, dk, dv;  // zero-filled when tiling.blockDim == 0 (no task; an empty S1 or S2 alone has tasks)
  at::Tensor dsink;       // fp32 [N1] with a sink (zeros without a task), else [0]
  at::Tensor tilingBytes;  // AttentionGradTilingData, then TND's cumulative lengths (int64)
  tiling::AttentionGradTiling tiling;

  // The kernel's GM tensors, FUSION_ATTENTION_GRAD_PARAMS but the workspace and tiling (EntryArgs).
  auto Tensors() const {
    return std::tie(query, key, value, dy, mask, softmaxMax, softmaxSum, attentionIn, dropMask, sink, dq, dk, dv,
                    dsink);
  }
};

ASCENDC_OPS_API FusionAttentionGradLaunch PrepareFusionAttentionGrad(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const at::Tensor& dy,
    const at::Tensor& softmaxMax, const at::Tensor& softmaxSum, const at::Tensor& attentionIn,
    const at::Tensor& attenMask, const at::Tensor& dropMask, const at::Tensor& sink,
    const tiling::AttentionAttrs& attrs, const tiling::CubePlatform& platform);

using FusionAttentionGradResult = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;  // dq, dk, dv, dsink
using FusionAttentionGradImpl = FusionAttentionGradResult (*)(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const at::Tensor& dy,
    const at::Tensor& softmaxMax, const at::Tensor& softmaxSum, const at::Tensor& attentionIn,
    const at::Tensor& attenMask, const at::Tensor& dropMask, const at::Tensor& sink,
    const tiling::AttentionAttrs& attrs);

// Registers `Impl` for fusion_attention_grad under one dispatch key (the twin's CPU, Meta, the NPU's).
template <FusionAttentionGradImpl Impl>
void ImplFusionAttentionGrad(torch::Library& m) {
  m.impl("fusion_attention_grad",
         [](const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const at::Tensor& dy,
            const at::Tensor& softmaxMax, const at::Tensor& softmaxSum, const at::Tensor& attentionIn, int64_t headNum,
            c10::string_view inputLayout, const c10::optional<at::Tensor>& attenMask, double scale, int64_t preTokens,
            int64_t nextTokens, at::OptionalIntArrayRef actualSeqQlen, at::OptionalIntArrayRef actualSeqKvlen,
            int64_t sparseMode, double softcap, double keepProb, const c10::optional<at::Tensor>& dropMask,
            const c10::optional<at::Tensor>& sink) {
           tiling::AttentionAttrs attrs = AttentionAttrsOf(headNum, inputLayout, scale, preTokens, nextTokens,
                                                           actualSeqQlen, actualSeqKvlen, sparseMode, softcap);
           attrs.keepProb = keepProb;
           return Impl(query, key, value, dy, softmaxMax, softmaxSum, attentionIn, attenMask.value_or(at::Tensor()),
                       dropMask.value_or(at::Tensor()), sink.value_or(at::Tensor()), attrs);
         });
}

}  // namespace ascendc_ops
