// What every PrivateUse1 launcher shares (one file per op family in this directory, each reusing
// its binding's Prepare* checks, output allocation and tiling): the platform the tiling targets,
// the tiling struct on the device, and a direct kernel launch queued on torch_npu's current stream.
// Compiled only with CANN and torch_npu (cmake/npu.cmake).
#pragma once
#include <ATen/ATen.h>

#include <cstring>

#include "platform.h"
#include "tiling/platform/platform_ascendc.h"
#include "torch_npu/csrc/core/npu/NPUStream.h"
#include "torch_npu/csrc/framework/OpCommand.h"

namespace ascendc_ops::npu {

// The chip's vector cores, read once from CANN's platform (the UB size is the A2 constant the
// tiling already uses: platform_ascendc reports the same 196,352 bytes on 910B).
inline const tiling::PlatformInfo& NpuPlatform() {
  static const tiling::PlatformInfo platform = [] {
    auto* soc = platform_ascendc::PlatformAscendCManager::GetInstance();
    TORCH_CHECK(soc != nullptr, "ascendc_ops: CANN's platform_ascendc cannot read this device");
    return tiling::Ascend910B(soc->GetCoreNumAiv());
  }();
  return platform;
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
