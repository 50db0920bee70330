// The tensor lists of the direct foreach entries (foreach_norm, foreach_clip_by_total_norm) and the walk both
// share. The table in GM: int64 [tensorCount, 2] of (address, first element of the tensor in the list laid end to
// end), then one address per norm (clipping's). The op package hands CANN's lists instead, with the same three
// calls (Elems, Addr, Norm), so the walk takes either.
#pragma once
#include "kernel_operator.h"

struct ForeachTable {
  AscendC::GlobalTensor<int64_t> rows;
  int64_t tensorCount, totalElems;
  __aicore__ inline void Init(GM_ADDR table, int64_t count, int64_t total, int64_t norms) {
    rows.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t*>(table), 2 * count + norms);
    tensorCount = count;
    totalElems = total;
  }
  __aicore__ inline int64_t Elems(int64_t k) {
    const int64_t start = rows.GetValue(2 * k + 1);
    return (k + 1 < tensorCount ? rows.GetValue(2 * k + 3) : totalElems) - start;
  }
  __aicore__ inline GM_ADDR Addr(int64_t k) {
    return reinterpret_cast<GM_ADDR>(static_cast<uint64_t>(rows.GetValue(2 * k)));
  }
  __aicore__ inline GM_ADDR Norm(int64_t k) {
    return reinterpret_cast<GM_ADDR>(static_cast<uint64_t>(rows.GetValue(2 * tensorCount + k)));
  }
};

// A block's run [begin, end) of the list's elements, tensor by tensor: piece(k, first, count) for each tensor k the
// run meets, `first` counted within tensor k (a tensor may be split between blocks, a block may span many).
template <typename Tensors, typename Piece>
__aicore__ inline void ForEachPiece(Tensors& tensors, int64_t tensorCount, int64_t begin, int64_t end, Piece piece) {
  int64_t start = 0;
  for (int64_t k = 0; k < tensorCount && start < end; ++k) {
    const int64_t stop = start + tensors.Elems(k);
    const int64_t lo = start > begin ? start : begin;
    const int64_t hi = stop < end ? stop : end;
    if (lo < hi) piece(k, lo - start, hi - lo);
    start = stop;
  }
}
