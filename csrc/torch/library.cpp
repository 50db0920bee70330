// The `custom` op library: every schema comes from op_proto/*.json (op_proto_gen.h).
// Implementations register per backend: CPU twin here, NPU in npu/ when built with CANN.
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "op_proto_gen.h"
#include "twin_backend.h"
#include "twin_isa.h"

namespace ascendc_ops {

std::vector<std::string> Backends() {
  std::vector<std::string> backends{"cpu-twin"};
#ifdef ASCENDC_OPS_WITH_NPU
  // PrivateUse1: the kernels direct-launched on torch_npu's stream (csrc/torch/npu/), not via aclnn
  backends.push_back("npu-direct-launch");
#endif
  return backends;
}

// Twin blocks run on torch's intra-op thread pool: one pool for the whole process, threads warm.
const bool kTwinOnTorchPool = [] {
  AscendC::twin::SetParallelFor([](uint32_t blocks, const AscendC::twin::RangeRunner& runRange) {
    at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) { runRange(uint32_t(begin), uint32_t(end)); });
  });
  return true;
}();

TORCH_LIBRARY(custom, m) {
  for (const OpProto* op : kAllOps) m.def(op->schema);
}

// The platform the CPU-twin tiling targets now (it follows torch's thread count).
std::tuple<std::string, int64_t, int64_t, int64_t> Platform() {
  const tiling::PlatformInfo p = TwinPlatform();
  return {p.name, p.vectorCores, p.ubBytes, p.UbBudget()};
}

TORCH_LIBRARY(ascendc_ops, m) {
  m.def("backends() -> str[]", &Backends);
  m.def("platform() -> (str name, int vector_cores, int ub_bytes, int ub_budget)", &Platform);
  // the ISA path the loaded library's twin and kernels were compiled for (python/ascendc_ops/_isa.py)
  m.def("isa() -> str", [] { return std::string(AscendC::twin::CompiledIsa()); });
}

}  // namespace ascendc_ops
