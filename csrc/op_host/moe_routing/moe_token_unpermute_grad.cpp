// moe_token_unpermute_grad: dpermuted[s[t*K+k]] = p[t,k] * dout[t], dprobs[t,k] = <permuted[s[t*K+k]], dout[t]>.
// OpDef generated from op_proto/moe_routing/moe_token_unpermute_grad.json; permuted_tokens_grad is zero-filled
// by the framework first (InitValue): rows no sorted index reaches stay 0, as on the torch path.
#include "moe_routing_host.h"

ASCENDC_OP_HOST(MoeTokenUnpermuteGrad,
                ascendc_ops_host::TileUnpermuteOp(context, ascendc_ops::kMoeTokenUnpermuteGrad, true),
                ascendc_ops_host::InferUnpermuteShape(context, ascendc_ops::kMoeTokenUnpermuteGrad, true),
                ascendc_ops_host::InferUnpermuteGradDtype(context))

#include "moe_token_unpermute_grad_def.h"
