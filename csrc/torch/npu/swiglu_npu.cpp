// SwiGLU on the NPU (PrivateUse1): PrepareSwiglu (the CPU twin's checks, allocation and tiling),
// then a direct launch of csrc/kernels/swiglu.cpp on torch_npu's current stream. Compiled only
// when CANN and torch_npu are present (cmake/npu.cmake).
#include <torch/library.h>

#include "aclrtlaunch_swiglu_bfloat16.h"
#include "aclrtlaunch_swiglu_float.h"
#include "aclrtlaunch_swiglu_grad_bfloat16.h"
#include "aclrtlaunch_swiglu_grad_float.h"
#include "aclrtlaunch_swiglu_grad_half.h"
#include "aclrtlaunch_swiglu_half.h"
#include "kernel_entries.h"
#include "npu_launch.h"
#include "op_proto_gen.h"
#include "swiglu_ops.h"

// The entries of csrc/kernels/swiglu.cpp (their aclrtlaunch_*.h above), from their lists.
SWIGLU_KERNELS(ASCENDC_NPU_KERNELS)

namespace ascendc_ops {
namespace {

at::Tensor RunOnNpu(const OpProto& op, const at::Tensor& dy, const at::Tensor& x, int64_t dim, bool backward) {
  SwigluLaunch l = PrepareSwiglu(op, dy, x, dim, backward, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return l.out;
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, x.device());
  const uint32_t blocks = l.tiling.blockDim;
  const at::ScalarType dtype = l.x.scalar_type();
  aclrtStream stream = npu::CurrentStream();
  if (!backward)
    npu::Enqueue(op.name, npu::LaunchOf(PickEntry(npu_entries::swiglu, dtype).fn, blocks, stream,
                                        EntryArgs(npu::Ptr, l.Tensors(), nullptr, tiling.data_ptr())));
  else
    npu::Enqueue(op.name, npu::LaunchOf(PickEntry(npu_entries::swiglu_grad, dtype).fn, blocks, stream,
                                        EntryArgs(npu::Ptr, l.GradTensors(), nullptr, tiling.data_ptr())));
  return l.out;
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m) { ImplSwigluOps<RunOnNpu>(m); }

}  // namespace ascendc_ops
