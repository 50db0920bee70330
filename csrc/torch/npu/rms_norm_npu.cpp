// RMSNorm on the NPU (PrivateUse1): PrepareNormForward / PrepareNormBackward (the problem
// function, allocation and tiling the CPU twin uses), then direct launches of csrc/kernels/rms_norm.cpp and
// rms_norm_grad.cpp on torch_npu's current stream. Backward is two launches in stream order, as
// on the twin: the row kernel (dx, fp32 dgamma partials in a caching-allocator workspace), then the
// dgamma reduction. Compiled only when CANN and torch_npu are present (cmake/npu.cmake).
#include <torch/library.h>

#include "kernel_entries.h"
#include "npu_launch.h"
#include "rms_norm_ops.h"
#include "op_proto_gen.h"

#include "aclrtlaunch_rms_norm_float_float.h"
#include "aclrtlaunch_rms_norm_half_float.h"
#include "aclrtlaunch_rms_norm_bfloat16_float.h"
#include "aclrtlaunch_rms_norm_half_half.h"
#include "aclrtlaunch_rms_norm_bfloat16_bfloat16.h"
#include "aclrtlaunch_add_rms_norm_float_float.h"
#include "aclrtlaunch_add_rms_norm_half_float.h"
#include "aclrtlaunch_add_rms_norm_bfloat16_float.h"
#include "aclrtlaunch_add_rms_norm_half_half.h"
#include "aclrtlaunch_add_rms_norm_bfloat16_bfloat16.h"
#include "aclrtlaunch_gated_rms_norm_float_float.h"
#include "aclrtlaunch_gated_rms_norm_half_float.h"
#include "aclrtlaunch_gated_rms_norm_bfloat16_float.h"
#include "aclrtlaunch_gated_rms_norm_half_half.h"
#include "aclrtlaunch_gated_rms_norm_bfloat16_bfloat16.h"
#include "aclrtlaunch_rms_norm_grad_float_float.h"
#include "aclrtlaunch_rms_norm_grad_half_float.h"
#include "aclrtlaunch_rms_norm_grad_bfloat16_float.h"
#include "aclrtlaunch_rms_norm_grad_half_half.h"
#include "aclrtlaunch_rms_norm_grad_bfloat16_bfloat16.h"
#include "aclrtlaunch_add_rms_norm_grad_float_float.h"
#include "aclrtlaunch_add_rms_norm_grad_half_float.h"
#include "aclrtlaunch_add_rms_norm_grad_bfloat16_float.h"
#include "aclrtlaunch_add_rms_norm_grad_half_half.h"
#include "aclrtlaunch_add_rms_norm_grad_bfloat16_bfloat16.h"
#include "aclrtlaunch_gated_rms_norm_grad_float_float.h"
#include "aclrtlaunch_gated_rms_norm_grad_half_float.h"
#include "aclrtlaunch_gated_rms_norm_grad_bfloat16_float.h"
#include "aclrtlaunch_gated_rms_norm_grad_half_half.h"
#include "aclrtlaunch_gated_rms_norm_grad_bfloat16_bfloat16.h"
#include "aclrtlaunch_rms_norm_dgamma_float.h"
#include "aclrtlaunch_rms_norm_dgamma_half.h"
#include "aclrtlaunch_rms_norm_dgamma_bfloat16.h"

// The entries of csrc/kernels/rms_norm.cpp and rms_norm_grad.cpp (their aclrtlaunch_*.h above), from their lists.
RMS_NORM_KERNELS(ASCENDC_NPU_KERNELS)

namespace ascendc_ops {
namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor> Forward(const OpProto& op, const at::Tensor& x1, const at::Tensor* x2,
                                                       const at::Tensor& gamma, double epsilon) {
  NormForwardLaunch l = PrepareNormForward(op, x1, x2, gamma, epsilon, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return {l.y, l.rstd, l.xOut};
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, x1.device());
  const uint32_t blocks = l.tiling.blockDim;
  const at::ScalarType xt = l.x1.scalar_type(), gt = l.gamma.scalar_type();
  aclrtStream stream = npu::CurrentStream();
  if (x2 != nullptr)
    npu::Enqueue(op.name, npu::LaunchOf(PickEntry(npu_entries::add_rms_norm, xt, gt).fn, blocks, stream,
                                        EntryArgs(npu::Ptr, l.AddRmsNormTensors(), nullptr, tiling.data_ptr())));
  else
    npu::Enqueue(op.name, npu::LaunchOf(PickEntry(npu_entries::rms_norm, xt, gt).fn, blocks, stream,
                                        EntryArgs(npu::Ptr, l.RmsNormTensors(), nullptr, tiling.data_ptr())));
  return {l.y, l.rstd, l.xOut};
}

std::tuple<at::Tensor, at::Tensor> GatedForward(const OpProto& op, const at::Tensor& x, const at::Tensor& gamma,
                                                const at::Tensor& z, double epsilon) {
  NormForwardLaunch l = PrepareGatedNormForward(op, x, gamma, z, epsilon, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return {l.y, l.rstd};
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, x.device());
  npu::Enqueue(op.name,
               npu::LaunchOf(PickEntry(npu_entries::gated_rms_norm, l.x1.scalar_type(), l.gamma.scalar_type()).fn,
                             l.tiling.blockDim, npu::CurrentStream(),
                             EntryArgs(npu::Ptr, l.GatedRmsNormTensors(), nullptr, tiling.data_ptr())));
  return {l.y, l.rstd};
}

// The fp32 dgamma partials, one row per block: from torch_npu's caching allocator.
at::Tensor Partials(const NormBackwardLaunch& l) {
  return at::empty({int64_t(l.tiling.blockDim), l.gamma.numel()}, l.x.options().dtype(at::kFloat));
}

// The row kernel's launch `row`, then the dgamma reduction, in stream order as on the twin.
template <class RowLaunch>
void EnqueueBackward(const OpProto& op, const NormBackwardLaunch& l, const at::Tensor& partials,
                     const at::Tensor& tiling, aclrtStream stream, RowLaunch row) {
  npu::Enqueue(op.name, row,
               npu::LaunchOf(PickEntry(npu_entries::rms_norm_dgamma, l.gamma.scalar_type()).fn, l.tiling.reduceBlockDim,
                             stream, EntryArgs(npu::Ptr, l.DgammaTensors(partials), nullptr, tiling.data_ptr())));
}

std::tuple<at::Tensor, at::Tensor> Backward(const OpProto& op, const at::Tensor& dy, const at::Tensor& x,
                                            const at::Tensor& rstd, const at::Tensor& gamma, const at::Tensor* dxOut) {
  NormBackwardLaunch l = PrepareNormBackward(op, dy, x, rstd, gamma, dxOut, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return {l.dx, l.dgamma};
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, x.device()), partials = Partials(l);
  const uint32_t blocks = l.tiling.blockDim;
  const at::ScalarType xt = l.x.scalar_type(), gt = l.gamma.scalar_type();
  aclrtStream stream = npu::CurrentStream();
  if (dxOut != nullptr)
    EnqueueBackward(
        op, l, partials, tiling, stream,
        npu::LaunchOf(PickEntry(npu_entries::add_rms_norm_grad, xt, gt).fn, blocks, stream,
                      EntryArgs(npu::Ptr, l.AddRmsNormGradTensors(), partials.data_ptr(), tiling.data_ptr())));
  else
    EnqueueBackward(op, l, partials, tiling, stream,
                    npu::LaunchOf(PickEntry(npu_entries::rms_norm_grad, xt, gt).fn, blocks, stream,
                                  EntryArgs(npu::Ptr, l.RmsNormGradTensors(), partials.data_ptr(), tiling.data_ptr())));
  return {l.dx, l.dgamma};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> GatedBackward(const OpProto& op, const at::Tensor& dy,
                                                             const at::Tensor& x, const at::Tensor& rstd,
                                                             const at::Tensor& gamma, const at::Tensor& z) {
  NormBackwardLaunch l = PrepareGatedNormBackward(op, dy, x, rstd, gamma, z, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return {l.dx, l.dgamma, l.dz};
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, x.device()), partials = Partials(l);
  aclrtStream stream = npu::CurrentStream();
  EnqueueBackward(
      op, l, partials, tiling, stream,
      npu::LaunchOf(PickEntry(npu_entries::gated_rms_norm_grad, l.x.scalar_type(), l.gamma.scalar_type()).fn,
                    l.tiling.blockDim, stream,
                    EntryArgs(npu::Ptr, l.GatedRmsNormGradTensors(), partials.data_ptr(), tiling.data_ptr())));
  return {l.dx, l.dgamma, l.dz};
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m) { ImplNormOps<Forward, Backward, GatedForward, GatedBackward>(m); }

}  // namespace ascendc_ops
