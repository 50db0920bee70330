// swiglu_grad: dx = [dA, dB] of swiglu. OpDef generated from op_proto/swiglu/swiglu_grad.json.
#include "swiglu_host.h"

ASCENDC_OP_HOST(SwigluGrad, ascendc_ops_host::TileSwigluOp(context, ascendc_ops::kSwigluGrad, true),
                ascendc_ops_host::InferSwigluShape(context, ascendc_ops::kSwigluGrad, true),
                ascendc_ops_host::SameDtype(context, 1, 0))

#include "swiglu_grad_def.h"
