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

// Queues a prepared launch (forward or backward) of `entries`' kernel for its dtype: its tiling bytes (the struct,
// then TND's cumulative lengths) copied to the device, the system workspace (GetLibApiWorkSpaceSize), then the core
// groups' slots (GetUserWorkspace).
template <class Launch, class Entries>
void EnqueueAttention(const char* name, const Entries& entries, const Launch& l, const at::Device& device) {
  at::Tensor host = at::empty_like(l.tilingBytes, at::TensorOptions().pinned_memory(true));
  host.copy_(l.tilingBytes);
  const at::Tensor tiling = host.to(device, /*non_blocking=*/true);
  const at::Tensor sys = npu::SysWorkspace(device);
  const at::Tensor workspace = at::empty({sys.numel() + l.tiling.workspaceBytes}, sys.options());
  npu::Enqueue(name,
               npu::LaunchOf(PickEntry(entries, l.query.scalar_type()).fn, l.tiling.blockDim, npu::CurrentStream(),
                             EntryArgs(npu::Ptr, l.Tensors(), workspace.data_ptr(), tiling.data_ptr())));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> RunFusionAttention(const at::Tensor& query, const at::Tensor& key,
                                                                  const at::Tensor& value, const at::Tensor& attenMask,
                                                                  const at::Tensor& sink, const at::Tensor& dropMask,
                                                                  const tiling::AttentionAttrs& attrs) {
  FusionAttentionLaunch l =
      PrepareFusionAttention(query, key, value, attenMask, sink, dropMask, attrs, npu::NpuCubePlatform());
  if (l.tiling.blockDim > 0) EnqueueAttention(kFusionAttention.name, npu_entries::fusion_attention, l, query.device());
  return {l.out, l.softmaxMax, l.softmaxSum};
}

FusionAttentionGradResult RunFusionAttentionGrad(const at::Tensor& query, const at::Tensor& key,
                                                 const at::Tensor& value, const at::Tensor& dy,
                                                 const at::Tensor& softmaxMax, const at::Tensor& softmaxSum,
                                                 const at::Tensor& attentionIn, const at::Tensor& attenMask,
                                                 const at::Tensor& dropMask, const at::Tensor& sink,
                                                 const tiling::AttentionAttrs& attrs) {
  FusionAttentionGradLaunch l = PrepareFusionAttentionGrad(query, key, value, dy, softmaxMax, softmaxSum, attentionIn,
                                                           attenMask, dropMask, sink, attrs, npu::NpuCubePlatform());
  // no task: dq / dk / dv (and dsink) zero-filled by Prepare
  if (l.tiling.blockDim > 0)
    EnqueueAttention(kFusionAttentionGrad.name, npu_entries::fusion_attention_grad, l, query.device());
  return {l.dq, l.dk, l.dv, l.dsink};
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m) {
  ImplFusionAttention<&RunFusionAttention>(m);
  ImplFusionAttentionGrad<&RunFusionAttentionGrad>(m);
}

}  // namespace ascendc_ops
