// SIMULATOR -- the ACL side of a direct launch, as the simulated NPU provides it. CANN's
// ascendc_library() generates one aclrtlaunch_<kernel>.h per kernel entry, whose function queues
// the device binary on an ACL stream; gen_aclrtlaunch.py writes headers with the same names and
// signatures whose function runs the twin build of that entry on the host memory the simulated
// NPU allocates. Everything above this call (csrc/torch/npu: allocation, tiling, host reads,
// launch order) is the real NPU code.
#pragma once
#include <cstdint>

#include "twin_backend.h"

using aclrtStream = void*;  // acl_base.h's opaque stream handle

#ifndef ACLRT_LAUNCH_KERNEL
#define ACLRT_LAUNCH_KERNEL(kernel_func) aclrtlaunch_##kernel_func
#endif

namespace ascendc_ops::sim_npu {

aclrtStream SimulatedStream();
// Checks what a real launch would need (the current stream, inside OpCommand::RunOpApi) and counts it.
void BeforeLaunch(const char* kernelName, aclrtStream stream);

template <typename... Params, typename... Args>
uint32_t Launch(const char* kernelName, uint32_t blockDim, aclrtStream stream, void (*kernel)(Params...), Args... gm) {
  BeforeLaunch(kernelName, stream);
  LaunchOnTwin(kernelName, blockDim, kernel, static_cast<uint8_t*>(gm)...);
  return 0;  // ACL_SUCCESS
}

// A kernel of a declared type whose cores may wait on each other (a mix kernel's cross-core flags).
template <typename... Params, typename... Args>
uint32_t LaunchTyped(KernelMetaType type, const char* kernelName, uint32_t blockDim, aclrtStream stream,
                     void (*kernel)(Params...), Args... gm) {
  BeforeLaunch(kernelName, stream);
  LaunchTypedOnTwin(type, kernelName, blockDim, kernel, static_cast<uint8_t*>(gm)...);
  return 0;  // ACL_SUCCESS
}

}  // namespace ascendc_ops::sim_npu
