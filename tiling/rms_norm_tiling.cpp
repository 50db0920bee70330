#include "rms_norm_tiling.h"

#include <algorithm>
#include <string>

namespace tiling {
namespace {

// T-typed queues of a row kernel: forward x (+ x2, or z), y (+ x out); backward dy, x (+ dx_out, or z), dx
// (+ dz).
uint32_t QueuesOfT(const NormProblem& p) {
  if (p.backward) return p.add ? 4 : p.gated ? 5 : 3;
  return p.add ? 4 : p.gated ? 3 : 2;
}
// gamma as loaded: an fp32 gamma lands in its fp32 buffer directly (LoadGammaFp32), one block reserved.
uint32_t GammaRawBytes(const NormProblem& p, uint32_t cols) {
  return p.gammaDtype == DType::kFloat32 ? 32 : AlignUp(cols * ElementBytes(p.gammaDtype), 32);
}
// fp32 work buffers per element: forward xf, work; backward none for fp32 x (rms_norm_grad.cpp computes
// on dy and x where they landed, with its scratch in the dx output buffer), else dyf, xf, work.
// The gated forward adds the gate's buffer (silu(z) in fp32; z itself is widened into xf once x is read);
// the gated backward the gate's buffer (sigmoid(z), then h) and for fp16/bf16 z widened (zf) and silu'(z).
uint32_t Fp32Work(const NormProblem& p) {
  if (p.backward) return (p.xDtype == DType::kFloat32 ? 0 : 3) + (p.gated ? (p.xDtype == DType::kFloat32 ? 1 : 2) : 0);
  return p.gated ? 3 : 2;
}
// Single-pass fp32 forward tiles read x (and z) where they landed (rms_norm.cpp XInPlace): no xf.
uint32_t Fp32WorkSinglePass(const NormProblem& p) {
  return !p.backward && p.xDtype == DType::kFloat32 ? Fp32Work(p) - 1 : Fp32Work(p);
}
// Split-row backward chunks keep the width four fp32 buffers gave them (the kernel uses fewer, so this
// over-counts): the chunk width sets the order each row's sum(dg * x) is added in, and keeping it keeps
// split-row results bit-identical. Wider chunks were as accurate over 200 random inputs, but moved which
// fixed inputs of tests/ops/test_rms_norm.py meet the fp32 small-value ErrorCount (~10-16% of inputs miss it
// either way).
uint32_t Fp32WorkSplitRow(const NormProblem& p) { return p.backward ? std::max(4u, Fp32Work(p)) : Fp32Work(p); }

}  // namespace

bool NormShortRows(const NormProblem& p) {
  const uint32_t n = p.hidden;
  return !p.backward && !p.gated && n >= 8 && n <= kNormShortRowMax && (n & (n - 1)) == 0 && RowPitch(n, p.xDtype) == n;
}

bool NormPackedRows(const NormProblem& p) {
  const uint32_t n = p.hidden;
  return !p.backward && !p.add && !p.gated && n >= 1 && (n & (n - 1)) == 0 && n * ElementBytes(p.xDtype) < 32;
}

uint32_t NormPackedBytes(const NormProblem& p, uint32_t rows) {
  constexpr uint32_t kBufferNum = 2;
  const uint32_t elems = rows * p.hidden, floats = elems * 4;
  const bool fp32 = p.xDtype == DType::kFloat32;
  uint32_t bytes = kBufferNum * 2 * AlignUp(elems * ElementBytes(p.xDtype), 32);  // x in, y out
  bytes += kBufferNum * AlignUp(rows * 4, 32);                                   // rstd out
  bytes += (fp32 ? 32 : floats) + floats;                     // x in fp32 (fp32: read in place), squares
  bytes += 2 * AlignUp(rows * 4, 32);                         // row sums (then rstd), ones
  bytes += floats;                                            // gamma once per row of the tile
  if (p.hidden > 1) bytes += floats / 2 * 3 + 2 * floats;     // transposed squares and their halves; 2 tables
  bytes += GammaRawBytes(p, p.hidden) + AlignUp(p.hidden * 4, 32);
  return bytes;
}

uint32_t NormSinglePassBytes(const NormProblem& p, uint32_t rows, uint32_t kBufferNum, bool dxOutLate) {
  const uint32_t pitch = RowPitch(p.hidden, p.xDtype);
  const uint32_t elems = rows * pitch;
  const uint32_t queues = QueuesOfT(p) - (dxOutLate && p.backward && p.add ? 1 : 0);
  uint32_t bytes = kBufferNum * AlignUp(elems * ElementBytes(p.xDtype), 32) * queues;
  const bool shortRows = NormShortRows(p);
  const uint32_t padded = AlignUp(rows, 8);  // short rows: the folds take whole blocks of 8 rows
  bytes += Fp32WorkSinglePass(p) * (shortRows ? padded * pitch : elems) * 4;
  bytes += AlignUp(rows * 8 * 4, 32);                                     // per-row sums, 32 B apart
  if (!p.backward) bytes += kBufferNum * AlignUp(rows * 4, 32);           // rstd out
  bytes += NormReduceTmpElems(pitch) * 4;                                 // ReduceSum scratch
  bytes += GammaRawBytes(p, pitch) + pitch * 4;                           // gamma as loaded, and in fp32
  if (p.backward) bytes += pitch * 4;                                     // dgamma accumulator
  if (shortRows) {
    bytes += 2 * padded * pitch * 4;                       // the folds' second buffer; gamma per row
    const uint32_t cols = std::min(p.hidden, NORM_SHORT_GATHER_COLS);
    bytes += (1 + cols + pitch) * padded * 4;       // gather offsets: rows, partial sums, rstd spread
    bytes += (cols + cols / 2) * padded * 4;        // partial sums, halved
  }
  return bytes;
}

uint32_t NormSplitRowBytes(const NormProblem& p, uint32_t chunk) {
  constexpr uint32_t kBufferNum = 2;
  uint32_t bytes = kBufferNum * AlignUp(chunk * ElementBytes(p.xDtype), 32) * QueuesOfT(p);
  bytes += Fp32WorkSplitRow(p) * chunk * 4;
  bytes += 8 * 4;                                                         // one row's sum
  if (!p.backward) bytes += kBufferNum * 32;                              // rstd out
  bytes += NormReduceTmpElems(chunk) * 4;
  bytes += GammaRawBytes(p, chunk) + chunk * 4;
  if (p.backward) bytes += chunk * 4;
  return bytes;
}

uint32_t NormReduceBytes(DType gammaDtype, uint32_t chunk) {
  constexpr uint32_t kBufferNum = 2;
  return NORM_REDUCE_BUFFER_NUM * chunk * 4 + chunk * 4 + kBufferNum * AlignUp(chunk * ElementBytes(gammaDtype), 32);
}

NormTiling TileNorm(const NormProblem& p, const PlatformInfo& platform) {
  if (p.rows < 0) throw TilingError("rows must be >= 0, got " + std::to_string(p.rows));
  if (p.gated && p.add) throw TilingError("the gated norm has no add_rms_norm form");
  NormTiling t{};
  NormTilingData& d = t.data;
  d.hidden = p.hidden;
  d.rowPitch = RowPitch(p.hidden, p.xDtype);
  d.epsilon = p.epsilon;
  d.gammaOffset = p.gammaOffset;
  d.invHidden = p.hidden ? 1.0f / float(p.hidden) : 0.0f;
  d.rows = p.rows;
  t.tilingKey = NORM_SINGLE_PASS;
  if (p.rows == 0 || p.hidden == 0) return t;  // nothing to launch

  const uint32_t budget = platform.UbBudget();
  t.blockDim = uint32_t(std::min<int64_t>(platform.vectorCores, p.rows));
  d.blockDim = t.blockDim;
  d.rowsPerBlock = p.rows / t.blockDim;
  d.rowsRemainder = p.rows % t.blockDim;
  const int64_t mostRows = d.rowsPerBlock + (d.rowsRemainder ? 1 : 0);

  if (NormPackedRows(p)) {
    // tiles of whole blocks of 8 rows (the transposed columns stay 32-byte aligned), as many as fit
    const uint32_t most = std::min<uint32_t>(AlignUp(uint32_t(std::min<int64_t>(mostRows, 1 << 20)), 8),
                                             NORM_PACKED_MAX_ELEMS / p.hidden / 8 * 8);
    uint32_t rows = 8;
    while (rows + 8 <= most && NormPackedBytes(p, rows + 8) <= budget) rows += 8;
    if (NormPackedBytes(p, rows) > budget) throw TilingError("no packed tile of 8 rows fits in UB");
    d.packedRows = 1;
    d.tileRows = rows;
    d.chunk = p.hidden;
    d.chunkCount = 1;
    d.bufferNum = 2;
    return t;
  }

  uint32_t fit = 0;
  // Whole rows double-buffered; else whole rows single-buffered; else (add_rms_norm_grad) single-buffered
  // with dx_out loaded late into x's buffer; else the split-row mode.
  d.bufferNum = NormSinglePassBytes(p, 1, 2) <= budget ? 2 : 1;
  const bool late =
      p.backward && p.add && NormSinglePassBytes(p, 1, 1) > budget && NormSinglePassBytes(p, 1, 1, true) <= budget;
  d.dxOutLate = late ? 1 : 0;
  if (NormSinglePassBytes(p, 1, d.bufferNum, late) <= budget) {
    // the largest tile that fits, found by bisection (the byte count grows with the rows)
    uint32_t lo = 1, hi = kNormMaxTileRows;
    while (lo < hi) {
      const uint32_t mid = (lo + hi + 1) / 2;
      if (NormSinglePassBytes(p, mid, d.bufferNum, late) <= budget) lo = mid;
      else hi = mid - 1;
    }
    fit = lo;
  } else {
    d.bufferNum = 2;
  }
  if (fit > 0) {
    d.tilingKey = NORM_SINGLE_PASS;
    d.shortRows = NormShortRows(p) ? 1 : 0;
    d.tileRows = uint32_t(std::min<int64_t>(fit, mostRows));
    // short rows: whole blocks of 8 rows per tile (the gather table's layout), but for a short block
    // and at most 255 full repeats per Gather (its count form, twin_vector.h)
    if (d.shortRows) d.tileRows = std::min(d.tileRows, 255u * 64u / p.hidden);
    if (d.shortRows && d.tileRows > 8) d.tileRows = d.tileRows / 8 * 8;
    d.chunk = d.rowPitch;
    d.chunkCount = 1;
    d.reduceTmpElems = NormReduceTmpElems(d.rowPitch);
  } else {
    d.tilingKey = NORM_SPLIT_ROW;
    d.tileRows = 1;
    // the largest multiple of 16 columns that fits
    uint32_t lo = 0, hi = AlignUp(p.hidden, 16) / 16;
    while (lo < hi) {
      const uint32_t mid = (lo + hi + 1) / 2;
      if (NormSplitRowBytes(p, mid * 16) <= budget) lo = mid;
      else hi = mid - 1;
    }
    if (lo == 0) throw TilingError("no column chunk of a " + std::to_string(p.hidden) + "-element row fits in UB");
    d.chunk = lo * 16;
    d.chunkCount = (p.hidden + d.chunk - 1) / d.chunk;
    d.reduceTmpElems = NormReduceTmpElems(d.chunk);
  }
  t.tilingKey = NormTilingKey(d.tilingKey);

  if (p.backward) {
    // columns spread over the cores (one 4096-column task would leave all cores but one idle)
    const uint32_t perCore = AlignUp((p.hidden + platform.vectorCores - 1) / platform.vectorCores, 16);
    d.reduceChunk = std::min({kNormReduceChunk, AlignUp(p.hidden, 16), std::max(perCore, 256u)});
    d.reduceTasks = (p.hidden + d.reduceChunk - 1) / d.reduceChunk;
    d.reduceBlockDim = std::min(platform.vectorCores, d.reduceTasks);
    d.reduceTasksPerBlock = d.reduceTasks / d.reduceBlockDim;
    d.reduceTasksRemainder = d.reduceTasks % d.reduceBlockDim;
    t.reduceBlockDim = d.reduceBlockDim;
  }
  return t;
}

}  // namespace tiling
