// apply_rotary_pos_emb_grad for the op package: dquery and dkey rotated back in place, the kernel body of
// kernels/rope.cpp. dquery and dkey are ref tensors (inputs and outputs at once): msopgen names the outputs dquery_ref,
// dkey_ref, and the kernel writes those (the same memory as the inputs).
#include "kernels/rope.cpp"

extern "C" __global__ __aicore__ void apply_rotary_pos_emb_grad(GM_ADDR dquery, GM_ADDR dkey, GM_ADDR cos, GM_ADDR sin,
                                                                GM_ADDR dquery_ref, GM_ADDR dkey_ref, GM_ADDR workspace,
                                                                GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(ApplyRopeTilingData);
  GET_TILING_DATA_WITH_STRUCT(ApplyRopeTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  ApplyRopeParts<DTYPE_DQUERY>(dquery, dkey, cos, sin, dquery_ref, dkey_ref, tilingData);
}
