// SwiGLU on the NPU (PrivateUse1): the same checks and tiling as the CPU twin, then a direct launch
// of csrc/kernels/swiglu.cpp on torch_npu's current stream through OpCommand. Compiled only when
// CANN and torch_npu are present (cmake/npu.cmake); this machine has neither, so it is not built here.
#include <torch/library.h>

#include <cstring>

#include "aclrtlaunch_swiglu_bfloat16.h"
#include "aclrtlaunch_swiglu_float.h"
#include "aclrtlaunch_swiglu_grad_bfloat16.h"
#include "aclrtlaunch_swiglu_grad_float.h"
#include "aclrtlaunch_swiglu_grad_half.h"
#include "aclrtlaunch_swiglu_half.h"
#include "op_proto_gen.h"
#include "swiglu_ops.h"
#include "tiling/platform/platform_ascendc.h"
#include "torch_npu/csrc/core/npu/NPUStream.h"
#include "torch_npu/csrc/framework/OpCommand.h"

namespace ascendc_ops {
namespace {

tiling::PlatformInfo NpuPlatform() {
  auto* soc = platform_ascendc::PlatformAscendCManager::GetInstance();
  return tiling::Ascend910B(static_cast<uint32_t>(soc->GetCoreNumAiv()));
}

at::Tensor RunOnNpu(const OpProto& op, const at::Tensor& dy, const at::Tensor& x, int64_t dim, bool backward) {
  SwigluLaunch l = PrepareSwiglu(op, dy, x, dim, backward, NpuPlatform());
  if (l.tiling.blockDim == 0) return l.out;
  at::Tensor tilingHost = at::empty({int64_t(sizeof(SwigluTilingData))}, at::kByte);
  std::memcpy(tilingHost.data_ptr(), &l.tiling.data, sizeof(SwigluTilingData));
  at::Tensor tilingDev = tilingHost.to(x.device(), /*non_blocking=*/false);
  const uint32_t blockDim = l.tiling.blockDim;
  void* dyPtr = backward ? l.dy.data_ptr() : nullptr;
  void* xPtr = l.x.data_ptr();
  void* outPtr = l.out.data_ptr();
  void* tilingPtr = tilingDev.data_ptr();
  const at::ScalarType dtype = l.x.scalar_type();
  auto stream = c10_npu::getCurrentNPUStream().stream(false);
  auto launch = [=]() -> int {
    if (!backward) {
      if (dtype == at::kFloat) ACLRT_LAUNCH_KERNEL(swiglu_float)(blockDim, stream, xPtr, outPtr, nullptr, tilingPtr);
      else if (dtype == at::kHalf) ACLRT_LAUNCH_KERNEL(swiglu_half)(blockDim, stream, xPtr, outPtr, nullptr, tilingPtr);
      else ACLRT_LAUNCH_KERNEL(swiglu_bfloat16)(blockDim, stream, xPtr, outPtr, nullptr, tilingPtr);
    } else {
      if (dtype == at::kFloat) ACLRT_LAUNCH_KERNEL(swiglu_grad_float)(blockDim, stream, dyPtr, xPtr, outPtr, nullptr, tilingPtr);
      else if (dtype == at::kHalf) ACLRT_LAUNCH_KERNEL(swiglu_grad_half)(blockDim, stream, dyPtr, xPtr, outPtr, nullptr, tilingPtr);
      else ACLRT_LAUNCH_KERNEL(swiglu_grad_bfloat16)(blockDim, stream, dyPtr, xPtr, outPtr, nullptr, tilingPtr);
    }
    return 0;
  };
  at_npu::native::OpCommand::RunOpApi(op.name, launch);
  return l.out;
}

at::Tensor Swiglu(const at::Tensor& x, int64_t dim) { return RunOnNpu(kSwiglu, at::Tensor(), x, dim, false); }
at::Tensor SwigluGrad(const at::Tensor& dy, const at::Tensor& x, int64_t dim) {
  return RunOnNpu(kSwigluGrad, dy, x, dim, true);
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m) {
  m.impl("swiglu", &Swiglu);
  m.impl("swiglu_grad", &SwigluGrad);
}

}  // namespace ascendc_ops
