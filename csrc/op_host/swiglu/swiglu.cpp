// swiglu: y = silu(A) * B over the two halves of `dim` (npu_swiglu). OpDef generated from op_proto/swiglu/swiglu.json.
#include "swiglu_host.h"

ASCENDC_OP_HOST(Swiglu, ascendc_ops_host::TileSwigluOp(context, ascendc_ops::kSwiglu, false),
                ascendc_ops_host::InferSwigluShape(context, ascendc_ops::kSwiglu, false),
                ascendc_ops_host::SameDtype(context, 0, 0))

#include "swiglu_def.h"
