// cross_entropy_loss: (loss, log_prob, zloss, lse_for_zloss) of logits [N, C] (npu_cross_entropy_loss). OpDef
// generated from op_proto/cross_entropy/cross_entropy_loss.json.
#include "cross_entropy_host.h"

ASCENDC_OP_HOST(CrossEntropyLoss, ascendc_ops_host::TileCrossEntropyOp(context, ascendc_ops::kCrossEntropyLoss, false),
                ascendc_ops_host::InferCrossEntropyShape(context, ascendc_ops::kCrossEntropyLoss, false),
                ascendc_ops_host::InferCrossEntropyDtype(context, false))

#include "cross_entropy_loss_def.h"
