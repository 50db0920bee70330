// The op prototypes (tiling::OpSpec, generated from op_proto/*/*.json into op_proto_gen.h) as the
// bindings use them: torch tensors -> the problem functions' TensorArg, their ArgError -> a Python
// ValueError / TypeError, and the checks that are torch's alone (devices).
#pragma once
#include <ATen/ATen.h>

#include <initializer_list>
#include <type_traits>
#include <vector>

#include "op_spec.h"

// On the launchers' shared Prepare* functions: exported from _C (built with hidden visibility) so
// the simulated NPU (csrc/sim_npu) links the real csrc/torch/npu launchers against them.
#define ASCENDC_OPS_API __attribute__((visibility("default")))

namespace ascendc_ops {

using OpProto = tiling::OpSpec;

// The tiling's name for a dtype (kOther for one no prototype lists).
tiling::DType TilingDtype(at::ScalarType t);

// A tensor's shape and dtype for the problem functions: concrete sizes, or SymInts (Meta kernels).
tiling::TensorArg<int64_t> Arg(const at::Tensor& t);
tiling::TensorArg<c10::SymInt> SymArg(const at::Tensor& t);
// Arg or SymArg by the size type: one check template serves a launch (int64_t) and its Meta kernel (c10::SymInt).
template <class Int>
tiling::TensorArg<Int> ArgOf(const at::Tensor& t) {
  if constexpr (std::is_same_v<Int, int64_t>) return Arg(t);
  else return SymArg(t);
}

// Runs a problem function (or a tiling) and raises its ArgError / TilingError as torch does for bad
// arguments: a Python TypeError or ValueError with the same message. A TilingError's message gets
// the op's name in front.
template <class F>
auto Checked(const OpProto& op, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const tiling::ArgError& e) {
    if (e.kind == tiling::ArgError::kType) TORCH_CHECK_TYPE(false, e.what());
    TORCH_CHECK_VALUE(false, e.what());
  } catch (const tiling::TilingError& e) {
    TORCH_CHECK_VALUE(false, op.name, ": ", e.what());
  }
}

// Throws a ValueError unless every tensor lives on the device of the first.
void CheckSameDevice(const OpProto& op, std::initializer_list<at::Tensor> inputs);

}  // namespace ascendc_ops
