// Grouped matmul weight gradient (split along K: group_type 2 of npu_grouped_matmul), a cube kernel:
//   dweight[e] = x_e^T @ dy_e     x_e = rows of group e of x [M, K], dy_e the same rows of dy [M, N]
// Group e's output [K, N] is cut into singleCoreM x singleCoreN blocks, each reducing over the
// group's rows; A is x read transposed. Blocks are dealt round-robin over the cube cores across
// groups. Empty groups have no blocks: their dweight stays the zeros the host allocated.
#include "kernel_operator.h"
#define ASCENDC_CUBE_ONLY
#include "lib/matmul_intf.h"
#include "grouped_matmul_common.h"
#include "grouped_matmul_tiling_data.h"
#include "kernel_utils.h"

using namespace AscendC;

template <typename T>
class GroupedMatmulWeightGradKernel {
  using AType = MatmulType<TPosition::GM, CubeFormat::ND, T, true>;  // x_e read as x_e^T
  using BType = MatmulType<TPosition::GM, CubeFormat::ND, T>;
  using CType = MatmulType<TPosition::GM, CubeFormat::ND, T>;

 public:
  __aicore__ inline void Init(GM_ADDR x, GM_ADDR dy, GM_ADDR groupList, GM_ADDR dweight,
                              const GroupedMatmulTilingData& t, TPipe* pipe) {
    t_ = t;
    x_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(x), t.m * t.k);
    dy_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dy), t.m * t.n);
    dw_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dweight), t.groups * t.k * t.n);
    groupList_.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t*>(groupList), t.groups);
    REGIST_MATMUL_OBJ(pipe, GetSysWorkSpacePtr(), mm_, &t_.mm);
  }

  __aicore__ inline void Process() {
    const int64_t sm = t_.mm.singleCoreM, sn = t_.mm.singleCoreN;
    const int64_t mBlocks = CeilDivI64(t_.k, sm), nBlocks = CeilDivI64(t_.n, sn);
    const int64_t blocks = mBlocks * nBlocks;
    const int64_t blockIdx = GetBlockIdx(), blockNum = GetBlockNum();
    int64_t rowStart = 0, prevEnd = 0, dealt = 0;
    for (int64_t e = 0; e < t_.groups; ++e) {
      const int64_t rows = GroupRows(groupList_, e, t_.groupListType, prevEnd);
      if (rows <= 0) continue;
      // Logical A = x_e^T [K, rows] stored as x_e [rows, K]: org M = K, reduction = rows.
      mm_.SetOrgShape(static_cast<int>(t_.k), static_cast<int>(t_.n), static_cast<int>(rows));
      for (int64_t b = FirstOwnedBlock(dealt, blockIdx, blockNum); b < blocks; b += blockNum) {
        const int64_t kRow = (b / nBlocks) * sm, col = (b % nBlocks) * sn;
        const int64_t curM = MinI64(sm, t_.k - kRow), curN = MinI64(sn, t_.n - col);
        mm_.SetSingleShape(static_cast<int>(curM), static_cast<int>(curN), static_cast<int>(rows));
        mm_.SetTensorA(x_[rowStart * t_.k + kRow], true);
        mm_.SetTensorB(dy_[rowStart * t_.n + col], false);
        mm_.IterateAll(dw_[e * t_.k * t_.n + kRow * t_.n + col]);
      }
      dealt += blocks;
      rowStart += rows;
    }
    mm_.End();
  }

 private:
  GroupedMatmulTilingData t_;
  GlobalTensor<T> x_, dy_, dw_;
  GlobalTensor<int64_t> groupList_;
  Matmul<AType, BType, CType> mm_;
};

template <typename T>
__aicore__ inline void RunGroupedMatmulWeightGrad(GM_ADDR x, GM_ADDR dy, GM_ADDR groupList, GM_ADDR dweight,
                                                  GM_ADDR workspace, GM_ADDR tiling) {
  GroupedMatmulTilingData t;
  CopyTiling(&t, tiling);
  SetSysWorkspace(workspace);
  TPipe pipe;
  GroupedMatmulWeightGradKernel<T> op;
  op.Init(x, dy, groupList, dweight, t, &pipe);
  op.Process();
}

// One entry per dtype (GROUPED_MATMUL_WEIGHT_GRAD_DTYPES, tiling/grouped_matmul_tiling_data.h).
#define GROUPED_MATMUL_WEIGHT_GRAD_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(GROUPED_MATMUL_WEIGHT_GRAD_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);                                                 \
    RunGroupedMatmulWeightGrad<T>(x, dy, groupList, dweight, workspace, tiling);                    \
  }
GROUPED_MATMUL_WEIGHT_GRAD_DTYPES(GROUPED_MATMUL_WEIGHT_GRAD_ENTRY, grouped_matmul_weight_grad)
#undef GROUPED_MATMUL_WEIGHT_GRAD_ENTRY
