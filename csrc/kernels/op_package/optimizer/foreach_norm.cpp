// foreach_norm for the op package: the pieces' partials of kernels/optimizer_norm.cpp into the user workspace,
// SyncAll, then block 0 combines each tensor's slots (sum or max, the square root for p = 2) and writes its norm, a
// 0-dim tensor in x's dtype. x and y are dynamic (list) parameters, which CANN hands the kernel as ListTensorDescs.
#include "kernels/optimizer_norm.cpp"
#include "kernel_operator_list_tensor_intf.h"  // ListTensorDesc, TensorDesc

// A CANN tensor list as RunForeachNormPieces reads tensors: address and element count (ND: at most 8 dims).
template <typename T>
struct ForeachNormList {
  ListTensorDesc list;
  __aicore__ inline int64_t Elems(int64_t k) {
    uint64_t dims[8];
    TensorDesc<T> desc;
    desc.SetShapeAddr(dims);
    list.GetDesc(desc, static_cast<uint32_t>(k));
    int64_t n = 1;
    for (uint32_t d = 0; d < desc.GetDim(); ++d) n *= static_cast<int64_t>(desc.GetShape(d));
    return n;
  }
  __aicore__ inline GM_ADDR Addr(int64_t k) {
    return reinterpret_cast<GM_ADDR>(list.GetDataPtr<T>(static_cast<uint32_t>(k)));
  }
};

// Block 0, after SyncAll: tensor k's slots are b + k for the blocks b its elements fall in, contiguous in GM.
template <typename T>
__aicore__ inline void ForeachNormFinish(const ForeachNormTilingData& t, GM_ADDR partials, ForeachNormList<T>& x,
                                         ListTensorDesc& y) {
  TPipe pipe;
  TQue<TPosition::VECIN, 1> slotsIn;
  TQue<TPosition::VECOUT, 1> normOut;
  TBuf<TPosition::VECCALC> normBuf;
  pipe.InitBuffer(slotsIn, 1, t.blockDim * kForeachNormSlotFloats * sizeof(float));
  pipe.InitBuffer(normOut, 1, 32);
  pipe.InitBuffer(normBuf, 32);
  GlobalTensor<float> slots;
  slots.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(partials),
                        (t.tensorCount + t.blockDim) * kForeachNormSlotFloats);
  int64_t start = 0;
  for (int64_t k = 0; k < t.tensorCount; ++k) {
    const int64_t count = x.Elems(k);
    float value = 0.0f;
    if (count > 0) {
      const int64_t first = start / t.blockElems, last = (start + count - 1) / t.blockElems;
      LocalTensor<float> in = slotsIn.AllocTensor<float>();
      DataCopy(in, slots[(first + k) * kForeachNormSlotFloats],
               static_cast<uint32_t>((last - first + 1) * kForeachNormSlotFloats));
      slotsIn.EnQue(in);
      in = slotsIn.DeQue<float>();
      for (int64_t b = 0; b <= last - first; ++b) {
        const float piece = in.GetValue(static_cast<uint32_t>(b * kForeachNormSlotFloats));
        value = t.kind == FOREACH_NORM_INF ? (piece > value ? piece : value) : value + piece;
      }
      slotsIn.FreeTensor(in);
    }
    start += count;
    LocalTensor<float> norm = normBuf.Get<float>();
    Duplicate(norm, value, static_cast<int32_t>(kForeachNormSlotFloats));
    PipeBarrier<PIPE_V>();
    if (t.kind == FOREACH_NORM_L2) {
      Sqrt(norm, norm, static_cast<int32_t>(kForeachNormSlotFloats));
      PipeBarrier<PIPE_V>();
    }
    LocalTensor<T> out = normOut.AllocTensor<T>();
    if constexpr (sizeof(T) == sizeof(float)) {
      Adds(out, norm, 0.0f, static_cast<int32_t>(kForeachNormSlotFloats));
    } else {
      Cast(out, norm, RoundMode::CAST_RINT, kForeachNormSlotFloats);
    }
    normOut.EnQue(out);
    out = normOut.DeQue<T>();
    GlobalTensor<T> yGm;
    yGm.SetGlobalBuffer(y.GetDataPtr<T>(static_cast<uint32_t>(k)), 1);
    DataCopyPad(yGm, out, DataCopyExtParams(1, sizeof(T), 0, 0, 0));
    normOut.FreeTensor(out);
  }
}

extern "C" __global__ __aicore__ void foreach_norm(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(ForeachNormTilingData);
  GET_TILING_DATA_WITH_STRUCT(ForeachNormTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);  // SyncAll: AIV_ONLY starts no cross-core scheduler
  GM_ADDR partials = GetUserWorkspace(workspace);
  ForeachNormList<DTYPE_X> tensors{ListTensorDesc(reinterpret_cast<__gm__ void*>(x))};
  RunForeachNormPieces<DTYPE_X>(tilingData, partials, tensors);
  SyncAll();  // every block's slots are in GM
  if (GetBlockIdx() != 0) return;
  ListTensorDesc norms(reinterpret_cast<__gm__ void*>(y));
  ForeachNormFinish<DTYPE_X>(tilingData, partials, tensors, norms);
}
