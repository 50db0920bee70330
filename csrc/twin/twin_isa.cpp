// CPU twin: the ISA path's name, set by the build (cmake/isa_paths.cmake) for each library.
#include "twin_isa.h"

#include <string_view>

#ifndef ASCENDC_TWIN_ISA
#define ASCENDC_TWIN_ISA "generic"  // a build that names no path (the C++ tests' own twins)
#endif

namespace AscendC {
namespace twin {

// A path's name must match the compiler's target, or the loader's choice would lie about it.
constexpr bool Is(const char* name) { return std::string_view(ASCENDC_TWIN_ISA) == name; }
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
static_assert(!Is("avx2") && !Is("avx512") && !Is("avx512bf16"), "the avx2 path needs -march=x86-64-v3");
#endif
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VL__)
static_assert(!Is("avx512") && !Is("avx512bf16"), "the avx512 paths need -march=x86-64-v4");
#endif
#if !defined(__AVX512BF16__)
static_assert(!Is("avx512bf16"), "the avx512bf16 path needs -mavx512bf16");
#endif

const char* CompiledIsa() { return ASCENDC_TWIN_ISA; }

}  // namespace twin
}  // namespace AscendC
