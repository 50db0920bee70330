// Fused linear cross-entropy on the NPU (PrivateUse1): the CPU twin's PrepareLinearCrossEntropy
// (csrc/torch/cross_entropy_ops.h: checks, output allocation, tiling) with the chip's cube core groups, then a
// direct launch of the mix kernels (KERNEL_TYPE_MIX_AIC_1_2) on torch_npu's current stream. Compiled only when CANN
// and torch_npu are present (cmake/npu.cmake).
#include <torch/library.h>

#include <vector>

#include "kernel_entries.h"
#include "cross_entropy_ops.h"
#include "npu_launch.h"
#include "op_proto_gen.h"

#include "aclrtlaunch_linear_cross_entropy_bfloat16.h"
#include "aclrtlaunch_linear_cross_entropy_float.h"
#include "aclrtlaunch_linear_cross_entropy_grad_bfloat16.h"
#include "aclrtlaunch_linear_cross_entropy_grad_float.h"
#include "aclrtlaunch_linear_cross_entropy_grad_half.h"
#include "aclrtlaunch_linear_cross_entropy_half.h"

LINEAR_CROSS_ENTROPY_KERNELS(ASCENDC_NPU_KERNELS)

namespace ascendc_ops {
namespace {

at::Tensor Workspace(const LinearCrossEntropyLaunch& l) {
  const at::Tensor sys = npu::SysWorkspace(l.hidden.device());
  return at::empty({sys.numel() + l.tiling.workspaceBytes}, sys.options());
}

// Queues a prepared launch: its tiling struct copied to the device, then the system workspace and the groups'
// slots (a fresh workspace unless one is given).
template <class Entries, class Args>
void Enqueue(const char* name, const Entries& entries, const LinearCrossEntropyLaunch& l, const Args& tensors,
             const at::Tensor& given = at::Tensor()) {
  const at::Device device = l.hidden.device();
  at::Tensor host =
      at::empty({int64_t(sizeof(l.tiling.data))}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
  std::memcpy(host.data_ptr(), &l.tiling.data, sizeof(l.tiling.data));
  const at::Tensor tiling = host.to(device, /*non_blocking=*/true);
  const at::Tensor workspace = given.defined() ? given : Workspace(l);
  npu::Enqueue(name,
               npu::LaunchOf(PickEntry(entries, l.hidden.scalar_type()).fn, l.tiling.blockDim, npu::CurrentStream(),
                             EntryArgs(npu::Ptr, tensors, workspace.data_ptr(), tiling.data_ptr())));
}

LceStats Forward(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                 const LceVocabInputs& vocab, const tiling::LinearCrossEntropyAttrs& attrs) {
  LinearCrossEntropyLaunch l =
      PrepareLinearCrossEntropy(hidden, weight, target, {}, vocab, attrs, npu::NpuCubePlatform());
  // one launch per L2-sized vocabulary range, each folding its statistics into the outputs of the ones before
  for (int64_t k = 0; l.tiling.blockDim > 0 && k < l.tiling.data.launches; ++k) {
    LinearCrossEntropyLaunch chunk = l;
    chunk.tiling = tiling::TileLinearCrossEntropyLaunch(l.tiling, k, npu::NpuCubePlatform());
    Enqueue(kLinearCrossEntropy.name, npu_entries::linear_cross_entropy, chunk, chunk.Tensors());
  }
  return {l.logitsMax, l.sumExp, l.targetLogit, l.logitSum};
}

LceGrads Backward(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                  const std::vector<at::Tensor>& grads, const LceVocabInputs& vocab,
                  const tiling::LinearCrossEntropyAttrs& attrs) {
  LinearCrossEntropyLaunch l =
      PrepareLinearCrossEntropy(hidden, weight, target, grads, vocab, attrs, npu::NpuCubePlatform());
  // one launch per vocabulary range, grad_hidden's fp32 sums carried from one to the next in one workspace
  const at::Tensor workspace = l.tiling.blockDim > 0 ? Workspace(l) : at::Tensor();
  for (int64_t k = 0; l.tiling.blockDim > 0 && k < l.tiling.data.launches; ++k) {
    LinearCrossEntropyLaunch chunk = l;
    chunk.tiling = tiling::TileLinearCrossEntropyLaunch(l.tiling, k, npu::NpuCubePlatform());
    Enqueue(kLinearCrossEntropyGrad.name, npu_entries::linear_cross_entropy_grad, chunk, chunk.GradTensors(),
            workspace);
  }
  return {l.gradHidden, l.gradWeight, l.gradBias};
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m) { ImplLinearCrossEntropyOps<&Forward, &Backward>(m); }

}  // namespace ascendc_ops
