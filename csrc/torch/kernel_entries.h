// The per-dtype kernel entries of an op, from its one list (LIST in tiling/<family>_tiling_data.h: X(SUFFIX,
// T, G, TORCH_T, TORCH_G, ...) per entry <op>_<SUFFIX>, whose GM parameters are <OP>_PARAMS): the CPU twin's
// extern declarations and dispatch table (ASCENDC_TWIN_KERNELS) and the NPU's table of aclrtlaunch_<entry>
// launchers (ASCENDC_NPU_KERNELS, csrc/torch/npu), so the kernels, declarations and dispatch cannot disagree;
// a family's lists are named once, in its csrc/torch/<family>_ops.h (<FAMILY>_KERNELS(X)), for both.
#pragma once
#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

namespace ascendc_ops {

// The pointer type a backend's `gm` gives for a tensor (its GM address, null for an undefined tensor): the type of
// the entries' GM parameters, uint8_t* on the twin (Gm, twin_backend.h), void* on the NPU (npu::Ptr).
template <class Gm>
using GmPtr = decltype(std::declval<Gm>()(std::declval<const at::Tensor&>()));

// An entry's GM arguments: a launch struct's tensors in the entry's <OP>_PARAMS order (csrc/torch/<family>_ops.h,
// written once for both backends; a raw address among them passes as it is), each through the backend's `gm`,
// then the workspace and the tiling, where every <OP>_PARAMS ends.
template <class Gm, class... Ts>
auto EntryArgs(Gm gm, const std::tuple<Ts...>& tensors, GmPtr<Gm> workspace, GmPtr<Gm> tiling) {
  const auto one = [&](const auto& t) -> GmPtr<Gm> {
    if constexpr (std::is_pointer_v<std::decay_t<decltype(t)>>) return static_cast<GmPtr<Gm>>(t);
    else return gm(t);
  };
  return std::tuple_cat(std::apply([&](const auto&... t) { return std::make_tuple(one(t)...); }, tensors),
                        std::make_tuple(workspace, tiling));
}

// One entry of a list: the dtypes it serves (dtype2: its second dtype-bearing tensor's), its name, its function.
template <typename Fn>
struct KernelEntry {
  at::ScalarType dtype, dtype2;
  const char* name;
  Fn fn;
};

// The entry for (dtype, dtype2). The binding has already checked the dtypes against op_proto/<family>/<op>.json,
// whose combinations the list covers.
template <typename Fn, size_t N>
const KernelEntry<Fn>& PickEntry(const KernelEntry<Fn> (&entries)[N], at::ScalarType dtype, at::ScalarType dtype2) {
  for (const KernelEntry<Fn>& e : entries)
    if (e.dtype == dtype && e.dtype2 == dtype2) return e;
  TORCH_CHECK(false, "ascendc_ops: no kernel entry of ", entries[0].name, "'s list for (", dtype, ", ", dtype2, ")");
}
// Lists whose entries serve one dtype (G = T).
template <typename Fn, size_t N>
const KernelEntry<Fn>& PickEntry(const KernelEntry<Fn> (&entries)[N], at::ScalarType dtype) {
  return PickEntry(entries, dtype, dtype);
}

}  // namespace ascendc_ops

#define ASCENDC_TWIN_DECLARE_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP, PARAMS) void OP##_##SUFFIX(PARAMS(uint8_t*));
#define ASCENDC_TWIN_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP, PARAMS) \
  {at::k##TORCH_T, at::k##TORCH_G, #OP "_" #SUFFIX, OP##_##SUFFIX},
// At file scope: declares op OP's entries (compiled for the twin into this library, csrc/kernels) and
// defines ascendc_ops::twin_entries::OP, their dispatch table.
#define ASCENDC_TWIN_KERNELS(LIST, OP, PARAMS)                                                        \
  extern "C" {                                                                                        \
  LIST(ASCENDC_TWIN_DECLARE_ENTRY, OP, PARAMS)                                                        \
  }                                                                                                   \
  namespace ascendc_ops::twin_entries {                                                               \
  static const KernelEntry<void (*)(PARAMS(uint8_t*))> OP[] = {LIST(ASCENDC_TWIN_ENTRY, OP, PARAMS)}; \
  }

// The NPU side: ascendc_ops::npu_entries::OP, a table of CANN's aclrtlaunch_<entry> direct launchers
// (each declared by its aclrtlaunch_<entry>.h, which the launcher includes).
#define ASCENDC_NPU_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP, PARAMS) \
  {at::k##TORCH_T, at::k##TORCH_G, #OP "_" #SUFFIX, ACLRT_LAUNCH_KERNEL(OP##_##SUFFIX)},
#define ASCENDC_NPU_KERNELS(LIST, OP, PARAMS)                                           \
  namespace ascendc_ops::npu_entries {                                                  \
  static const KernelEntry<uint32_t (*)(uint32_t, aclrtStream, PARAMS(void*))> OP[] = { \
      LIST(ASCENDC_NPU_ENTRY, OP, PARAMS)};                                             \
  }
