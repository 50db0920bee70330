// RoPE on the NPU (PrivateUse1): the same checks and tiling as the CPU twin, then a direct
// launch of the Ascend C kernel on torch_npu's current stream, queued through OpCommand so it is
// ordered with torch_npu's own work. Compiled only when CANN and torch_npu are present
// (cmake/npu.cmake); this machine has neither, so this file is not built or run in CI here.
#include <torch/library.h>

#include <cstring>

#include "aclrtlaunch_rope_bfloat16.h"
#include "aclrtlaunch_rope_float.h"
#include "aclrtlaunch_rope_half.h"
#include "op_proto_gen.h"
#include "rope_ops.h"
#include "tiling/platform/platform_ascendc.h"
#include "torch_npu/csrc/core/npu/NPUStream.h"
#include "torch_npu/csrc/framework/OpCommand.h"

namespace ascendc_ops {
namespace {

tiling::PlatformInfo NpuPlatform() {
  auto* soc = platform_ascendc::PlatformAscendCManager::GetInstance();
  return tiling::Ascend910B(static_cast<uint32_t>(soc->GetCoreNumAiv()));
}

at::Tensor RunOnNpu(const OpProto& op, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                    c10::string_view mode, bool backward) {
  RopeLaunch l = PrepareRope(op, x, cos, sin, mode, backward, NpuPlatform());
  if (l.tiling.blockDim == 0) return l.y;
  // The tiling struct travels to GM as a byte tensor, like the op framework's tiling buffer.
  at::Tensor tilingHost = at::empty({int64_t(sizeof(RopeTilingData))}, at::kByte);
  std::memcpy(tilingHost.data_ptr(), &l.tiling.data, sizeof(RopeTilingData));
  at::Tensor tilingDev = tilingHost.to(x.device(), /*non_blocking=*/false);
  const uint32_t blockDim = l.tiling.blockDim;
  void* args[] = {l.x.data_ptr(), l.cos.data_ptr(), l.sin.data_ptr(), l.y.data_ptr(), nullptr, tilingDev.data_ptr()};
  const at::ScalarType dtype = l.x.scalar_type();
  auto stream = c10_npu::getCurrentNPUStream().stream(false);
  auto launch = [=]() -> int {
    if (dtype == at::kFloat) ACLRT_LAUNCH_KERNEL(rope_float)(blockDim, stream, args[0], args[1], args[2], args[3], args[4], args[5]);
    else if (dtype == at::kHalf) ACLRT_LAUNCH_KERNEL(rope_half)(blockDim, stream, args[0], args[1], args[2], args[3], args[4], args[5]);
    else ACLRT_LAUNCH_KERNEL(rope_bfloat16)(blockDim, stream, args[0], args[1], args[2], args[3], args[4], args[5]);
    return 0;
  };
  at_npu::native::OpCommand::RunOpApi(op.name, launch);
  return l.y;
}

at::Tensor RotaryMul(const at::Tensor& x, const at::Tensor& r1, const at::Tensor& r2, c10::string_view mode) {
  return RunOnNpu(kRotaryMul, x, r1, r2, mode, false);
}
at::Tensor RotaryMulGrad(const at::Tensor& dy, const at::Tensor& r1, const at::Tensor& r2, c10::string_view mode) {
  return RunOnNpu(kRotaryMulGrad, dy, r1, r2, mode, true);
}
at::Tensor RopeCustomer(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  CheckTutorialLayout(kRopeCustomer, x, cos);
  return RunOnNpu(kRopeCustomer, x, cos, sin, "interleave", false);
}
at::Tensor RopeCustomerGrad(const at::Tensor& dy, const at::Tensor& cos, const at::Tensor& sin) {
  CheckTutorialLayout(kRopeCustomerGrad, dy, cos);
  return RunOnNpu(kRopeCustomerGrad, dy, cos, sin, "interleave", true);
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m) {
  m.impl("rotary_mul", &RotaryMul);
  m.impl("rotary_mul_grad", &RotaryMulGrad);
  m.impl("rope_customer", &RopeCustomer);
  m.impl("rope_customer_grad", &RopeCustomerGrad);
}

}  // namespace ascendc_ops
