// The dtype sets the kernels' per-op entry lists are made of (tiling/<family>_tiling_data.h).
// The kernel entries, one list per op (csrc/kernels defines the entries from it, csrc/torch declares and
// dispatches them, csrc/torch/npu launches them): LIST(X, ...) calls X(SUFFIX, T, G, TORCH_T, TORCH_G, ...)
// once per entry <op>_<SUFFIX>, T / G the kernel's element types of its first / second dtype-bearing
// tensor and at::k<TORCH_T> / at::k<TORCH_G> the torch dtypes it serves. <OP>_PARAMS(GM) lists the
// entry's GM parameters (GM_ADDR in the kernel, uint8_t* on the twin, void* for aclrtlaunch_<entry>).
#pragma once

// Every tensor in one of the float dtypes (T = G).
#define ASCENDC_FLOAT_DTYPES(X, ...)                \
  X(float, float, float, Float, Float, __VA_ARGS__) \
  X(half, half, half, Half, Half, __VA_ARGS__)      \
  X(bfloat16, bfloat16_t, bfloat16_t, BFloat16, BFloat16, __VA_ARGS__)
// A pair: a second tensor (gamma, probs) in the first's dtype or in float32.
#define ASCENDC_FLOAT_PAIR_DTYPES(X, ...)                            \
  X(float_float, float, float, Float, Float, __VA_ARGS__)            \
  X(half_float, half, float, Half, Float, __VA_ARGS__)               \
  X(bfloat16_float, bfloat16_t, float, BFloat16, Float, __VA_ARGS__) \
  X(half_half, half, half, Half, Half, __VA_ARGS__)                  \
  X(bfloat16_bfloat16, bfloat16_t, bfloat16_t, BFloat16, BFloat16, __VA_ARGS__)
