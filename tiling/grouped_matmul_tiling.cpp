// Grouped matmul tiling: base blocks sized to A2's L0A / L0B / L0C, double-buffered L0A/L0B and
// four K-steps of both operands in L1, the used sizes filled as CANN fills them and every rule of
// tiling/cube_tiling_rules.h checked for the kernels' operand types and transposition; output blocks (singleCoreM x
// singleCoreN) as large as the cores allow, halved while there are fewer than two blocks per core.
// Where every group's most blocks fit the cores side by side, each block gets its own core (GridColumns).
// The forward keeps x's rows resident over K where they fit L1, with fewer of the weight's K steps if
// need be (ResidentA).
#include "grouped_matmul_tiling.h"

#include <algorithm>
#include <limits>
#include <string>

#include "cube_tiling_rules.h"
#include "grouped_matmul_columns.h"

namespace tiling {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t AlignUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

void FillBase(TCubeTiling& mm, DType dtype) {
  const int32_t bytes = int32_t(ElementBytes(dtype));
  mm.baseM = 128;
  mm.baseN = bytes == 4 ? 128 : 256;
  mm.baseK = bytes == 4 ? 32 : 64;  // 128 x 64 x 2 B = 16 KiB of L0A per buffer; multiples of 16
  mm.dbL0A = 2, mm.dbL0B = 2;
  mm.dbL0C = 1;  // CANN's default (l0cDB = DB_OFF): one L0C buffer
  mm.stepM = 1, mm.stepN = 1, mm.stepKa = 4, mm.stepKb = 4;
  mm.depthA1 = mm.stepM * mm.stepKa * 2, mm.depthB1 = mm.stepN * mm.stepKb * 2;  // double-buffered in L1
  mm.iterateOrder = 0;
  mm.isBias = 0;
}

// Forward: one base block of x's rows over the whole K in L1, as two tiles of half K each that both
// stay, walked along N (iterateOrder 1): a block reads its rows once, not once per base block of N.
// Where the rows and the weight's four K steps double-buffered overflow L1 (cube_rules::Violation; a
// bias's base block can tip it), the weight keeps fewer K steps (stepKb 3 .. 1) first: in the Norm
// schedule walking along N reuses none of the weight's cached K steps (cube_in_buffer_normal.h), its
// depth only lets its loads run that far ahead, while x's resident rows spare every base block of N
// but the first their reload. False leaves `mm` as it was.
bool ResidentA(TCubeTiling& mm, int64_t k, const cube_rules::Operand& a, const cube_rules::Operand& b,
               int32_t biasBytes, const CubePlatform& platform) {
  const TCubeTiling keep = mm;
  mm.stepKa = int32_t(std::max<int64_t>(1, CeilDiv(CeilDiv(k, mm.baseK), 2)));
  mm.depthA1 = 2 * mm.stepM * mm.stepKa;
  mm.iterateOrder = 1;
  for (int32_t stepKb = keep.stepKb; stepKb >= 1; --stepKb) {
    mm.stepKb = stepKb, mm.depthB1 = 2 * mm.stepN * stepKb;
    cube_rules::FillUsedSize(mm, a, b, biasBytes);
    if (cube_rules::Violation(mm, a, b, {platform.l1Bytes, platform.l0aBytes, platform.l0bBytes, platform.l0cBytes},
                              biasBytes)
            .empty())
      return true;
  }
  mm = keep;
  return false;
}

// A core started costs the launch ~0.01 us (the calibrated launch model, docs/pipeline-model.md): 18 cycles.
constexpr double kCoreStartCycles = 18;

// The forward's columns per block when each group's most blocks (rowBlocks x column blocks) can have a
// core each (GroupedMatmulTilingData::groupBlocks), 0 if no split fits the cores: of the column splits
// no wider than the dealt blocks' `dealtN` (the grid provides for ceil(M / baseM) row blocks in every
// group, most of them empty: it must not buy its cores with wider blocks) and with no partial base
// block of N (a second base block walks K again), the one whose block ends first, plus the cores
// started. One wave whatever the group sizes: more, narrower blocks only cost cores. A block costs its
// loads or its MACs, whichever is more, at grouped_matmul_columns.h's rates, plus its fixed latencies.
int64_t GridColumns(const GroupedMatmulProblem& pr, const TCubeTiling& mm, int64_t dealtN,
                    const CubePlatform& platform) {
  const int64_t bytes = ElementBytes(pr.dtype), macsPerCycle = bytes == 4 ? kFloatMacsPerCycle : kHalfMacsPerCycle;
  const int64_t rowBlocks = CeilDiv(pr.m, mm.baseM), rows = AlignUp(std::min<int64_t>(mm.baseM, pr.m), 16);
  int64_t best = 0;
  double bestCycles = 0;
  for (int64_t nb = 1; nb <= CeilDiv(pr.n, 16); ++nb) {
    const int64_t sn = AlignUp(CeilDiv(pr.n, nb), 16), cores = pr.groups * rowBlocks * nb;
    if (cores > int64_t(platform.cubeCores)) break;
    if (CeilDiv(pr.n, sn) != nb || (sn > mm.baseN && sn % mm.baseN) || sn > dealtN) continue;
    const double load = double((rows + sn) * pr.k * bytes) / kGmToL1BytesPerCycle;
    const double macs = double(rows * pr.k * sn) / double(macsPerCycle);
    const double cycles = double(kBlockFixedCycles) + std::max(load, macs) + double(cores) * kCoreStartCycles;
    if (best == 0 || cycles < bestCycles) best = sn, bestCycles = cycles;
  }
  return best;
}

}  // namespace

void GroupedMatmulOperands(const GroupedMatmulProblem& pr, cube_rules::Operand& a, cube_rules::Operand& b) {
  const int32_t bytes = int32_t(ElementBytes(pr.dtype));
  const bool f32 = pr.dtype == DType::kFloat32;
  a = {bytes, f32, pr.weightGrad};
  b = {bytes, f32, !pr.weightGrad && pr.transposeWeight};
}

GroupedMatmulTiling TileGroupedMatmul(const GroupedMatmulProblem& pr, const CubePlatform& platform) {
  if (pr.m < 0 || pr.k < 0 || pr.n < 0 || pr.groups < 1)
    throw TilingError("grouped matmul: shapes must be non-negative and there must be at least one group");
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  if (pr.m > kInt32Max || pr.k > kInt32Max || pr.n > kInt32Max)
    throw TilingError("grouped matmul: M, K and N must each fit in int32 (TCubeTiling)");
  if (pr.groupListType != 0 && pr.groupListType != 1)
    throw TilingError("grouped matmul: group_list_type must be 0 (cumulative) or 1 (counts)");
  if (pr.HasBias() && pr.weightGrad) throw TilingError("grouped matmul: the weight grad takes no bias");
  GroupedMatmulTiling t{};
  GroupedMatmulTilingData& d = t.data;
  d.m = pr.m, d.k = pr.k, d.n = pr.n, d.groups = pr.groups;
  d.groupListType = pr.groupListType;
  d.transposeWeight = pr.transposeWeight ? 1 : 0;
  d.weightGrad = pr.weightGrad ? 1 : 0;
  d.elementBytes = int32_t(ElementBytes(pr.dtype));
  TCubeTiling& mm = d.mm;
  FillBase(mm, pr.dtype);
  // The bias enters L0C from the bias table (SetBias): isBias, and its base block in L1 on the way.
  mm.isBias = pr.HasBias() ? 1 : 0;
  const int32_t biasBytes = pr.HasBias() ? int32_t(ElementBytes(pr.biasDtype)) : 0;
  cube_rules::Operand a, b;
  GroupedMatmulOperands(pr, a, b);
  cube_rules::FillUsedSize(mm, a, b, biasBytes);
  const std::string broken = cube_rules::Violation(
      mm, a, b, {platform.l1Bytes, platform.l0aBytes, platform.l0bBytes, platform.l0cBytes}, biasBytes);
  if (!broken.empty()) throw TilingError("grouped matmul: the cube tiling breaks a rule: " + broken);
  // Output of one group: forward [rows_e, n], reduction k; weight grad [k, n], reduction rows_e.
  const int64_t outRows = pr.weightGrad ? pr.k : pr.m;
  const int64_t reduce = pr.weightGrad ? pr.m : pr.k;
  mm.M = int32_t(outRows), mm.N = int32_t(pr.n), mm.Ka = mm.Kb = int32_t(reduce);
  const bool empty = pr.weightGrad ? (pr.k == 0 || pr.n == 0) : (pr.m == 0 || pr.n == 0);
  if (empty) return t;
  int64_t singleN = std::min<int64_t>(AlignUp(pr.n, 16), 1024);
  int64_t singleM = 256;
  const auto blocks = [&](int64_t sm, int64_t sn) {
    const int64_t mBlocks = pr.weightGrad ? pr.groups * CeilDiv(pr.k, sm) : CeilDiv(pr.m, sm);
    return mBlocks * CeilDiv(pr.n, sn);
  };
  // Forward with x's rows resident: one base block of rows per block, since more would not stay.
  const bool resident = !pr.weightGrad && ResidentA(mm, reduce, a, b, biasBytes, platform);
  if (resident) singleM = mm.baseM;
  const int64_t want = 2 * int64_t(platform.cubeCores);
  while (blocks(singleM, singleN) < want && singleM > mm.baseM) singleM /= 2;
  while (blocks(singleM, singleN) < want && singleN > mm.baseN) singleN = std::max<int64_t>(mm.baseN, singleN / 2);
  // Each group's most blocks side by side on their own cores: a core reads its group's two entries of
  // group_list, not every entry up to its block (a scalar GM read each), and no core takes two blocks.
  const int64_t gridN = resident && pr.groupListType == 0 ? GridColumns(pr, mm, singleN, platform) : 0;
  if (gridN > 0) singleN = gridN;
  mm.singleCoreM = int32_t(singleM), mm.singleCoreN = int32_t(singleN), mm.singleCoreK = int32_t(reduce);
  // Every group can add one partial row block: sum ceil(rows_e / sm) <= ceil(M / sm) + E - 1, and no group
  // has more than ceil(M / sm).
  const int64_t rowBlocks = CeilDiv(pr.m, singleM), nBlocks = CeilDiv(pr.n, singleN);
  if (pr.weightGrad) {
    t.blockDim = uint32_t(std::min<int64_t>(blocks(singleM, singleN), platform.cubeCores));
  } else if (gridN > 0) {
    d.groupBlocks = int32_t(rowBlocks * nBlocks);
    t.blockDim = uint32_t(pr.groups * rowBlocks * nBlocks);
  } else {
    // The deal narrows its columns on the core (DealtColumns, down to 16) where groups of equal size
    // (the fewest row blocks) would have it do so: then it may use every core, and reads every group's
    // rows before its first block (a scalar GM read each, which other sizes may not repay).
    const int64_t most = std::min(rowBlocks + pr.groups - 1, pr.groups * rowBlocks);
    const int64_t narrow = std::min<int64_t>(most * CeilDiv(pr.n, 16), platform.cubeCores);
    d.dealtColumns =
        pr.groups <= kDealtColumnsMaxGroups &&
        DealtColumns(pr.n, pr.k, d.elementBytes, singleM, singleN, mm.baseN, resident, rowBlocks, narrow) != singleN;
    t.blockDim = uint32_t(d.dealtColumns ? narrow : std::min<int64_t>(most * nBlocks, platform.cubeCores));
  }
  mm.usedCoreNum = int32_t(t.blockDim);
  return t;
}

int64_t GroupedMatmulColumns(const GroupedMatmulTilingData& t, const int64_t* groupRows, int64_t blockNum) {
  const int64_t sm = t.mm.singleCoreM, sn = t.mm.singleCoreN;
  if (!t.dealtColumns || t.groups > kDealtColumnsMaxGroups || sm <= 0 || sn <= 0) return sn;
  int64_t rowBlocks = 0;
  for (int64_t e = 0; e < t.groups; ++e) rowBlocks += groupRows[e] > 0 ? CeilDiv(groupRows[e], sm) : 0;
  return DealtColumns(t.n, t.k, t.elementBytes, sm, sn, t.mm.baseN, t.mm.iterateOrder == 1, rowBlocks, blockNum);
}

int64_t GroupedMatmulBlocks(const GroupedMatmulTilingData& t, const int64_t* groupRows, int64_t blockNum) {
  const int64_t sm = t.mm.singleCoreM, sn = GroupedMatmulColumns(t, groupRows, blockNum);
  if (sm <= 0 || sn <= 0) return 0;
  int64_t total = 0;
  for (int64_t e = 0; e < t.groups; ++e) {
    if (t.weightGrad && groupRows[e] == 0) continue;  // an empty group's dweight stays the zeros it starts as
    const int64_t rows = t.weightGrad ? t.k : groupRows[e];
    total += CeilDiv(rows, sm) * CeilDiv(t.n, sn);
  }
  return total;
}

}  // namespace tiling
