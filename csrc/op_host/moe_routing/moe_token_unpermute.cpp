// moe_token_unpermute: out[t] = sum_k probs[t, k] * permuted[sorted_indices[t*K + k]]
// (npu_moe_token_unpermute). OpDef generated from op_proto/moe_routing/moe_token_unpermute.json.
#include "moe_routing_host.h"

ASCENDC_OP_HOST(MoeTokenUnpermute, ascendc_ops_host::TileUnpermuteOp(context, ascendc_ops::kMoeTokenUnpermute, false),
                ascendc_ops_host::InferUnpermuteShape(context, ascendc_ops::kMoeTokenUnpermute, false),
                ascendc_ops_host::SameDtype(context, 0, 0))

#include "moe_token_unpermute_def.h"
