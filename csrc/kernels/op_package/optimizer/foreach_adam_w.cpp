// foreach_adam_w for the op package: one AdamW step over lists of tensors in one launch, the kernel body of
// kernels/optimizer.cpp. Each parameter is a dynamic (list) input, which CANN hands the kernel as a ListTensorDesc
// (addresses and shapes); var, m, v, max_grad_norm and master are ref lists, their outputs <name>_ref the same memory.
// Each block walks the lists' shapes to find the tensors its run of elements falls in, as the direct-launch
// entry walks its table's starts.
#include "kernels/optimizer.cpp"
#include "kernel_operator_list_tensor_intf.h"  // ListTensorDesc, TensorDesc

// Elements of tensor k of a list: the product of its dims (ND: at most 8).
template <typename T>
__aicore__ inline int64_t ListTensorElems(ListTensorDesc& list, uint32_t k) {
  uint64_t dims[8];
  TensorDesc<T> desc;
  desc.SetShapeAddr(dims);
  list.GetDesc(desc, k);
  int64_t n = 1;
  for (uint32_t d = 0; d < desc.GetDim(); ++d) n *= static_cast<int64_t>(desc.GetShape(d));
  return n;
}

template <typename T>
__aicore__ inline GM_ADDR ListTensorAddr(ListTensorDesc& list, uint32_t k) {
  return reinterpret_cast<GM_ADDR>(list.GetDataPtr<T>(k));
}

extern "C" __global__ __aicore__ void foreach_adam_w(GM_ADDR var, GM_ADDR m, GM_ADDR v, GM_ADDR grad,
                                                     GM_ADDR max_grad_norm, GM_ADDR master, GM_ADDR var_ref,
                                                     GM_ADDR m_ref, GM_ADDR v_ref, GM_ADDR max_grad_norm_ref,
                                                     GM_ADDR master_ref, GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(AdamWTilingData);
  GET_TILING_DATA_WITH_STRUCT(AdamWTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  int64_t begin = 0, end = 0;
  AdamWBlockRange(tilingData, begin, end);
  if (begin >= end) return;
  ListTensorDesc vars(reinterpret_cast<__gm__ void*>(var_ref));
  ListTensorDesc ms(reinterpret_cast<__gm__ void*>(m_ref));
  ListTensorDesc vs(reinterpret_cast<__gm__ void*>(v_ref));
  ListTensorDesc grads(reinterpret_cast<__gm__ void*>(grad));
  ListTensorDesc maxs;
  if (tilingData.amsgrad != 0) maxs.Init(reinterpret_cast<__gm__ void*>(max_grad_norm_ref));  // empty otherwise
  ListTensorDesc masters;
  if (tilingData.master != 0) masters.Init(reinterpret_cast<__gm__ void*>(master_ref));
  TPipe pipe;
  KernelAdamW<DTYPE_VAR> op;
  op.Init(tilingData, &pipe);
  int64_t start = 0;
  for (uint32_t k = 0; k < static_cast<uint32_t>(tilingData.tensorCount) && start < end; ++k) {
    const int64_t stop = start + ListTensorElems<DTYPE_VAR>(vars, k);
    const int64_t lo = start > begin ? start : begin;
    const int64_t hi = stop < end ? stop : end;
    if (lo < hi) {
      const AdamWTensor gm{ListTensorAddr<DTYPE_VAR>(vars, k),
                           ListTensorAddr<float>(ms, k),
                           ListTensorAddr<float>(vs, k),
                           ListTensorAddr<DTYPE_VAR>(grads, k),
                           tilingData.amsgrad != 0 ? ListTensorAddr<float>(maxs, k) : nullptr,
                           tilingData.master != 0 ? ListTensorAddr<float>(masters, k) : nullptr};
      op.Update(gm, lo - start, hi - lo);
    }
    start = stop;
  }
}
