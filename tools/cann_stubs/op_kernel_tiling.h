// STUB -- CANN does not publish this file: the op build generates it per op (asc-devkit's
// tools/build/asc_op_compile_base/asc_op_compiler/get_op_tiling.py writes GET_TILING_DATA_WITH_STRUCT,
// REGISTER_TILINGDATA_SIZE and InitTilingData into the kernel's tiling header at compile time).
// This is the CPU-debug form of what it generates: copy the struct the host wrote out of GM.
// Forced into op-package kernel checks by tools/check_cann.py (-include); nothing else uses it.
#pragma once
#include <cstdint>

#define REGISTER_TILINGDATA_SIZE(tiling_struct, counter)

template <class T>
inline __aicore__ void InitTilingData(const __gm__ uint8_t* src, T* dst) {
  for (uint32_t i = 0; i < sizeof(T); ++i) reinterpret_cast<uint8_t*>(dst)[i] = src[i];
}

#define GET_TILING_DATA_WITH_STRUCT(tiling_struct, tiling_data, tiling_arg) \
  REGISTER_TILINGDATA_SIZE(tiling_struct, __COUNTER__);                     \
  tiling_struct tiling_data;                                                \
  InitTilingData<tiling_struct>(tiling_arg, &tiling_data);
