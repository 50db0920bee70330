// What every PrivateUse1 launcher shares (one file per op family in this directory, each reusing
// its binding's Prepare* checks, output allocation, tiling and kernel argument lists): the platform the
// tiling targets, the tiling struct on the device, and direct kernel launches queued on torch_npu's
// current stream.
// Compiled only with CANN and torch_npu (cmake/npu.cmake).
#pragma once
#include <ATen/ATen.h>

#include <cstring>
#include <tuple>

// The platform reader the op_host uses too (csrc/op_host is not on this directory's include path).
#include "../../op_host/npu_platform.h"
#include "platform.h"
#include "tiling/platform/platform_ascendc.h"
#include "torch_npu/csrc/core/npu/NPUStream.h"
#include "torch_npu/csrc/framework/OpCommand.h"

namespace ascendc_ops::npu {

// CANN's platform for this device.
inline const platform_ascendc::PlatformAscendC& Soc() {
  auto* soc = platform_ascendc::PlatformAscendCManager::GetInstance();
  TORCH_CHECK(soc != nullptr, "ascendc_ops: CANN's platform_ascendc cannot read this device");
  return *soc;
}

// The chip's vector cores and UB, read once.
inline const tiling::PlatformInfo& NpuPlatform() {
  static const tiling::PlatformInfo platform = ascendc_ops_host::VectorPlatformOf(Soc());
  return platform;
}

// The chip's cube cores and L1 / L0 buffers (grouped matmul, attention), read once.
inline const tiling::CubePlatform& NpuCubePlatform() {
  static const tiling::CubePlatform platform = ascendc_ops_host::CubePlatformOf(Soc());
  return platform;
}

// The system workspace the Matmul API needs (kernels call SetSysWorkspace on it), from torch_npu's
// caching allocator.
inline at::Tensor SysWorkspace(const at::Device& device) {
  static const int64_t bytes = int64_t(Soc().GetLibApiWorkSpaceSize());
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

// A tensor's device address for a kernel (null for an undefined tensor: an absent optional input).
inline void* Ptr(const at::Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

inline aclrtStream CurrentStream() { return c10_npu::getCurrentNPUStream().stream(false); }

// Queues the launches (each calls ACLRT_LAUNCH_KERNEL(...)), in order, with torch_npu's own work.
template <typename... Launch>
void Enqueue(const char* opName, Launch... launch) {
  at_npu::native::OpCommand::RunOpApi(opName, [launch...]() -> int {
    (launch(), ...);
    return 0;
  });
}

// A direct launch of kernel entry `fn` on `stream` with its GM arguments as one tuple (a launch struct's Args),
// for Enqueue.
template <typename Fn, typename... Gms>
auto LaunchOf(Fn fn, uint32_t blockDim, aclrtStream stream, const std::tuple<Gms...>& gm) {
  return [=] { std::apply([&](auto... p) { fn(blockDim, stream, p...); }, gm); };
}

}  // namespace ascendc_ops::npu
