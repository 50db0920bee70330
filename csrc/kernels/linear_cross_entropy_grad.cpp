// Fused linear cross-entropy backward, a mix kernel (KERNEL_TYPE_MIX_AIC_1_2) that recomputes the score blocks
// instead of keeping logits: vocab tasks (128 weight rows against every token block) give grad_weight, token tasks
// (128 tokens against every vocabulary block) grad_hidden. Per block the AIVs turn the score into G = d loss / d
// score (linear_cross_entropy_grad_vector.h); per segment of blocks the AIC multiplies G into the task's fp32
// accumulator in the group's workspace (linear_cross_entropy_cube.h), which the AIVs cast once into the output.
// A launch takes a range of vocabulary rows (L2-sized at large V: linear_cross_entropy_tiling.cpp) and may walk it
// in several token splits; then grad_hidden's rows gather in fp32 sums per split, launch after launch, added in a
// fixed order at the end. No output row is added to by two cores at once: the gradients are the same bits
// whatever the deal.
#include "linear_cross_entropy_grad_vector.h"
#include "linear_cross_entropy_sides.h"
#include "linear_cross_entropy_tiling_data.h"

// One entry per dtype (LINEAR_CROSS_ENTROPY_GRAD_DTYPES, tiling/linear_cross_entropy_tiling_data.h).
#define LINEAR_CROSS_ENTROPY_GRAD_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                                       \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(LINEAR_CROSS_ENTROPY_GRAD_PARAMS(GM_ADDR)) {                \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);                                                            \
    LinearCrossEntropyTilingData t;                                                                               \
    CopyTiling(&t, tiling);                                                                                       \
    RunLinearCrossEntropySides<T, LceGradVector<T>>(hidden, weight, workspace, t, true, target, lse, gradSoftmax, \
                                                    gradTarget, gradUniform, bias, classWeight, gradHidden,       \
                                                    gradWeight, gradBias);                                        \
  }
LINEAR_CROSS_ENTROPY_GRAD_DTYPES(LINEAR_CROSS_ENTROPY_GRAD_ENTRY, linear_cross_entropy_grad)
#undef LINEAR_CROSS_ENTROPY_GRAD_ENTRY
