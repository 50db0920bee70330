// The names ascendc_ops.backends() reports: the one place they are spelled. Python reads them
// through torch.ops.ascendc_ops.backend_names() (python/ascendc_ops/_backends.py).
#pragma once

namespace ascendc_ops {

inline constexpr const char* kCpuTwinBackend = "cpu-twin";  // the kernels on the CPU twin (CPU key)
inline constexpr const char* kNpuBackend = "npu";           // the kernels direct-launched (PrivateUse1 key)

}  // namespace ascendc_ops
