// The `custom` op library: every schema comes from op_proto/*.json (op_proto_gen.h).
// Implementations register per backend: CPU twin here, NPU in npu/ when built with CANN.
#include <torch/library.h>

#include "op_proto_gen.h"

namespace ascendc_ops {

std::vector<std::string> Backends() {
  std::vector<std::string> backends{"cpu-twin"};
#ifdef ASCENDC_OPS_WITH_NPU
  backends.push_back("npu");
#endif
  return backends;
}

TORCH_LIBRARY(custom, m) {
  for (const OpProto* op : kAllOps) m.def(op->schema);
}

TORCH_LIBRARY(ascendc_ops, m) {
  m.def("backends() -> str[]", &Backends);
}

}  // namespace ascendc_ops
