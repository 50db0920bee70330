// apply_rotary_pos_emb for the op package: query and key rotated in place (npu_apply_rotary_pos_emb), the kernel body
// of kernels/rope.cpp. query and key are ref tensors (inputs and outputs at once): msopgen names the outputs query_ref,
// key_ref, and the kernel writes those (the same memory as the inputs).
#include "kernels/rope.cpp"

extern "C" __global__ __aicore__ void apply_rotary_pos_emb(GM_ADDR query, GM_ADDR key, GM_ADDR cos, GM_ADDR sin,
                                                           GM_ADDR query_ref, GM_ADDR key_ref, GM_ADDR workspace,
                                                           GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(ApplyRopeTilingData);
  GET_TILING_DATA_WITH_STRUCT(ApplyRopeTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  ApplyRopeParts<DTYPE_QUERY>(query, key, cos, sin, query_ref, key_ref, tilingData);
}
