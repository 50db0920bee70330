// The `custom` op library: every schema comes from op_proto/*/*.json (op_proto_gen.h).
// Implementations register per backend: CPU twin here, NPU in npu/ when built with CANN (or by
// the simulated NPU of csrc/sim_npu, in tests).
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include "backend_names.h"
#include "op_proto_gen.h"
#include "twin_backend.h"
#include "twin_isa.h"

namespace ascendc_ops {

// What the dispatcher holds, not how this file was compiled: the NPU backend is there when the
// PrivateUse1 launchers (csrc/torch/npu/) registered, whichever library registered them.
std::vector<std::string> Backends() {
  std::vector<std::string> backends{kCpuTwinBackend};
  for (const tiling::OpSpec* op : kAllOps) {
    const auto handle = c10::Dispatcher::singleton().findOp({std::string("custom::") + op->name, ""});
    if (handle && handle->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) {
      backends.push_back(kNpuBackend);
      break;
    }
  }
  return backends;
}

std::tuple<std::string, std::string> BackendNames() { return {kCpuTwinBackend, kNpuBackend}; }

// Twin blocks run on torch's intra-op thread pool: one pool for the whole process, threads warm.
const bool kTwinOnTorchPool = [] {
  AscendC::twin::SetParallelFor([](uint32_t blocks, const AscendC::twin::RangeRunner& runRange) {
    at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) { runRange(uint32_t(begin), uint32_t(end)); });
  });
  return true;
}();

TORCH_LIBRARY(custom, m) {
  for (const tiling::OpSpec* op : kAllOps) m.def(op->schema);
}

// The platform the CPU-twin tiling targets now (it follows torch's thread count).
std::tuple<std::string, int64_t, int64_t, int64_t> Platform() {
  const tiling::PlatformInfo p = TwinPlatform();
  return {p.name, p.vectorCores, p.ubBytes, p.UbBudget()};
}

TORCH_LIBRARY(ascendc_ops, m) {
  m.def("backends() -> str[]", &Backends);
  m.def("backend_names() -> (str cpu_twin, str npu)", &BackendNames);
  m.def("platform() -> (str name, int vector_cores, int ub_bytes, int ub_budget)", &Platform);
  // the ISA path the loaded library's twin and kernels were compiled for (python/ascendc_ops/_isa.py)
  m.def("isa() -> str", [] { return std::string(AscendC::twin::CompiledIsa()); });
}

}  // namespace ascendc_ops
