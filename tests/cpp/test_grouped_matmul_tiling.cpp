// Grouped matmul tiling unit tests: the tilings obey the cube's L0/L1 limits and, dealt round-robin as
// the kernels deal them, cover every output element exactly once; the problem function (no torch) gives
// the messages and output shapes every layer uses. Prints "N passed, M failed".
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "expect.h"
#include "grouped_matmul_problem.h"

using namespace tiling;
using expect::Throws;

// ---- grouped matmul tiling ----
static void CheckCubeLimits(const TCubeTiling& mm, DType dtype, const CubePlatform& p) {
  const int64_t b = ElementBytes(dtype);
  EXPECT(mm.baseM % 16 == 0 && mm.baseN % 16 == 0 && mm.baseK * b % 32 == 0);
  EXPECT(int64_t(mm.baseM) * mm.baseK * b * (mm.dbL0A == 2 ? 2 : 1) <= p.l0aBytes);
  EXPECT(int64_t(mm.baseK) * mm.baseN * b * (mm.dbL0B == 2 ? 2 : 1) <= p.l0bBytes);
  EXPECT(int64_t(mm.baseM) * mm.baseN * 4 * (mm.dbL0C == 2 ? 2 : 1) <= p.l0cBytes);
  EXPECT(int64_t(mm.depthA1) * mm.baseM * mm.baseK * b + int64_t(mm.depthB1) * mm.baseN * mm.baseK * b <= p.l1Bytes);
}

// The kernels' deal, replayed: every output element of every group written exactly once, by the
// round-robin deal (at the columns the core chooses) or, with groupBlocks, one block per core.
static void CheckCoverage(const GroupedMatmulTiling& t, const std::vector<int64_t>& rows) {
  const GroupedMatmulTilingData& d = t.data;
  const int64_t sm = d.mm.singleCoreM, sn = GroupedMatmulColumns(d, rows.data(), t.blockDim);
  const int64_t nb = (d.n + sn - 1) / sn;
  EXPECT(sn == d.mm.singleCoreN || (sn >= 16 && sn < d.mm.singleCoreN && (sn <= d.mm.baseN || sn % d.mm.baseN == 0)));
  std::vector<int64_t> starts(rows.size() + 1, 0);
  int64_t outRows = 0;
  for (size_t e = 0; e < rows.size(); ++e) starts[e + 1] = outRows += d.weightGrad ? d.k : rows[e];
  std::vector<int> hits(size_t(outRows * d.n), 0);
  const auto write = [&](size_t e, int64_t r, int64_t b) {  // block b of group e (r rows)
    const int64_t r0 = (b / nb) * sm, c0 = (b % nb) * sn;
    for (int64_t i = r0; i < std::min(r, r0 + sm); ++i)
      for (int64_t j = c0; j < std::min(d.n, c0 + sn); ++j) ++hits[size_t((starts[e] + i) * d.n + j)];
  };
  for (uint32_t core = 0; core < t.blockDim; ++core) {
    if (d.groupBlocks > 0) {
      const size_t e = core / uint32_t(d.groupBlocks);
      const int64_t b = core % d.groupBlocks;
      EXPECT(!d.weightGrad && e < rows.size());
      if (e < rows.size() && (b / nb) * sm < rows[e]) write(e, rows[e], b);
      continue;
    }
    int64_t dealt = 0;
    for (size_t e = 0; e < rows.size(); ++e) {
      const int64_t r = d.weightGrad ? (rows[e] ? d.k : 0) : rows[e];
      const int64_t blocks = ((r + sm - 1) / sm) * nb;
      for (int64_t b = ((int64_t(core) - dealt) % t.blockDim + t.blockDim) % t.blockDim; b < blocks; b += t.blockDim)
        write(e, r, b);
      dealt += blocks;
    }
  }
  bool ok = true;
  for (size_t e = 0; e < rows.size(); ++e)
    for (int64_t i = starts[e] * d.n; i < starts[e + 1] * d.n; ++i)
      ok &= hits[size_t(i)] == (d.weightGrad && rows[e] == 0 ? 0 : 1);
  EXPECT(ok);
  int64_t blocks = 0;
  for (int v : hits) blocks += v;
  EXPECT(GroupedMatmulBlocks(d, rows.data(), t.blockDim) >= 1 || blocks == 0);
}

static void TestGroupedMatmulTiling() {
  std::mt19937 rng(7);
  for (const CubePlatform& p : {Ascend910BCube(), Ascend910BCube(20), CpuTwinCube(1), CpuTwinCube(2)}) {
    for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      for (bool wg : {false, true}) {
        for (auto [m, k, n, e] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 1},
                                  {83, 769, 129, 3},
                                  {2048, 256, 300, 64},
                                  {300, 64, 5000, 7},
                                  {5, 16, 16, 512},
                                  {64, 32, 32, 4},  // cann-bench 19 and 7: each block its own core
                                  {128, 512, 512, 8},
                                  {1009, 1024, 1024, 4}}) {  // cann-bench 4: the deal narrows its columns
          std::vector<int64_t> rows(size_t(e), 0);
          for (int64_t i = 0; i < m; ++i) rows[rng() % (e > 2 ? e - 1 : e)]++;  // the last group often empty
          for (int32_t listType : {0, 1}) {
            GroupedMatmulTiling t = TileGroupedMatmul({m, k, n, e, dt, listType, false, wg}, p);
            CheckCubeLimits(t.data.mm, dt, p);
            EXPECT(t.blockDim >= 1 && t.blockDim <= p.cubeCores && t.data.mm.usedCoreNum == int32_t(t.blockDim));
            EXPECT(t.data.groupBlocks == 0 || (listType == 0 && !wg));  // the grid reads cumulative ends
            EXPECT(t.data.dealtColumns == 0 || !wg);
            CheckCoverage(t, rows);
          }
        }
      }
    }
  }
  EXPECT(TileGroupedMatmul({0, 8, 8, 2, DType::kFloat32, 1, false, false}, CpuTwinCube(2)).blockDim == 0);
  EXPECT(Throws([] { TileGroupedMatmul({4, 8, 8, 0, DType::kFloat32, 1, false, false}, CpuTwinCube(2)); }));
  EXPECT(Throws([] { TileGroupedMatmul({4, 8, 8, 2, DType::kFloat32, 2, false, false}, CpuTwinCube(2)); }));
  EXPECT(
      Throws([] { TileGroupedMatmul({int64_t(1) << 32, 8, 8, 2, DType::kFloat32, 1, false, false}, CpuTwinCube(2)); }));
}

// The forward's resident rows (ResidentA): x's base block of rows over the whole K in two L1 tiles,
// walked along N, one base block of rows per block, columns halved (not below baseN) while there are
// fewer than two blocks per core; where the rows over K do not fit L1, and for the weight grad, the
// K-stepped tiling.
static void TestResidentRows() {
  const CubePlatform p = Ascend910BCube();
  const int64_t want = 2 * int64_t(p.cubeCores);
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (bool trans : {false, true}) {
      for (auto [m, k, n, e] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{1009, 1024, 1024, 8},  // cann-bench 15
                                {256, 512, 1024, 8},  // cann-bench 2
                                {200, 64, 128, 4},
                                {2047, 1023, 2047, 8},
                                {64, 40, 5000, 1}}) {
        const TCubeTiling mm = TileGroupedMatmul({m, k, n, e, dt, 0, trans, false}, p).data.mm;
        cube_rules::Operand a, b;
        GroupedMatmulOperands({m, k, n, e, dt, 0, trans, false}, a, b);
        EXPECT(cube_rules::Violation(mm, a, b, {p.l1Bytes, p.l0aBytes, p.l0bBytes, p.l0cBytes}).empty());
        const int64_t aBytes = 2 * int64_t(mm.stepKa) * cube_rules::AL1BlockBytes(mm, a);
        const int64_t bBytes = int64_t(mm.depthB1) * cube_rules::BL1BlockBytes(mm, b);
        if (mm.iterateOrder != 1) {  // no room: only where the rows over K would overflow L1
          const int64_t halfK = ((k + mm.baseK - 1) / mm.baseK + 1) / 2;  // K steps in each resident tile
          EXPECT(mm.stepKa == 4 && mm.singleCoreM >= mm.baseM);
          EXPECT(2 * halfK * cube_rules::AL1BlockBytes(mm, a) + 2 * cube_rules::BL1BlockBytes(mm, b) > p.l1Bytes);
          continue;
        }
        EXPECT(2 * int64_t(mm.stepKa) * mm.baseK >= k && 2 * int64_t(mm.stepKa - 1) * mm.baseK < k + mm.baseK);
        EXPECT(mm.depthA1 == 2 * mm.stepKa && mm.stepM == 1 && mm.depthB1 == 2 * mm.stepKb);
        // the weight's K steps: the most of 4 that fit beside the rows
        EXPECT(mm.stepKb >= 1 && mm.stepKb <= 4);
        EXPECT(mm.stepKb == 4 || aBytes + (bBytes / mm.stepKb) * (mm.stepKb + 1) > p.l1Bytes);
        EXPECT(aBytes + bBytes <= p.l1Bytes && mm.singleCoreM == mm.baseM);
        const int64_t rowBlocks = (m + mm.baseM - 1) / mm.baseM, cols = (n + mm.singleCoreN - 1) / mm.singleCoreN;
        EXPECT(mm.singleCoreN <= 1024 && (mm.singleCoreN <= mm.baseN || rowBlocks * cols >= want));
        EXPECT(mm.singleCoreN * 2 > 1024 || rowBlocks * ((n + 2 * mm.singleCoreN - 1) / (2 * mm.singleCoreN)) < want);
      }
    }
  }
  // cann-bench case 15 (fp16, K 1024): both half-K tiles of 128 rows stay; 8 row blocks x 4 columns
  const TCubeTiling c15 = TileGroupedMatmul({1009, 1024, 1024, 8, DType::kFloat16, 0, true, false}, p).data.mm;
  EXPECT(c15.iterateOrder == 1 && c15.stepKa == 8 && c15.singleCoreM == 128 && c15.singleCoreN == 256);
  // cann-bench 15 (groups of 307, 30, 30, 29, 29, 29, 29, 526 rows): 14 row blocks; equal groups would have
  // 8, which 5 columns of 208 fill in 2 waves, so the core chooses: 5 columns of 208 in 3 waves, not 4 of 256
  GroupedMatmulTiling t15 = TileGroupedMatmul({1009, 1024, 1024, 8, DType::kFloat16, 0, true, false}, p);
  const std::vector<int64_t> rows15{307, 30, 30, 29, 29, 29, 29, 526};
  EXPECT(t15.data.dealtColumns == 1 && t15.blockDim == p.cubeCores);
  EXPECT(GroupedMatmulColumns(t15.data, rows15.data(), t15.blockDim) == 208);
  CheckCoverage(t15, rows15);
  // cann-bench 4 (a half bias, 4 groups of 253, 252, 252, 252 rows): 8 row blocks x 6 columns of 176 in 2 waves
  GroupedMatmulProblem c4p{1009, 1024, 1024, 4, DType::kFloat16, 0, false, false};
  c4p.biasDtype = DType::kFloat16;
  GroupedMatmulTiling t4 = TileGroupedMatmul(c4p, p);
  const std::vector<int64_t> rows4{253, 252, 252, 252};
  EXPECT(t4.data.dealtColumns == 1 && GroupedMatmulColumns(t4.data, rows4.data(), t4.blockDim) == 176);
  CheckCoverage(t4, rows4);
  // cann-bench 13 (a half bias, 8 groups of 512 rows, K 1024, N 2048): 32 row blocks; 2 columns of 1024 put
  // 3 blocks (12 base blocks of N) on the busiest core, 8 of 256 put 11: the cube and Fixpipe bind, and the
  // rows' reloads (MTE2) stay under them
  GroupedMatmulProblem c13p{4096, 1024, 2048, 8, DType::kFloat16, 0, true, false};
  c13p.biasDtype = DType::kFloat16;
  GroupedMatmulTiling t13 = TileGroupedMatmul(c13p, p);
  const std::vector<int64_t> rows13(8, 512);
  EXPECT(t13.data.mm.iterateOrder == 1 && t13.data.mm.singleCoreN == 1024 && t13.data.dealtColumns == 1);
  EXPECT(t13.blockDim == p.cubeCores && GroupedMatmulColumns(t13.data, rows13.data(), t13.blockDim) == 256);
  CheckCoverage(t13, rows13);
  // the same problem with 34 row blocks (random groups): 12 base blocks of N either way, the widest stays
  const std::vector<int64_t> rows34{520, 530, 498, 500, 512, 512, 512, 512};
  EXPECT(GroupedMatmulColumns(t13.data, rows34.data(), t13.blockDim) == 1024);
  CheckCoverage(t13, rows34);
  // cann-bench 19 and 7: every group's most blocks side by side, one core each (4 x 1 x 1; 8 x 1 x 3 of 176)
  GroupedMatmulTiling t19 = TileGroupedMatmul({64, 32, 32, 4, DType::kFloat16, 0, true, false}, p);
  EXPECT(t19.data.groupBlocks == 1 && t19.blockDim == 4 && t19.data.mm.singleCoreN == 32);
  GroupedMatmulTiling t7 = TileGroupedMatmul({128, 512, 512, 8, DType::kBFloat16, 0, false, false}, p);
  EXPECT(t7.data.groupBlocks == 3 && t7.blockDim == 24 && t7.data.mm.singleCoreN == 176);
  CheckCoverage(t7, {22, 22, 0, 21, 21, 0, 21, 21});
  // counts (group_list_type 1) need every earlier entry for a group's start: the round-robin deal
  EXPECT(TileGroupedMatmul({64, 32, 32, 4, DType::kFloat16, 1, true, false}, p).data.groupBlocks == 0);
  // cann-bench case 10 (bf16, K 1023, N 2047): 16 row blocks x 4 column blocks of 512
  const TCubeTiling c10 = TileGroupedMatmul({2047, 1023, 2047, 8, DType::kBFloat16, 0, false, false}, p).data.mm;
  EXPECT(c10.iterateOrder == 1 && c10.stepKa == 8 && c10.singleCoreN == 512);
  // cann-bench case 3 (fp16, K 1024, a half bias): the rows (256 KiB) and the bias's base block leave room
  // for 3 of the weight's K steps double-buffered (192 KiB), not 4 (256 KiB)
  GroupedMatmulProblem c3p{2048, 1024, 2048, 8, DType::kFloat16, 0, true, false};
  c3p.biasDtype = DType::kFloat16;
  const TCubeTiling c3 = TileGroupedMatmul(c3p, p).data.mm;
  EXPECT(c3.iterateOrder == 1 && c3.stepKa == 8 && c3.stepKb == 3 && c3.depthB1 == 6 && c3.isBias == 1);
  EXPECT(c3.shareL1Size == 16 * 128 * 64 * 2 + 6 * 64 * 256 * 2 + 256 * 2);
  // fp32 K 4096: 128 rows x 4096 x 4 B = 2 MiB of rows, over L1: the K-stepped tiling
  const TCubeTiling big = TileGroupedMatmul({512, 4096, 512, 4, DType::kFloat32, 0, false, false}, p).data.mm;
  EXPECT(big.iterateOrder == 0 && big.stepKa == 4 && big.depthA1 == 8);
  // the weight grad keeps the K-stepped tiling
  const TCubeTiling wg = TileGroupedMatmul({1009, 1024, 1024, 8, DType::kFloat16, 0, false, true}, p).data.mm;
  EXPECT(wg.iterateOrder == 0 && wg.stepKa == 4);
}

// ---- the problem functions: argument rules and output shapes ----
static void TestGroupedMatmulProblem() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, i64 = DType::kInt64;
  const OpSpec gmm{"grouped_matmul", "", {"x", "weight", "group_list"}, {{f16, f16, i64}, {f32, f32, i64}}};
  const OpSpec wgrad{"grouped_matmul_weight_grad", "", {"x", "dy", "group_list"}, {{f32, f32, i64}}};
  const TensorArg<int64_t> x{{4, 3}, f32}, w{{2, 3, 5}, f32}, wt{{2, 5, 3}, f32}, gl{{2}, i64};
  GroupedMatmulArgs<int64_t> a = CheckGroupedMatmul(gmm, x, w, gl, 1, false, false);
  EXPECT(a.m == 4 && a.k == 3 && a.n == 5 && a.groups == 2 && (a.out == std::vector<int64_t>{4, 5}));
  EXPECT((CheckGroupedMatmul(gmm, x, wt, gl, 0, true, false).out == std::vector<int64_t>{4, 5}));
  const GroupedMatmulProblem p = GroupedMatmulProblemOf(a, f32, 0, true, false);
  EXPECT(p.m == 4 && p.n == 5 && p.groupListType == 0 && p.transposeWeight && !p.weightGrad);
  EXPECT((CheckGroupedMatmul(wgrad, x, TensorArg<int64_t>{{4, 6}, f32}, gl, 1, false, true).out ==
          std::vector<int64_t>{2, 3, 6}));
  ArgError::Kind kind{};
  EXPECT(expect::ArgErrorOf([&] { CheckGroupedMatmul(gmm, x, w, gl, 2, false, false); }, &kind) ==
         "grouped_matmul: group_list_type must be 0 (cumulative ends) or 1 (counts), got 2");
  EXPECT(kind == ArgError::kValue);
  EXPECT(expect::ArgErrorOf([&] { CheckGroupedMatmul(gmm, TensorArg<int64_t>{{4}, f32}, w, gl, 1, false, false); }) ==
         "grouped_matmul: x must be 2-D [M, K], got shape [4]");
  EXPECT(expect::ArgErrorOf([&] { CheckGroupedMatmul(gmm, x, w, TensorArg<int64_t>{{0}, i64}, 1, false, false); }) ==
         "grouped_matmul: group_list must be 1-D with one entry per group (at least 1), got shape [0]");
  EXPECT(expect::ArgErrorOf(
             [&] { CheckGroupedMatmul(gmm, x, w, TensorArg<int64_t>{{2}, DType::kInt32}, 1, false, false); }, &kind) ==
         "grouped_matmul: group_list must be one of int64, got int32");
  EXPECT(kind == ArgError::kType);
  EXPECT(expect::ArgErrorOf(
             [&] { CheckGroupedMatmul(gmm, x, TensorArg<int64_t>{{2, 3, 5}, f16}, gl, 1, false, false); }, &kind) ==
         "grouped_matmul: weight must have x's dtype float32, got float16");
  EXPECT(kind == ArgError::kType);
  EXPECT(expect::ArgErrorOf([&] {
           CheckGroupedMatmul(gmm, x, TensorArg<int64_t>{{3, 3, 5}, f32}, gl, 1, false, false);
         }) == "grouped_matmul: weight must be 3-D [E, K, N] with E = 2 (group_list entries), got shape [3, 3, 5]");
  EXPECT(expect::ArgErrorOf([&] { CheckGroupedMatmul(gmm, x, w, gl, 1, true, false); }) ==
         "grouped_matmul: weight must have K = 3 (x.size(1)) in dim 2 (transpose_weight=True), got shape [2, 3, 5]");
  EXPECT(expect::ArgErrorOf([&] {
           CheckGroupedMatmul(wgrad, x, TensorArg<int64_t>{{5, 6}, f32}, gl, 1, false, true);
         }) == "grouped_matmul_weight_grad: dy must be 2-D [M, N] with M = 4 (x rows), got shape [5, 6]");
  // bias [E, N]: its dtype from the prototype's combinations (float for bfloat16 x), its shape from E and N
  const DType bf16 = DType::kBFloat16;
  const OpSpec withBias{
      "grouped_matmul", "", {"x", "weight", "group_list", "bias"}, {{f16, f16, i64, f16}, {bf16, bf16, i64, f32}}};
  const TensorArg<int64_t> xb{{4, 3}, bf16}, wb{{2, 3, 5}, bf16}, bias{{2, 5}, f32};
  const GroupedMatmulArgs<int64_t> ab = CheckGroupedMatmul(withBias, xb, wb, gl, 1, false, false, &bias);
  EXPECT(ab.biasDtype == f32 && GroupedMatmulProblemOf(ab, bf16, 1, false, false).HasBias());
  EXPECT(CheckGroupedMatmul(withBias, xb, wb, gl, 1, false, false).biasDtype == DType::kOther);
  EXPECT(expect::ArgErrorOf([&] {
           const TensorArg<int64_t> b{{2, 6}, f32};
           CheckGroupedMatmul(withBias, xb, wb, gl, 1, false, false, &b);
         }) == "grouped_matmul: bias must be 2-D [E, N] = [2, 5] (group_list entries, weight's N), got shape [2, 6]");
  EXPECT(expect::ArgErrorOf(
             [&] {
               const TensorArg<int64_t> b{{2, 5}, bf16};
               CheckGroupedMatmul(withBias, xb, wb, gl, 1, false, false, &b);
             },
             &kind) == "grouped_matmul: bias must be one of float16, float32, got bfloat16");
  EXPECT(kind == ArgError::kType);
}

int main() {
  TestGroupedMatmulProblem();
  TestGroupedMatmulTiling();
  TestResidentRows();
  return expect::Report();
}
