// Host tiling for the AdamW update (apply_adam_w and its multi-tensor form): a pure function of the element
// count, the parameter dtype, the hyperparameters and the platform.
#pragma once
#include "optimizer_tiling_data.h"
#include "platform.h"

namespace tiling {

// The hyperparameters as the op receives them (torch.optim.AdamW's names; step counts this update).
struct AdamWHyper {
  double lr, beta1, beta2, weightDecay, eps, step;
  bool amsgrad, maximize;
};

struct AdamWProblem {
  int64_t totalElems;  // over every tensor
  int64_t tensorCount;
  DType dtype;  // the parameter's (and grad's); the states are float32
  AdamWHyper hyper;
  bool master = false;  // fp32 master copies of the (16-bit) parameters
};

struct AdamWTiling {
  AdamWTilingData data;
  uint32_t blockDim;  // 0 when there is nothing to update
};

// Elements a tile is a multiple of (64 floats: one 256-byte repeat) and the fewest a block takes.
constexpr int64_t kAdamWAlign = 64;
constexpr int64_t kAdamWMinBlockElems = 1024;

// UB bytes one tile element costs (tiling/optimizer_buffers.h, the kernel's Init's plan).
uint32_t AdamWBytesPerElem(DType dtype, bool amsgrad, bool master = false);

AdamWTiling TileAdamW(const AdamWProblem& problem, const PlatformInfo& platform);

struct ForeachNormProblem {
  int64_t totalElems;  // over every tensor
  int64_t tensorCount;
  DType dtype;
  ForeachNormKind kind;
};

struct ForeachNormTiling {
  ForeachNormTilingData data;
  uint32_t blockDim;  // 0 when there is no element (the norms are all 0)
};

// UB bytes one tile element costs (tiling/optimizer_buffers.h).
uint32_t ForeachNormBytesPerElem(DType dtype);

ForeachNormTiling TileForeachNorm(const ForeachNormProblem& problem, const PlatformInfo& platform);

struct ForeachClipProblem {
  int64_t totalElems;  // over every tensor of x
  int64_t tensorCount;
  int64_t normCount;
  DType dtype;
  ForeachNormKind kind;
  double maxNorm;
  bool errorIfNonfinite;
};

struct ForeachClipTiling {
  ForeachClipTilingData data;
  uint32_t blockDim;  // at least 1: the total is written even when x holds no element
};

// UB bytes one tile element costs (tiling/optimizer_buffers.h).
uint32_t ForeachClipBytesPerElem(DType dtype);

ForeachClipTiling TileForeachClip(const ForeachClipProblem& problem, const PlatformInfo& platform);

}  // namespace tiling
