// apply_adam_w for the op package: one AdamW step in place (npu_apply_adam_w), the kernel body of
// kernels/optimizer.cpp. var, m, v and max_grad_norm are ref tensors (inputs and outputs at once): msopgen names the
// outputs <name>_ref, the same memory as the inputs, which the update reads and writes.
#include "kernels/optimizer.cpp"

extern "C" __global__ __aicore__ void apply_adam_w(GM_ADDR var, GM_ADDR m, GM_ADDR v, GM_ADDR grad,
                                                   GM_ADDR max_grad_norm, GM_ADDR var_ref, GM_ADDR m_ref, GM_ADDR v_ref,
                                                   GM_ADDR max_grad_norm_ref, GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(AdamWTilingData);
  GET_TILING_DATA_WITH_STRUCT(AdamWTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  int64_t begin = 0, end = 0;
  AdamWBlockRange(tilingData, begin, end);
  if (begin >= end) return;
  TPipe pipe;
  KernelAdamW<DTYPE_VAR> op;
  op.Init(tilingData, &pipe);
  op.Update(AdamWTensor{var_ref, m_ref, v_ref, grad, max_grad_norm_ref}, begin, end - begin);
}
