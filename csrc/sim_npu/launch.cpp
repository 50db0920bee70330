// SIMULATOR -- the CANN / torch_npu runtime pieces the real launchers (csrc/torch/npu) call:
// torch_npu's stream and task queue, CANN's platform query, and the launch checks and counts.
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <map>
#include <mutex>
#include <string>

#include "platform.h"
#include "sim_acl_launch.h"
#include "tiling/platform/platform_ascendc.h"
#include "torch_npu/csrc/framework/OpCommand.h"
#include "twin_launch.h"

namespace ascendc_ops::sim_npu {
namespace {

int streamToken;                    // its address is the one simulated stream handle
thread_local const char* queuedOp;  // set while a RunOpApi task runs: launches must happen inside one
std::mutex countsMutex;
std::map<std::string, int64_t> launchCounts;

// This library carries its own copy of the twin (the "device binary"): run its blocks on torch's
// thread pool, as _C does for its copy.
const bool kTwinOnTorchPool = [] {
  AscendC::twin::SetParallelFor([](uint32_t blocks, const AscendC::twin::RangeRunner& runRange) {
    at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) { runRange(uint32_t(begin), uint32_t(end)); });
  });
  return true;
}();

// Tests read these to know the launcher, not a fallback, ran the kernel.
int64_t LaunchCount(c10::string_view kernel) {
  std::lock_guard<std::mutex> lock(countsMutex);
  const auto it = launchCounts.find(std::string(kernel));
  return it == launchCounts.end() ? 0 : it->second;
}

}  // namespace

aclrtStream SimulatedStream() { return &streamToken; }

void BeforeLaunch(const char* kernelName, aclrtStream stream) {
  TORCH_CHECK(queuedOp != nullptr, "simulated NPU: ", kernelName,
              " launched outside OpCommand::RunOpApi (torch_npu would run it out of stream order)");
  TORCH_CHECK(stream == SimulatedStream(), "simulated NPU: ", kernelName, " (in ", queuedOp,
              ") launched on a stream that is not torch_npu's current stream");
  std::lock_guard<std::mutex> lock(countsMutex);
  ++launchCounts[kernelName];
}

TORCH_LIBRARY(sim_npu, m) { m.def("launch_count(str kernel) -> int", &LaunchCount); }

}  // namespace ascendc_ops::sim_npu

void at_npu::native::OpCommand::RunOpApi(const std::string& opName, const std::function<int()>& func, bool) {
  using ascendc_ops::sim_npu::queuedOp;
  TORCH_CHECK(queuedOp == nullptr, "simulated NPU: RunOpApi(", opName, ") nested in ", queuedOp);
  queuedOp = opName.c_str();
  int status = 0;
  try {
    status = func();
  } catch (...) {
    queuedOp = nullptr;
    throw;
  }
  queuedOp = nullptr;
  TORCH_CHECK(status == 0, "simulated NPU: ", opName, " returned ", status);
}

// An Ascend910B2's numbers (the SoC cmake/npu.cmake compiles for, tiling/platform.h): 24 cube cores, each with two
// vector cores.
namespace platform_ascendc {
uint32_t PlatformAscendC::GetCoreNumAiv() const { return 2 * tiling::kA2CubeCores; }
uint32_t PlatformAscendC::GetCoreNumAic() const { return tiling::kA2CubeCores; }
void PlatformAscendC::GetCoreMemSize(CoreMemType type, uint64_t& size) const {
  switch (type) {
    case CoreMemType::UB: size = tiling::kA2UbBytes; break;
    case CoreMemType::L1: size = tiling::kA2L1Bytes; break;
    case CoreMemType::L0_A: size = tiling::kA2L0aBytes; break;
    case CoreMemType::L0_B: size = tiling::kA2L0bBytes; break;
    case CoreMemType::L0_C: size = tiling::kA2L0cBytes; break;
    default: size = 0;
  }
}
uint32_t PlatformAscendC::GetLibApiWorkSpaceSize() const { return 16 * 1024 * 1024; }
PlatformAscendC* PlatformAscendCManager::GetInstance() {
  static PlatformAscendC platform;
  return &platform;
}
}  // namespace platform_ascendc
