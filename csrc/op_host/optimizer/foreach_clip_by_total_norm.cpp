// foreach_clip_by_total_norm: every tensor of a list scaled in place by min(1, max_norm / (total + 1e-6)), the total
// formed on the device from the per-tensor norms. OpDef generated from
// op_proto/optimizer/foreach_clip_by_total_norm.json (dynamic x and norms; x and total_norm ref tensors).
#include "optimizer_host.h"

ASCENDC_OP_HOST(ForeachClipByTotalNorm,
                ascendc_ops_host::TileForeachClipOp(context, ascendc_ops::kForeachClipByTotalNorm),
                ascendc_ops_host::InferForeachClipShape(context, ascendc_ops::kForeachClipByTotalNorm),
                ascendc_ops_host::ForeachClipDtypes(context))

#include "foreach_clip_by_total_norm_def.h"
