// CPU twin of the Ascend C kernel API (namespace AscendC): the subset our kernels use, with the
// same names and signatures as CANN's kernel_operator.h, so one kernel source builds for both.
// Kernels compiled with g++ against this header run on the CPU via twin::Launch (twin_launch.h).
#pragma once
#include <cstdint>

#include "twin_activation.h"
#include "twin_copy.h"
#include "twin_core.h"
#include "twin_crosscore.h"
#include "twin_cube_basic.h"
#include "twin_cube_load3d.h"
#include "twin_logic.h"
#include "twin_tensor.h"
#include "twin_types.h"
#include "twin_vector.h"
#include "twin_vector_block.h"
#include "twin_vector_repeat.h"
#include "twin_sort.h"

// Address-space and kernel qualifiers have no meaning on the CPU, as in CANN's CPU debug mode.
#define __global__
#define __aicore__
#define __gm__
#define GM_ADDR uint8_t*

// The kernel type (enum KernelMetaType in twin_core.h, CANN's values) is checked against the type
// the launch runs; KERNEL_TASK_TYPE(key, type) names the type of one tiling key's branch, which the
// twin's launches (one type each) do not select between.
#define KERNEL_TASK_TYPE_DEFAULT(type) ::AscendC::twin::DeclareKernelType(type)
#define KERNEL_TASK_TYPE(key, type) static_assert((key) >= 0 && (type) < KERNEL_TYPE_MAX, "kernel type")

namespace AscendC {
inline int64_t GetBlockIdx() { return twin::Core().blockIdx; }
inline int64_t GetBlockNum() { return twin::Core().blockNum; }
}  // namespace AscendC
