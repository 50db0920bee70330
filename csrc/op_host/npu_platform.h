// The chip a kernel's tiling targets, as CANN's platform_ascendc reports it: the one reader of the op_host
// (op_host_common.h, from a tiling context's platform info) and the torch_npu launchers (csrc/torch/npu/npu_launch.h,
// from PlatformAscendCManager). No torch, no graph headers: the launchers include it too.
#pragma once
#include <cstdint>

#include "cube_tiling_rules.h"
#include "platform.h"
#include "tiling/platform/platform_ascendc.h"

namespace ascendc_ops_host {

// The vector cores and the UB, with the same API scratch reserve tiling::Ascend910B keeps free.
inline tiling::PlatformInfo VectorPlatformOf(const platform_ascendc::PlatformAscendC& soc) {
  uint64_t ub = 0;
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
  const uint32_t ubBytes = static_cast<uint32_t>(ub);
  const uint32_t reserve = ubBytes > tiling::kA2UbReserve ? tiling::kA2UbReserve : 0;
  return {tiling::kA2Name, soc.GetCoreNumAiv(), ubBytes, reserve};
}

// The cube cores (one core group each in a mix kernel) and their L1 / L0 buffers.
inline tiling::CubePlatform CubePlatformOf(const platform_ascendc::PlatformAscendC& soc) {
  uint64_t l1 = 0, l0a = 0, l0b = 0, l0c = 0;
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L1, l1);
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L0_A, l0a);
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L0_B, l0b);
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L0_C, l0c);
  return {tiling::kA2Name, soc.GetCoreNumAic(), uint32_t(l1), uint32_t(l0a), uint32_t(l0b), uint32_t(l0c)};
}

}  // namespace ascendc_ops_host
