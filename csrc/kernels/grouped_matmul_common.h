// Shared by the grouped matmul cube kernels: group sizes from group_list (int64 in GM) and the
// round-robin deal of output blocks across the cube cores, the count running on from group to group.
#pragma once
#include "kernel_operator.h"

// Rows of group e: the count itself (type 1) or the step between cumulative ends (type 0).
__aicore__ inline int64_t GroupRows(AscendC::GlobalTensor<int64_t>& groupList, int64_t e, int32_t groupListType,
                                    int64_t& prevEnd) {
  const int64_t v = groupList.GetValue(e);
  if (groupListType == 1) return v;
  const int64_t rows = v - prevEnd;
  prevEnd = v;
  return rows;
}

// This core's first block among `blocks` blocks numbered from `dealt` on: every blockNum-th block.
__aicore__ inline int64_t FirstOwnedBlock(int64_t dealt, int64_t blockIdx, int64_t blockNum) {
  return ((blockIdx - dealt) % blockNum + blockNum) % blockNum;
}

__aicore__ inline int64_t CeilDivI64(int64_t a, int64_t b) { return (a + b - 1) / b; }
__aicore__ inline int64_t MinI64(int64_t a, int64_t b) { return a < b ? a : b; }
