// linear_cross_entropy_grad: grad_hidden and grad_weight of the fused linear cross-entropy, the logits recomputed
// block by block by a mix kernel. OpDef generated from op_proto/cross_entropy/linear_cross_entropy_grad.json.
#include "linear_cross_entropy_host.h"

ASCENDC_OP_HOST(LinearCrossEntropyGrad,
                ascendc_ops_host::TileLinearCrossEntropyOp(context, ascendc_ops::kLinearCrossEntropyGrad,
                                                           ascendc_ops::kLinearCrossEntropyGradAttrs, true),
                ascendc_ops_host::InferLinearCrossEntropyShape(context, ascendc_ops::kLinearCrossEntropyGrad,
                                                               ascendc_ops::kLinearCrossEntropyGradAttrs, true),
                ascendc_ops_host::InferLinearCrossEntropyDtype(context, true))

#include "linear_cross_entropy_grad_def.h"
