// SIMULATOR -- stands in for CANN's tiling/platform/platform_ascendc.h, only what npu_launch.h reads (through
// csrc/op_host/npu_platform.h): core counts, UB / L1 / L0 sizes and the library workspace size, reported as an
// Ascend910B2's.
#pragma once
#include <cstdint>

namespace platform_ascendc {

enum class CoreMemType { L0_A, L0_B, L0_C, L1, L2, UB, HBM, RESERVED };

class PlatformAscendC {
 public:
  uint32_t GetCoreNumAiv() const;
  uint32_t GetCoreNumAic() const;
  void GetCoreMemSize(CoreMemType type, uint64_t& size) const;
  uint32_t GetLibApiWorkSpaceSize() const;
};

class PlatformAscendCManager {
 public:
  static PlatformAscendC* GetInstance();
};

}  // namespace platform_ascendc
