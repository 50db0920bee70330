// CPU twin, scalar types: half (IEEE fp16) and bfloat16_t, and the dtype names used in rule errors.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

using half = _Float16;

// bfloat16 as storage only, like the A2 vector unit: it converts, it does no arithmetic.
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  // Round-to-nearest-even, NaN kept quiet (the rounding of Cast with CAST_RINT).
  explicit bfloat16_t(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<uint16_t>((u >> 16) | 0x40u);
    } else {
      bits = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  }
  explicit operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

namespace AscendC {
namespace twin {

template <typename T>
constexpr const char* DtypeName() {
  if constexpr (std::is_same_v<T, float>) return "float";
  else if constexpr (std::is_same_v<T, half>) return "half";
  else if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16";
  else if constexpr (std::is_same_v<T, int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
  else if constexpr (std::is_same_v<T, int16_t>) return "int16";
  else if constexpr (std::is_same_v<T, uint16_t>) return "uint16";
  else if constexpr (std::is_same_v<T, int8_t>) return "int8";
  else if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
  else if constexpr (std::is_same_v<T, int64_t>) return "int64";
  else return "unknown";
}

}  // namespace twin
}  // namespace AscendC
