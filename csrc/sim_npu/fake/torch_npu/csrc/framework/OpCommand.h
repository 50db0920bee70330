// SIMULATOR -- stands in for torch_npu's OpCommand.h, only OpCommand::RunOpApi, which torch_npu runs
// in order on its task queue; the simulated NPU runs it at once on the calling thread.
#pragma once
#include <functional>
#include <string>

namespace at_npu::native {

struct OpCommand {
  static void RunOpApi(const std::string& opName, const std::function<int()>& func, bool sync = false);
};

}  // namespace at_npu::native
