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
ASCENDC_NPU_KERNELS(ROPE_DTYPES, rope, ROPE_PARAMS)
ASCENDC_NPU_KERNELS(ROPE_DTYPES, apply_rope, APPLY_ROPE_PARAMS)

namespace ascendc_ops {
namespace {

at::Tensor RunOnNpu(const OpProto& op, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                    std::optional<std::string_view> mode, bool backward) {
  RopeLaunch l = PrepareRope(op, x, cos, sin, mode, backward, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return l.y;
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, x.device());
  const uint32_t blocks = l.tiling.blockDim;
  void *xp = l.x.data_ptr(), *cp = l.cos.data_ptr(), *sp = l.sin.data_ptr(), *yp = l.y.data_ptr(),
       *tp = tiling.data_ptr();
  const at::ScalarType dtype = l.x.scalar_type();
  aclrtStream stream = npu::CurrentStream();
  npu::Enqueue(op.name, [=] { PickEntry(npu_entries::rope, dtype).fn(blocks, stream, xp, cp, sp, yp, nullptr, tp); });
  return l.y;
}

at::Tensor RotaryMul(const at::Tensor& x, const at::Tensor& r1, const at::Tensor& r2, c10::string_view mode) {
  return RunOnNpu(kRotaryMul, x, r1, r2, std::string_view(mode.data(), mode.size()), false);
}
at::Tensor RotaryMulGrad(const at::Tensor& dy, const at::Tensor& r1, const at::Tensor& r2, c10::string_view mode) {
  return RunOnNpu(kRotaryMulGrad, dy, r1, r2, std::string_view(mode.data(), mode.size()), true);
}
at::Tensor RopeCustomer(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  return RunOnNpu(kRopeCustomer, x, cos, sin, std::nullopt, false);
}
at::Tensor RopeCustomerGrad(const at::Tensor& dy, const at::Tensor& cos, const at::Tensor& sin) {
  return RunOnNpu(kRopeCustomerGrad, dy, cos, sin, std::nullopt, true);
}

void ApplyRopeOnNpu(const OpProto& op, const at::Tensor& query, const at::Tensor& key, const at::Tensor& cos,
                    const at::Tensor& sin, c10::string_view layout, c10::string_view mode, bool backward) {
  ApplyRopeLaunch l = PrepareApplyRope(op, query, key, cos, sin, std::string_view(layout.data(), layout.size()),
                                       std::string_view(mode.data(), mode.size()), backward, npu::NpuPlatform());
  if (l.tiling.blockDim == 0) return;
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, query.device());
  const uint32_t blocks = l.tiling.blockDim;
  void *qp = l.query.data_ptr(), *kp = l.key.data_ptr(), *cp = l.cos.data_ptr(), *sp = l.sin.data_ptr(),
       *tp = tiling.data_ptr();
  const at::ScalarType dtype = l.query.scalar_type();
  aclrtStream stream = npu::CurrentStream();
  npu::Enqueue(op.name,
               [=] { PickEntry(npu_entries::apply_rope, dtype).fn(blocks, stream, qp, kp, cp, sp, nullptr, tp); });
  FinishApplyRope(l, query, key);
}

void ApplyRotaryPosEmb(at::Tensor& query, at::Tensor& key, const at::Tensor& cos, const at::Tensor& sin,
                       c10::string_view layout, c10::string_view mode) {
  ApplyRopeOnNpu(kApplyRotaryPosEmb, query, key, cos, sin, layout, mode, false);
}
void ApplyRotaryPosEmbGrad(at::Tensor& dquery, at::Tensor& dkey, const at::Tensor& cos, const at::Tensor& sin,
                           c10::string_view layout, c10::string_view mode) {
  ApplyRopeOnNpu(kApplyRotaryPosEmbGrad, dquery, dkey, cos, sin, layout, mode, true);
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m) {
  m.impl("apply_rotary_pos_emb", &ApplyRotaryPosEmb);
  m.impl("apply_rotary_pos_emb_grad", &ApplyRotaryPosEmbGrad);
  m.impl("rotary_mul", &RotaryMul);
  m.impl("rotary_mul_grad", &RotaryMulGrad);
  m.impl("rope_customer", &RopeCustomer);
  m.impl("rope_customer_grad", &RopeCustomerGrad);
}

}  // namespace ascendc_ops
