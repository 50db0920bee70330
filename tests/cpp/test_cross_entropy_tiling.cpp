// Cross-entropy family tiling unit tests. Fused linear cross-entropy: the problem function's checks, tasks and
// blocks for the forward and the backward, the buffer plans within A2's L1 / L0 / UB, the workspace per group.
// Prints "N passed, M failed"; exits non-zero on any failure.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "expect.h"
#include "linear_cross_entropy_buffers.h"
#include "linear_cross_entropy_problem.h"

using namespace tiling;

static void CheckLinear(int64_t tokens, int64_t hidden, int64_t vocab, DType dtype, bool backward) {
  const CubePlatform plat = Ascend910BCube(24);
  const LinearCrossEntropyTiling t = TileLinearCrossEntropy({dtype, tokens, hidden, vocab, 0, 0.0f, backward}, plat);
  const LinearCrossEntropyTilingData& d = t.data;
  const int64_t bytes = ElementBytes(dtype);
  EXPECT(d.tokenTasks * kLceBlock >= tokens && (d.tokenTasks - 1) * kLceBlock < tokens);
  EXPECT(d.vocabTasks == (backward ? (vocab + kLceBlock - 1) / kLceBlock : 0));
  EXPECT(t.blockDim == uint32_t(std::min<int64_t>(d.tokenTasks + d.vocabTasks, 24)));
  EXPECT(d.kChunk * kLceBlock * bytes * 2 <= int64_t(plat.l0aBytes) && d.kChunk % 16 == 0);
  const LceCubeBuffers cube = LceCubeBuffersOf(uint32_t(bytes), uint32_t(d.kChunk), uint32_t(d.segBlocks),
                                               uint32_t(d.gemmChunk), uint32_t(d.gemmK), backward);
  EXPECT(cube.L1() <= plat.l1Bytes && 2 * cube.l0a <= plat.l0aBytes && 2 * cube.l0b <= plat.l0bBytes);
  EXPECT(2 * cube.l0c <= plat.l0cBytes);
  EXPECT(LceVectorBuffersOf().Total() <= kA2UbBudget);
  // the workspace: score slots, G segments, the accumulator of one block's rows (backward only)
  EXPECT(d.gradOffset == kLceScoreSlots * d.scoreSlotBytes && d.scoreSlotBytes >= kLceBlock * kLceBlock * 4);
  if (backward) {
    EXPECT(d.gradSlotBytes >= kLceBlock * d.segBlocks * kLceBlock * bytes);
    EXPECT(d.workspacePerGroup - d.accOffset >= kLceBlock * hidden * 4);
  } else {
    EXPECT(d.workspacePerGroup == d.accOffset && d.gradSlotBytes == 0);
  }
  EXPECT(t.workspaceBytes == int64_t(t.blockDim) * d.workspacePerGroup);
}

int main() {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16})
    for (bool backward : {false, true}) {
      CheckLinear(4096, 4096, 152064, dtype, backward);  // Qwen2's vocabulary, a training batch
      CheckLinear(1, 40, 1021, dtype, backward);          // one token, odd sizes
      CheckLinear(83, 5125, 32000, dtype, backward);
    }
  // 16-bit dtypes: 4 blocks of G per segment and 128-column chunks of H; fp32 half of each
  const CubePlatform plat = Ascend910BCube(24);
  const LinearCrossEntropyTiling bf = TileLinearCrossEntropy({DType::kBFloat16, 8, 64, 300, 0, 0.0f, true}, plat);
  EXPECT(bf.data.segBlocks == 4 && bf.data.kChunk == 128 && bf.data.tokenTasks == 1 && bf.data.vocabTasks == 3);
  const LinearCrossEntropyTiling f32 = TileLinearCrossEntropy({DType::kFloat32, 8, 64, 300, 0, 0.0f, true}, plat);
  EXPECT(f32.data.segBlocks == 2 && f32.data.kChunk == 64);
  // an empty side: no task, no launch
  EXPECT(TileLinearCrossEntropy({DType::kFloat16, 0, 64, 300, 0, 0.0f, true}, plat).blockDim == 0);
  EXPECT(TileLinearCrossEntropy({DType::kFloat16, 5, 64, 0, 0, 0.0f, false}, plat).blockDim == 0);
  EXPECT(expect::Throws([&] { TileLinearCrossEntropy({DType::kFloat16, 5, 70000, 10, 0, 0.0f, false}, plat); }));
  // the problem function: shapes, dtypes, attributes
  const OpSpec op{
      "linear_cross_entropy",
      "",
      {"hidden", "weight", "target"},
      {{DType::kFloat16, DType::kFloat16, DType::kInt64}, {DType::kFloat32, DType::kFloat32, DType::kInt64}}};
  const TensorArg<int64_t> h{{7, 40}, DType::kFloat16}, w{{1021, 40}, DType::kFloat16}, tg{{7}, DType::kInt64};
  const LinearCrossEntropyAttrs none{0, 0.0};
  const LinearCrossEntropyArgs<int64_t> a = CheckLinearCrossEntropy(op, h, w, tg, nullptr, none);
  EXPECT(a.tokens == 7 && a.hidden == 40 && a.vocab == 1021 && a.stats == std::vector<int64_t>{7});
  EXPECT(expect::ArgErrorOf([&] {
           CheckLinearCrossEntropy(op, h, TensorArg<int64_t>{{1021, 41}, DType::kFloat16}, tg, nullptr, none);
         }) ==
         "linear_cross_entropy: weight must have hidden's 40 columns (weight [vocab, hidden]), got shape "
         "[1021, 41] for hidden [7, 40]");
  EXPECT(expect::ArgErrorOf([&] {
           CheckLinearCrossEntropy(op, h, w, TensorArg<int64_t>{{6}, DType::kInt64}, nullptr, none);
         }) == "linear_cross_entropy: target must have shape [7] (one per row of hidden), got [6]");
  ArgError::Kind kind{};
  EXPECT(
      expect::ArgErrorOf(
          [&] { CheckLinearCrossEntropy(op, h, TensorArg<int64_t>{{1021, 40}, DType::kFloat32}, tg, nullptr, none); },
          &kind) == "linear_cross_entropy: weight must have hidden's dtype float16, got float32");
  EXPECT(kind == ArgError::kType);
  EXPECT(expect::ArgErrorOf([&] { CheckLinearCrossEntropy(op, h, w, tg, nullptr, {-1, 0.0}); }) ==
         "linear_cross_entropy: vocab_start_index must be >= 0 (the vocabulary id of weight's first row), got -1");
  EXPECT(expect::ArgErrorOf([&] { CheckLinearCrossEntropy(op, h, w, tg, nullptr, {0, -30.0}); }) ==
         "linear_cross_entropy: softcap must be a finite number >= 0 (0: none), got -30");
  return expect::Report();
}
