// What every PrivateUse1 launcher shares (one file per op family in this directory, each reusing
// its binding's Prepare* checks, output allocation and tiling): the platform the tiling targets,
// the tiling struct on the device, and a direct kernel launch queued on torch_npu's current stream.
// Compiled only with CANN and torch_npu (cmake/npu.cmake).
#pragma once
#include <ATen/ATen.h>

#include <cstring>

#include "grouped_matmul_tiling.h"
#include "platform.h"
#include "tiling/platform/platform_ascendc.h"
#include "torch_npu/csrc/core/npu/NPUStream.h"
#include "torch_npu/csrc/framework/OpCommand.h"

namespace ascendc_ops::npu {

// The chip's vector cores, read once from CANN's platform (the UB size is the A2 constant the
// tiling already uses, tiling::kA2UbBytes: platform_ascendc reports the same on 910B).
inline const tiling::PlatformInfo& NpuPlatform() {
  static const tiling::PlatformInfo platform = [] {
    auto* soc = platform_ascendc::PlatformAscendCManager::GetInstance();
    TORCH_CHECK(soc != nullptr, "ascendc_ops: CANN's platform_ascendc cannot read this device");
    return tiling::Ascend910B(soc->GetCoreNumAiv());
  }();
  return platform;
}

// The chip's cube cores and L1 / L0 buffers (grouped matmul), read once from CANN's platform.
inline const tiling::CubePlatform& NpuCubePlatform() {
  static const tiling::CubePlatform platform = [] {
    auto* soc = platform_ascendc::PlatformAscendCManager::GetInstance();
    TORCH_CHECK(soc != nullptr, "ascendc_ops: CANN's platform_ascendc cannot read this device");
    uint64_t l1 = 0, l0a = 0, l0b = 0, l0c = 0;
    soc->GetCoreMemSize(platform_ascendc::CoreMemType::L1, l1);
    soc->GetCoreMemSize(platform_ascendc::CoreMemType::L0_A, l0a);
    soc->GetCoreMemSize(platform_ascendc::CoreMemType::L0_B, l0b);
    soc->GetCoreMemSize(platform_ascendc::CoreMemType::L0_C, l0c);
    return tiling::CubePlatform{tiling::kA2Name, soc->GetCoreNumAic(), uint32_t(l1),
                                uint32_t(l0a),   uint32_t(l0b),        uint32_t(l0c)};
  }();
  return platform;
}

// The system workspace the Matmul API needs (kernels call SetSysWorkspace on it), from torch_npu's
// caching allocator.
inline at::Tensor SysWorkspace(const at::Device& device) {
  static const int64_t bytes = [] {
    auto* soc = platform_ascendc::PlatformAscendCManager::GetInstance();
    TORCH_CHECK(soc != nullptr, "ascendc_ops: CANN's platform_ascendc cannot read this device");
    return int64_t(soc->GetLibApiWorkSpaceSize());
  }();
  return at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
}

// The tiling struct as device bytes: written to pinned host memory and copied on the current
// stream without waiting (the pinned block is not reused before that copy has run).
template <typename Data>
at::Tensor TilingOnDevice(const Data& data, const at::Device& device) {
  at::Tensor host = at::empty({int64_t(sizeof(Data))}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
  std::memcpy(host.data_ptr(), &data, sizeof(Data));
  return host.to(device, /*non_blocking=*/true);
}

inline void* Ptr(const at::Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

inline aclrtStream CurrentStream() { return c10_npu::getCurrentNPUStream().stream(false); }

// Queues `launch` (which calls ACLRT_LAUNCH_KERNEL(...)) in order with torch_npu's own work.
template <typename Launch>
void Enqueue(const char* opName, Launch launch) {
  at_npu::native::OpCommand::RunOpApi(opName, [launch]() -> int {
    launch();
    return 0;
  });
}

}  // namespace ascendc_ops::npu
