// The shape of one op prototype as the bindings see it; the instances are generated from
// op_proto/*.json into op_proto_gen.h, so names, schemas and dtypes are never typed twice.
#pragma once
#include <ATen/ATen.h>

#include "platform.h"

#include <initializer_list>
#include <vector>

// On the launchers' shared Prepare* functions: exported from _C (built with hidden visibility) so
// the simulated NPU (csrc/sim_npu) links the real csrc/torch/npu launchers against them.
#define ASCENDC_OPS_API __attribute__((visibility("default")))

namespace ascendc_ops {

struct OpProto {
  const char* name;    // torch op name, e.g. "rotary_mul"
  const char* schema;  // torch schema string
  std::vector<const char*> inputs;
  std::vector<std::vector<at::ScalarType>> inputDtypes;  // supported combinations
};

// Throws a TypeError naming every input's dtype and the supported combinations.
void CheckDtypes(const OpProto& op, std::initializer_list<at::Tensor> inputs);

// Throws a TypeError unless input `index` has a dtype that some supported combination allows.
void CheckDtype(const OpProto& op, size_t index, const at::Tensor& t);

// Throws a ValueError unless every tensor lives on the device of the first.
void CheckSameDevice(const OpProto& op, std::initializer_list<at::Tensor> inputs);

std::string ShapeString(const at::Tensor& t);

// The tiling's name for a float dtype the op prototypes allow (float32, float16, bfloat16).
tiling::DType TilingDtype(at::ScalarType t);

}  // namespace ascendc_ops
