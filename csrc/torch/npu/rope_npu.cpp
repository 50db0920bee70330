// RoPE on the NPU (PrivateUse1): PrepareRope (the same checks, allocation and tiling as the CPU
// twin, for the device's core count), then a direct launch of csrc/kernels/rope.cpp on torch_npu's
// current stream. Compiled only when CANN and torch_npu are present (cmake/npu.cmake).
#include <torch/library.h>

#include "aclrtlaunch_apply_rope_bfloat16.h"
#include "aclrtlaunch_apply_rope_float.h"
#include "aclrtlaunch_apply_rope_half.h"
#include "aclrtlaunch_rope_bfloat16.h"
#include "aclrtlaunch_rope_float.h"
#include "aclrtlaunch_rope_half.h"
#include "kernel_entries.h"
#include "npu_launch.h"
#include "op_proto_gen.h"
#include "rope_ops.h"

// The entries of csrc/kernels/rope.cpp (their aclrtlaunch_*.h above), from their list.
ROPE_KERNELS(ASCENDC_NPU_KERNELS)

namespace ascendc_ops {
namespace {

at::Tensor RopeOnNpu(const OpProto& op, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                     std::optional<std::string_view> mode, bool backward) {
  RopeLaunch l = PrepareRope(op, x, cos, sin, mode, backward, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return l.y;
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, x.device());
  npu::Enqueue(op.name,
               npu::LaunchOf(PickEntry(npu_entries::rope, l.x.scalar_type()).fn, l.tiling.blockDim,
                             npu::CurrentStream(), EntryArgs(npu::Ptr, l.Tensors(), nullptr, tiling.data_ptr())));
  return l.y;
}

void ApplyRopeOnNpu(const OpProto& op, const at::Tensor& query, const at::Tensor& key, const at::Tensor& cos,
                    const at::Tensor& sin, std::string_view layout, std::string_view mode, bool backward) {
  ApplyRopeLaunch l = PrepareApplyRope(op, query, key, cos, sin, layout, mode, backward, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return;
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, query.device());
  npu::Enqueue(op.name,
               npu::LaunchOf(PickEntry(npu_entries::apply_rope, l.query.scalar_type()).fn, l.tiling.blockDim,
                             npu::CurrentStream(), EntryArgs(npu::Ptr, l.Tensors(), nullptr, tiling.data_ptr())));
  FinishApplyRope(l, query, key);
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m) { ImplRopeOps<RopeOnNpu, ApplyRopeOnNpu>(m); }

}  // namespace ascendc_ops
