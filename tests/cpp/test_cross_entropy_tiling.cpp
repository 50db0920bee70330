// Cross-entropy tiling and problem-function unit tests: chunks that fit UB for any C (tails included), rows spread
// over the blocks, the UB plan, and the argument rules every layer shares. Prints "N passed, M failed".
#include <cstdio>
#include <vector>

#include "cross_entropy_buffers.h"
#include "cross_entropy_problem.h"
#include "expect.h"

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

int main() {
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
