// CPU twin, launcher: runs blockDim blocks of a kernel over the machine's cores, each block on a
// core context with its own Unified Buffer, and rethrows the first rule violation on the caller.
#pragma once
#include <cstdint>
#include <functional>

namespace AscendC {
namespace twin {

// Worker threads used by launches (>= 1); the torch bindings pass torch's intra-op thread count.
void SetThreads(int threads);
int Threads();

void ForEachBlock(const char* kernelName, uint32_t blockDim, const std::function<void()>& block);

// The twin's stand-in for `kernel<<<blockDim, nullptr, stream>>>(args...)`.
template <typename... Params, typename... Args>
void Launch(const char* kernelName, uint32_t blockDim, void (*kernel)(Params...), Args... args) {
  ForEachBlock(kernelName, blockDim, [&] { kernel(args...); });
}

}  // namespace twin
}  // namespace AscendC
