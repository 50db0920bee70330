// SIMULATOR -- stands in for torch_npu's NPUStream.h, only the symbol csrc/torch/npu uses:
// c10_npu::getCurrentNPUStream().stream(). The simulated NPU has one stream and runs launches at once.
#pragma once
#include <c10/core/Device.h>

#include "sim_acl_launch.h"

namespace c10_npu {

struct NPUStream {
  aclrtStream stream(bool /*need_empty*/ = true) const { return ascendc_ops::sim_npu::SimulatedStream(); }
};

inline NPUStream getCurrentNPUStream(c10::DeviceIndex /*device_index*/ = -1) { return {}; }

}  // namespace c10_npu
