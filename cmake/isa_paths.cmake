# ISA paths. The twin and the kernels are compiled once per x86 vector ISA level and linked, with
# the bindings, into one library each; python/ascendc_ops/_isa.py loads the widest one this CPU
# runs (ASCENDC_OPS_ISA=<path> forces a narrower one). The build machine's CPU plays no part.
#   avx2        -march=x86-64-v3: AVX2, FMA, F16C, BMI1/2 (Haswell, Zen 1 and later)  _C.so
#   avx512      -march=x86-64-v4: AVX-512 F, BW, CD, DQ, VL                           _C_avx512.so
# AVX512_BF16 (Cooper Lake, Sapphire Rapids, Zen 4) needs no library of its own: its one use, float -> bf16
# rounding (csrc/twin/twin_cast.h), is chosen at run time inside _C_avx512.so, and a third copy of every
# kernel cost a third of the build.
# ASCENDC_OPS_NATIVE=ON builds one library for the build machine instead (_C_native.so, loaded
# whenever present); on other architectures one library takes the compiler's default target.
include(CheckCXXCompilerFlag)
set(isa_avx2_lib _C)
set(isa_avx2_flags -march=x86-64-v3)
set(isa_avx512_lib _C_avx512)
set(isa_avx512_flags -march=x86-64-v4)
set(isa_native_lib _C_native)
set(isa_native_flags -march=native)
set(isa_generic_lib _C)
set(isa_generic_flags "")

if(ASCENDC_OPS_NATIVE)
  set(ascendc_ops_paths native)
  message(STATUS "ascendc-ops: NATIVE build (-march=native): _C_native.so runs on this machine's CPU only")
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set(ascendc_ops_paths avx2)
  if(ASCENDC_OPS_WIDE_PATHS)
    check_cxx_compiler_flag("-march=x86-64-v4" has_v4)
    if(has_v4)
      list(APPEND ascendc_ops_paths avx512)
    endif()
  endif()
  list(JOIN ascendc_ops_paths ", " path_list)
  message(STATUS "ascendc-ops: portable build: _C.so runs on any x86-64-v3 CPU (AVX2+FMA+F16C); "
                 "ISA paths built: ${path_list} (the widest the CPU has is chosen at run time)")
else()
  set(ascendc_ops_paths generic)
  message(STATUS "ascendc-ops: ${CMAKE_SYSTEM_PROCESSOR}: one library for the compiler's default target")
endif()

# A library of a path this configuration does not build is removed: left behind (say
# _C_native.so after switching to the portable build) the loader would pick it.
function(ascendc_ops_remove_stale_paths dir)
  set(keep "")
  foreach(path IN LISTS ascendc_ops_paths)
    list(APPEND keep "${dir}/${isa_${path}_lib}.so")
  endforeach()
  file(GLOB present "${dir}/_C*.so")
  foreach(lib IN LISTS present)
    if(NOT lib IN_LIST keep)
      message(STATUS "ascendc-ops: removing ${lib} (an ISA path this configuration does not build)")
      file(REMOVE "${lib}")
    endif()
  endforeach()
endfunction()
