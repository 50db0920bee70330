// CPU twin, core: hardware constants, the per-core context a block runs in, and rule errors.
// Every rule the twin enforces ends in Violation(), which names the rule, the kernel and the
// block, and throws; the launcher carries the exception back to the host thread.
#pragma once
#include "platform.h"  // tiling/: the A2 facts
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace AscendC {
namespace twin {

// Atlas A2 (910B) vector core limits.
constexpr uint32_t kUbBytes = ::tiling::kA2UbBytes;  // A2's Unified Buffer per core (tiling/platform.h)
constexpr uint32_t kBlockBytes = 32;   // UB address / DataCopy granule
constexpr uint32_t kMaxQueueBuffers = 64;
constexpr uint32_t kMaxRepeat = 255;   // a vector instruction's repeatTime is a uint8_t
constexpr uint32_t kMaxBlockCount = ::tiling::kMaxCopyBlockCount;  // DataCopy(Pad) blockCount limit

class RuleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Atlas A2 cube core buffers (tiling/platform.h): L1, L0A, L0B, L0C.
constexpr uint32_t kL1Bytes = ::tiling::kA2L1Bytes;
constexpr uint32_t kL0aBytes = ::tiling::kA2L0aBytes;
constexpr uint32_t kL0bBytes = ::tiling::kA2L0bBytes;
constexpr uint32_t kL0cBytes = ::tiling::kA2L0cBytes;
constexpr uint32_t kBtBytes = ::tiling::kA2BiasTableBytes;

// What one simulated AI core sees: its UB (and the cube core's L1/L0 buffers), its block index,
// the kernel it runs.
struct CoreContext {
  uint8_t* ub = nullptr;
  uint8_t* l1 = nullptr;
  uint8_t* l0a = nullptr;
  uint8_t* l0b = nullptr;
  uint8_t* l0c = nullptr;
  uint8_t* bt = nullptr;  // the bias table
  const char* kernel = "?";
  int64_t blockIdx = 0;
  int64_t blockNum = 1;
};

CoreContext& Core();  // thread-local; defined in twin_launch.cpp

[[noreturn]] inline void Violation(const char* rule, const std::string& what) {
  const CoreContext& c = Core();
  char where[160];
  std::snprintf(where, sizeof(where), "Ascend C twin: kernel '%s' block %lld/%lld: [%s] ", c.kernel,
                static_cast<long long>(c.blockIdx), static_cast<long long>(c.blockNum), rule);
  throw RuleError(where + what);
}

inline uint32_t AlignUp32(uint32_t bytes) { return (bytes + kBlockBytes - 1) / kBlockBytes * kBlockBytes; }

}  // namespace twin
}  // namespace AscendC
