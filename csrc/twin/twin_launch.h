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

// Runs blocks [0, blocks) on a host thread pool by calling runRange(begin, end) on its threads.
// By default the twin's own pool; a host framework can lend its pool (the torch bindings lend
// torch's intra-op pool, whose threads are already warm between ops).
using RangeRunner = std::function<void(uint32_t begin, uint32_t end)>;
using ParallelFor = std::function<void(uint32_t blocks, const RangeRunner& runRange)>;
void SetParallelFor(ParallelFor parallelFor);

void ForEachBlock(const char* kernelName, uint32_t blockDim, const std::function<void()>& block);

// The twin's stand-in for `kernel<<<blockDim, nullptr, stream>>>(args...)`.
template <typename... Params, typename... Args>
void Launch(const char* kernelName, uint32_t blockDim, void (*kernel)(Params...), Args... args) {
  ForEachBlock(kernelName, blockDim, [&] { kernel(args...); });
}

}  // namespace twin
}  // namespace AscendC
