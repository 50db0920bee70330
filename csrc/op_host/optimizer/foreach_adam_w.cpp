// foreach_adam_w: one AdamW step over lists of parameters and states in one launch, in place. OpDef generated from
// op_proto/optimizer/foreach_adam_w.json (dynamic inputs and outputs).
#include "optimizer_host.h"

ASCENDC_OP_HOST(ForeachAdamW, ascendc_ops_host::TileForeachAdamWOp(context, ascendc_ops::kForeachAdamW),
                ascendc_ops_host::InferForeachAdamWShape(context, ascendc_ops::kForeachAdamW),
                ascendc_ops_host::ForeachAdamWDtypes(context))

#include "foreach_adam_w_def.h"
