// foreach_clip_by_total_norm for the op package: the kernel body of kernels/optimizer_clip.cpp over CANN's lists.
// x and norms are dynamic (list) parameters, which CANN hands the kernel as ListTensorDescs; x and total_norm are
// ref tensors, their outputs <name>_ref the same memory, which the kernel reads and writes.
#include "kernels/optimizer_clip.cpp"
#include "kernel_operator_list_tensor_intf.h"  // ListTensorDesc, TensorDesc

// x's and the norms' CANN lists as RunForeachClipBlocks reads them (ND: at most 8 dims).
template <typename T>
struct ForeachClipLists {
  ListTensorDesc x, norms;
  __aicore__ inline int64_t Elems(int64_t k) {
    uint64_t dims[8];
    TensorDesc<T> desc;
    desc.SetShapeAddr(dims);
    x.GetDesc(desc, static_cast<uint32_t>(k));
    int64_t n = 1;
    for (uint32_t d = 0; d < desc.GetDim(); ++d) n *= static_cast<int64_t>(desc.GetShape(d));
    return n;
  }
  __aicore__ inline GM_ADDR Addr(int64_t k) {
    return reinterpret_cast<GM_ADDR>(x.GetDataPtr<T>(static_cast<uint32_t>(k)));
  }
  __aicore__ inline GM_ADDR Norm(int64_t k) {
    return reinterpret_cast<GM_ADDR>(norms.GetDataPtr<T>(static_cast<uint32_t>(k)));
  }
};

extern "C" __global__ __aicore__ void foreach_clip_by_total_norm(GM_ADDR x, GM_ADDR norms, GM_ADDR total_norm,
                                                                 GM_ADDR x_ref, GM_ADDR total_norm_ref,
                                                                 GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(ForeachClipTilingData);
  GET_TILING_DATA_WITH_STRUCT(ForeachClipTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  ForeachClipLists<DTYPE_X> lists{ListTensorDesc(reinterpret_cast<__gm__ void*>(x_ref)),
                                  ListTensorDesc(reinterpret_cast<__gm__ void*>(norms))};
  RunForeachClipBlocks<DTYPE_X>(tilingData, total_norm_ref, lists);
}
