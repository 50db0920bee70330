// rope_customer_grad: backward of rope_customer. OpDef generated from op_proto/rope/rope_customer_grad.json.
#include "rope_host.h"

ASCENDC_OP_HOST(RopeCustomerGrad, ascendc_ops_host::TileRopeOp(context, ascendc_ops::kRopeCustomerGrad, true, true),
                ascendc_ops_host::InferRopeShape(context, ascendc_ops::kRopeCustomerGrad, true),
                ascendc_ops_host::SameDtype(context, 0, 0))

#include "rope_customer_grad_def.h"
