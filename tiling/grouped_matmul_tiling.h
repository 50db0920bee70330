// Host tiling for the grouped matmul cube kernels: a pure function of the problem and the chip's
// cube resources (CubePlatform, cube_tiling_rules.h). The L0/L1 rules TCubeTiling must obey are the twin's
// (twin_cube.h) and the chip's.
#pragma once
#include "cube_tiling_rules.h"
#include "grouped_matmul_tiling_data.h"
#include "platform.h"

namespace tiling {

struct GroupedMatmulProblem {
  int64_t m, k, n, groups;
  DType dtype;
  int32_t groupListType;
  bool transposeWeight;
  bool weightGrad;  // dweight[e] = x_e^T @ dy_e: output blocks tile [k, n] of every group
  DType biasDtype = DType::kOther;  // forward only: bias [E, N] of this dtype (kOther: no bias)
  bool HasBias() const { return biasDtype != DType::kOther; }
};

struct GroupedMatmulTiling {
  GroupedMatmulTilingData data;
  uint32_t blockDim;  // 0: nothing to compute
};

GroupedMatmulTiling TileGroupedMatmul(const GroupedMatmulProblem& problem, const CubePlatform& platform);

// The operands as the kernels declare them and the tiling is made for (MatmulApiTiling's SetAType /
// SetBType): forward A = x, B = weight, isTrans = transpose_weight (grouped_matmul.cpp picks B's
// MatmulType by it); weight grad A = x with isTrans (read as x_e^T), B = dy.
void GroupedMatmulOperands(const GroupedMatmulProblem& problem, cube_rules::Operand& a, cube_rules::Operand& b);

// The columns per block the kernels use with `groupRows[e]` rows in group e on blockNum cores:
// singleCoreN, or with dealtColumns what the forward's deal narrows it to (DealtColumns).
int64_t GroupedMatmulColumns(const GroupedMatmulTilingData& t, const int64_t* groupRows, int64_t blockNum);

// Output blocks over all groups with `groupRows[e]` rows each, as the kernels enumerate them
// (the weight grad skips empty groups).
int64_t GroupedMatmulBlocks(const GroupedMatmulTilingData& t, const int64_t* groupRows, int64_t blockNum);

}  // namespace tiling
