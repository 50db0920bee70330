// grouped_matmul_weight_grad: dweight[e] = x_e^T @ dy_e (npu_grouped_matmul split along K), on the
// cube cores. OpDef generated from op_proto/grouped_matmul/grouped_matmul_weight_grad.json; dweight is zero-filled
// by the framework first (InitValue): the kernel leaves an empty group's slice untouched.
#include "grouped_matmul_host.h"

ASCENDC_OP_HOST(GroupedMatmulWeightGrad,
                ascendc_ops_host::TileGroupedMatmulOp(context, ascendc_ops::kGroupedMatmulWeightGrad, true),
                ascendc_ops_host::InferGroupedMatmulShape(context, ascendc_ops::kGroupedMatmulWeightGrad, true),
                ascendc_ops_host::SameDtype(context, 0, 0))

#include "grouped_matmul_weight_grad_def.h"
