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
ASCENDC_NPU_KERNELS(RMS_NORM_DTYPES, rms_norm, RMS_NORM_PARAMS)
ASCENDC_NPU_KERNELS(ADD_RMS_NORM_DTYPES, add_rms_norm, ADD_RMS_NORM_PARAMS)
ASCENDC_NPU_KERNELS(GATED_RMS_NORM_DTYPES, gated_rms_norm, GATED_RMS_NORM_PARAMS)
ASCENDC_NPU_KERNELS(RMS_NORM_GRAD_DTYPES, rms_norm_grad, RMS_NORM_GRAD_PARAMS)
ASCENDC_NPU_KERNELS(ADD_RMS_NORM_GRAD_DTYPES, add_rms_norm_grad, ADD_RMS_NORM_GRAD_PARAMS)
ASCENDC_NPU_KERNELS(GATED_RMS_NORM_GRAD_DTYPES, gated_rms_norm_grad, GATED_RMS_NORM_GRAD_PARAMS)
ASCENDC_NPU_KERNELS(RMS_NORM_DGAMMA_DTYPES, rms_norm_dgamma, RMS_NORM_DGAMMA_PARAMS)

namespace ascendc_ops {
namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor> Forward(const OpProto& op, const at::Tensor& x1, const at::Tensor* x2,
                                                       const at::Tensor& gamma, double epsilon) {
  NormForwardLaunch l = PrepareNormForward(op, x1, x2, gamma, epsilon, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return {l.y, l.rstd, l.xOut};
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, x1.device());
  const uint32_t blocks = l.tiling.blockDim;
  const bool add = x2 != nullptr;
  const at::ScalarType xt = l.x1.scalar_type(), gt = l.gamma.scalar_type();
  void *x1p = l.x1.data_ptr(), *x2p = npu::Ptr(l.x2), *gp = l.gamma.data_ptr(), *yp = l.y.data_ptr(),
       *rp = l.rstd.data_ptr(), *xop = npu::Ptr(l.xOut), *tp = tiling.data_ptr();
  aclrtStream stream = npu::CurrentStream();
  npu::Enqueue(op.name, [=] {
    if (add) PickEntry(npu_entries::add_rms_norm, xt, gt).fn(blocks, stream, x1p, x2p, gp, yp, rp, xop, nullptr, tp);
    else PickEntry(npu_entries::rms_norm, xt, gt).fn(blocks, stream, x1p, gp, yp, rp, nullptr, tp);
  });
  return {l.y, l.rstd, l.xOut};
}

std::tuple<at::Tensor, at::Tensor> GatedForward(const OpProto& op, const at::Tensor& x, const at::Tensor& gamma,
                                                const at::Tensor& z, double epsilon) {
  NormForwardLaunch l = PrepareGatedNormForward(op, x, gamma, z, epsilon, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return {l.y, l.rstd};
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, x.device());
  const uint32_t blocks = l.tiling.blockDim;
  const at::ScalarType xt = l.x1.scalar_type(), gt = l.gamma.scalar_type();
  void *xp = l.x1.data_ptr(), *gp = l.gamma.data_ptr(), *zp = l.z.data_ptr(), *yp = l.y.data_ptr(),
       *rp = l.rstd.data_ptr(), *tp = tiling.data_ptr();
  aclrtStream stream = npu::CurrentStream();
  npu::Enqueue(op.name, [=] {
    PickEntry(npu_entries::gated_rms_norm, xt, gt).fn(blocks, stream, xp, gp, zp, yp, rp, nullptr, tp);
  });
  return {l.y, l.rstd};
}

std::tuple<at::Tensor, at::Tensor> Backward(const OpProto& op, const at::Tensor& dy, const at::Tensor& x,
                                            const at::Tensor& rstd, const at::Tensor& gamma, const at::Tensor* dxOut) {
  NormBackwardLaunch l = PrepareNormBackward(op, dy, x, rstd, gamma, dxOut, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return {l.dx, l.dgamma};
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, x.device());
  // the fp32 dgamma partials, one row per block: from torch_npu's caching allocator
  const at::Tensor partials = at::empty({int64_t(l.tiling.blockDim), l.gamma.numel()}, l.x.options().dtype(at::kFloat));
  const uint32_t blocks = l.tiling.blockDim, reduceBlocks = l.tiling.reduceBlockDim;
  const bool add = dxOut != nullptr;
  const at::ScalarType xt = l.x.scalar_type(), gt = l.gamma.scalar_type();
  void *dyp = l.dy.data_ptr(), *xp = l.x.data_ptr(), *rp = l.rstd.data_ptr(), *gp = l.gamma.data_ptr(),
       *dxop = npu::Ptr(l.dxOut), *dxp = l.dx.data_ptr(), *dgp = l.dgamma.data_ptr(), *pp = partials.data_ptr(),
       *tp = tiling.data_ptr();
  aclrtStream stream = npu::CurrentStream();
  npu::Enqueue(op.name, [=] {
    if (add) PickEntry(npu_entries::add_rms_norm_grad, xt, gt).fn(blocks, stream, dyp, xp, rp, gp, dxop, dxp, pp, tp);
    else PickEntry(npu_entries::rms_norm_grad, xt, gt).fn(blocks, stream, dyp, xp, rp, gp, dxp, pp, tp);
    PickEntry(npu_entries::rms_norm_dgamma, gt).fn(reduceBlocks, stream, pp, dgp, nullptr, tp);
  });
  return {l.dx, l.dgamma};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> GatedBackward(const OpProto& op, const at::Tensor& dy,
                                                             const at::Tensor& x, const at::Tensor& rstd,
                                                             const at::Tensor& gamma, const at::Tensor& z) {
  NormBackwardLaunch l = PrepareGatedNormBackward(op, dy, x, rstd, gamma, z, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return {l.dx, l.dgamma, l.dz};
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, x.device());
  const at::Tensor partials = at::empty({int64_t(l.tiling.blockDim), l.gamma.numel()}, l.x.options().dtype(at::kFloat));
  const uint32_t blocks = l.tiling.blockDim, reduceBlocks = l.tiling.reduceBlockDim;
  const at::ScalarType xt = l.x.scalar_type(), gt = l.gamma.scalar_type();
  void *dyp = l.dy.data_ptr(), *xp = l.x.data_ptr(), *rp = l.rstd.data_ptr(), *gp = l.gamma.data_ptr(),
       *zp = l.z.data_ptr(), *dxp = l.dx.data_ptr(), *dzp = l.dz.data_ptr(), *dgp = l.dgamma.data_ptr(),
       *pp = partials.data_ptr(), *tp = tiling.data_ptr();
  aclrtStream stream = npu::CurrentStream();
  npu::Enqueue(op.name, [=] {
    PickEntry(npu_entries::gated_rms_norm_grad, xt, gt).fn(blocks, stream, dyp, xp, rp, gp, zp, dxp, dzp, pp, tp);
    PickEntry(npu_entries::rms_norm_dgamma, gt).fn(reduceBlocks, stream, pp, dgp, nullptr, tp);
  });
  return {l.dx, l.dgamma, l.dz};
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m) { ImplNormOps<Forward, Backward, GatedForward, GatedBackward>(m); }

}  // namespace ascendc_ops
