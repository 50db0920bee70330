// What the host tiling needs to know about the chip a kernel will run on.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tiling {

struct PlatformInfo {
  const char* name;
  uint32_t vectorCores;  // blockDim ceiling for vector-only kernels
  uint32_t ubBytes;      // Unified Buffer per core
  uint32_t ubReserve;    // bytes kept free for API scratch (about 8 KiB on A2)
  uint32_t UbBudget() const { return ubBytes - ubReserve; }
};

// The A2 (Ascend910B) facts every layer reads from here: the Unified Buffer per core (192 KiB - 256 B,
// as platform_ascendc reports it; the CPU twin gives every block this UB, csrc/twin/twin_core.h), the
// budget the tilings may fill (184 KiB: the rest is kept free for API scratch), and the cube core's
// buffers and count (CubePlatform, tiling/cube_tiling_rules.h).
constexpr const char* kA2Name = "Ascend910B";
constexpr uint32_t kA2UbBytes = 196352;
constexpr uint32_t kA2UbBudget = 184 * 1024;
constexpr uint32_t kA2UbReserve = kA2UbBytes - kA2UbBudget;
constexpr uint32_t kMaxCopyBlockCount = 4095;  // DataCopy(Pad) blockCount: rows one copy moves at most
constexpr uint32_t kA2CubeCores = 24;  // 910B1/B2: 24 cube cores (paired with 48 vector cores)
constexpr uint32_t kA2L1Bytes = 512 * 1024, kA2L0aBytes = 64 * 1024, kA2L0bBytes = 64 * 1024, kA2L0cBytes = 128 * 1024;
// The bias table (BT, TPosition::C2): 1 KB on A2 (DataCopy（L1ToBiasTable-Buffer数据搬运）.md).
constexpr uint32_t kA2BiasTableBytes = 1024;

inline PlatformInfo Ascend910B(uint32_t vectorCores) { return {kA2Name, vectorCores, kA2UbBytes, kA2UbReserve}; }
// The CPU twin: one block per host thread at a time, same UB as an A2 core.
inline PlatformInfo CpuTwin(uint32_t threads) { return {"cpu-twin", threads, kA2UbBytes, kA2UbReserve}; }

// Tensor dtypes as the prototypes name them; the kernels compute in the float ones. kOther stands for
// any dtype no prototype lists (an argument check then names what was expected).
enum class DType : uint32_t { kFloat32, kFloat16, kBFloat16, kInt32, kInt64, kFloat64, kBool, kUInt8, kOther };
inline uint32_t ElementBytes(DType t) {
  switch (t) {
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kFloat64:
    case DType::kInt64: return 8;
    case DType::kBool:
    case DType::kUInt8: return 1;
    default: return 4;
  }
}

// Rows of `elems` elements padded to whole 32-byte blocks, as DataCopyPad lands them in UB.
inline uint32_t RowPitch(uint32_t elems, DType t) {
  const uint32_t per = 32 / ElementBytes(t);
  return (elems + per - 1) / per * per;
}

// A shape no tiling can serve; the bindings turn it into a Python ValueError.
struct TilingError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

}  // namespace tiling
