// CPU twin: which ISA path this copy of the twin and the kernels was compiled for.
#pragma once

namespace AscendC {
namespace twin {

// "avx2", "avx512", "avx512bf16", "native" or "generic" (CMakeLists.txt, cmake/isa_paths.cmake)
const char* CompiledIsa();

}  // namespace twin
}  // namespace AscendC
