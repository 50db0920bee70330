// Fused linear cross-entropy tiling: score blocks of kLceBlock x kLceBlock, their reduction over H in chunks that
// fill half of L0A / L0B (the queues hold two), the backward's G segments of 128 KB in L1, and every buffer held to
// A2's L1, L0 and UB (linear_cross_entropy_buffers.h). One task per block of 128 tokens (forward, the backward's dx)
// or of 128 vocab rows (the backward's dw), dealt round-robin to the core groups.
#include "linear_cross_entropy_tiling.h"

#include <algorithm>
#include <string>

#include "linear_cross_entropy_buffers.h"
#include "op_spec.h"

namespace tiling {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t AlignUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

constexpr int64_t kWorkspaceAlign = 512;
constexpr int64_t kGradSegmentBytes = 128 * 1024;  // a G segment in L1: 4 blocks in 16-bit dtypes, 2 in fp32

}  // namespace

LinearCrossEntropyTiling TileLinearCrossEntropy(const LinearCrossEntropyProblem& p, const CubePlatform& platform) {
  LinearCrossEntropyTiling out{};
  LinearCrossEntropyTilingData& t = out.data;
  const int64_t bytes = ElementBytes(p.dtype);
  t.tokens = p.tokens, t.hidden = p.hidden, t.vocab = p.vocab, t.vocabStart = p.vocabStart, t.softcap = p.softcap;
  t.hasBias = p.hasBias, t.hasClassWeight = p.hasClassWeight;
  t.kChunk = int32_t(platform.l0aBytes / 2 / (kLceBlock * bytes) / 16 * 16);
  t.segBlocks = int32_t(kGradSegmentBytes / (kLceBlock * kLceBlock * bytes));
  t.gemmChunk = int32_t(kLceBlock);
  t.gemmK = t.kChunk;
  const LceCubeBuffers cube = LceCubeBuffersOf(uint32_t(bytes), uint32_t(t.kChunk), uint32_t(t.segBlocks),
                                               uint32_t(t.gemmChunk), uint32_t(t.gemmK), p.backward);
  const int64_t ub = LceVectorBuffersOf().Total();
  std::string where = cube.L1() > platform.l1Bytes - 256 ? "L1"
                      : 2 * cube.l0a > platform.l0aBytes ? "L0A"
                      : 2 * cube.l0b > platform.l0bBytes ? "L0B"
                      : 2 * cube.l0c > platform.l0cBytes ? "L0C"
                      : ub > kA2UbBudget                 ? "UB"
                                                         : "";
  if (!where.empty())
    throw TilingError(std::string("the linear cross-entropy blocks in ") + DTypeName(p.dtype) + " do not fit " + where);
  // Nd2Nz reads rows of at most 65535 elements (A2's 16-bit srcDValue); the problem function says so first.
  if (p.hidden > 65535) throw TilingError("hidden size " + std::to_string(p.hidden) + " exceeds the cube's 65535");

  t.tokenTasks = CeilDiv(p.tokens, kLceBlock);
  t.vocabTasks = p.backward ? CeilDiv(p.vocab, kLceBlock) : 0;
  // an empty side leaves nothing to multiply: the backward's outputs are zeros (the binding fills them)
  const int64_t tasks = p.tokens == 0 || p.vocab == 0 || p.hidden == 0 ? 0 : t.tokenTasks + t.vocabTasks;
  t.scoreSlotBytes = AlignUp(kLceBlock * kLceBlock * 4, kWorkspaceAlign);
  t.gradOffset = kLceScoreSlots * t.scoreSlotBytes;
  t.gradSlotBytes = p.backward ? AlignUp(kLceBlock * t.segBlocks * kLceBlock * bytes, kWorkspaceAlign) : 0;
  t.accOffset = t.gradOffset + kLceGradSlots * t.gradSlotBytes;
  t.workspacePerGroup = t.accOffset + (p.backward ? AlignUp(kLceBlock * p.hidden * 4, kWorkspaceAlign) : 0);
  out.blockDim = uint32_t(std::min<int64_t>(tasks, platform.cubeCores));
  t.blockDim = int32_t(out.blockDim);
  out.workspaceBytes = int64_t(out.blockDim) * t.workspacePerGroup;
  return out;
}

}  // namespace tiling
