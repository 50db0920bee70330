// MoE routing tiling unit tests: the sort's merge rounds end in one list and the row phase covers every
// token; the problem functions (no torch) give the messages and output shapes every layer uses.
// Prints "N passed, M failed".
#include <cstdio>
#include <optional>
#include <vector>

#include "expect.h"
#include "moe_routing_problem.h"

using namespace tiling;
using expect::Throws;

// ---- moe routing tiling ----
static void TestRoutingTiling() {
  for (int64_t tokens : {0, 1, 7, 4096, 20000}) {
    MoeRoutingTiling t = TileMoeRouting({tokens, 8, 33, tokens * 8, DType::kBFloat16, false, false}, Ascend910B(48));
    MoeRoutingTilingData d = t.data;
    EXPECT(t.sortBlocks == uint32_t(d.chunks) && d.chunks * d.chunkLen >= d.sortLen);
    EXPECT(d.chunkLen % 32 == 0 && d.chunkLen / 32 <= 255 && d.colChunk % 16 == 0);
    int64_t listLen = d.chunkLen, lists = d.chunks;
    uint32_t blocks = 0;
    for (int round = 0; MoeMergeRound(d, round, blocks); ++round) {
      EXPECT(d.listLen == listLen && d.lists == lists && blocks == uint32_t((lists + 3) / 4));
      listLen *= 4, lists = (lists + 3) / 4;
    }
    EXPECT(listLen >= d.sortLen || d.sortLen == 0);
    if (t.rowBlocks) EXPECT(d.tasksPerBlock * t.rowBlocks + d.tasksRemainder == d.tokens);
  }
  EXPECT(Throws([] { TileMoeRouting({4, 2, 8, 9, DType::kFloat32, false, false}, Ascend910B(48)); }));
}

// ---- the problem functions: argument rules and output shapes ----
static void TestMoeRoutingProblem() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, bf16 = DType::kBFloat16, i32 = DType::kInt32,
              i64 = DType::kInt64;
  const OpSpec permute{
      "moe_token_permute", "", {"tokens", "indices"}, {{f16, i32}, {f32, i32}, {f16, i64}, {f32, i64}}};
  const TensorArg<int64_t> tokens{{4, 3}, f32}, idx{{4, 2}, i64};
  PermuteArgs<int64_t> p = CheckMoeTokenPermute(permute, tokens, idx, std::nullopt, false);
  EXPECT(p.tokens == 4 && p.topK == 2 && p.hidden == 3 && p.numOut == 8);
  EXPECT((p.permuted == std::vector<int64_t>{8, 3}) && (p.sortedIndices == std::vector<int64_t>{8}));
  EXPECT((CheckMoeTokenPermute(permute, tokens, idx, 5, false).permuted == std::vector<int64_t>{5, 3}));
  EXPECT((CheckMoeTokenPermute(permute, tokens, idx, 0, false).permuted == std::vector<int64_t>{8, 3}));
  EXPECT((CheckMoeTokenPermute(permute, tokens, idx, 99, false).permuted == std::vector<int64_t>{8, 3}));
  EXPECT(CheckMoeTokenPermute(permute, tokens, TensorArg<int64_t>{{4}, i32}, std::nullopt, false).topK == 1);
  const MoeRoutingProblem mp = MoeRoutingProblemOf(CheckMoeTokenPermute(permute, tokens, idx, 5, false), f32);
  EXPECT(mp.tokens == 4 && mp.topK == 2 && mp.numOut == 5 && !mp.unpermute && !mp.hasProbs);
  EXPECT(expect::ArgErrorOf([&] { CheckMoeTokenPermute(permute, tokens, idx, std::nullopt, true); }) ==
         "moe_token_permute: padded_mode=True is not supported (as on the NPU); pass padded_mode=False");
  EXPECT(expect::ArgErrorOf([&] {
           CheckMoeTokenPermute(permute, tokens, TensorArg<int64_t>{{5, 2}, i64}, std::nullopt, false);
         }) == "moe_token_permute: indices must have T = 4 rows (tokens.size(0)), got shape [5, 2]");
  EXPECT(expect::ArgErrorOf([&] {
           CheckMoeTokenPermute(permute, tokens, TensorArg<int64_t>{{4, 513}, i64}, std::nullopt, false);
         }) == "moe_token_permute: topK (indices.size(1)) must be in [1, 512], got 513");
  ArgError::Kind kind{};
  EXPECT(expect::ArgErrorOf(
             [&] { CheckMoeTokenPermute(permute, tokens, TensorArg<int64_t>{{4, 2}, f32}, std::nullopt, false); },
             &kind) == "moe_token_permute: indices must be one of int32, int64, got float32");
  EXPECT(kind == ArgError::kType);
  EXPECT(expect::ArgErrorOf([&] { CheckMoeTokenPermute(permute, TensorArg<int64_t>{{4, 3}, bf16}, idx, -1, false); }) ==
         "moe_token_permute: tokens must be one of float16, float32, got bfloat16");
  EXPECT(expect::ArgErrorOf([&] { CheckMoeTokenPermute(permute, tokens, idx, -1, false); }) ==
         "moe_token_permute: num_out_tokens must be >= 0 (0: keep all), got -1");

  const OpSpec unpermute{"moe_token_unpermute",
                         "",
                         {"permuted_tokens", "sorted_indices", "probs"},
                         {{f16, i32, f16}, {f32, i32, f32}, {bf16, i32, bf16}, {f16, i32, f32}, {bf16, i32, f32}}};
  const OpSpec grad{"moe_token_unpermute_grad",
                    "",
                    {"permuted_tokens", "unpermuted_tokens_grad", "sorted_indices", "probs"},
                    {{f16, f16, i32, f16}, {f32, f32, i32, f32}, {bf16, bf16, i32, f32}}};
  const TensorArg<int64_t> perm{{7, 6}, f32}, sorted{{8}, i32}, probs{{4, 2}, f32};
  UnpermuteArgs<int64_t> u = CheckMoeTokenUnpermute(unpermute, perm, nullptr, sorted, &probs, false, {});
  EXPECT(u.tokens == 4 && u.topK == 2 && u.hidden == 6 && u.rows == 7 && u.hasProbs);
  EXPECT((u.out == std::vector<int64_t>{4, 6}));
  EXPECT(
      (CheckMoeTokenUnpermute(unpermute, perm, nullptr, sorted, nullptr, false, {}).out == std::vector<int64_t>{8, 6}));
  u = CheckMoeTokenUnpermute(unpermute, perm, nullptr, sorted, nullptr, false, {2, 6});
  EXPECT(u.tokens == 2 && u.topK == 4 && !u.hasProbs && (u.out == std::vector<int64_t>{2, 6}));
  const MoeRoutingProblem up = MoeRoutingProblemOf(u, f32);
  EXPECT(up.tokens == 2 && up.topK == 4 && up.numOut == 7 && up.unpermute && !up.hasProbs);
  const TensorArg<int64_t> dout{{4, 6}, f32};
  u = CheckMoeTokenUnpermute(grad, perm, &dout, sorted, &probs, false, {});
  EXPECT((u.out == std::vector<int64_t>{7, 6}) && (u.probsGrad == std::vector<int64_t>{4, 2}));
  const TensorArg<int64_t> dout8{{8, 6}, f32};
  EXPECT((CheckMoeTokenUnpermute(grad, perm, &dout8, sorted, nullptr, false, {}).probsGrad == std::vector<int64_t>{0}));
  EXPECT(expect::ArgErrorOf([&] { CheckMoeTokenUnpermute(unpermute, perm, nullptr, sorted, nullptr, true, {}); }) ==
         "moe_token_unpermute: padded_mode=True is not supported (as on the NPU); pass padded_mode=False");
  const TensorArg<int64_t> probs32{{3, 2}, f32};
  EXPECT(
      expect::ArgErrorOf([&] { CheckMoeTokenUnpermute(unpermute, perm, nullptr, sorted, &probs32, false, {}); }) ==
      "moe_token_unpermute: probs must be 2-D [T, topK] with T * topK = 8 (sorted_indices length), got shape [3, 2]");
  EXPECT(
      expect::ArgErrorOf([&] { CheckMoeTokenUnpermute(unpermute, perm, nullptr, sorted, nullptr, false, {3, 6}); }) ==
      "moe_token_unpermute: restore_shape must be [T, H] with H = 6 and T dividing 8 (sorted_indices length), "
      "got [3, 6]");
  EXPECT(expect::ArgErrorOf([&] {
           CheckMoeTokenUnpermute(unpermute, perm, nullptr, TensorArg<int64_t>{{6}, i32}, nullptr, false, {});
         }) == "moe_token_unpermute: permuted_tokens has 7 rows, more than the 6 entries of sorted_indices");
  EXPECT(
      expect::ArgErrorOf(
          [&] { CheckMoeTokenUnpermute(unpermute, perm, nullptr, TensorArg<int64_t>{{8}, i64}, nullptr, false, {}); },
          &kind) == "moe_token_unpermute: sorted_indices must be one of int32, got int64");
  EXPECT(kind == ArgError::kType);
  const TensorArg<int64_t> perm16{{7, 6}, bf16}, probs16{{4, 2}, f16};
  EXPECT(expect::ArgErrorOf([&] { CheckMoeTokenUnpermute(unpermute, perm16, nullptr, sorted, &probs16, false, {}); }) ==
         "moe_token_unpermute: probs must have permuted_tokens' dtype bfloat16 or float32, got float16");
  const TensorArg<int64_t> dout5{{5, 6}, f32}, dout16{{4, 6}, f16};
  EXPECT(expect::ArgErrorOf([&] { CheckMoeTokenUnpermute(grad, perm, &dout5, sorted, &probs, false, {}); }) ==
         "moe_token_unpermute_grad: unpermuted_tokens_grad must have shape [4, 6], got [5, 6]");
  EXPECT(expect::ArgErrorOf([&] { CheckMoeTokenUnpermute(grad, perm, &dout16, sorted, &probs, false, {}); }) ==
         "moe_token_unpermute_grad: unpermuted_tokens_grad must have permuted_tokens' dtype float32, got float16");
}

int main() {
  TestMoeRoutingProblem();
  TestRoutingTiling();
  return expect::Report();
}
