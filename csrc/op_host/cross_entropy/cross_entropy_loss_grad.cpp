// cross_entropy_loss_grad: x_grad [N, C] of cross_entropy_loss (npu_cross_entropy_loss_backward). OpDef generated
// from op_proto/cross_entropy/cross_entropy_loss_grad.json.
#include "cross_entropy_host.h"

ASCENDC_OP_HOST(CrossEntropyLossGrad,
                ascendc_ops_host::TileCrossEntropyOp(context, ascendc_ops::kCrossEntropyLossGrad, true),
                ascendc_ops_host::InferCrossEntropyShape(context, ascendc_ops::kCrossEntropyLossGrad, true),
                ascendc_ops_host::InferCrossEntropyDtype(context, true))

#include "cross_entropy_loss_grad_def.h"
