#include "optimizer_tiling.h"

#include <algorithm>
#include <cmath>

#include "optimizer_buffers.h"

namespace tiling {

namespace {
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t AlignUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }
}  // namespace

uint32_t AdamWBytesPerElem(DType dtype, bool amsgrad, bool master) {
  return AdamWBuffers(1, ElementBytes(dtype), amsgrad, master).Total();
}

AdamWTiling TileAdamW(const AdamWProblem& p, const PlatformInfo& platform) {
  if (p.totalElems < 0 || p.tensorCount < 0)
    throw TilingError("element and tensor counts must be >= 0, got " + std::to_string(p.totalElems) + " and " +
                      std::to_string(p.tensorCount));
  AdamWTiling t{};
  AdamWTilingData& d = t.data;
  const AdamWHyper& h = p.hyper;
  d.totalElems = p.totalElems;
  d.tensorCount = p.tensorCount;
  d.amsgrad = h.amsgrad ? 1 : 0;
  d.master = p.master ? 1 : 0;
  // The scalars in double, as torch.optim.AdamW forms them in Python, rounded to fp32 once.
  d.decay = float(1.0 - h.lr * h.weightDecay);
  d.gradSign = h.maximize ? -1.0f : 1.0f;
  d.weight1 = float(1.0 - h.beta1);
  d.beta2 = float(h.beta2);
  d.squareScale = float(1.0 - h.beta2);
  d.rsqrtCorrection2 = float(1.0 / std::sqrt(1.0 - std::pow(h.beta2, h.step)));
  d.eps = float(h.eps);
  d.negStepSize = float(-h.lr / (1.0 - std::pow(h.beta1, h.step)));
  if (p.totalElems == 0) return t;  // blockDim 0: nothing to launch

  const int64_t fit = platform.UbBudget() / AdamWBytesPerElem(p.dtype, h.amsgrad, p.master) / kAdamWAlign * kAdamWAlign;
  if (fit < kAdamWAlign || platform.vectorCores < 1)
    throw TilingError(std::string(platform.name) + " has no room for one AdamW tile of " + std::to_string(kAdamWAlign) +
                      " elements");
  // Every core a share, but no share so small that its launch costs more than its elements.
  const int64_t share = AlignUp(CeilDiv(p.totalElems, platform.vectorCores), kAdamWAlign);
  d.blockElems = std::max(share, kAdamWMinBlockElems);
  t.blockDim = uint32_t(CeilDiv(p.totalElems, d.blockElems));
  // The fewest tiles per block that fit, evened out so the block's last tile is not a sliver.
  const int64_t tiles = CeilDiv(d.blockElems, fit);
  d.tileElems = uint32_t(std::min(fit, AlignUp(CeilDiv(d.blockElems, tiles), kAdamWAlign)));
  return t;
}

uint32_t ForeachNormBytesPerElem(DType dtype) { return ForeachNormBuffers(1, ElementBytes(dtype)).Total(); }

ForeachNormTiling TileForeachNorm(const ForeachNormProblem& p, const PlatformInfo& platform) {
  if (p.totalElems < 0 || p.tensorCount < 0)
    throw TilingError("element and tensor counts must be >= 0, got " + std::to_string(p.totalElems) + " and " +
                      std::to_string(p.tensorCount));
  ForeachNormTiling t{};
  ForeachNormTilingData& d = t.data;
  d.totalElems = p.totalElems;
  d.tensorCount = p.tensorCount;
  d.kind = p.kind;
  if (p.totalElems == 0) return t;
  const int64_t budget = int64_t(platform.UbBudget()) - kForeachNormFixedBytes;
  const int64_t fit = budget / ForeachNormBytesPerElem(p.dtype) / kAdamWAlign * kAdamWAlign;
  if (fit < kAdamWAlign || platform.vectorCores < 1)
    throw TilingError(std::string(platform.name) + " has no room for one foreach_norm tile of " +
                      std::to_string(kAdamWAlign) + " elements");
  // the AdamW update's dealing: every core a share of at least kAdamWMinBlockElems elements
  const int64_t share = AlignUp(CeilDiv(p.totalElems, platform.vectorCores), kAdamWAlign);
  d.blockElems = std::max(share, kAdamWMinBlockElems);
  t.blockDim = uint32_t(CeilDiv(p.totalElems, d.blockElems));
  d.blockDim = t.blockDim;
  const int64_t tiles = CeilDiv(d.blockElems, fit);
  d.tileElems = uint32_t(std::min(fit, AlignUp(CeilDiv(d.blockElems, tiles), kAdamWAlign)));
  return t;
}

uint32_t ForeachClipBytesPerElem(DType dtype) { return ForeachClipBuffers(1, ElementBytes(dtype)).Total(); }

ForeachClipTiling TileForeachClip(const ForeachClipProblem& p, const PlatformInfo& platform) {
  if (p.totalElems < 0 || p.tensorCount < 0 || p.normCount < 0)
    throw TilingError("element, tensor and norm counts must be >= 0, got " + std::to_string(p.totalElems) + ", " +
                      std::to_string(p.tensorCount) + " and " + std::to_string(p.normCount));
  ForeachClipTiling t{};
  ForeachClipTilingData& d = t.data;
  d.totalElems = p.totalElems;
  d.tensorCount = p.tensorCount;
  d.normCount = p.normCount;
  d.kind = p.kind;
  d.maxNorm = float(p.maxNorm);
  d.errorIfNonfinite = p.errorIfNonfinite ? 1 : 0;
  const int64_t budget = int64_t(platform.UbBudget()) - ForeachClipFixedBytes(kForeachClipNormChunk);
  const int64_t fit = budget / ForeachClipBytesPerElem(p.dtype) / kAdamWAlign * kAdamWAlign;
  if (fit < kAdamWAlign || platform.vectorCores < 1)
    throw TilingError(std::string(platform.name) + " has no room for one foreach_clip_by_total_norm tile of " +
                      std::to_string(kAdamWAlign) + " elements");
  // the AdamW update's dealing; one block even with no element, to write the total
  const int64_t share = AlignUp(CeilDiv(p.totalElems, platform.vectorCores), kAdamWAlign);
  d.blockElems = std::max(share, kAdamWMinBlockElems);
  t.blockDim = uint32_t(std::max<int64_t>(1, CeilDiv(p.totalElems, d.blockElems)));
  const int64_t tiles = CeilDiv(d.blockElems, fit);
  d.tileElems = uint32_t(std::min(fit, AlignUp(CeilDiv(d.blockElems, tiles), kAdamWAlign)));
  return t;
}

}  // namespace tiling
