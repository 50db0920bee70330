// CPU twin, launcher: runs blockDim blocks of a kernel over the machine's cores, each block on a
// core context with its own Unified Buffer, and rethrows the first rule violation on the caller.
#pragma once
#include <cstdint>
#include <functional>

#include "twin_core.h"

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

// A launch that moves fewer GM bytes (inputs + outputs) than this runs its blocks one after another
// on the calling thread: waking a pool thread and waiting for it (10-25 us on the 2-core VM, a
// scheduler time slice when loaded) costs more than such blocks' work; measured, the caller alone was
// faster up to 1 MiB for rms_norm and rope. Same blocks, same record and checks.
constexpr uint64_t kDefaultInlineLaunchBytes = 256 * 1024;
void SetInlineLaunchBytes(uint64_t bytes);  // 0: every multi-block launch uses the pool
uint64_t InlineLaunchBytes();
constexpr uint64_t kUnknownGmBytes = ~uint64_t(0);

void ForEachBlock(const char* kernelName, uint32_t blockDim, const std::function<void()>& block,
                  uint64_t gmBytes = kUnknownGmBytes);

// The twin's stand-in for `kernel<<<blockDim, nullptr, stream>>>(args...)`.
template <typename... Params, typename... Args>
void Launch(const char* kernelName, uint32_t blockDim, void (*kernel)(Params...), Args... args) {
  ForEachBlock(kernelName, blockDim, [&] { kernel(args...); });
}
// The same, told how many GM bytes the launch moves (small launches stay on the calling thread).
template <typename... Params, typename... Args>
void LaunchMoving(uint64_t gmBytes, const char* kernelName, uint32_t blockDim, void (*kernel)(Params...),
                  Args... args) {
  ForEachBlock(kernelName, blockDim, [&] { kernel(args...); }, gmBytes);
}

// A launch of a declared kernel type whose cores may wait on each other (twin_crosscore.cpp): every
// core of the launch is resident at once (for MIX_AIC_1_2, blockDim AICs and 2 x blockDim AIVs), each a
// fiber (twin_fiber.h), so cross-core flags and SyncAll can wait; a deadlock is reported naming the
// waiting cores. Core groups run side by side on the pool's threads, each group's cores on one thread;
// with a record consumer (the sanitizer, an export, a profile) or ASCENDC_TWIN_MIX=serial, one core runs
// at a time in a fixed order on the calling thread. Kernels that never synchronise use Launch /
// ForEachBlock (the pool).
// For the synchronising launch: buffers (UB, L1, L0, BT) of one core, from a cache across launches;
// `workers` calls of worker(w) on the pool, side by side (fewer threads than workers: the later calls
// start when earlier ones end, so a worker must not wait for one that has not started).
CoreContext TakeCoreBuffers();
void GiveCoreBuffers(const CoreContext& buffers);
void RunWorkers(uint32_t workers, const std::function<void(uint32_t)>& worker);

// How many host workers ran cores of the last synchronising launch (1: the serial schedule, or one island).
uint32_t LastCoreWorkers();

void ForEachCore(const char* kernelName, KernelMetaType type, uint32_t blockDim, const std::function<void()>& core,
                 uint64_t gmBytes = kUnknownGmBytes);
template <typename... Params, typename... Args>
void LaunchTyped(KernelMetaType type, const char* kernelName, uint32_t blockDim, void (*kernel)(Params...),
                 Args... args) {
  ForEachCore(kernelName, type, blockDim, [&] { kernel(args...); });
}

}  // namespace twin
}  // namespace AscendC
