// Cross-entropy tiling and problem-function unit tests: chunks that fit UB for any C (tails included), rows spread
// over the blocks, the UB plan, and the argument rules every layer shares. Prints "N passed, M failed".
// The fused linear cross-entropy (TestLinearCrossEntropy): its problem function, tasks, buffer plans and workspace.
#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "cross_entropy_buffers.h"
#include "cross_entropy_problem.h"
#include "expect.h"
#include "linear_cross_entropy_buffers.h"
#include "linear_cross_entropy_problem.h"

using namespace tiling;
using expect::Throws;

static CrossEntropyProblem Problem(int64_t rows, int64_t cols, DType dtype, bool weight = false, float ls = 0.0f,
                                   bool backward = false) {
  return {rows, cols, dtype, weight, backward, CROSS_ENTROPY_MEAN, -100, ls, 0.0f, false};
}

// Every column is in exactly one chunk, chunks fit UB, every row in exactly one block.
static CrossEntropyTiling Tile(const CrossEntropyProblem& p, const PlatformInfo& plat) {
  const CrossEntropyTiling t = TileCrossEntropy(p, plat);
  const CrossEntropyTilingData& d = t.data;
  EXPECT(d.rows == p.rows && d.cols == p.cols && d.backward == (p.backward ? 1u : 0u));
  EXPECT(int64_t(d.chunkCount) * d.chunkCols >= d.cols && int64_t(d.chunkCount - 1) * d.chunkCols < d.cols);
  EXPECT(d.chunkCount == 1 ? d.chunkCols == d.cols : d.chunkCols % 64 == 0);  // split rows: aligned chunk starts
  EXPECT(d.chunkElems % 64 == 0 && d.chunkElems >= d.chunkCols && d.chunkElems < d.chunkCols + 64);
  EXPECT(CrossEntropyBuffers(d.chunkElems, ElementBytes(p.dtype), d.weightChunks != 0).Total() <= plat.UbBudget());
  EXPECT(d.weightChunks == (p.hasWeight && p.labelSmoothing > 0.0f ? 1u : 0u));
  if (p.rows == 0) {
    EXPECT(t.blockDim == 0);
  } else {
    EXPECT(t.blockDim >= 1 && t.blockDim <= plat.vectorCores && t.blockDim <= p.rows);
    EXPECT(d.rowsPerBlock * t.blockDim + d.rowsRemainder == d.rows && d.rowsRemainder < t.blockDim);
  }
  EXPECT(t.tilingKey == (p.backward ? CROSS_ENTROPY_KEY_BACKWARD : CROSS_ENTROPY_KEY_FORWARD));
  return t;
}

// The forward's launches cover [0, V) in order, each its splits' whole block pairs; every (split, token block) task
// exists once, every split has blocks, and the tasks fill the groups in waves that end together where the split
// count allows it; the partials sit after the groups' slots.
static void CheckForwardLaunches(const LinearCrossEntropyProblem& p, const LinearCrossEntropyTiling& first,
                                 const CubePlatform& plat) {
  const LinearCrossEntropyTilingData& d = first.data;
  EXPECT(d.launches >= 1 && int64_t(d.launches - 1) * d.launchRows < p.vocab &&
         int64_t(d.launches) * d.launchRows >= p.vocab);
  int64_t covered = 0;
  for (int64_t k = 0; k < d.launches; ++k) {
    const LinearCrossEntropyTiling l = TileLinearCrossEntropyLaunch(first, k, plat);
    const LinearCrossEntropyTilingData& c = l.data;
    EXPECT(c.vocabBegin == covered && c.vocabEnd > c.vocabBegin && c.chained == (k > 0 ? 1 : 0));
    EXPECT(c.vocabBegin % (2 * kLceBlock) == 0 && c.splitBlocks % 2 == 0);  // pairs on the global block grid
    const int64_t blocks = (c.vocabEnd - c.vocabBegin + kLceBlock - 1) / kLceBlock;
    EXPECT(c.vocabSplits * c.splitBlocks >= blocks && (c.vocabSplits - 1) * c.splitBlocks < blocks);
    EXPECT(l.blockDim == uint32_t(std::min<int64_t>(c.tokenTasks * c.vocabSplits, plat.cubeCores)));
    EXPECT(c.partialOffset >= int64_t(l.blockDim) * c.workspacePerGroup && c.partialOffset % 512 == 0);
    EXPECT(l.workspaceBytes >= c.partialOffset + c.vocabSplits * kLceStatistics * p.tokens * 4);
    // no split count gives fewer waves x pairs per task
    const int64_t pairs = (blocks + 1) / 2, cores = plat.cubeCores;
    const auto cost = [&](int64_t s) { return (c.tokenTasks * s + cores - 1) / cores * ((pairs + s - 1) / s); };
    const int64_t chosen = cost((pairs + c.splitBlocks / 2 - 1) / (c.splitBlocks / 2));
    for (int64_t s = 1; s <= std::min(pairs, cores); ++s) EXPECT(chosen <= cost(s));
    covered = c.vocabEnd;
  }
  EXPECT(covered == p.vocab);
  EXPECT(Throws([&] { TileLinearCrossEntropyLaunch(first, d.launches, plat); }));
}

// The backward's launches cover [0, V) in order, in whole blocks but the last; each has the range's vocab tasks and
// every token block's walks of it, and at least as many rows as tokens (grad_hidden's sums cross launches) unless it
// is the only one. All share the fp32 sums of grad_hidden [gradSums][T, H], after the widest launch's groups' slots.
static void CheckBackwardLaunches(const LinearCrossEntropyProblem& p, const LinearCrossEntropyTiling& first,
                                  const CubePlatform& plat) {
  const LinearCrossEntropyTilingData& d = first.data;
  EXPECT(d.launches >= 1 && int64_t(d.launches - 1) * d.launchRows < p.vocab &&
         int64_t(d.launches) * d.launchRows >= p.vocab);
  EXPECT(d.gradSums >= 0 && d.gradSums <= kLceMaxGradSums &&
         (d.gradSums == 0) == (d.launches == 1 && d.vocabSplits == 1));
  if (d.gradSums > 0) {
    EXPECT(d.partialOffset >= int64_t(first.blockDim) * d.workspacePerGroup && d.partialOffset % 512 == 0);
    EXPECT(first.workspaceBytes >= d.partialOffset + d.gradSums * p.tokens * p.hidden * 4);
  }
  if (d.launches > 1) {
    EXPECT(d.launchRows % kLceBlock == 0 && d.launchRows >= p.tokens);
    EXPECT(d.launchRows * p.hidden * ElementBytes(p.dtype) <= kLceL2Budget / 2 || d.launchRows < p.tokens + kLceBlock ||
           d.launchRows == kLceBlock);
  }
  int64_t covered = 0;
  for (int64_t k = 0; k < d.launches; ++k) {
    const LinearCrossEntropyTiling l = TileLinearCrossEntropyLaunch(first, k, plat);
    const LinearCrossEntropyTilingData& c = l.data;
    EXPECT(c.vocabBegin == covered && c.vocabEnd > c.vocabBegin && c.chained == (k > 0 ? 1 : 0));
    EXPECT(c.vocabTasks == (c.vocabEnd - c.vocabBegin + kLceBlock - 1) / kLceBlock);
    // the token walks: every block in one split, none empty, as many as the sums (fewer in a short last launch)
    EXPECT(c.vocabSplits * c.splitBlocks >= c.vocabTasks && (c.vocabSplits - 1) * c.splitBlocks < c.vocabTasks);
    EXPECT(c.vocabSplits == std::max<int64_t>(d.gradSums, 1) || (k == d.launches - 1 && c.vocabSplits < d.gradSums));
    EXPECT(c.tokenTasks == d.tokenTasks && c.partialOffset == d.partialOffset && c.gradSums == d.gradSums);
    EXPECT(l.workspaceBytes == first.workspaceBytes && l.blockDim <= first.blockDim);
    EXPECT(l.blockDim == uint32_t(std::min<int64_t>(c.tokenTasks * c.vocabSplits + c.vocabTasks, plat.cubeCores)));
    covered = c.vocabEnd;
  }
  EXPECT(covered == p.vocab);
  EXPECT(Throws([&] { TileLinearCrossEntropyLaunch(first, d.launches, plat); }));
}

static void CheckLinear(int64_t tokens, int64_t hidden, int64_t vocab, DType dtype, bool backward, bool bias = false,
                        bool classWeight = false) {
  const CubePlatform plat = Ascend910BCube(24);
  const LinearCrossEntropyProblem p{dtype, tokens, hidden, vocab, 0, 0.0f, bias, classWeight, backward};
  const LinearCrossEntropyTiling t = TileLinearCrossEntropy(p, plat, kLceL2Budget);
  const LinearCrossEntropyTilingData& d = t.data;
  const int64_t bytes = ElementBytes(dtype);
  EXPECT(d.tokenTasks * kLceBlock >= tokens && (d.tokenTasks - 1) * kLceBlock < tokens);
  EXPECT(d.vocabTasks == (backward ? (std::min(vocab, d.launchRows) + kLceBlock - 1) / kLceBlock : 0));
  EXPECT(d.kChunk * kLceBlock * bytes * 2 <= int64_t(plat.l0aBytes) && d.kChunk % 16 == 0);
  const LceCubeBuffers cube = LceCubeBuffersOf(uint32_t(bytes), uint32_t(d.kChunk), uint32_t(d.segBlocks),
                                               uint32_t(d.gemmChunk), uint32_t(d.gemmK), backward);
  EXPECT(cube.L1() <= plat.l1Bytes && 2 * cube.l0a <= plat.l0aBytes && 2 * cube.l0b <= plat.l0bBytes);
  EXPECT(2 * cube.l0c <= plat.l0cBytes);
  EXPECT(LceVectorBuffersOf().Total() <= kA2UbBudget);
  // the workspace: score slots, G segments, the accumulator of one block's rows (backward only)
  EXPECT(d.gradOffset == d.scoreSlots * d.scoreSlotBytes && d.scoreSlotBytes >= kLceBlock * kLceBlock * 4);
  if (backward) {
    EXPECT(d.scoreSlots == kLceScoreSlots);
    EXPECT(d.gradSlotBytes >= kLceBlock * d.segBlocks * kLceBlock * bytes);
    EXPECT(d.workspacePerGroup - d.accOffset >= kLceBlock * hidden * 4);
    CheckBackwardLaunches(p, t, plat);
    // the op package's single kernel: one launch over all of V
    const LinearCrossEntropyTiling one = TileLinearCrossEntropy(p, plat);
    EXPECT(one.data.launches == 1 && one.data.vocabEnd == vocab && one.data.vocabTasks == (vocab + 127) / 128);
    CheckBackwardLaunches(p, one, plat);
    if (one.data.gradSums == 0) EXPECT(one.workspaceBytes == int64_t(one.blockDim) * one.data.workspacePerGroup);
  } else {
    EXPECT(d.scoreSlots == kLceForwardScoreSlots && d.workspacePerGroup == d.accOffset && d.gradSlotBytes == 0);
    CheckForwardLaunches(p, t, plat);
    // each launch's footprint fits the L2 budget when its hidden rows leave room for a pair of weight blocks
    const int64_t row = hidden * bytes + (bias ? bytes : 0) + (classWeight ? 4 : 0);
    if (d.launches > 1) EXPECT(tokens * hidden * bytes + d.launchRows * row <= kLceL2Budget);
    // the op package's single kernel: one launch over all of V
    const LinearCrossEntropyTiling one = TileLinearCrossEntropy(p, plat);
    EXPECT(one.data.launches == 1 && one.data.vocabBegin == 0 && one.data.vocabEnd == vocab);
    CheckForwardLaunches(p, one, plat);
  }
}

static CubePlatform plat24() { return Ascend910BCube(24); }

// The fused linear cross-entropy's problem function and tiling.
static void TestLinearCrossEntropy() {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16})
    for (bool backward : {false, true}) {
      CheckLinear(4096, 4096, 152064, dtype, backward);  // Qwen2's vocabulary, a training batch
      CheckLinear(1, 40, 1021, dtype, backward);          // one token, odd sizes
      CheckLinear(83, 5125, 32000, dtype, backward);
      for (int64_t tokens : {1, 7, 83, 1024})  // odd T, V tails (1021, 300, 32000 + 7), every option
        for (int64_t vocab : {1021, 300, 32007})
          for (int options = 0; options < 4; ++options)
            CheckLinear(tokens, 64, vocab, dtype, backward, (options & 1) != 0, (options & 2) != 0);
    }
  // cann-bench's LinearCrossEntropy at T 1024: 8 token blocks x 3 splits fill the 24 groups in one wave per launch;
  // the vocabularies past the L2 budget take several launches, each a whole number of 3 x 2 blocks
  for (int64_t vocab : {32000, 128256, 152064}) {
    const LinearCrossEntropyTiling c = TileLinearCrossEntropy(
        {DType::kBFloat16, 1024, 4096, vocab, 0, 0.0f, false, false, false}, plat24(), kLceL2Budget);
    EXPECT(c.data.vocabSplits == 3 && c.blockDim == 24 && c.data.launches > 1 && c.data.launchRows % 768 == 0);
  }
  // the backward at cann-bench's sizes: launches of at least T rows, half the L2 budget of weight rows where T allows
  for (const auto& [tokens, hidden, vocab, launches] :
       std::vector<std::array<int64_t, 4>>{{1024, 4096, 32000, 6}, {4096, 8192, 152064, 38}, {8192, 4096, 32000, 4}}) {
    const LinearCrossEntropyTiling c = TileLinearCrossEntropy(
        {DType::kBFloat16, tokens, hidden, vocab, 0, 0.0f, false, false, true}, plat24(), kLceL2Budget);
    EXPECT(c.data.launches == launches && c.blockDim == 24);
  }
  // the backward's token walks: T 1024's 8 token blocks in 3 splits (24 walks beside the vocab tasks)
  EXPECT(
      TileLinearCrossEntropy({DType::kBFloat16, 1024, 4096, 32000, 0, 0.0f, false, false, true}, plat24(), kLceL2Budget)
          .data.gradSums == 3);
  // T 1: one token block, its vocabulary in up to 24 splits
  const LinearCrossEntropyTiling single =
      TileLinearCrossEntropy({DType::kBFloat16, 1, 64, 32000, 0, 0.0f, false, false, false}, plat24(), kLceL2Budget);
  EXPECT(single.data.launches == 1 && single.data.vocabSplits >= 21 && single.blockDim == single.data.vocabSplits);
  // 16-bit dtypes: 4 blocks of G per segment and 128-column chunks of H; fp32 half of each
  const CubePlatform plat = Ascend910BCube(24);
  const LinearCrossEntropyTiling bf =
      TileLinearCrossEntropy({DType::kBFloat16, 8, 64, 300, 0, 0.0f, false, false, true}, plat);
  EXPECT(bf.data.segBlocks == 4 && bf.data.kChunk == 128 && bf.data.tokenTasks == 1 && bf.data.vocabTasks == 3);
  const LinearCrossEntropyTiling f32 =
      TileLinearCrossEntropy({DType::kFloat32, 8, 64, 300, 0, 0.0f, false, false, true}, plat);
  EXPECT(f32.data.segBlocks == 2 && f32.data.kChunk == 64);
  // an empty side: no task, no launch
  EXPECT(TileLinearCrossEntropy({DType::kFloat16, 0, 64, 300, 0, 0.0f, false, false, true}, plat).blockDim == 0);
  EXPECT(TileLinearCrossEntropy({DType::kFloat16, 5, 64, 0, 0, 0.0f, false, false, false}, plat).blockDim == 0);
  EXPECT(expect::Throws(
      [&] { TileLinearCrossEntropy({DType::kFloat16, 5, 70000, 10, 0, 0.0f, false, false, false}, plat); }));
  // the problem function: shapes, dtypes, attributes
  const OpSpec op{"linear_cross_entropy",
                  "",
                  {"hidden", "weight", "target", "bias", "class_weight"},
                  {{DType::kFloat16, DType::kFloat16, DType::kInt64, DType::kFloat16, DType::kFloat32},
                   {DType::kFloat32, DType::kFloat32, DType::kInt64, DType::kFloat32, DType::kFloat32}}};
  const TensorArg<int64_t> h{{7, 40}, DType::kFloat16}, w{{1021, 40}, DType::kFloat16}, tg{{7}, DType::kInt64};
  const LinearCrossEntropyAttrs none{0, 0.0};
  const TensorArg<int64_t> absent{{}, DType::kOther, false};
  const LinearCrossEntropyArgs<int64_t> a = CheckLinearCrossEntropy(op, h, w, tg, nullptr, absent, absent, none);
  EXPECT(a.tokens == 7 && a.hidden == 40 && a.vocab == 1021 && a.stats == std::vector<int64_t>{7});
  EXPECT(!a.hasBias && !a.hasClassWeight);
  // bias and class weights: one per row of weight, bias in hidden's dtype, class weights fp32
  const TensorArg<int64_t> bias{{1021}, DType::kFloat16}, classWeight{{1021}, DType::kFloat32};
  EXPECT(CheckLinearCrossEntropy(op, h, w, tg, nullptr, bias, classWeight, none).hasBias);
  EXPECT(expect::ArgErrorOf([&] {
           CheckLinearCrossEntropy(op, h, w, tg, nullptr, TensorArg<int64_t>{{1020}, DType::kFloat16}, absent, none);
         }) == "linear_cross_entropy: bias must have shape [1021] (one per row of weight), got [1020]");
  EXPECT(expect::ArgErrorOf([&] {
           CheckLinearCrossEntropy(op, h, w, tg, nullptr, TensorArg<int64_t>{{1021}, DType::kFloat32}, absent, none);
         }) == "linear_cross_entropy: bias must have hidden's dtype float16, got float32");
  EXPECT(expect::ArgErrorOf([&] {
           CheckLinearCrossEntropy(op, h, w, tg, nullptr, absent, TensorArg<int64_t>{{1021}, DType::kFloat16}, none);
         }) == "linear_cross_entropy: class_weight must be one of float32, got float16");
  EXPECT(expect::ArgErrorOf([&] {
           CheckLinearCrossEntropy(op, h, TensorArg<int64_t>{{1021, 41}, DType::kFloat16}, tg, nullptr, absent, absent,
                                   none);
         }) ==
         "linear_cross_entropy: weight must have hidden's 40 columns (weight [vocab, hidden]), got shape "
         "[1021, 41] for hidden [7, 40]");
  EXPECT(expect::ArgErrorOf([&] {
           CheckLinearCrossEntropy(op, h, w, TensorArg<int64_t>{{6}, DType::kInt64}, nullptr, absent, absent, none);
         }) == "linear_cross_entropy: target must have shape [7] (one per row of hidden), got [6]");
  ArgError::Kind kind{};
  EXPECT(expect::ArgErrorOf(
             [&] {
               CheckLinearCrossEntropy(op, h, TensorArg<int64_t>{{1021, 40}, DType::kFloat32}, tg, nullptr, absent,
                                       absent, none);
             },
             &kind) == "linear_cross_entropy: weight must have hidden's dtype float16, got float32");
  EXPECT(kind == ArgError::kType);
  EXPECT(expect::ArgErrorOf([&] { CheckLinearCrossEntropy(op, h, w, tg, nullptr, absent, absent, {-1, 0.0}); }) ==
         "linear_cross_entropy: vocab_start_index must be >= 0 (the vocabulary id of weight's first row), got -1");
  EXPECT(expect::ArgErrorOf([&] { CheckLinearCrossEntropy(op, h, w, tg, nullptr, absent, absent, {0, -30.0}); }) ==
         "linear_cross_entropy: softcap must be a finite number >= 0 (0: none), got -30");
}

int main() {
  TestLinearCrossEntropy();
  const PlatformInfo b2 = Ascend910B(48), cpu = CpuTwin(2);
  // The UB plan per 64 columns: queues 2 x 2 chunks in T, fp32 widened (16-bit), work, weight chunk.
  const uint32_t fixed = CrossEntropyBuffers(0, 4, false).Total();
  EXPECT(CrossEntropyBuffers(64, 4, false).Total() - fixed == 64 * 20 + 8);
  EXPECT(CrossEntropyBuffers(64, 2, false).Total() - fixed == 64 * 16 + 8);
  EXPECT(CrossEntropyBuffers(64, 2, true).Total() - fixed == 64 * 20 + 8);
  EXPECT(CrossEntropyMaxChunk(DType::kFloat32, false, b2) == 9280);
  EXPECT(CrossEntropyMaxChunk(DType::kBFloat16, false, b2) == 11584);

  for (const DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16})
    for (const int64_t cols : {1, 7, 1021, 9280, 9281, 32000, 152064, 262144, 1000003})
      for (const int64_t rows : {0, 1, 7, 83, 4096})
        for (const bool weight : {false, true})
          for (const float ls : {0.0f, 0.1f}) {
            Tile(Problem(rows, cols, dt, weight, ls), b2);
            Tile(Problem(rows, cols, dt, weight, ls, true), cpu);
          }

  // Rows that fit one chunk stay whole; longer ones take the fewest equal chunks (the last one shorter).
  EXPECT(Tile(Problem(7, 1021, DType::kFloat32), b2).data.chunkCount == 1);
  const CrossEntropyTiling v = Tile(Problem(7, 152064, DType::kBFloat16), b2);
  EXPECT(v.data.chunkCount == 14 && v.data.chunkCols == 10880 && v.blockDim == 7);
  const CrossEntropyTiling q = Tile(Problem(1, 32000, DType::kFloat32), b2);
  EXPECT(q.data.chunkCount == 4 && q.data.chunkCols == 8000 && q.blockDim == 1);
  const CrossEntropyTiling many = Tile(Problem(4096, 32000, DType::kFloat16), b2);
  EXPECT(many.blockDim == 48 && many.data.rowsPerBlock == 85 && many.data.rowsRemainder == 16);
  EXPECT(Throws([&] { TileCrossEntropy(Problem(-1, 8, DType::kFloat32), b2); }));
  EXPECT(Throws([&] { TileCrossEntropy(Problem(1, 0, DType::kFloat32), b2); }));

  // The problem function (no torch): the rules and the output shapes every layer uses.
  const std::vector<std::vector<DType>> floats = {{DType::kFloat16, DType::kInt64, DType::kFloat32},
                                                  {DType::kFloat32, DType::kInt64, DType::kFloat32},
                                                  {DType::kBFloat16, DType::kInt64, DType::kFloat32}};
  const OpSpec fwd{"cross_entropy_loss", "", {"input", "target", "weight"}, floats};
  const TensorArg<int64_t> x{{7, 10}, DType::kFloat32}, t{{7}, DType::kInt64}, w{{10}, DType::kFloat32};
  const TensorArg<int64_t> none{{}, DType::kOther, false};
  CrossEntropyAttrs attrs;
  const CrossEntropyArgs<int64_t> a = CheckCrossEntropyLoss(fwd, x, t, none, attrs);
  EXPECT(a.rows == 7 && a.cols == 10 && a.reduction == CROSS_ENTROPY_MEAN);
  EXPECT((a.loss == std::vector<int64_t>{1}) && (a.logProb == std::vector<int64_t>{7, 10}));
  EXPECT((a.zloss == std::vector<int64_t>{0}) && (a.lse == std::vector<int64_t>{0}));
  attrs.reduction = "none";
  attrs.returnZloss = true;
  attrs.lseSquareScale = 1e-4f;
  const CrossEntropyArgs<int64_t> b = CheckCrossEntropyLoss(fwd, x, t, w, attrs);
  EXPECT((b.loss == std::vector<int64_t>{7}) && (b.zloss == std::vector<int64_t>{7}) &&
         (b.lse == std::vector<int64_t>{7}));
  ArgError::Kind kind{};
  const auto error = [&](CrossEntropyAttrs at, const TensorArg<int64_t>& xx, const TensorArg<int64_t>& tt,
                         const TensorArg<int64_t>& ww) {
    return expect::ArgErrorOf([&] { CheckCrossEntropyLoss(fwd, xx, tt, ww, at); }, &kind);
  };
  CrossEntropyAttrs bad;
  bad.reduction = "avg";
  EXPECT(error(bad, x, t, none) == "cross_entropy_loss: reduction must be one of 'mean', 'sum', 'none', got 'avg'");
  EXPECT(kind == ArgError::kValue);
  EXPECT(error({}, TensorArg<int64_t>{{7, 10, 2}, DType::kFloat32}, t, none) ==
         "cross_entropy_loss: input must be 2-D [N, C], got shape [7, 10, 2]");
  EXPECT(error({}, x, TensorArg<int64_t>{{6}, DType::kInt64}, none) ==
         "cross_entropy_loss: target must have shape [N] = [7] (input shape [7, 10]), got [6]");
  EXPECT(error({}, x, TensorArg<int64_t>{{7}, DType::kInt32}, none) ==
         "cross_entropy_loss: target must be one of int64, got int32");
  EXPECT(kind == ArgError::kType);
  EXPECT(error({}, x, t, TensorArg<int64_t>{{9}, DType::kFloat32}) ==
         "cross_entropy_loss: weight must have shape [C] = [10] (input shape [7, 10]), got [9]");
  EXPECT(error({}, x, t, TensorArg<int64_t>{{10}, DType::kFloat16}) ==
         "cross_entropy_loss: weight must be one of float32, got float16");
  EXPECT(error({}, TensorArg<int64_t>{{7, 0}, DType::kFloat32}, t, none) ==
         "cross_entropy_loss: input must have C = input.size(1) > 0, got shape [7, 0]");
  bad = {};
  bad.ignoreIndex = 10;
  EXPECT(error(bad, x, t, none) == "cross_entropy_loss: ignore_index must be < C = 10, got 10");
  bad = {};
  bad.labelSmoothing = 1.0f;
  EXPECT(error(bad, x, t, none) == "cross_entropy_loss: label_smoothing must be in [0.0, 1.0), got 1");
  bad = {};
  bad.lseSquareScale = -0.5f;
  EXPECT(error(bad, x, t, none) == "cross_entropy_loss: lse_square_scale_for_zloss must be in [0.0, 1.0), got -0.5");

  // Backward: grad_loss by reduction, lse_for_zloss required with a z-loss scale.
  const OpSpec bwd{
      "cross_entropy_loss_grad",
      "",
      {"grad_loss", "log_prob", "target", "weight", "grad_zloss", "lse_for_zloss"},
      {{DType::kFloat32, DType::kFloat32, DType::kInt64, DType::kFloat32, DType::kFloat32, DType::kFloat32}}};
  const TensorArg<int64_t> g0{{}, DType::kFloat32}, g1{{1}, DType::kFloat32}, gn{{7}, DType::kFloat32};
  EXPECT(CheckCrossEntropyLossGrad(bwd, g0, x, t, none, none, none, {}).logProb == x.shape);
  EXPECT(CheckCrossEntropyLossGrad(bwd, g1, x, t, w, g1, none, {}).logProb == x.shape);
  CrossEntropyAttrs rn;
  rn.reduction = "none";
  EXPECT(expect::ArgErrorOf([&] { CheckCrossEntropyLossGrad(bwd, g1, x, t, none, none, none, rn); }) ==
         "cross_entropy_loss_grad: grad_loss must have shape [N] = [7] for reduction 'none', got [1]");
  EXPECT(expect::ArgErrorOf([&] { CheckCrossEntropyLossGrad(bwd, gn, x, t, none, none, none, {}); }) ==
         "cross_entropy_loss_grad: grad_loss must have shape [] or [1] for reduction 'mean', got [7]");
  EXPECT(
      expect::ArgErrorOf(
          [&] { CheckCrossEntropyLossGrad(bwd, TensorArg<int64_t>{{}, DType::kFloat16}, x, t, none, none, none, {}); },
          &kind) == "cross_entropy_loss_grad: grad_loss must have log_prob's dtype float32, got float16");
  EXPECT(kind == ArgError::kType);
  CrossEntropyAttrs z;
  z.lseSquareScale = 0.25f;
  EXPECT(expect::ArgErrorOf([&] { CheckCrossEntropyLossGrad(bwd, g0, x, t, none, none, none, z); }) ==
         "cross_entropy_loss_grad: lse_for_zloss (the forward's lse_for_zloss, [N]) is required when "
         "lse_square_scale_for_zloss != 0, got None (lse_square_scale_for_zloss = 0.25)");
  EXPECT(CheckCrossEntropyLossGrad(bwd, g0, x, t, none, g0, gn, z).logProb == x.shape);
  return expect::Report();
}
