// SwiGLU tiling unit tests: tiling keys, block counts, tile sizes and the UB budget for the 910B
// (40 and 48 vector cores) and the CPU twin. Prints "N passed, M failed"; exits non-zero on any failure.
#include <cstdio>
#include <functional>
#include <string>

#include "swiglu_problem.h"
#include "expect.h"

using namespace tiling;
using expect::Throws;

// Every element is covered exactly once, tiles stay within UB and DataCopyPad limits.
static void CheckInvariants(const SwigluTiling& t, const SwigluProblem& p, const PlatformInfo& plat) {
  const SwigluTilingData& d = t.data;
  EXPECT(t.blockDim >= 1 && t.blockDim <= plat.vectorCores);
  EXPECT(d.outer == p.outer && d.inner == p.inner && d.backward == (p.backward ? 1u : 0u));
  EXPECT(d.tasksPerBlock * t.blockDim + d.tasksRemainder == d.taskCount);
  EXPECT(d.tasksRemainder < t.blockDim);
  EXPECT(d.taskCount == d.rowTiles * d.colTiles);
  EXPECT(d.packed == (!p.backward && p.inner == 1 ? 1u : 0u));
  if (d.packed) {  // one unpadded run of pairs per tile: whole blocks of 16 rows, within UB and one Gather
    EXPECT(t.tilingKey == SWIGLU_KEY_FORWARD_PACKED && d.colTiles == 1 && d.tileCols == 1);
    EXPECT(d.tileRows % 16 == 0 && d.tileRows <= 255u * 256u / ElementBytes(p.dtype));
    EXPECT(uint64_t(d.tileRows) * SwigluPackedBytesPerRow(p.dtype) <= plat.UbBudget());
    EXPECT(int64_t(d.rowTiles) * d.tileRows >= d.outer && int64_t(d.rowTiles - 1) * d.tileRows < d.outer);
    return;
  }
  EXPECT(d.tileRows >= 1 && d.tileRows <= 4095 && d.tileCols >= 1);
  EXPECT(int64_t(d.rowTiles) * d.tileRows >= d.outer && int64_t(d.rowTiles - 1) * d.tileRows < d.outer);
  EXPECT(int64_t(d.colTiles) * d.tileCols >= d.inner && int64_t(d.colTiles - 1) * d.tileCols < d.inner);
  EXPECT(d.tilePitch == RowPitch(d.tileCols, p.dtype));
  EXPECT(uint64_t(d.tileRows) * d.tilePitch * SwigluBytesPerElem(p.dtype, p.backward) <= plat.UbBudget());
  // a split row's tiles start on 32-byte boundaries of the row
  if (d.colTiles > 1) EXPECT(d.tileCols * ElementBytes(p.dtype) % 32 == 0);
  const bool split = d.colTiles > 1;
  const SwigluTilingKey want = p.backward ? (split ? SWIGLU_KEY_BACKWARD_SPLIT_ROWS : SWIGLU_KEY_BACKWARD_WHOLE_ROWS)
                                          : (split ? SWIGLU_KEY_FORWARD_SPLIT_ROWS : SWIGLU_KEY_FORWARD_WHOLE_ROWS);
  EXPECT(t.tilingKey == want);
}

static SwigluTiling Tile(const SwigluProblem& p, const PlatformInfo& plat) {
  SwigluTiling t = TileSwiglu(p, plat);
  CheckInvariants(t, p, plat);
  return t;
}

int main() {
  const PlatformInfo b3 = Ascend910B(40), b2 = Ascend910B(48), cpu = CpuTwin(2);
  const uint32_t budget = 184 * 1024;
  EXPECT(b3.UbBudget() == budget);

  // Bytes per tile element: queues (double-buffered) plus fp32 work buffers.
  EXPECT(SwigluBytesPerElem(DType::kFloat32, false) == 24);
  EXPECT(SwigluBytesPerElem(DType::kFloat16, false) == 24);
  EXPECT(SwigluBytesPerElem(DType::kBFloat16, false) == 24);
  EXPECT(SwigluBytesPerElem(DType::kFloat32, true) == 48);
  EXPECT(SwigluBytesPerElem(DType::kBFloat16, true) == 44);  // fp32 dA reuses B's widened buffer
  EXPECT(SwigluBytesPerElem(DType::kFloat16, true) == 44);

  // Sweep: rows x inner x dtype x direction x platform all keep the invariants.
  for (const PlatformInfo& plat : {b3, b2, cpu})
    for (int64_t outer : {1, 7, 83, 4096, 100000, 1000003})
      for (int64_t inner : {1, 8, 769, 5125, 11008, 13824, 100000})
        for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16})
          for (bool bwd : {false, true}) Tile({outer, inner, dt, bwd}, plat);

  // LLaMA MLP forward, 4096 tokens x 11008 fp32: a row (11008 * 24 bytes) does not fit, so rows split
  // into two even column tiles of whole 32-byte blocks; every core busy.
  SwigluTiling mlp = Tile({4096, 11008, DType::kFloat32, false}, b3);
  EXPECT(mlp.tilingKey == SWIGLU_KEY_FORWARD_SPLIT_ROWS);
  EXPECT(mlp.data.colTiles == 2 && mlp.data.tileCols == 5504 && mlp.data.tileRows == 1);
  EXPECT(mlp.blockDim == 40 && mlp.data.taskCount == 8192);
  // its bf16 backward needs 44 bytes per element: three column tiles
  SwigluTiling mlpGrad = Tile({4096, 11008, DType::kBFloat16, true}, b2);
  EXPECT(mlpGrad.tilingKey == SWIGLU_KEY_BACKWARD_SPLIT_ROWS);
  EXPECT(mlpGrad.data.colTiles == 3 && mlpGrad.data.tileCols == 3680 && mlpGrad.blockDim == 48);

  // Rows that fit: whole rows, as many per tile as UB holds once every core has work.
  SwigluTiling wide = Tile({4096, 769, DType::kFloat16, false}, b3);
  EXPECT(wide.tilingKey == SWIGLU_KEY_FORWARD_WHOLE_ROWS && wide.data.colTiles == 1);
  EXPECT(wide.data.tileCols == 769 && wide.data.tilePitch == 784);
  EXPECT(wide.data.tileRows == budget / (784 * 24));  // 10 rows: UB-bound
  EXPECT(wide.blockDim == 40);
  SwigluTiling narrow = Tile({4096, 8, DType::kFloat32, false}, b2);
  EXPECT(narrow.data.tileRows == 86 && narrow.data.rowTiles == 48 && narrow.blockDim == 48);  // balance-bound
  // A last dim of 2 forward (cann-bench SwiGlu case 12, 1,000,003 rows bf16): packed pairs, 32 bytes a row,
  // tiles a multiple of the cores in number (4 per core) and as large as that allows.
  EXPECT(SwigluPackedBytesPerRow(DType::kBFloat16) == 32 && SwigluPackedBytesPerRow(DType::kFloat32) == 36);
  SwigluTiling pairs = Tile({1000003, 1, DType::kBFloat16, false}, b2);
  EXPECT(pairs.blockDim == 48 && pairs.data.taskCount == 192 && pairs.data.tasksRemainder == 0);
  EXPECT(pairs.data.tileRows == 5216);
  SwigluTiling fewPairs = Tile({7, 1, DType::kFloat32, false}, b2);
  EXPECT(fewPairs.data.tileRows == 16 && fewPairs.blockDim == 1);
  SwigluTiling tiny = Tile({100000, 1, DType::kBFloat16, true}, b3);
  EXPECT(tiny.data.tilePitch == 16 && tiny.data.tileRows == budget / (16 * 44));  // 267: UB-bound

  // Few rows: long rows are split so idle cores get columns, never below kSwigluMinSplitCols.
  SwigluTiling one = Tile({1, 11008, DType::kFloat16, false}, b3);
  EXPECT(one.data.colTiles == 10 && one.data.tileCols == 1104 && one.blockDim == 10);
  SwigluTiling oneShort = Tile({1, 769, DType::kFloat32, false}, b3);
  EXPECT(oneShort.data.colTiles == 1 && oneShort.blockDim == 1);
  SwigluTiling seven = Tile({7, 5125, DType::kFloat32, true}, b3);
  EXPECT(seven.data.colTiles == 5 && seven.data.tileCols == 1032 && seven.blockDim == 35);
  // the twin with 2 threads: rows are enough, no split
  SwigluTiling twin = Tile({83, 5125, DType::kFloat32, false}, cpu);
  EXPECT(twin.data.colTiles == 1 && twin.data.tileRows == 1 && twin.blockDim == 2);

  // Empty: nothing to launch.
  EXPECT(TileSwiglu({0, 11008, DType::kFloat32, false}, b3).blockDim == 0);
  EXPECT(TileSwiglu({83, 0, DType::kFloat16, true}, b3).blockDim == 0);

  // Refused: negative sizes, rows past DataCopyPad's 32-bit byte strides.
  EXPECT(Throws([&] { TileSwiglu({-1, 8, DType::kFloat32, false}, b3); }));
  EXPECT(Throws([&] { TileSwiglu({1, int64_t(1) << 31, DType::kFloat32, false}, b3); }));
  EXPECT(!Throws([&] { TileSwiglu({1, int64_t(1) << 28, DType::kFloat32, false}, b3); }));

  // The problem function (no torch): the argument rules and the output shape every layer uses.
  const OpSpec fwd{"swiglu", "", {"x"}, {{DType::kFloat16}, {DType::kFloat32}}};
  const OpSpec bwd{"swiglu_grad", "", {"dy", "x"}, {{DType::kFloat16, DType::kFloat16}}};
  const TensorArg<int64_t> x{{3, 8, 5}, DType::kFloat32};
  const SwigluArgs<int64_t> a = CheckSwiglu(fwd, nullptr, x, 1);
  EXPECT(a.outer == 3 && a.inner == 20 && (a.out == std::vector<int64_t>{3, 4, 5}));
  ArgError::Kind kind{};
  EXPECT(expect::ArgErrorOf([&] { CheckSwiglu(fwd, nullptr, x, 2); }, &kind) ==
         "swiglu: x.size(2) must be even to split into two halves, got 5 (x shape [3, 8, 5])");
  EXPECT(kind == ArgError::kValue);
  EXPECT(expect::ArgErrorOf([&] { CheckSwiglu(fwd, nullptr, x, 3); }) ==
         "swiglu: dim must be in [-3, 2] for x of shape [3, 8, 5], got 3");
  EXPECT(expect::ArgErrorOf([&] { CheckSwiglu(fwd, nullptr, TensorArg<int64_t>{{4}, DType::kBFloat16}, -1); }, &kind) ==
         "swiglu: x must be one of float16, float32, got bfloat16");
  EXPECT(kind == ArgError::kType);
  const TensorArg<int64_t> dy{{3, 8, 4}, DType::kFloat16}, xh{{3, 8, 8}, DType::kFloat16};
  EXPECT(expect::ArgErrorOf([&] { CheckSwiglu(bwd, &dy, xh, 1); }) ==
         "swiglu_grad: dy must have shape [3, 4, 8] (x shape [3, 8, 8] with dim 1 halved), got [3, 8, 4]");
  EXPECT(CheckSwiglu(bwd, &dy, xh, -1).out == xh.shape);

  return expect::Report();
}
