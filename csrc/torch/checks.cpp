// Torch tensors for the problem functions (tiling/op_spec.h), and the device check that is torch's alone.
#include "op_proto_table.h"

namespace ascendc_ops {

tiling::DType TilingDtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return tiling::DType::kFloat32;
    case at::kHalf: return tiling::DType::kFloat16;
    case at::kBFloat16: return tiling::DType::kBFloat16;
    case at::kInt: return tiling::DType::kInt32;
    case at::kLong: return tiling::DType::kInt64;
    case at::kDouble: return tiling::DType::kFloat64;
    case at::kBool: return tiling::DType::kBool;
    case at::kByte: return tiling::DType::kUInt8;
    default: return tiling::DType::kOther;
  }
}

tiling::TensorArg<int64_t> Arg(const at::Tensor& t) {
  if (!t.defined()) return {{}, tiling::DType::kOther, false};
  return {t.sizes().vec(), TilingDtype(t.scalar_type()), true};
}

tiling::TensorArg<c10::SymInt> SymArg(const at::Tensor& t) {
  if (!t.defined()) return {{}, tiling::DType::kOther, false};
  return {t.sym_sizes().vec(), TilingDtype(t.scalar_type()), true};
}

void CheckSameDevice(const OpProto& op, std::initializer_list<at::Tensor> inputs) {
  const at::Device device = inputs.begin()->device();
  size_t i = 0;
  for (const at::Tensor& t : inputs) {
    TORCH_CHECK_VALUE(t.device() == device, op.name, ": ", op.inputs[i], " is on ", t.device(), " but ", op.inputs[0],
                      " is on ", device, "; all inputs must be on one device");
    ++i;
  }
}

}  // namespace ascendc_ops
