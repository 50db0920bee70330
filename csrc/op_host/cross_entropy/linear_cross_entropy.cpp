// linear_cross_entropy: the LM head's logits folded into per-token softmax statistics by a mix kernel (one AIC and
// two AIVs per core group), no logits kept. OpDef generated from op_proto/cross_entropy/linear_cross_entropy.json.
#include "linear_cross_entropy_host.h"

ASCENDC_OP_HOST(LinearCrossEntropy,
                ascendc_ops_host::TileLinearCrossEntropyOp(context, ascendc_ops::kLinearCrossEntropy,
                                                           ascendc_ops::kLinearCrossEntropyAttrs, false),
                ascendc_ops_host::InferLinearCrossEntropyShape(context, ascendc_ops::kLinearCrossEntropy,
                                                               ascendc_ops::kLinearCrossEntropyAttrs, false),
                ascendc_ops_host::InferLinearCrossEntropyDtype(context, false))

#include "linear_cross_entropy_def.h"
