// Tiling unit tests: block counts, tile sizes and the UB budget for the 910B (40 and 48 vector
// cores) and the CPU twin. Prints "N passed, M failed"; exits non-zero on any failure.
#include <cstdio>
#include <functional>
#include <string>

#include "rope_problem.h"
#include "expect.h"

using namespace tiling;
using expect::Throws;

// Every task is covered exactly once and tiles stay within UB.
static void CheckInvariants(const RopeTiling& t, const PlatformInfo& p, DType dtype) {
  const RopeTilingData& d = t.data;
  EXPECT(t.blockDim >= 1 && t.blockDim <= p.vectorCores);
  EXPECT(d.tasksPerBlock * t.blockDim + d.tasksRemainder == d.taskCount);
  EXPECT(d.tasksRemainder < t.blockDim);
  EXPECT(uint64_t(d.tileRows) * d.tileLines * RopeBytesPerRow(d.headDim, dtype, RopeMode(d.rotaryMode), d.xBuffers) <=
         p.UbBudget());
  EXPECT(int64_t(d.tilesPerLine) * d.tileRows >= d.xDims[d.tileAxis]);
  EXPECT(int64_t(d.tilesPerLine - 1) * d.tileRows < d.xDims[d.tileAxis]);
  EXPECT(d.tileLines >= 1 && d.tileLines <= d.sharedLines);
  EXPECT(d.rowPitch * ElementBytes(dtype) % 32 == 0 && d.rowPitch >= d.headDim);
}

int main() {
  const PlatformInfo b3 = Ascend910B(40), b2 = Ascend910B(48), cpu = CpuTwin(2);
  EXPECT(b3.UbBudget() == 184 * 1024);

  // BNSD x with 11SD cos: tiles walk S, lines are B*N.
  RopeProblem llama{{1, 32, 4096}, {1, 1, 4096}, 128, DType::kFloat32, ROPE_MODE_HALF, false};
  for (const PlatformInfo& p : {b3, b2, cpu}) {
    RopeTiling t = TileRope(llama, p);
    CheckInvariants(t, p, DType::kFloat32);
    EXPECT(t.data.tileAxis == 2);
    EXPECT(t.blockDim == p.vectorCores);
    EXPECT(t.data.rStrides[0] == 0 && t.data.rStrides[1] == 0 && t.data.rStrides[2] == 1);
    // every head shares a cos/sin tile: one task per S tile, looping over the 32 heads
    EXPECT(t.data.sharedLines == 32 && t.data.lineVaries[0] == 0 && t.data.lineVaries[1] == 0);
    EXPECT(t.data.taskCount == t.data.tilesPerLine);
  }
  // UB holds 46 rows: 90 tiles, 3 rounds on 40 cores; those 3 rounds hold 120 tiles of 35 rows, so the
  // busiest core does 105 rows rather than 138, and the shorter tile leaves UB for a third x/y buffer
  const uint32_t ubRows = 184 * 1024 / RopeBytesPerRow(128, DType::kFloat32, ROPE_MODE_HALF);
  EXPECT(ubRows == 46 && TileRope(llama, b3).data.tileRows == 35 && TileRope(llama, b3).data.tilesPerLine == 118);
  // half mode with whole fp32 blocks per half row rotates by copies (no tables)
  EXPECT(TileRope(llama, b3).data.rotateByCopy == 1 && TileRope(llama, b3).data.xBuffers == 3);
  EXPECT(TileRope(llama, b3).data.tileLines == 1);
  // 512 rows over 48 cores: an 11-row tile leaves UB spare for 4 of the 32 heads per tile (46 rows fit)
  RopeProblem short512{{1, 32, 512}, {1, 1, 512}, 128, DType::kBFloat16, ROPE_MODE_HALF, false};
  RopeTiling t512 = TileRope(short512, b2);
  CheckInvariants(t512, b2, DType::kBFloat16);
  EXPECT(t512.data.tileRows == 11 && t512.data.tileLines == 4 && t512.data.xBuffers == 2);
  // its Gather tables take more UB: 3 heads fit (33 rows), so 11 groups of 3 or 2 heads
  RopeProblem tutorial512{{1, 32, 512}, {1, 1, 512}, 128, DType::kBFloat16, ROPE_MODE_TUTORIAL, false};
  RopeTiling u512 = TileRope(tutorial512, b2);
  CheckInvariants(u512, b2, DType::kBFloat16);
  EXPECT(u512.data.tileRows == 11 && u512.data.tileLines == 3);
  // the Gather path: D = 40 (80-byte fp32 half rows), and the pair modes at any D
  EXPECT(!RopeRotatesByCopy(40, ROPE_MODE_HALF) && RopeRotatesByCopy(80, ROPE_MODE_HALF));
  EXPECT(!RopeRotatesByCopy(128, ROPE_MODE_INTERLEAVE) && !RopeRotatesByCopy(128, ROPE_MODE_TUTORIAL));
  EXPECT(RopeBytesPerRow(128, DType::kFloat32, ROPE_MODE_TUTORIAL) >
         RopeBytesPerRow(128, DType::kFloat32, ROPE_MODE_HALF));

  // Fewer lines than cores: tiles shrink so every core gets one.
  RopeProblem small{{1, 1, 83}, {1, 1, 83}, 40, DType::kBFloat16, ROPE_MODE_INTERLEAVE, false};
  RopeTiling s = TileRope(small, b2);
  CheckInvariants(s, b2, DType::kBFloat16);
  EXPECT(s.data.tileRows == 2 && s.blockDim == 42 && s.data.rowPitch == 48);

  // BSND with 1S1D: cos varies along S (dim 1), broadcast along N.
  RopeProblem bsnd{{2, 7, 8}, {1, 7, 1}, 80, DType::kFloat16, ROPE_MODE_HALF, true};
  RopeTiling b = TileRope(bsnd, cpu);
  CheckInvariants(b, cpu, DType::kFloat16);
  EXPECT(b.data.tileAxis == 1 && b.data.lineAxes[0] == 0 && b.data.lineAxes[1] == 2);
  EXPECT(b.data.xStrides[1] == 8 && b.data.rStrides[1] == 1 && b.data.rStrides[2] == 0);
  EXPECT(b.data.sharedLines == 16);

  // B1SD: cos varies along B (a line dim of its own) and is shared by the N heads.
  RopeTiling b1 = TileRope({{3, 8, 16}, {3, 1, 16}, 64, DType::kFloat32, ROPE_MODE_HALF, false}, b3);
  CheckInvariants(b1, b3, DType::kFloat32);
  EXPECT(b1.data.lineVaries[0] == 1 && b1.data.lineVaries[1] == 0 && b1.data.sharedLines == 8);
  EXPECT(b1.data.taskCount == 3 * int64_t(b1.data.tilesPerLine));

  // One cos row for every x row (KV-cache step): tiles walk the innermost non-trivial dim.
  RopeProblem step{{4, 32, 1}, {1, 1, 1}, 128, DType::kFloat32, ROPE_MODE_INTERLEAVE, false};
  RopeTiling k = TileRope(step, b3);
  CheckInvariants(k, b3, DType::kFloat32);
  EXPECT(k.data.tileAxis == 1 && k.data.rStrides[1] == 0);

  // Large head_dim: fewer rows per tile, still inside the budget; too large is refused.
  RopeProblem wide{{1, 8, 64}, {1, 1, 64}, 2048, DType::kFloat32, ROPE_MODE_HALF, false};
  RopeTiling w = TileRope(wide, b3);
  CheckInvariants(w, b3, DType::kFloat32);
  EXPECT(w.data.tileRows == 184 * 1024 / RopeBytesPerRow(2048, DType::kFloat32, ROPE_MODE_HALF));
  EXPECT(w.data.tileRows >= 1 && w.data.tileRows <= 4);
  EXPECT(Throws([&] { TileRope({{1, 1, 4}, {1, 1, 4}, 8192, DType::kFloat32, ROPE_MODE_HALF, false}, b3); }));
  EXPECT(Throws([&] { TileRope({{1, 1, 4}, {1, 1, 4}, 7, DType::kFloat32, ROPE_MODE_HALF, false}, b3); }));
  EXPECT(Throws([&] { TileRope({{1, 2, 4}, {1, 3, 4}, 8, DType::kFloat32, ROPE_MODE_HALF, false}, b3); }));

  // Empty x: nothing to launch.
  EXPECT(TileRope({{0, 32, 16}, {1, 1, 16}, 64, DType::kFloat32, ROPE_MODE_HALF, false}, b3).blockDim == 0);

  // apply_rotary_pos_emb: one launch of the wider part's blocks; each part's tasks cover all of them
  // exactly once; partial rotary keeps the rows D apart in GM.
  {
    RopeProblem q{{1, 4096, 32}, {1, 4096, 1}, 64, DType::kBFloat16, ROPE_MODE_HALF, false, 128};
    RopeProblem k{{1, 4096, 2}, {1, 4096, 1}, 64, DType::kBFloat16, ROPE_MODE_HALF, false, 128};
    const ApplyRopeTiling t = TileApplyRope(q, k, b3);
    EXPECT(t.blockDim == std::max(TileRope(q, b3).blockDim, TileRope(k, b3).blockDim));
    for (const RopeTilingData* d : {&t.data.query, &t.data.key}) {
      EXPECT(d->tasksPerBlock * t.blockDim + d->tasksRemainder == d->taskCount);
      EXPECT(d->tasksRemainder < int64_t(t.blockDim) && d->xRowElems == 128 && d->headDim == 64);
    }
    k.xDims = {1, 4096, 0};  // no key heads: query alone
    const ApplyRopeTiling e = TileApplyRope(q, k, b3);
    EXPECT(e.data.key.taskCount == 0 && e.data.key.tasksPerBlock == 0 && e.blockDim == TileRope(q, b3).blockDim);
    q.rowElems = 32;  // rows shorter than the rotated part
    EXPECT(Throws([&] { TileRope(q, b3); }));
  }

  // The problem function (no torch): the argument rules and the output shape every layer uses.
  const std::vector<DType> f16{DType::kFloat16, DType::kFloat16, DType::kFloat16};
  const std::vector<DType> f32{DType::kFloat32, DType::kFloat32, DType::kFloat32};
  const OpSpec rotary{"rotary_mul", "", {"x", "r1", "r2"}, {f16, f32}};
  const OpSpec customer{"rope_customer_grad", "", {"dy", "cos", "sin"}, {f16, f32}};
  using Arg = TensorArg<int64_t>;
  const Arg x{{2, 7, 3, 16}, DType::kFloat16}, r{{2, 7, 1, 16}, DType::kFloat32};
  const RopeArgs<int64_t> a = CheckRope(rotary, x, r, r, std::string_view("interleave"));
  EXPECT((a.xDims == std::array<int64_t, 3>{2, 7, 3}) && (a.rDims == std::array<int64_t, 3>{2, 7, 1}));
  EXPECT(a.headDim == 16 && a.mode == ROPE_MODE_INTERLEAVE && a.out == x.shape);
  const RopeProblem rp = RopeProblemOf(a, DType::kFloat16, true);
  EXPECT(rp.headDim == 16 && rp.mode == ROPE_MODE_INTERLEAVE && rp.backward && rp.dtype == DType::kFloat16);
  const Arg tnd{{5, 3, 8}, DType::kFloat32}, t1d{{5, 1, 8}, DType::kFloat32}, d8{{8}, DType::kFloat32};
  EXPECT((CheckRope(rotary, tnd, t1d, t1d, std::string_view("half")).xDims == std::array<int64_t, 3>{1, 5, 3}));
  EXPECT((CheckRope(rotary, tnd, d8, d8, std::string_view("half")).rDims == std::array<int64_t, 3>{1, 1, 1}));
  ArgError::Kind kind{};
  const auto rotaryError = [&](const Arg& xa, const Arg& c, const Arg& s, const char* mode = "half") {
    return expect::ArgErrorOf([&] { CheckRope(rotary, xa, c, s, std::string_view(mode)); }, &kind);
  };
  EXPECT(rotaryError(x, r, r, "rotate") == "rotary_mul: rotary_mode must be 'half' or 'interleave', got 'rotate'");
  EXPECT(kind == ArgError::kValue);
  EXPECT(
      rotaryError({{5, 8}, DType::kFloat32}, d8, d8) ==
      "rotary_mul: x must have rank 3 ([T, N, D]) or 4 ([B, N, S, D], [B, S, N, D], [S, B, N, D]), got shape [5, 8]");
  EXPECT(rotaryError({{2, 3, 4, 7}, DType::kFloat32}, d8, d8) ==
         "rotary_mul: the last dim of x (head_dim) must be even, got 7");
  EXPECT(rotaryError(x, r, {{1, 7, 1, 16}, DType::kFloat32}) ==
         "rotary_mul: r1 and r2 must have one shape, got [2, 7, 1, 16] and [1, 7, 1, 16]");
  EXPECT(rotaryError(x, d8, d8) == "rotary_mul: r1 must have rank <= 4 and last dim 16 like x, got shape [8]");
  EXPECT(rotaryError(tnd, {{1, 5, 1, 8}, DType::kFloat32}, {{1, 5, 1, 8}, DType::kFloat32}) ==
         "rotary_mul: r1 must have rank <= 3 and last dim 8 like x, got shape [1, 5, 1, 8]");
  const Arg r5{{1, 1, 5, 16}, DType::kFloat32};
  EXPECT(rotaryError(x, r5, r5) ==
         "rotary_mul: r1 of shape [1, 1, 5, 16] does not broadcast to x of shape [2, 7, 3, 16] (dim -2 is 5, "
         "expected 1 or 3)");
  EXPECT(rotaryError({{2, 7, 3, 16}, DType::kInt32}, r, r) ==
         "rotary_mul: x must be one of float16, float32, got int32");
  EXPECT(kind == ArgError::kType);
  EXPECT(rotaryError(x, {{2, 7, 1, 16}, DType::kInt64}, r) == "rotary_mul: r1 must be floating point, got int64");
  EXPECT(kind == ArgError::kType);
  EXPECT(rotaryError(x, r, {{2, 7, 1, 16}, DType::kBool}) == "rotary_mul: r2 must be floating point, got bool");
  // float64 tables are cast to x's dtype: accepted
  EXPECT(rotaryError(x, {{2, 7, 1, 16}, DType::kFloat64}, {{2, 7, 1, 16}, DType::kFloat64}).empty());
  // rope_customer(_grad): the tutorial's [B, H, L, D] x with [L, D] cos/sin, ROPE_MODE_TUTORIAL
  const Arg lx{{2, 3, 5, 8}, DType::kFloat32}, ld{{5, 8}, DType::kFloat32};
  EXPECT(CheckRope(customer, lx, ld, ld, std::nullopt).mode == ROPE_MODE_TUTORIAL);
  EXPECT(expect::ArgErrorOf([&] { CheckRope(customer, tnd, ld, ld, std::nullopt); }) ==
         "rope_customer_grad: dy must be [B, H, L, D], got shape [5, 3, 8]");
  EXPECT(expect::ArgErrorOf([&] { CheckRope(customer, lx, t1d, t1d, std::nullopt); }) ==
         "rope_customer_grad: cos must be [L, D], got shape [5, 1, 8]");
  const Arg l4{{4, 8}, DType::kFloat32};
  EXPECT(expect::ArgErrorOf([&] { CheckRope(customer, lx, l4, l4, std::nullopt); }) ==
         "rope_customer_grad: cos of shape [4, 8] does not broadcast to dy of shape [2, 3, 5, 8] (dim -2 is 4, "
         "expected 1 or 5)");

  return expect::Report();
}
