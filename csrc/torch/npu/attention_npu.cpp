// Fused attention on the NPU (PrivateUse1): the CPU twin's PrepareFusionAttention / PrepareFusionAttentionGrad
// (csrc/torch/attention_ops.h: checks, output allocation, tiling) with the chip's cube core groups, then a direct
// launch of the mix kernel csrc/kernels/attention.cpp / attention_grad.cpp (KERNEL_TYPE_MIX_AIC_1_2) on torch_npu's
// current stream. Compiled only when CANN and torch_npu are present (cmake/npu.cmake).
#include <torch/library.h>

#include <tuple>

#include "attention_ops.h"
#include "kernel_entries.h"
#include "npu_launch.h"
#include "op_proto_gen.h"

#include "aclrtlaunch_fusion_attention_bfloat16.h"
#include "aclrtlaunch_fusion_attention_float.h"
#include "aclrtlaunch_fusion_attention_grad_bfloat16.h"
#include "aclrtlaunch_fusion_attention_grad_float.h"
#include "aclrtlaunch_fusion_attention_grad_half.h"
#include "aclrtlaunch_fusion_attention_half.h"

// The entries of csrc/kernels/attention.cpp and attention_grad.cpp (their aclrtlaunch_*.h above), from their lists.
ASCENDC_NPU_KERNELS(FUSION_ATTENTION_DTYPES, fusion_attention, FUSION_ATTENTION_PARAMS)
ASCENDC_NPU_KERNELS(FUSION_ATTENTION_GRAD_DTYPES, fusion_attention_grad, FUSION_ATTENTION_GRAD_PARAMS)

namespace ascendc_ops {
namespace {

// The tiling struct and TND's cumulative lengths, as one block of device bytes.
at::Tensor TilingBytesOnDevice(const at::Tensor& bytes, const at::Device& device) {
  at::Tensor host = at::empty_like(bytes, at::TensorOptions().pinned_memory(true));
  host.copy_(bytes);
  return host.to(device, /*non_blocking=*/true);
}

// The system workspace (GetLibApiWorkSpaceSize), then the core groups' slots (GetUserWorkspace).
at::Tensor AttentionWorkspace(const at::Device& device, int64_t userBytes) {
  const at::Tensor sys = npu::SysWorkspace(device);
  return at::empty({sys.numel() + userBytes}, sys.options());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> RunFusionAttention(const at::Tensor& query, const at::Tensor& key,
                                                                  const at::Tensor& value, const at::Tensor& attenMask,
                                                                  const tiling::AttentionAttrs& attrs) {
  FusionAttentionLaunch l = PrepareFusionAttention(query, key, value, attenMask, attrs, npu::NpuCubePlatform());
  if (l.tiling.blockDim == 0) return {l.out, l.softmaxMax, l.softmaxSum};
  const at::Tensor tiling = TilingBytesOnDevice(l.tilingBytes, query.device());
  const at::Tensor workspace = AttentionWorkspace(query.device(), l.tiling.workspaceBytes);
  npu::Enqueue(kFusionAttention.name,
               npu::LaunchOf(PickEntry(npu_entries::fusion_attention, l.query.scalar_type()).fn, l.tiling.blockDim,
                             npu::CurrentStream(), l.Args(npu::Ptr, workspace.data_ptr(), tiling.data_ptr())));
  return {l.out, l.softmaxMax, l.softmaxSum};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> RunFusionAttentionGrad(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const at::Tensor& dy,
    const at::Tensor& softmaxMax, const at::Tensor& softmaxSum, const at::Tensor& attentionIn,
    const at::Tensor& attenMask, const tiling::AttentionAttrs& attrs) {
  FusionAttentionGradLaunch l = PrepareFusionAttentionGrad(query, key, value, dy, softmaxMax, softmaxSum, attentionIn,
                                                           attenMask, attrs, npu::NpuCubePlatform());
  if (l.tiling.blockDim == 0) return {l.dq, l.dk, l.dv};  // zero-filled by Prepare
  const at::Tensor tiling = TilingBytesOnDevice(l.tilingBytes, query.device());
  const at::Tensor workspace = AttentionWorkspace(query.device(), l.tiling.workspaceBytes);
  npu::Enqueue(kFusionAttentionGrad.name,
               npu::LaunchOf(PickEntry(npu_entries::fusion_attention_grad, l.query.scalar_type()).fn, l.tiling.blockDim,
                             npu::CurrentStream(), l.Args(npu::Ptr, workspace.data_ptr(), tiling.data_ptr())));
  return {l.dq, l.dk, l.dv};
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m) {
  ImplFusionAttention<&RunFusionAttention>(m);
  ImplFusionAttentionGrad<&RunFusionAttentionGrad>(m);
}

}  // namespace ascendc_ops
