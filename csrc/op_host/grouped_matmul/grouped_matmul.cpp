// grouped_matmul: y[rows of group e] = x[rows of group e] @ weight[e] (npu_grouped_matmul, split
// along M), on the cube cores. OpDef generated from op_proto/grouped_matmul/grouped_matmul.json; y is zero-filled
// by the framework first (InitValue), so rows past the last group read 0 as on the torch path.
#include "grouped_matmul_host.h"

ASCENDC_OP_HOST(GroupedMatmul, ascendc_ops_host::TileGroupedMatmulOp(context, ascendc_ops::kGroupedMatmul, false),
                ascendc_ops_host::InferGroupedMatmulShape(context, ascendc_ops::kGroupedMatmul, false),
                ascendc_ops_host::SameDtype(context, 0, 0))

#include "grouped_matmul_def.h"
