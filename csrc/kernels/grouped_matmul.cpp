// Grouped matmul (MoE experts, split along M), a cube kernel:
//   y[rows of group e] = x[rows of group e] @ w[e] (+ bias[e]),   w[e] = weight[e] ([K, N]) or weight[e]^T ([N, K])
// x [M, K] holds the groups' rows contiguously in group order; group_list (int64 [E]) gives their
// counts or cumulative ends. Each group's output is cut into singleCoreM x singleCoreN blocks dealt
// round-robin over the cube cores (or, with the tiling's groupBlocks, each block its own core); the
// Matmul API accumulates in fp32 (L0C) and rounds once on the way out. Empty groups have no blocks;
// rows past the last group are not touched (the host zeroes them). With a bias (tiling isBias),
// SetBias hands each block its bias[e] slice: the Matmul API moves it GM -> L1 -> bias table and
// starts L0C from it, so the bias is in the fp32 sum before the products.
#include "kernel_operator.h"
#define ASCENDC_CUBE_ONLY
#include "lib/matmul_intf.h"
#include "grouped_matmul_columns.h"
#include "grouped_matmul_common.h"
#include "grouped_matmul_tiling_data.h"
#include "kernel_utils.h"

using namespace AscendC;

// TRANS_W: weight stored [E, N, K]. B's ISTRANS, the runtime SetTensorB flag and the host
// tiling's B isTrans are one value (SetTensorB.md: for fp32 they must agree, or L1 sizes and
// results are wrong), so each layout has its own Matmul type.
// The bias dtype A2's Matmul takes with T (Matmul使用说明.md table 2, SetBias.md: half or float,
// no bfloat16_t): half with half, float with float and bfloat16_t.
template <typename T>
struct GroupedMatmulBias {
  using Type = float;
};
template <>
struct GroupedMatmulBias<half> {
  using Type = half;
};

template <typename T, bool TRANS_W>
class GroupedMatmulKernel {
  using BiasT = typename GroupedMatmulBias<T>::Type;
  using AType = MatmulType<TPosition::GM, CubeFormat::ND, T>;
  using BType = MatmulType<TPosition::GM, CubeFormat::ND, T, TRANS_W>;
  using CType = MatmulType<TPosition::GM, CubeFormat::ND, T>;
  using BiasType = MatmulType<TPosition::GM, CubeFormat::ND, BiasT>;

 public:
  __aicore__ inline void Init(GM_ADDR x, GM_ADDR weight, GM_ADDR groupList, GM_ADDR bias, GM_ADDR y,
                              const GroupedMatmulTilingData& t, TPipe* pipe) {
    t_ = t;
    x_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(x), t.m * t.k);
    w_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(weight), t.groups * t.k * t.n);
    if (t.mm.isBias) bias_.SetGlobalBuffer(reinterpret_cast<__gm__ BiasT*>(bias), t.groups * t.n);
    y_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(y), t.m * t.n);
    groupList_.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t*>(groupList), t.groups);
    REGIST_MATMUL_OBJ(pipe, GetSysWorkSpacePtr(), mm_, &t_.mm);
  }

  __aicore__ inline void Process() {
    mm_.SetOrgShape(static_cast<int>(t_.m), static_cast<int>(t_.n), static_cast<int>(t_.k));
    if (t_.groupBlocks > 0) {
      ProcessOwnGroup();
    } else {
      ProcessDealt();
    }
    mm_.End();
  }

 private:
  // Output block b (row block b / nBlocks, column block b % nBlocks, sn columns wide) of group e, whose
  // rows start at rowStart.
  __aicore__ inline void ComputeBlock(int64_t e, int64_t rowStart, int64_t rows, int64_t b, int64_t nBlocks,
                                      int64_t sn) {
    const int64_t sm = t_.mm.singleCoreM;
    const int64_t row = rowStart + (b / nBlocks) * sm, col = (b % nBlocks) * sn;
    const int64_t curM = MinI64(sm, rowStart + rows - row), curN = MinI64(sn, t_.n - col);
    // w[e] is [K, N] (element (k, col) at k * N + col) or, transposed, [N, K] (col * K + k).
    const int64_t wOffset = e * t_.k * t_.n + (TRANS_W ? col * t_.k : col);
    mm_.SetSingleShape(static_cast<int>(curM), static_cast<int>(curN), static_cast<int>(t_.k));
    mm_.SetTensorA(x_[row * t_.k], false);
    mm_.SetTensorB(w_[wOffset], TRANS_W);
    if (t_.mm.isBias) mm_.SetBias(bias_[e * t_.n + col]);  // bias[e][col, col + curN)
    mm_.IterateAll(y_[row * t_.n + col]);
  }

  // Every blockNum-th block of all groups', the count running on from group to group. With the
  // tiling's dealtColumns, every group's rows are read first to choose the blocks' width.
  __aicore__ inline void ProcessDealt() {
    const int64_t blockIdx = GetBlockIdx(), blockNum = GetBlockNum(), sm = t_.mm.singleCoreM;
    const bool cached = t_.dealtColumns != 0 && t_.groups <= kDealtColumnsMaxGroups;
    int64_t groupRows[kDealtColumnsMaxGroups];
    int64_t sn = t_.mm.singleCoreN, prevEnd = 0;
    if (cached) {
      int64_t rowBlocks = 0;
      for (int64_t e = 0; e < t_.groups; ++e) {
        groupRows[e] = GroupRows(groupList_, e, t_.groupListType, prevEnd);
        if (groupRows[e] > 0) rowBlocks += CeilDivI64(groupRows[e], sm);
      }
      sn = DealtColumns(t_.n, t_.k, t_.elementBytes, sm, sn, t_.mm.baseN, t_.mm.iterateOrder == 1, rowBlocks, blockNum);
    }
    const int64_t nBlocks = CeilDivI64(t_.n, sn);
    int64_t rowStart = 0, dealt = 0;
    prevEnd = 0;
    for (int64_t e = 0; e < t_.groups; ++e) {
      const int64_t rows = cached ? groupRows[e] : GroupRows(groupList_, e, t_.groupListType, prevEnd);
      if (rows <= 0) continue;
      const int64_t blocks = CeilDivI64(rows, sm) * nBlocks;
      for (int64_t b = FirstOwnedBlock(dealt, blockIdx, blockNum); b < blocks; b += blockNum)
        ComputeBlock(e, rowStart, rows, b, nBlocks, sn);
      dealt += blocks;
      rowStart += rows;
    }
  }

  // Block blockIdx % groupBlocks of group blockIdx / groupBlocks (group_list cumulative: its rows
  // start at the previous group's end), if the group has that many rows.
  __aicore__ inline void ProcessOwnGroup() {
    const int64_t nBlocks = CeilDivI64(t_.n, t_.mm.singleCoreN);
    const int64_t blockIdx = GetBlockIdx(), e = blockIdx / t_.groupBlocks, b = blockIdx % t_.groupBlocks;
    if (e >= t_.groups) return;
    const int64_t rowStart = e > 0 ? groupList_.GetValue(e - 1) : 0;
    const int64_t rows = groupList_.GetValue(e) - rowStart;
    if ((b / nBlocks) * t_.mm.singleCoreM >= rows) return;
    ComputeBlock(e, rowStart, rows, b, nBlocks, t_.mm.singleCoreN);
  }

  GroupedMatmulTilingData t_;
  GlobalTensor<T> x_, w_, y_;
  GlobalTensor<BiasT> bias_;
  GlobalTensor<int64_t> groupList_;
  Matmul<AType, BType, CType, BiasType> mm_;
};

// The kernel for the tiling's weight layout (the tiling's B isTrans is transposeWeight).
template <typename T>
__aicore__ inline void ProcessGroupedMatmul(GM_ADDR x, GM_ADDR weight, GM_ADDR groupList, GM_ADDR bias, GM_ADDR y,
                                            const GroupedMatmulTilingData& t, TPipe* pipe) {
  if (t.transposeWeight != 0) {
    GroupedMatmulKernel<T, true> op;
    op.Init(x, weight, groupList, bias, y, t, pipe);
    op.Process();
  } else {
    GroupedMatmulKernel<T, false> op;
    op.Init(x, weight, groupList, bias, y, t, pipe);
    op.Process();
  }
}

template <typename T>
__aicore__ inline void RunGroupedMatmul(GM_ADDR x, GM_ADDR weight, GM_ADDR groupList, GM_ADDR bias, GM_ADDR y,
                                        GM_ADDR workspace, GM_ADDR tiling) {
  GroupedMatmulTilingData t;
  CopyTiling(&t, tiling);
  SetSysWorkspace(workspace);
  TPipe pipe;
  ProcessGroupedMatmul<T>(x, weight, groupList, bias, y, t, &pipe);
}

// One entry per dtype (GROUPED_MATMUL_DTYPES, tiling/grouped_matmul_tiling_data.h).
#define GROUPED_MATMUL_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(GROUPED_MATMUL_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);                                     \
    RunGroupedMatmul<T>(x, weight, groupList, bias, y, workspace, tiling);              \
  }
GROUPED_MATMUL_DTYPES(GROUPED_MATMUL_ENTRY, grouped_matmul)
#undef GROUPED_MATMUL_ENTRY
