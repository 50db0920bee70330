// RMSNorm tiling unit tests: block counts, tile rows / chunks, the UB budget and the tiling key
// for the 910B (40 and 48 vector cores) and the CPU twin. Prints "N passed, M failed".
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "rms_norm_problem.h"
#include "expect.h"

using namespace tiling;
using expect::Throws;

static void CheckInvariants(const NormProblem& p, const NormTiling& t, const PlatformInfo& plat) {
  const NormTilingData& d = t.data;
  EXPECT(t.blockDim >= 1 && t.blockDim <= plat.vectorCores);
  EXPECT(d.rowsPerBlock * t.blockDim + d.rowsRemainder == p.rows);
  EXPECT(d.rowsRemainder < t.blockDim);
  EXPECT(d.packedRows == (NormPackedRows(p) ? 1u : 0u));
  if (d.packedRows) {  // one unpadded run per tile: whole blocks of 8 rows, within UB and one Gather
    EXPECT(t.tilingKey == NORM_SINGLE_PASS && !d.shortRows && d.tileRows >= 8 && d.tileRows % 8 == 0);
    EXPECT(NormPackedBytes(p, d.tileRows) <= plat.UbBudget());
    EXPECT(d.tileRows * d.hidden <= NORM_PACKED_MAX_ELEMS && d.chunk == d.hidden && d.chunkCount == 1);
    EXPECT(d.tileRows < 16 || d.tileRows - 8 < d.rowsPerBlock + (d.rowsRemainder ? 1 : 0));  // no idle tile
  } else if (t.tilingKey == NORM_SINGLE_PASS) {
    EXPECT(d.tileRows >= 1 && d.tileRows <= kNormMaxTileRows);
    EXPECT(NormSinglePassBytes(p, d.tileRows, d.bufferNum, d.dxOutLate) <= plat.UbBudget());
    EXPECT(d.bufferNum == 2 || NormSinglePassBytes(p, 1, 2) > plat.UbBudget());  // single-buffered only when needed
    // dx_out loaded late only for add backward, single-buffered, when its own queue does not fit
    EXPECT(!d.dxOutLate || (p.add && p.backward && d.bufferNum == 1 && NormSinglePassBytes(p, 1, 1) > plat.UbBudget()));
    EXPECT(d.chunkCount == 1 && d.chunk == d.rowPitch);
    EXPECT(d.shortRows == (NormShortRows(p) ? 1u : 0u));
    EXPECT(!d.shortRows || d.tileRows <= 8 || d.tileRows % 8 == 0);  // whole blocks of 8 rows
    EXPECT(!d.shortRows || d.tileRows * d.hidden <= 255u * 64u);       // one Gather spreads a tile's rstd
  } else {
    EXPECT(d.tileRows == 1 && d.chunk % 16 == 0 && d.chunk > 0);
    EXPECT(NormSplitRowBytes(p, d.chunk) <= plat.UbBudget() && d.dxOutLate == 0);
    EXPECT(uint64_t(d.chunk) * d.chunkCount >= d.hidden && uint64_t(d.chunk) * (d.chunkCount - 1) < d.hidden);
  }
  if (p.backward) {
    EXPECT(t.reduceBlockDim >= 1 && t.reduceBlockDim <= plat.vectorCores);
    EXPECT(d.reduceTasksPerBlock * t.reduceBlockDim + d.reduceTasksRemainder == d.reduceTasks);
    EXPECT(NormReduceBytes(p.gammaDtype, d.reduceChunk) <= plat.UbBudget());
  }
}

int main() {
  const PlatformInfo b3 = Ascend910B(40), b2 = Ascend910B(48), cpu = CpuTwin(2);
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, bf16 = DType::kBFloat16;
  for (const PlatformInfo& plat : {b3, b2, cpu}) {
    for (bool backward : {false, true}) {
      for (bool add : {false, true}) {
        for (uint32_t hidden : {1u, 2u, 3u, 4u, 8u, 16u, 128u, 769u, 4096u, 5125u, 16384u, 32768u}) {
          for (int64_t rows : {int64_t(1), int64_t(7), int64_t(83), int64_t(4096), int64_t(1000003)}) {
            for (auto pair : {std::pair{f32, f32}, std::pair{f16, f32}, std::pair{bf16, bf16}}) {
              NormProblem p{rows, hidden, pair.first, pair.second, add, backward, 1e-6f};
              CheckInvariants(p, TileNorm(p, plat), plat);
              if (!add) {  // gated_rms_norm and its grad
                p.gated = true;
                CheckInvariants(p, TileNorm(p, plat), plat);
              }
            }
          }
        }
      }
    }
  }
  // Gemma's (1 + gamma): the offset reaches the kernel; the UB plan is rms_norm's (the Adds is in place)
  const NormTiling gemma = TileNorm({83, 769, bf16, bf16, false, true, 0.0f, 1.0f}, b3);
  const NormTiling plain = TileNorm({83, 769, bf16, bf16, false, true, 0.0f}, b3);
  EXPECT(gemma.data.gammaOffset == 1.0f && plain.data.gammaOffset == 0.0f &&
         gemma.data.tileRows == plain.data.tileRows);
  // Many short rows (cann-bench RmsNorm case 20, 104,448 rows of 128 fp32): the short-rows tiling, tiles of
  // whole blocks of 8 rows; not for a padded row (bf16 8), a row that is no power of two, or backward.
  NormTiling sr = TileNorm({104448, 128, f32, f32, false, false, 1e-6f}, b2);
  EXPECT(sr.tilingKey == NORM_SINGLE_PASS && sr.data.shortRows == 1 && sr.data.tileRows % 8 == 0);
  EXPECT(sr.data.tileRows >= 32);
  EXPECT(!TileNorm({4096, 8, bf16, bf16, false, false, 1e-6f}, b2).data.shortRows);
  EXPECT(!TileNorm({4096, 96, f32, f32, false, false, 1e-6f}, b2).data.shortRows);
  EXPECT(!TileNorm({4096, 128, f32, f32, false, true, 1e-6f}, b2).data.shortRows);
  EXPECT(TileNorm({4096, 16, bf16, bf16, true, false, 1e-6f}, b2).data.shortRows == 1);
  // Rows shorter than a 32-byte block (cann-bench RmsNorm case 15, 1,000,003 rows of 2 bf16): the packed
  // tiling, for power-of-two rows of 1..16 bytes in rms_norm forward only; not for add, backward, a row of
  // 32 bytes (fp32 8: short rows) or one that is no power of two.
  const NormTiling pk = TileNorm({1000003, 2, bf16, bf16, false, false, 1e-6f}, b2);
  EXPECT(pk.data.packedRows == 1 && pk.blockDim == 48 && pk.data.tileRows >= 2048);
  EXPECT(NormPackedBytes({1000003, 2, bf16, bf16, false, false, 1e-6f}, pk.data.tileRows + 8) > b2.UbBudget() ||
         (pk.data.tileRows + 8) * 2 > NORM_PACKED_MAX_ELEMS);  // the largest tile that fits
  for (uint32_t n : {1u, 2u, 4u}) EXPECT(TileNorm({83, n, f32, f32, false, false, 1e-6f}, b2).data.packedRows == 1);
  EXPECT(TileNorm({83, 8, f16, f32, false, false, 1e-6f}, b2).data.packedRows == 1);
  EXPECT(TileNorm({83, 8, bf16, bf16, false, false, 1e-6f, 1.0f}, b2).data.packedRows == 1);  // gemma
  EXPECT(!TileNorm({83, 8, f32, f32, false, false, 1e-6f}, b2).data.packedRows);
  EXPECT(!TileNorm({83, 16, bf16, bf16, false, false, 1e-6f}, b2).data.packedRows);
  EXPECT(!TileNorm({83, 3, bf16, bf16, false, false, 1e-6f}, b2).data.packedRows);
  EXPECT(!TileNorm({83, 2, bf16, bf16, true, false, 1e-6f}, b2).data.packedRows);
  EXPECT(!TileNorm({83, 2, bf16, bf16, false, true, 1e-6f}, b2).data.packedRows);
  NormProblem gatedPair{83, 2, bf16, bf16, false, false, 1e-6f};  // the gated norm keeps its z queue
  gatedPair.gated = true;
  EXPECT(!NormPackedRows(gatedPair) && !TileNorm(gatedPair, b2).data.packedRows);
  // Llama hidden 4096 fp32 forward: whole rows fit, every core gets rows; two per tile, as x is read
  // where it landed (no fp32 copy of it).
  NormTiling l = TileNorm({8192, 4096, f32, f32, false, false, 1e-6f}, b3);
  EXPECT(l.tilingKey == NORM_SINGLE_PASS && l.blockDim == 40 && l.data.tileRows == 2);
  EXPECT(l.data.rowsPerBlock == 204 && l.data.rowsRemainder == 32);
  // Backward fp32 computes on dy and x where they landed and keeps its scratch in dx's output buffer (no
  // fp32 work buffer): a 4096 row double-buffered, 2048 rows three to a tile; an 8192 row single-buffered
  // whole, which beats splitting it (a split row reads dy and x twice).
  NormTiling lb = TileNorm({8192, 4096, f32, f32, false, true, 1e-6f}, b3);
  EXPECT(lb.tilingKey == NORM_SINGLE_PASS && lb.data.bufferNum == 2 && lb.data.tileRows == 1);
  EXPECT(l.data.bufferNum == 2);
  EXPECT(TileNorm({8192, 2048, f32, f32, false, true, 1e-6f}, b3).data.tileRows == 3);
  NormTiling wb = TileNorm({2048, 8192, f32, f32, false, true, 1e-6f}, b3);
  EXPECT(wb.tilingKey == NORM_SINGLE_PASS && wb.data.bufferNum == 1 && wb.data.tileRows == 1 && !wb.data.dxOutLate);
  // add_rms_norm_grad's fourth (dx_out) queue does not fit beside an 8192 row: dx_out is loaded into x's buffer
  // after x's last read instead, rather than reading dy and x twice in the split-row mode; 4096 keeps its queue.
  NormTiling wa = TileNorm({2048, 8192, f32, f32, true, true, 1e-6f}, b3);
  EXPECT(wa.tilingKey == NORM_SINGLE_PASS && wa.data.bufferNum == 1 && wa.data.dxOutLate == 1);
  NormTiling la = TileNorm({8192, 4096, f32, f32, true, true, 1e-6f}, b3);
  EXPECT(la.tilingKey == NORM_SINGLE_PASS && la.data.bufferNum == 2 && la.data.dxOutLate == 0);
  EXPECT(TileNorm({4, 16384, f32, f32, true, true, 1e-6f}, b3).tilingKey == NORM_SPLIT_ROW);
  // ... exactly the queues and the row-sized gamma, dgamma and scratch buffers; fp16/bf16 add dyf, xf, work.
  const NormProblem f32b{1, 4096, f32, f32, false, true, 1e-6f}, bf16b{1, 4096, bf16, bf16, false, true, 1e-6f};
  const uint32_t rowExtras = 32 + NormReduceTmpElems(4096) * 4 + 4096 * 4 * 2;  // sums, scratch, gamma, dgamma
  EXPECT(NormSinglePassBytes(f32b, 1, 2) == 2 * 3 * 4096 * 4 + 32 + rowExtras);
  EXPECT(NormSinglePassBytes(bf16b, 1, 2) == 2 * 3 * 4096 * 2 + 3 * 4096 * 4 + 4096 * 2 + rowExtras);
  EXPECT(TileNorm({8192, 2048, bf16, bf16, false, true, 1e-6f}, b3).data.tileRows == 3);
  // Rows longer than UB: split-row, two or more chunks.
  for (uint32_t hidden : {16384u, 32768u}) {
    NormTiling s = TileNorm({4, hidden, f32, f32, false, false, 1e-6f}, b2);
    EXPECT(s.tilingKey == NORM_SPLIT_ROW && s.data.chunkCount >= 2 && s.blockDim == 4);
    NormTiling sb = TileNorm({4, hidden, f32, f32, false, true, 1e-6f}, cpu);
    EXPECT(sb.tilingKey == NORM_SPLIT_ROW && sb.blockDim == 2 && sb.reduceBlockDim >= 1);
  }
  // Small hidden: the tile is capped by the scratch rows and by the rows per block (add_rms_norm: rms_norm
  // packs these rows).
  NormTiling tiny = TileNorm({83, 8, bf16, bf16, true, false, 1e-6f}, b2);
  EXPECT(tiny.blockDim == 48 && tiny.data.tileRows == 2 && tiny.data.rowPitch == 16);
  EXPECT(TileNorm({100000, 8, bf16, bf16, true, false, 1e-6f}, cpu).data.tileRows == kNormMaxTileRows);
  // ... in whole blocks of 8 rows with short rows
  EXPECT(TileNorm({100000, 8, f32, f32, false, false, 1e-6f}, cpu).data.tileRows == kNormMaxTileRows / 8 * 8);
  EXPECT(TileNorm({100000, 128, f32, f32, false, false, 1e-6f}, cpu).data.tileRows <= 127);
  // Empty problems launch nothing.
  EXPECT(TileNorm({0, 64, f32, f32, false, false, 1e-6f}, b3).blockDim == 0);
  EXPECT(TileNorm({5, 0, f32, f32, false, true, 1e-6f}, b3).blockDim == 0);

  // The problem functions (no torch): the argument rules and the output shapes every layer uses.
  const OpSpec fwd{"rms_norm", "", {"x", "gamma"}, {{f16, f32}, {bf16, f32}, {f16, f16}, {bf16, bf16}, {f32, f32}}};
  const OpSpec add{"add_rms_norm", "", {"x1", "x2", "gamma"}, {{f16, f16, f32}, {f32, f32, f32}}};
  const OpSpec bwd{"rms_norm_grad", "", {"dy", "x", "rstd", "gamma"}, {{f16, f16, f32, f32}, {f32, f32, f32, f32}}};
  const OpSpec addBwd{"add_rms_norm_grad", "", {"dy", "x", "rstd", "gamma", "dx_out"}, {{f16, f16, f32, f16, f16}}};
  using Arg = TensorArg<int64_t>;
  using Shape = std::vector<int64_t>;
  const Arg x{{2, 7, 4, 16}, f16}, g{{4, 16}, f32};
  const NormArgs<int64_t> a = CheckRmsNorm(fwd, x, nullptr, g, 1e-6);
  EXPECT(a.rows == 14 && a.hidden == 64 && a.x == x.shape && (a.rstd == Shape{2, 7, 1, 1}) && a.gamma == g.shape);
  EXPECT(a.xDtype == f16 && a.gammaDtype == f32);
  const NormProblem p = NormProblemOf(a, false, false, 1e-6);
  EXPECT(p.rows == 14 && p.hidden == 64 && !p.add && !p.backward && p.epsilon == 1e-6f);
  ArgError::Kind kind{};
  EXPECT(expect::ArgErrorOf([&] { CheckRmsNorm(fwd, x, nullptr, Arg{{7}, f32}, 1e-6); }, &kind) ==
         "rms_norm: gamma of shape [7] must equal the trailing dims of x of shape [2, 7, 4, 16]");
  EXPECT(kind == ArgError::kValue);
  EXPECT(expect::ArgErrorOf([&] { CheckRmsNorm(fwd, x, nullptr, Arg{{16}, bf16}, 1e-6); }, &kind) ==
         "rms_norm: unsupported dtypes (x=float16, gamma=bfloat16); supported: (float16, float32) (bfloat16, float32) "
         "(float16, float16) (bfloat16, bfloat16) (float32, float32)");
  EXPECT(kind == ArgError::kType);
  EXPECT(expect::ArgErrorOf([&] { CheckRmsNorm(fwd, x, nullptr, g, -1.0); }) ==
         "rms_norm: epsilon must be finite and >= 0, got -1");
  EXPECT(expect::ArgErrorOf([&] { CheckRmsNorm(fwd, x, nullptr, g, std::numeric_limits<double>::infinity()); }) ==
         "rms_norm: epsilon must be finite and >= 0, got inf");
  EXPECT(expect::ArgErrorOf([&] { CheckRmsNorm(fwd, x, nullptr, Arg{{}, f32}, 1e-6); }) ==
         "rms_norm: gamma must have at least one dim (the normalized dims), got shape []");
  EXPECT(expect::ArgErrorOf(
             [&] { CheckRmsNorm(fwd, Arg{{1, 1, 1, 1, 1, 1, 1, 1, 2}, f16}, nullptr, Arg{{2}, f32}, 0.0); }) ==
         "rms_norm: x must have rank 1..8 (its trailing dims are gamma's), got shape [1, 1, 1, 1, 1, 1, 1, 1, 2]");
  EXPECT(expect::ArgErrorOf([&] {
           CheckRmsNorm(fwd, Arg{{2, 65536, 65536}, f16}, nullptr, Arg{{65536, 65536}, f32}, 0.0);
         }) == "rms_norm: gamma has 4294967296 elements; at most 2^31 - 1 are supported");
  // add_rms_norm: x1 and x2 one shape; its x output is x1's shape.
  const Arg x2{{2, 7, 4, 16}, f16}, x2Bad{{2, 7, 4, 15}, f16};
  EXPECT(CheckRmsNorm(add, x, &x2, g, 0.0).x == x.shape);
  EXPECT(expect::ArgErrorOf([&] { CheckRmsNorm(add, x, &x2Bad, g, 0.0); }) ==
         "add_rms_norm: x1 and x2 must have one shape, got [2, 7, 4, 16] and [2, 7, 4, 15]");
  EXPECT(expect::ArgErrorOf([&] { CheckRmsNorm(add, x, &x2, Arg{{4, 16}, f16}, 0.0); }) ==
         "add_rms_norm: unsupported dtypes (x1=float16, x2=float16, gamma=float16); supported: (float16, float16, "
         "float32) (float32, float32, float32)");
  // Backward: dy (and dx_out) x's shape, rstd the keepdim shape; dx is x's shape, dgamma gamma's.
  const Arg dy{{3, 8}, f16}, xb{{3, 8}, f16}, rstd{{3, 1}, f32}, gb{{8}, f32}, dxOut{{3, 8}, f16};
  const NormArgs<int64_t> b = CheckRmsNormGrad(bwd, dy, xb, rstd, gb, nullptr);
  EXPECT(b.rows == 3 && b.hidden == 8 && b.x == xb.shape && (b.gamma == Shape{8}));
  EXPECT(NormProblemOf(b, false, true, 0.0).backward);
  EXPECT(expect::ArgErrorOf([&] { CheckRmsNormGrad(bwd, Arg{{2, 8}, f16}, xb, rstd, gb, nullptr); }) ==
         "rms_norm_grad: dy must have x's shape [3, 8], got [2, 8]");
  EXPECT(expect::ArgErrorOf([&] { CheckRmsNormGrad(bwd, dy, xb, Arg{{3}, f32}, gb, nullptr); }) ==
         "rms_norm_grad: rstd must have shape [3, 1] (x's with the normalized dims set to 1), got [3]");
  EXPECT(expect::ArgErrorOf([&] { CheckRmsNormGrad(bwd, dy, xb, Arg{{3, 1}, f16}, gb, nullptr); }, &kind) ==
         "rms_norm_grad: unsupported dtypes (dy=float16, x=float16, rstd=float16, gamma=float32); supported: "
         "(float16, float16, float32, float32) (float32, float32, float32, float32)");
  EXPECT(kind == ArgError::kType);
  const Arg gh{{8}, f16}, dxOutBad{{3, 9}, f16};
  EXPECT(CheckRmsNormGrad(addBwd, dy, xb, rstd, gh, &dxOut).gammaDtype == f16);
  EXPECT(expect::ArgErrorOf([&] { CheckRmsNormGrad(addBwd, dy, xb, rstd, gh, &dxOutBad); }) ==
         "add_rms_norm_grad: dx_out must have x's shape [3, 8], got [3, 9]");
  // gated_rms_norm: z (input 2) of x's shape and dtype; the tiling counts z's queue and the gate's fp32 buffer.
  const OpSpec gated{"gated_rms_norm", "", {"x", "gamma", "z"}, {{f16, f32, f16}, {f32, f32, f32}}};
  const NormArgs<int64_t> ga = CheckGatedRmsNorm(gated, x, g, Arg{x.shape, f16}, 1e-6);
  EXPECT(ga.rows == 14 && ga.hidden == 64 && (ga.rstd == Shape{2, 7, 1, 1}) && NormGated(gated) && !NormGated(fwd));
  EXPECT(expect::ArgErrorOf([&] { CheckGatedRmsNorm(gated, x, g, Arg{{2, 7, 64}, f16}, 1e-6); }, &kind) ==
         "gated_rms_norm: z must have x's shape [2, 7, 4, 16], got [2, 7, 64]");
  EXPECT(kind == ArgError::kValue);
  EXPECT(expect::ArgErrorOf([&] { CheckGatedRmsNorm(gated, x, g, Arg{x.shape, f32}, 1e-6); }, &kind) ==
         "gated_rms_norm: unsupported dtypes (x=float16, gamma=float32, z=float32); supported: (float16, float32, "
         "float16) (float32, float32, float32)");
  EXPECT(kind == ArgError::kType);
  EXPECT(expect::ArgErrorOf([&] { CheckGatedRmsNorm(gated, x, Arg{{7}, f32}, x, 1e-6); }) ==
         "gated_rms_norm: gamma of shape [7] must equal the trailing dims of x of shape [2, 7, 4, 16]");
  for (DType t : {f16, bf16, f32}) {
    for (uint32_t hidden : {64u, 769u, 5125u}) {
      const NormProblem plain{1000, hidden, t, f32, false, false, 1e-6f};
      const NormProblem gate =
          NormProblemOf(NormArgs<int64_t>{1000, hidden, {}, {}, {}, t, f32}, false, false, 1e-6, 0.0f, true);
      EXPECT(gate.gated && !NormShortRows(gate));
      // one more T queue (z), double-buffered, and one more fp32 buffer (the gate) per tile element
      const uint32_t pitch = RowPitch(hidden, t), perRow = 2 * AlignUp(pitch * ElementBytes(t), 32) + pitch * 4;
      const NormTiling tg = TileNorm(gate, b3), tp = TileNorm(plain, b3);
      if (!NormShortRows(plain)) {  // (short rows have buffers of their own)
        EXPECT(NormSinglePassBytes(gate, 8) == NormSinglePassBytes(plain, 8) + 8 * perRow);
        EXPECT(tg.data.tileRows <= tp.data.tileRows);
      }
      EXPECT(NormSinglePassBytes(gate, tg.data.tileRows) <= b3.UbBudget());
      EXPECT(tg.data.shortRows == 0);
    }
  }
  NormProblem gatedBig{4, 32768, f32, f32, false, false, 1e-6f, 0.0f, true};
  const NormTiling split = TileNorm(gatedBig, b3);
  EXPECT(split.tilingKey == NORM_SPLIT_ROW && NormSplitRowBytes(gatedBig, split.data.chunk) <= b3.UbBudget());
  EXPECT(NormSplitRowBytes(gatedBig, 1024) ==
         NormSplitRowBytes({4, 32768, f32, f32, false, false, 1e-6f}, 1024) + 2 * 1024 * 4 + 1024 * 4);
  EXPECT(expect::Throws([&] { TileNorm({4, 64, f32, f32, true, false, 0.0f, 0.0f, true}, b3); }));  // no add form
  // gated_rms_norm_grad: z in and dz out (two more T queues); fp32 works on z where it landed and puts silu'(z)
  // in dx's buffer (one more fp32 buffer: the gate's), fp16/bf16 also widen z (two more)
  for (DType t : {f16, bf16, f32}) {
    const uint32_t hidden = 769, pitch = RowPitch(hidden, t), fp32More = t == f32 ? 1 : 2;
    const NormProblem plainBwd{83, hidden, t, t, false, true, 0.0f};
    NormProblem gateBwd = plainBwd;
    gateBwd.gated = true;
    EXPECT(NormSinglePassBytes(gateBwd, 8) ==
           NormSinglePassBytes(plainBwd, 8) +
               8 * (2 * 2 * AlignUp(pitch * ElementBytes(t), 32) + fp32More * pitch * 4));
    const NormTiling tb = TileNorm(gateBwd, b3);
    EXPECT(tb.tilingKey == NORM_SINGLE_PASS && tb.reduceBlockDim >= 1 &&
           NormSinglePassBytes(gateBwd, tb.data.tileRows, tb.data.bufferNum) <= b3.UbBudget());
    // split-row: the fp32 buffers counted are at least the kernel's (dyf, xf, work, zf, gate for fp16/bf16)
    NormProblem bigBwd{4, 65536, t, t, false, true, 0.0f, 0.0f, true};
    const NormTiling sb = TileNorm(bigBwd, b3);
    EXPECT(sb.tilingKey == NORM_SPLIT_ROW && NormSplitRowBytes(bigBwd, sb.data.chunk) <= b3.UbBudget());
    bigBwd.gated = false;
    EXPECT(NormSplitRowBytes({4, 65536, t, t, false, true, 0.0f, 0.0f, true}, 1024) ==
           NormSplitRowBytes(bigBwd, 1024) + 2 * 2 * AlignUp(1024 * ElementBytes(t), 32) + (t == f32 ? 0 : 1024 * 4));
  }
  // An empty x: rows 0, nothing to launch; rstd [0, 1].
  const NormArgs<int64_t> e = CheckRmsNorm(fwd, Arg{{0, 16}, f32}, nullptr, Arg{{16}, f32}, 1e-6);
  EXPECT(e.rows == 0 && (e.rstd == Shape{0, 1}) && TileNorm(NormProblemOf(e, false, false, 1e-6), b3).blockDim == 0);
  return expect::Report();
}
