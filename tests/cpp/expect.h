// The smallest test harness: EXPECT counts, prints failures with their line, and Report() prints
// "N passed, M failed" (the line CI reads) and gives main's exit code.
#pragma once
#include <cstdio>
#include <functional>
#include <string>

#include "op_spec.h"
#include "platform.h"

namespace expect {
inline int passed = 0, failed = 0;
inline int Report() {
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
// Whether f refuses its input with a TilingError.
inline bool Throws(const std::function<void()>& f) {
  try {
    f();
  } catch (const tiling::TilingError&) {
    return true;
  }
  return false;
}
// The message of the ArgError `f` throws ("" when it throws none), its kind in `kind`.
template <class F>
std::string ArgErrorOf(F&& f, tiling::ArgError::Kind* kind = nullptr) {
  try {
    f();
  } catch (const tiling::ArgError& e) {
    if (kind) *kind = e.kind;
    return e.what();
  }
  return "";
}
}  // namespace expect

#define EXPECT(cond)                                              \
  do {                                                            \
    if (cond) {                                                   \
      ++expect::passed;                                           \
    } else {                                                      \
      ++expect::failed;                                           \
      std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
    }                                                             \
  } while (0)
