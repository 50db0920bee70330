// Cross-entropy on the NPU (PrivateUse1): the CPU twin's Prepare / Finish (checks, allocation, tiling, the [N]-sized
// steps in torch on the device), around direct launches of csrc/kernels/cross_entropy.cpp and cross_entropy_grad.cpp
// on torch_npu's current stream. Target values are not read back here (that would sync the stream): a target
// outside [0, C) that is not ignore_index gives NaN in its row's loss. Compiled only when CANN and torch_npu are
// present (cmake/npu.cmake).
#include <torch/library.h>

#include "aclrtlaunch_cross_entropy_loss_bfloat16.h"
#include "aclrtlaunch_cross_entropy_loss_float.h"
#include "aclrtlaunch_cross_entropy_loss_grad_bfloat16.h"
#include "aclrtlaunch_cross_entropy_loss_grad_float.h"
#include "aclrtlaunch_cross_entropy_loss_grad_half.h"
#include "aclrtlaunch_cross_entropy_loss_half.h"
#include "cross_entropy_ops.h"
#include "kernel_entries.h"
#include "npu_launch.h"
#include "op_proto_gen.h"

// The entries of csrc/kernels/cross_entropy*.cpp (their aclrtlaunch_*.h above), from their lists.
CROSS_ENTROPY_KERNELS(ASCENDC_NPU_KERNELS)

namespace ascendc_ops {
namespace {

CrossEntropyOutputs RunOnNpu(const OpProto& op, const at::Tensor& input, const at::Tensor& target,
                             const c10::optional<at::Tensor>& weight, const tiling::CrossEntropyAttrs& attrs) {
  CrossEntropyLaunch l = PrepareCrossEntropyLoss(op, input, target, weight, attrs, npu::NpuPlatform());
  if (l.tiling.blockDim > 0) {
    const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, input.device());
    npu::Enqueue(op.name,
                 npu::LaunchOf(PickEntry(npu_entries::cross_entropy_loss, l.input.scalar_type()).fn, l.tiling.blockDim,
                               npu::CurrentStream(), EntryArgs(npu::Ptr, l.Tensors(), nullptr, tiling.data_ptr())));
  }
  return FinishCrossEntropyLoss(l);
}

at::Tensor RunGradOnNpu(const OpProto& op, const at::Tensor& gradLoss, const at::Tensor& logProb,
                        const at::Tensor& target, const c10::optional<at::Tensor>& weight,
                        const c10::optional<at::Tensor>& gradZloss, const c10::optional<at::Tensor>& lse,
                        const tiling::CrossEntropyAttrs& attrs) {
  CrossEntropyGradLaunch l =
      PrepareCrossEntropyLossGrad(op, gradLoss, logProb, target, weight, gradZloss, lse, attrs, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return l.xGrad;
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, logProb.device());
  npu::Enqueue(op.name, npu::LaunchOf(PickEntry(npu_entries::cross_entropy_loss_grad, l.logProb.scalar_type()).fn,
                                      l.tiling.blockDim, npu::CurrentStream(),
                                      EntryArgs(npu::Ptr, l.Tensors(), nullptr, tiling.data_ptr())));
  return l.xGrad;
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m) { ImplCrossEntropyOps<RunOnNpu, RunGradOnNpu>(m); }

}  // namespace ascendc_ops
