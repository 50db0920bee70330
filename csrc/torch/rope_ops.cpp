// RoPE on the CPU twin: rotary_mul, rope_customer and their *_grad ops all run the one kernel
// in csrc/kernels/rope.cpp; they differ in layout checks, mode and direction.
#include "rope_ops.h"

#include <torch/library.h>

#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "twin_backend.h"

// The kernel entry points of csrc/kernels/rope.cpp, compiled for the twin into this library, from their list.
ASCENDC_TWIN_KERNELS(ROPE_DTYPES, rope, ROPE_PARAMS)

namespace ascendc_ops {
namespace {

RopeMode ParseMode(const OpProto& op, c10::string_view mode) {
  if (mode == "half") return ROPE_MODE_HALF;
  if (mode == "interleave") return ROPE_MODE_INTERLEAVE;
  TORCH_CHECK_VALUE(false, op.name, ": rotary_mode must be 'half' or 'interleave', got '", std::string(mode), "'");
}

// Rows of a [..., D] tensor as three dims, padded with leading 1s to `rank` - 1 and then to 3.
std::array<int64_t, 3> RowDims(const at::Tensor& t, int64_t rank) {
  std::array<int64_t, 3> dims{1, 1, 1};
  const int64_t rows = rank - 1, pad = rank - t.dim();
  for (int64_t k = 0; k < rows; ++k) dims[3 - rows + k] = k < pad ? 1 : t.size(k - pad);
  return dims;
}

}  // namespace

RopeLaunch PrepareRope(const OpProto& op, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                       c10::string_view mode, bool backward, const tiling::PlatformInfo& platform) {
  const char* xName = op.inputs[0];
  const char* rName = op.inputs[1];
  // rope_customer: the pair rotation, each pair reading its even lane's cos/sin (the tutorial's kernel)
  const bool tutorial = &op == &kRopeCustomer || &op == &kRopeCustomerGrad;
  const RopeMode ropeMode = tutorial ? ROPE_MODE_TUTORIAL : ParseMode(op, mode);
  CheckSameDevice(op, {x, cos, sin});
  TORCH_CHECK_VALUE(x.dim() == 3 || x.dim() == 4, op.name, ": ", xName,
                    " must have rank 3 ([T, N, D]) or 4 ([B, N, S, D], [B, S, N, D], [S, B, N, D]), got shape ",
                    ShapeString(x));
  const int64_t d = x.size(-1);
  TORCH_CHECK_VALUE(d % 2 == 0, op.name, ": the last dim of ", xName, " (head_dim) must be even, got ", d);
  TORCH_CHECK_VALUE(cos.sizes() == sin.sizes(), op.name, ": ", op.inputs[1], " and ", op.inputs[2],
                    " must have one shape, got ", ShapeString(cos), " and ", ShapeString(sin));
  TORCH_CHECK_VALUE(cos.dim() >= 1 && cos.dim() <= x.dim() && cos.size(-1) == d, op.name, ": ", rName,
                    " must have rank <= ", x.dim(), " and last dim ", d, " like ", xName, ", got shape ",
                    ShapeString(cos));
  for (int64_t k = 1; k < cos.dim(); ++k) {
    const int64_t rk = cos.size(-1 - k), xk = x.size(-1 - k);
    TORCH_CHECK_VALUE(rk == 1 || rk == xk, op.name, ": ", rName, " of shape ", ShapeString(cos),
                      " does not broadcast to ", xName, " of shape ", ShapeString(x), " (dim ", -1 - k, " is ", rk,
                      ", expected 1 or ", xk, ")");
  }
  CheckDtype(op, 0, x);
  TORCH_CHECK_TYPE(at::isFloatingType(cos.scalar_type()) && at::isFloatingType(sin.scalar_type()), op.name, ": ", rName,
                   " must be floating point, got ", cos.scalar_type());

  RopeLaunch l;
  // cos/sin of another float dtype are cast to x's, as npu_rotary_mul does.
  l.x = x.contiguous();
  l.cos = cos.to(x.scalar_type()).contiguous();
  l.sin = sin.to(x.scalar_type()).contiguous();
  CheckDtypes(op, {l.x, l.cos, l.sin});
  l.y = at::empty_like(l.x, at::MemoryFormat::Contiguous);

  tiling::RopeProblem problem{
      RowDims(x, x.dim()), RowDims(cos, x.dim()), uint32_t(d), TilingDtype(x.scalar_type()), ropeMode, backward};
  if (x.numel() == 0) {
    l.tiling.blockDim = 0;
    return l;
  }
  try {
    l.tiling = tiling::TileRope(problem, platform);
  } catch (const tiling::TilingError& e) {
    TORCH_CHECK_VALUE(false, op.name, ": ", e.what());
  }
  return l;
}

void CheckTutorialLayout(const OpProto& op, const at::Tensor& x, const at::Tensor& cos) {
  TORCH_CHECK_VALUE(x.dim() == 4, op.name, ": ", op.inputs[0], " must be [B, H, L, D], got shape ", ShapeString(x));
  TORCH_CHECK_VALUE(cos.dim() == 2, op.name, ": ", op.inputs[1], " must be [L, D], got shape ", ShapeString(cos));
}

namespace {

at::Tensor RunOnTwin(const OpProto& op, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                     c10::string_view mode, bool backward) {
  RopeLaunch l = PrepareRope(op, x, cos, sin, mode, backward, TwinPlatform());
  if (l.tiling.blockDim == 0) return l.y;
  uint8_t* tilingGm = reinterpret_cast<uint8_t*>(&l.tiling.data);
  const auto& e = PickEntry(twin_entries::rope, l.x.scalar_type());
  LaunchOnTwin(GmBytes(l.x, l.cos, l.sin, l.y), e.name, l.tiling.blockDim, e.fn, Gm(l.x), Gm(l.cos), Gm(l.sin), Gm(l.y),
               static_cast<uint8_t*>(nullptr), tilingGm);
  return l.y;
}

at::Tensor RotaryMul(const at::Tensor& x, const at::Tensor& r1, const at::Tensor& r2, c10::string_view mode) {
  return RunOnTwin(kRotaryMul, x, r1, r2, mode, false);
}
at::Tensor RotaryMulGrad(const at::Tensor& dy, const at::Tensor& r1, const at::Tensor& r2, c10::string_view mode) {
  return RunOnTwin(kRotaryMulGrad, dy, r1, r2, mode, true);
}

at::Tensor RopeCustomer(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  CheckTutorialLayout(kRopeCustomer, x, cos);
  return RunOnTwin(kRopeCustomer, x, cos, sin, "interleave", false);
}
at::Tensor RopeCustomerGrad(const at::Tensor& dy, const at::Tensor& cos, const at::Tensor& sin) {
  CheckTutorialLayout(kRopeCustomerGrad, dy, cos);
  return RunOnTwin(kRopeCustomerGrad, dy, cos, sin, "interleave", true);
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, CPU, m) {
  m.impl("rotary_mul", &RotaryMul);
  m.impl("rotary_mul_grad", &RotaryMulGrad);
  m.impl("rope_customer", &RopeCustomer);
  m.impl("rope_customer_grad", &RopeCustomerGrad);
}

}  // namespace ascendc_ops
