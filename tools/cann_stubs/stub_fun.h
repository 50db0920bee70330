// STUB -- CANN does not publish this file. In a CANN install, stub_fun.h comes from the closed
// CPU-debug library (asc-tools downloads it as a prebuilt "cpudebug deps" archive; it is generated
// from an unpublished intrinsic table). It declares the CCE compiler's builtin types (pipe_t,
// event_t, ...) and the hardware intrinsics (copy_gm_to_ubuf, vadd, set_flag, ...) as CPU functions.
// Only tools/check_cann.py uses this stub, for g++ -fsyntax-only: the public Ascend C API
// (asc-devkit) is checked for real; the intrinsics beneath it are accepted with any arguments.
#pragma once
#include <cstdint>

// CCE builtin enums: the names the public asc-devkit headers use.
enum pipe_t : uint8_t {
  PIPE_S = 0,
  PIPE_V,
  PIPE_M,
  PIPE_MTE1,
  PIPE_MTE2,
  PIPE_MTE3,
  PIPE_ALL,
  PIPE_MTE4,
  PIPE_MTE5,
  PIPE_V2,
  PIPE_FIX,
  VIRTUAL_PIPE_MTE2_L1A,
  VIRTUAL_PIPE_MTE2_L1B
};
enum event_t : uint8_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };
enum class cache_line_t : uint8_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class dcci_dst_t : uint8_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };
enum mem_dsb_t : uint8_t { DSB_ALL = 0, DSB_DDR, DSB_UB, DSB_SEQ };
enum mem_t : uint8_t { MEM_L1 = 0, MEM_L0A, MEM_L0B, MEM_L0C, MEM_UB, MEM_BT, MEM_FB };
enum pad_t : uint8_t {
  PAD_NONE = 0,
  PAD_MODE1,
  PAD_MODE2,
  PAD_MODE3,
  PAD_MODE4,
  PAD_MODE5,
  PAD_MODE6,
  PAD_MODE7,
  PAD_MODE8
};
enum atomic_type_t : uint8_t {
  ATOMIC_NONE_T = 0,
  ATOMIC_F32_T,
  ATOMIC_F16_T,
  ATOMIC_S16_T,
  ATOMIC_S32_T,
  ATOMIC_S8_T,
  ATOMIC_BF16_T
};
enum atomic_op_t : uint8_t { ATOMIC_SUM_T = 0, ATOMIC_MAX_T, ATOMIC_MIN_T };
enum addr_cal_mode_t : uint8_t { inc = 0, dec };
enum class Order_t : uint8_t { VALUE_INDEX = 0, INDEX_VALUE, ONLY_VALUE, ONLY_INDEX };
enum ub_addr8_t : uint8_t { VA0 = 0, VA1, VA2, VA3, VA4, VA5, VA6, VA7 };
enum vpart_t : uint8_t { H128 = 0, L128 };
// Fixpipe quantisation modes (cube path; declared because the basic-API headers name them).
enum class QuantMode_t : uint8_t {
  NoQuant = 0,
  F322F16,
  F322BF16,
  DEQF16,
  VDEQF16,
  DEQS16,
  VDEQS16,
  REQ8,
  VREQ8,
  REQ4,
  VREQ4,
  QF322B8_PRE,
  VQF322B8_PRE,
  QF162B8_PRE,
  VQF162B8_PRE,
  QF162S4_PRE,
  VQF162S4_PRE,
  QF162S16_PRE,
  VQF162S16_PRE,
  QF322F16_PRE,
  VQF322F16_PRE,
  QF322BF16_PRE,
  VQF322BF16_PRE,
  QS322BF16_PRE,
  VQS322BF16_PRE,
  QF322F32_PRE,
  VQF322F32_PRE,
  QF322FP8_PRE,
  VQF322FP8_PRE,
  QF322HIF8_PRE,
  VQF322HIF8_PRE,
  QF322HIF8_PRE_HYBRID,
  VQF322HIF8_PRE_HYBRID
};

// What an intrinsic returns here: converts to whatever the caller stores it in.
struct CceStubValue {
  template <typename T>
  operator T() const {
    return T();
  }
};

#define CCE_STUB_INTRINSIC(name)        \
  template <typename... Args>           \
  inline CceStubValue name(Args&&...) { \
    return {};                          \
  }
#define CCE_STUB_SCALAR(name)      \
  template <typename... Args>      \
  inline int64_t name(Args&&...) { \
    return 0;                      \
  }
// Intrinsics the headers `return` from void functions: void, as in CCE.
#define CCE_STUB_VOID(name)   \
  template <typename... Args> \
  inline void name(Args&&...) {}
#include "stub_fun_intrinsics.inc"
#undef CCE_STUB_INTRINSIC
#undef CCE_STUB_SCALAR
#undef CCE_STUB_VOID
