// Grouped matmul on the NPU (PrivateUse1): the CPU twin's PrepareGroupedMatmul (csrc/torch/grouped_matmul_ops.h:
// checks, output allocation, tiling) with the chip's cube resources, then a direct launch of
// csrc/kernels/grouped_matmul*.cpp on torch_npu's current stream. Compiled only when CANN and
// torch_npu are present (cmake/npu.cmake).
#include <torch/library.h>

#include "grouped_matmul_ops.h"
#include "kernel_entries.h"
#include "npu_launch.h"
#include "op_proto_gen.h"

#include "aclrtlaunch_grouped_matmul_bfloat16.h"
#include "aclrtlaunch_grouped_matmul_float.h"
#include "aclrtlaunch_grouped_matmul_half.h"
#include "aclrtlaunch_grouped_matmul_weight_grad_bfloat16.h"
#include "aclrtlaunch_grouped_matmul_weight_grad_float.h"
#include "aclrtlaunch_grouped_matmul_weight_grad_half.h"

// The entries of csrc/kernels/grouped_matmul*.cpp (their aclrtlaunch_*.h above), from their lists.
ASCENDC_NPU_KERNELS(GROUPED_MATMUL_DTYPES, grouped_matmul, GROUPED_MATMUL_PARAMS)
ASCENDC_NPU_KERNELS(GROUPED_MATMUL_WEIGHT_GRAD_DTYPES, grouped_matmul_weight_grad, GROUPED_MATMUL_WEIGHT_GRAD_PARAMS)

namespace ascendc_ops {
namespace {

at::Tensor RunGroupedMatmul(const OpProto& op, const at::Tensor& a, const at::Tensor& b, const at::Tensor& groupList,
                            const at::Tensor& bias, int64_t groupListType, bool transposeWeight, bool weightGrad) {
  GroupedMatmulLaunch l = PrepareGroupedMatmul(op, a, b, groupList, bias, groupListType, transposeWeight, weightGrad,
                                               npu::NpuCubePlatform());
  if (l.tiling.blockDim == 0) return l.out;
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, a.device());
  const at::Tensor workspace = npu::SysWorkspace(a.device());
  const uint32_t blocks = l.tiling.blockDim;
  const at::ScalarType dtype = l.a.scalar_type();
  aclrtStream stream = npu::CurrentStream();
  if (weightGrad)
    npu::Enqueue(op.name,
                 npu::LaunchOf(PickEntry(npu_entries::grouped_matmul_weight_grad, dtype).fn, blocks, stream,
                               EntryArgs(npu::Ptr, l.WeightGradTensors(), workspace.data_ptr(), tiling.data_ptr())));
  else
    npu::Enqueue(op.name, npu::LaunchOf(PickEntry(npu_entries::grouped_matmul, dtype).fn, blocks, stream,
                                        EntryArgs(npu::Ptr, l.Tensors(), workspace.data_ptr(), tiling.data_ptr())));
  return l.out;
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m) { ImplGroupedMatmul<&RunGroupedMatmul>(m); }

}  // namespace ascendc_ops
