// CPU twin, byte spans for the sanitizer: overlap tests of strided spans and their text in reports.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "twin_record.h"

namespace AscendC {
namespace twin {

inline std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}
inline std::string Bytes(Space s, uint64_t b, uint64_t e) {
  if (s == Space::GM) return "GM bytes [" + Hex(b) + ", " + Hex(e) + ")";
  return std::string(SpaceName(s)) + " bytes [" + std::to_string(b) + ", " + std::to_string(e) + ")";
}

// First overlap of run [x, x+len) with span b: true and [*lo, *hi) when they share bytes.
inline bool RunMeetsSpan(uint64_t x, uint64_t len, const Span& b, uint64_t* lo, uint64_t* hi) {
  if (b.blocks == 0 || len == 0 || b.blockBytes == 0) return false;
  const uint64_t end = x + len;
  if (end <= b.begin || x >= b.End()) return false;
  uint64_t k = 0;
  if (b.blocks > 1 && b.pitch > 0 && x >= b.begin + b.blockBytes)
    k = (x - b.begin - b.blockBytes) / b.pitch + 1;  // first block ending after x
  if (k >= b.blocks) return false;
  const uint64_t kb = b.begin + k * (b.blocks > 1 ? b.pitch : 0);
  if (kb >= end) return false;
  *lo = std::max(x, kb), *hi = std::min(end, kb + b.blockBytes);
  return *lo < *hi;
}
inline bool SpansMeet(const Span& a, const Span& b, uint64_t* lo, uint64_t* hi) {
  const Span& few = a.blocks <= b.blocks ? a : b;
  const Span& many = a.blocks <= b.blocks ? b : a;
  for (uint32_t k = 0; k < few.blocks; ++k)
    if (RunMeetsSpan(few.begin + uint64_t(k) * few.pitch, few.blockBytes, many, lo, hi)) return true;
  return false;
}

template <typename F>
void ForEachRun(const Span& s, F f) {  // f(begin, end) per block of the span
  for (uint32_t k = 0; k < s.blocks; ++k) {
    const uint64_t b = s.begin + uint64_t(k) * s.pitch;
    f(b, b + s.blockBytes);
  }
}
}  // namespace twin
}  // namespace AscendC
