// Tiling data shared by the host tiling (grouped_matmul_tiling.cpp) and the cube kernels
// grouped_matmul.cpp (y[rows of group e] = x_e @ w_e) and grouped_matmul_weight_grad.cpp
// (dweight[e] = x_e^T @ dy_e). Group sizes live on the device (group_list, int64 in GM): each core
// walks the groups, splits group e's output into ceil(rows/singleCoreM) x ceil(cols/singleCoreN)
// blocks and takes every blockDim-th block, the count running on across groups. With groupBlocks
// (forward, when every group's most blocks fit the cores side by side) core c instead owns block
// c % groupBlocks of group c / groupBlocks, and reads only that group's entries.
#pragma once
#include <cstdint>

#include "kernel_dtypes.h"

#include "cube_tiling.h"

// The kernel entries, one list per op, and their GM parameters (tiling/kernel_dtypes.h says how they are read).
#define GROUPED_MATMUL_DTYPES ASCENDC_FLOAT_DTYPES
#define GROUPED_MATMUL_WEIGHT_GRAD_DTYPES GROUPED_MATMUL_DTYPES
#define GROUPED_MATMUL_PARAMS(GM) GM x, GM weight, GM groupList, GM bias, GM y, GM workspace, GM tiling
#define GROUPED_MATMUL_WEIGHT_GRAD_PARAMS(GM) GM x, GM dy, GM groupList, GM dweight, GM workspace, GM tiling

struct GroupedMatmulTilingData {
  int64_t m;                // rows of x (forward: and of y; weight grad: the summed reduction length)
  int64_t k;                // x's columns
  int64_t n;                // weight's output columns (forward) / dy's columns (weight grad)
  int64_t groups;           // E: entries of group_list
  int32_t groupListType;    // 0: cumulative row ends; 1: row counts per group
  int32_t transposeWeight;  // forward only: weight stored [E, N, K] instead of [E, K, N]
  int32_t weightGrad;       // 0: forward blocks tile each group's [rows_e, n]; 1: each group's [k, n]
  int32_t groupBlocks;      // 0: the round-robin deal; else blocks per group, one core each (forward)
  int32_t dealtColumns;     // forward's deal: 1: the core narrows singleCoreN by the group sizes (DealtColumns)
  int32_t elementBytes;     // bytes of x's, the weight's and y's elements (DealtColumns' costs)
  TCubeTiling mm;  // the Matmul object's tiling (singleCoreM x singleCoreN output blocks); isBias: bias [E, N]
};
