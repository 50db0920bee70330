// The two sides of a fused linear cross-entropy launch, forward and backward alike: the AIC makes the score blocks
// (and, backward, multiplies G into the accumulators: LceCube), each AIV runs `Vector` (the forward's statistics or
// the backward's G), both walking the group's tasks in the same order.
#pragma once
#include "kernel_utils.h"
#include "linear_cross_entropy_cube.h"

template <typename T, typename Vector, typename... VectorGm>
__aicore__ inline void RunLinearCrossEntropySides(GM_ADDR hidden, GM_ADDR weight, GM_ADDR workspace,
                                                  const LinearCrossEntropyTilingData& t, bool backward,
                                                  VectorGm... vectorGm) {
  GM_ADDR ws = GetUserWorkspace(workspace);
  LceTaskWalk walk;
  if ASCEND_IS_AIC {
    walk.Init(t, GetBlockIdx());
    LceCube<T> cube;
    cube.Init(hidden, weight, ws, t, backward);
    cube.Process(walk);
  }
  if ASCEND_IS_AIV {
    walk.Init(t, GetBlockIdx() / GetTaskRation());
    Vector vec;
    vec.Init(vectorGm..., ws, t);
    vec.Process(walk);
  }
}
