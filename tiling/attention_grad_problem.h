// fusion_attention_grad's arguments -> the problem (the forward's checks, then dy, softmax_max,
// softmax_sum and attention_in against the shapes the forward gives them), or an ArgError naming the op,
// the argument, what was expected and what came. Called by the torch binding, its Meta kernel and the
// op_host. Inputs in op_proto/attention/fusion_attention_grad.json's order: query, key, value, dy,
// atten_mask, softmax_max, softmax_sum, attention_in, drop_mask, sink (the forward's: the grad forms dsink).
#pragma once
#include <vector>

#include "attention_problem.h"

namespace tiling {

template <class Int>
AttentionArgs<Int> CheckFusionAttentionGrad(const OpSpec& op, const TensorArg<Int>& q, const TensorArg<Int>& k,
                                            const TensorArg<Int>& v, const TensorArg<Int>& dy,
                                            const TensorArg<Int>& mask, const TensorArg<Int>& softmaxMax,
                                            const TensorArg<Int>& softmaxSum, const TensorArg<Int>& attentionIn,
                                            const AttentionAttrs& attrs, const AttentionMaskBytes& maskBytes = {},
                                            const TensorArg<Int>& dropMask = {{}, DType::kOther, false},
                                            const TensorArg<Int>& sink = {{}, DType::kOther, false}) {
  const AttentionArgs<Int> a = CheckFusionAttention(op, q, k, v, mask, attrs, maskBytes, 4, sink, dropMask, 8, 9);
  const struct {
    size_t index;
    const TensorArg<Int>* t;
    const std::vector<Int>* shape;
    const char* what;
  } given[] = {{3, &dy, &a.out, "attention_out's shape"},
               {5, &softmaxMax, &a.stats, "the forward's softmax_max shape"},
               {6, &softmaxSum, &a.stats, "the forward's softmax_sum shape"},
               {7, &attentionIn, &a.out, "attention_out's shape"}};
  for (const auto& g : given) {
    if (g.index == 3 || g.index == 7) CheckSameDtype(op, g.index, g.t->dtype, 0, q.dtype);
    else CheckDtype(op, g.index, g.t->dtype);
    if (g.t->shape != *g.shape)
      Fail(ArgError::kValue, op, op.inputs[g.index], " must have ", g.what, " ", *g.shape, ", got ", g.t->shape);
  }
  return a;
}

}  // namespace tiling
