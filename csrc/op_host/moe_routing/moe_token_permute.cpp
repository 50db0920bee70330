// moe_token_permute: tokens gathered into expert order (npu_moe_token_permute), in one launch of
// three phases (moe_routing_host.h). OpDef generated from op_proto/moe_routing/moe_token_permute.json.
#include "moe_routing_host.h"

ASCENDC_OP_HOST(MoeTokenPermute, ascendc_ops_host::TilePermuteOp(context, ascendc_ops::kMoeTokenPermute),
                ascendc_ops_host::InferPermuteShape(context, ascendc_ops::kMoeTokenPermute),
                ascendc_ops_host::InferPermuteDtype(context))

#include "moe_token_permute_def.h"
