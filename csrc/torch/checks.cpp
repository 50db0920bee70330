// Readable argument checks shared by every op binding.
#include <sstream>

#include "op_proto_table.h"

namespace ascendc_ops {

std::string ShapeString(const at::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

tiling::DType TilingDtype(at::ScalarType t) {
  TORCH_CHECK(t == at::kFloat || t == at::kHalf || t == at::kBFloat16, "no tiling dtype for ", t);
  return t == at::kFloat  ? tiling::DType::kFloat32
         : t == at::kHalf ? tiling::DType::kFloat16
                          : tiling::DType::kBFloat16;
}

void CheckDtypes(const OpProto& op, std::initializer_list<at::Tensor> inputs) {
  std::vector<at::ScalarType> got;
  for (const at::Tensor& t : inputs) got.push_back(t.scalar_type());
  for (const auto& combo : op.inputDtypes)
    if (combo == got) return;
  std::ostringstream msg;
  msg << op.name << ": unsupported dtypes (";
  size_t i = 0;
  for (const at::Tensor& t : inputs) msg << (i ? ", " : "") << op.inputs[i++] << "=" << t.scalar_type();
  msg << "); supported:";
  for (const auto& combo : op.inputDtypes) {
    msg << " (";
    for (size_t k = 0; k < combo.size(); ++k) msg << (k ? ", " : "") << combo[k];
    msg << ")";
  }
  TORCH_CHECK_TYPE(false, msg.str());
}

void CheckDtype(const OpProto& op, size_t index, const at::Tensor& t) {
  std::ostringstream allowed;
  for (const auto& combo : op.inputDtypes) {
    if (combo[index] == t.scalar_type()) return;
    allowed << (allowed.tellp() > 0 ? ", " : "") << combo[index];
  }
  TORCH_CHECK_TYPE(false, op.name, ": ", op.inputs[index], " must be one of ", allowed.str(), ", got ",
                   t.scalar_type());
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
