// Fused linear cross-entropy forward (the LM head and its loss without the logits), a mix kernel
// (KERNEL_TYPE_MIX_AIC_1_2): each task (128 tokens) runs on one core group, its AIC computing the score blocks
// hidden x weight^T for every block of 128 vocabulary rows (linear_cross_entropy_cube.h), its two AIVs folding each
// into per-token running max, sum-exp, target logit and logit sum (linear_cross_entropy_vector.h). They hand the
// blocks over through the group's GM workspace (two slots of 128 x 128 fp32) with mode-2 cross-core flags.
#include "linear_cross_entropy_sides.h"
#include "linear_cross_entropy_tiling_data.h"
#include "linear_cross_entropy_vector.h"

// One entry per dtype (LINEAR_CROSS_ENTROPY_DTYPES, tiling/linear_cross_entropy_tiling_data.h).
#define LINEAR_CROSS_ENTROPY_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                                          \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(LINEAR_CROSS_ENTROPY_PARAMS(GM_ADDR)) {                   \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);                                                          \
    LinearCrossEntropyTilingData t;                                                                             \
    CopyTiling(&t, tiling);                                                                                     \
    RunLinearCrossEntropySides<T, LceVector<T>>(hidden, weight, workspace, t, false, target, bias, classWeight, \
                                                logitsMax, sumExp, targetLogit, logitSum);                      \
  }
LINEAR_CROSS_ENTROPY_DTYPES(LINEAR_CROSS_ENTROPY_ENTRY, linear_cross_entropy)
#undef LINEAR_CROSS_ENTROPY_ENTRY
