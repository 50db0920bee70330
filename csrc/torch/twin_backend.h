// The CPU twin as a torch backend: the platform its tiling targets (one vector core per torch
// intra-op thread, A2's UB) and kernel launches whose twin rule violations (kernel bugs, not the
// caller's) surface in Python as RuntimeErrors naming the rule, the kernel and the block.
#pragma once
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <tuple>

#include "cube_tiling_rules.h"
#include "platform.h"
#include "twin_core.h"
#include "twin_launch.h"

namespace ascendc_ops {

bool TilingPlatformOverride(tiling::PlatformInfo* out);  // set_tiling_platform (platform_ops.cpp)
bool TilingCubeCoresOverride(uint32_t* out);             // its cube_cores, when given (> 0)
inline tiling::PlatformInfo TwinPlatform() {
  tiling::PlatformInfo p;
  return TilingPlatformOverride(&p) ? p : tiling::CpuTwin(uint32_t(at::get_num_threads()));
}
// The twin's cube core groups: the modelled chip's (set_tiling_platform's cube_cores), else one per torch thread.
inline tiling::CubePlatform TwinCubePlatform() {
  tiling::CubePlatform p = tiling::CpuTwinCube(uint32_t(at::get_num_threads()));
  uint32_t cores = 0;
  if (TilingCubeCoresOverride(&cores)) p.cubeCores = cores;
  return p;
}

// A tensor's GM address for a kernel (null for an undefined tensor: an absent optional input).
inline uint8_t* Gm(const at::Tensor& t) { return t.defined() ? static_cast<uint8_t*>(t.data_ptr()) : nullptr; }

// Gm for a launch's argument list (a launch struct's Args) that also adds up the bytes of the tensors it is given,
// each once (GmBytes).
struct CountedGm {
  uint64_t& bytes;
  uint8_t* operator()(const at::Tensor& t) const {
    bytes += t.defined() ? t.nbytes() : 0;
    return Gm(t);
  }
};

// The GM bytes a launch reads and writes: the tensors it takes, each counted once.
template <typename... Tensors>
uint64_t GmBytes(const Tensors&... tensors) {
  return (uint64_t(tensors.defined() ? tensors.nbytes() : 0) + ...);
}

// Runs a twin launch; a rule violation it stops with becomes a torch error (a RuntimeError in Python).
template <typename Launch>
void RaiseRuleErrors(const Launch& launch) {
  try {
    launch();
  } catch (const AscendC::twin::RuleError& e) {
    TORCH_CHECK(false, e.what());
  }
}

// gmBytes (GmBytes of its tensors) lets a tiny launch run on the calling thread (twin_launch.h).
template <typename... Params, typename... Args>
void LaunchOnTwin(uint64_t gmBytes, const char* kernelName, uint32_t blockDim, void (*kernel)(Params...),
                  Args... args) {
  RaiseRuleErrors([&] { AscendC::twin::LaunchMoving(gmBytes, kernelName, blockDim, kernel, args...); });
}
template <typename... Params, typename... Args>
void LaunchOnTwin(const char* kernelName, uint32_t blockDim, void (*kernel)(Params...), Args... args) {
  LaunchOnTwin(AscendC::twin::kUnknownGmBytes, kernelName, blockDim, kernel, args...);
}
// The same with the GM arguments as one tuple (a launch struct's Args).
template <typename... Params, typename... Gms>
void LaunchOnTwin(uint64_t gmBytes, const char* kernelName, uint32_t blockDim, void (*kernel)(Params...),
                  const std::tuple<Gms...>& gm) {
  std::apply([&](auto... p) { LaunchOnTwin(gmBytes, kernelName, blockDim, kernel, p...); }, gm);
}

// A launch of a declared kernel type whose cores wait on each other (MIX kernels' cross-core flags:
// twin_launch.h's LaunchTyped), its rule violations raised the same way.
template <typename... Params, typename... Args>
void LaunchTypedOnTwin(KernelMetaType type, const char* kernelName, uint32_t blockDim, void (*kernel)(Params...),
                       Args... args) {
  RaiseRuleErrors([&] { AscendC::twin::LaunchTyped(type, kernelName, blockDim, kernel, args...); });
}
template <typename... Params, typename... Gms>
void LaunchTypedOnTwin(KernelMetaType type, const char* kernelName, uint32_t blockDim, void (*kernel)(Params...),
                       const std::tuple<Gms...>& gm) {
  std::apply([&](auto... p) { LaunchTypedOnTwin(type, kernelName, blockDim, kernel, p...); }, gm);
}

}  // namespace ascendc_ops
