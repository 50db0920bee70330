// The optimizer ops on the NPU (PrivateUse1): the Prepare* functions (the CPU twin's checks, contiguous views,
// tensor table and tiling), then a direct launch of csrc/kernels/optimizer*.cpp on torch_npu's current stream. Compiled
// only when CANN and torch_npu are present (cmake/npu.cmake), or for the simulated NPU.
#include <torch/library.h>

#include "aclrtlaunch_apply_adam_w_bfloat16.h"
#include "aclrtlaunch_apply_adam_w_float.h"
#include "aclrtlaunch_apply_adam_w_half.h"
#include "aclrtlaunch_foreach_adam_w_bfloat16.h"
#include "aclrtlaunch_foreach_adam_w_float.h"
#include "aclrtlaunch_foreach_adam_w_half.h"
#include "aclrtlaunch_foreach_clip_by_total_norm_bfloat16.h"
#include "aclrtlaunch_foreach_clip_by_total_norm_float.h"
#include "aclrtlaunch_foreach_clip_by_total_norm_half.h"
#include "aclrtlaunch_foreach_norm_bfloat16.h"
#include "aclrtlaunch_foreach_norm_float.h"
#include "aclrtlaunch_foreach_norm_half.h"
#include "kernel_entries.h"
#include "npu_launch.h"
#include "op_proto_gen.h"
#include "optimizer_ops.h"

// The entries of csrc/kernels/optimizer.cpp (their aclrtlaunch_*.h above), from their lists.
OPTIMIZER_KERNELS(ASCENDC_NPU_KERNELS)

namespace ascendc_ops {
namespace {

void ApplyAdamWOnNpu(const OpProto& op, const at::Tensor& var, const at::Tensor& m, const at::Tensor& v,
                     const at::Tensor& grad, const std::optional<at::Tensor>& maxV, const tiling::AdamWHyper& hyper) {
  AdamWLaunch l = PrepareApplyAdamW(op, var, m, v, grad, maxV, hyper, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return;
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, var.device());
  const auto& e = PickEntry(npu_entries::apply_adam_w, l.var.scalar_type(), at::kFloat);
  npu::Enqueue(op.name, npu::LaunchOf(e.fn, l.tiling.blockDim, npu::CurrentStream(),
                                      EntryArgs(npu::Ptr, l.Tensors(), nullptr, tiling.data_ptr())));
  FinishApplyAdamW(l, var, m, v, maxV);
}

// The tensor table holds the device addresses; it goes to the device beside the tiling.
void ForeachAdamWOnNpu(const OpProto& op, const AdamWLists& lists, const tiling::AdamWHyper& hyper) {
  ForeachAdamWLaunch l = PrepareForeachAdamW(op, lists, hyper, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return;
  const at::Device device = l.var[0].device();
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, device);
  const at::Tensor table = l.table.to(device);
  const auto& e = PickEntry(npu_entries::foreach_adam_w, l.var[0].scalar_type(), at::kFloat);
  npu::Enqueue(op.name, npu::LaunchOf(e.fn, l.tiling.blockDim, npu::CurrentStream(),
                                      EntryArgs(npu::Ptr, std::tie(table), nullptr, tiling.data_ptr())));
  FinishForeachAdamW(l, lists);
}

std::vector<at::Tensor> ForeachNormOnNpu(const OpProto& op, at::TensorList x, double p) {
  ForeachNormLaunch l = PrepareForeachNorm(op, x, p, npu::NpuPlatform());
  if (l.tiling.blockDim > 0) {
    const at::Device device = l.x[0].device();
    const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, device);
    const at::Tensor table = l.table.to(device);
    const auto& e = PickEntry(npu_entries::foreach_norm, l.x[0].scalar_type());
    npu::Enqueue(op.name, npu::LaunchOf(e.fn, l.tiling.blockDim, npu::CurrentStream(),
                                        EntryArgs(npu::Ptr, std::tie(table, l.partials), nullptr, tiling.data_ptr())));
  }
  return FinishForeachNorm(l, x);
}

// The table (x's addresses and starts, the norms' addresses) goes to the device; the norms are read where they are.
void ForeachClipOnNpu(const OpProto& op, at::TensorList x, at::TensorList norms, const at::Tensor& totalNorm,
                      const ClipAttrs& attrs) {
  ForeachClipLaunch l = PrepareForeachClip(op, x, norms, totalNorm, attrs, npu::NpuPlatform());
  const at::Device device = totalNorm.device();
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, device);
  const at::Tensor table = l.table.to(device);
  const auto& e = PickEntry(npu_entries::foreach_clip_by_total_norm, l.total.scalar_type());
  npu::Enqueue(op.name, npu::LaunchOf(e.fn, l.tiling.blockDim, npu::CurrentStream(),
                                      EntryArgs(npu::Ptr, std::tie(table, l.total), nullptr, tiling.data_ptr())));
  FinishForeachClip(l, x, totalNorm);
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m) {
  ImplOptimizerOps<ApplyAdamWOnNpu, ForeachAdamWOnNpu, ForeachNormOnNpu, ForeachClipOnNpu>(m);
}

}  // namespace ascendc_ops
