// Which chip the twin's tiling targets. By default the twin itself (one block per torch thread);
// the pipeline model overrides it with a modelled NPU (e.g. 910B: 48 vector cores) so the op runs
// on the twin with exactly the tiling, and the block count, that NPU would get.
#include <torch/library.h>

#include <mutex>
#include <optional>
#include <string>

#include "twin_backend.h"

namespace ascendc_ops {
namespace {

std::mutex gMutex;
std::string gName;  // PlatformInfo::name points here while the override is set
std::optional<tiling::PlatformInfo> gOverride;
uint32_t gCubeCores = 0;  // the modelled chip's cube cores (0: none given)

void SetTilingPlatform(const std::string& name, int64_t vectorCores, int64_t cubeCores, int64_t ubBytes) {
  TORCH_CHECK_VALUE(vectorCores >= 1 && vectorCores <= 4096,
                    "set_tiling_platform: vector_cores must be in [1, 4096], got ", vectorCores);
  TORCH_CHECK_VALUE(cubeCores >= 0, "set_tiling_platform: cube_cores must be >= 0, got ", cubeCores);
  // The twin gives every block an A2-sized UB; a tiling for a larger UB could not run on it.
  TORCH_CHECK_VALUE(ubBytes > int64_t(tiling::kA2UbReserve) && ubBytes <= int64_t(AscendC::twin::kUbBytes),
                    "set_tiling_platform: ub_bytes must be in (", tiling::kA2UbReserve, ", ", AscendC::twin::kUbBytes,
                    "] (the twin's Unified Buffer), got ", ubBytes);
  std::lock_guard<std::mutex> lock(gMutex);
  gName = name;
  gOverride = tiling::PlatformInfo{gName.c_str(), uint32_t(vectorCores), uint32_t(ubBytes), tiling::kA2UbReserve};
  gCubeCores = uint32_t(cubeCores);
}

void ResetTilingPlatform() {
  std::lock_guard<std::mutex> lock(gMutex);
  gOverride.reset();
  gCubeCores = 0;
}

// Tests and benchmarks force either launch path: 0 sends every multi-block launch to the pool.
void SetInlineLaunchBytes(int64_t bytes) {
  TORCH_CHECK_VALUE(bytes >= 0, "set_inline_launch_bytes: bytes must be >= 0, got ", bytes);
  AscendC::twin::SetInlineLaunchBytes(uint64_t(bytes));
}
int64_t InlineLaunchBytes() { return int64_t(AscendC::twin::InlineLaunchBytes()); }

}  // namespace

bool TilingPlatformOverride(tiling::PlatformInfo* out) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (!gOverride) return false;
  *out = *gOverride;
  return true;
}

bool TilingCubeCoresOverride(uint32_t* out) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (!gOverride || gCubeCores == 0) return false;
  *out = gCubeCores;
  return true;
}

TORCH_LIBRARY_FRAGMENT(ascendc_ops, m) {
  m.def("set_tiling_platform(str name, int vector_cores, int cube_cores, int ub_bytes) -> ()", &SetTilingPlatform);
  m.def("reset_tiling_platform() -> ()", &ResetTilingPlatform);
  // the UB every twin block has: the most a modelled chip's tiling may fill here
  m.def("twin_ub_bytes() -> int", [] { return int64_t(AscendC::twin::kUbBytes); });
  m.def("set_inline_launch_bytes(int bytes) -> ()", &SetInlineLaunchBytes);
  m.def("inline_launch_bytes() -> int", &InlineLaunchBytes);
}

}  // namespace ascendc_ops
