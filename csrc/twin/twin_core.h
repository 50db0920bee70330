// CPU twin, core: hardware constants, the per-core context a block runs in, and rule errors.
// Every rule the twin enforces ends in Violation(), which names the rule, the kernel and the
// block, and throws; the launcher carries the exception back to the host thread.
#pragma once
#include "platform.h"  // tiling/: the A2 facts
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

// CANN's kernel types, in CANN's order and values (asc-devkit 设置Kernel类型.md, the enum in
// impl/basic_api/utils/kernel_utils_macros.h): the twin's launch model reads them.
enum KernelMetaType : uint8_t {
  KERNEL_TYPE_AIV_ONLY,
  KERNEL_TYPE_AIC_ONLY,
  KERNEL_TYPE_MIX_AIV_1_0,
  KERNEL_TYPE_MIX_AIC_1_0,
  KERNEL_TYPE_MIX_AIC_1_1,
  KERNEL_TYPE_MIX_AIC_1_2,
  KERNEL_TYPE_AICORE,
  KERNEL_TYPE_VECTORCORE,
  KERNEL_TYPE_MIX_AICORE,
  KERNEL_TYPE_MIX_VECTOR_CORE,
  KERNEL_TYPE_MAX,
};

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
  // The launch model of A2's separated cores (twin_crosscore.h): which kind of core this is, its
  // sub-block in the core group, the AIVs per group, the type the launch runs and the type the
  // kernel declared (KERNEL_TYPE_MAX: none yet), and its slot among all cores of the launch.
  bool aic = false;
  int64_t subBlockIdx = 0;
  int64_t taskRation = 1;
  KernelMetaType launchType = KERNEL_TYPE_MAX;
  KernelMetaType declaredType = KERNEL_TYPE_MAX;
  uint32_t slot = 0;
  struct CrossCoreLaunch* cross = nullptr;  // set while a synchronising launch runs this core
  uint32_t crossEpoch = 0;  // cross-core set/wait events so far: orders GM accesses across cores
  const char* atomicDtype = nullptr;  // SetAtomicAdd<T>: UB->GM copies and Fixpipe accumulate in T
  int matmulObjects = 0;              // REGIST_MATMUL_OBJ calls: the library takes flags 0..2N-1
};

CoreContext& Core();  // thread-local; defined in twin_launch.cpp
void ResetCoreModel(CoreContext& c, uint32_t slot);  // a plain block: an AIV (or what the kernel declares)
void SetInBlock(bool in);
bool InBlock();

[[noreturn]] inline void Violation(const char* rule, const std::string& what) {
  const CoreContext& c = Core();
  char where[160];
  if (c.cross)
    std::snprintf(where, sizeof(where), "Ascend C twin: kernel '%s' %s %lld (block %lld/%lld): [%s] ", c.kernel,
                  c.aic ? "AIC" : "AIV", static_cast<long long>(c.blockIdx),
                  static_cast<long long>(c.aic || c.taskRation == 1 ? c.blockIdx : c.blockIdx / c.taskRation),
                  static_cast<long long>(c.blockNum), rule);
  else
    std::snprintf(where, sizeof(where), "Ascend C twin: kernel '%s' block %lld/%lld: [%s] ", c.kernel,
                  static_cast<long long>(c.blockIdx), static_cast<long long>(c.blockNum), rule);
  throw RuleError(where + what);
}

inline uint32_t AlignUp32(uint32_t bytes) { return (bytes + kBlockBytes - 1) / kBlockBytes * kBlockBytes; }

}  // namespace twin
}  // namespace AscendC
