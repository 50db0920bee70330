// CPU twin, A2's separated cores working together: the kernel type a kernel declares, the cores a
// MIX launch runs (n AIC + 2n AIV for MIX_AIC_1_2), their indices, GM workspace, atomic-add stores,
// and the cross-core synchronisation (CrossCoreSetFlag / CrossCoreWaitFlag, SyncAll). Rules and
// their asc-devkit sources: docs/records/twin-fidelity.md ("Cross-core synchronisation").
// A launch that synchronises runs every core at once (twin::LaunchTyped, twin_crosscore.cpp).
#pragma once
#include <cstdint>
#include <type_traits>

#include "twin_core.h"
#include "twin_sync.h"
#include "twin_tensor.h"

namespace AscendC {
namespace twin {
inline thread_local uint8_t* tSysWorkspace = nullptr;  // SetSysWorkspace: the Matmul API's system workspace
// The kernel's KERNEL_TASK_TYPE_DEFAULT: checked against the type the launch runs.
void DeclareKernelType(KernelMetaType type);
void CrossSet(int mode, pipe_t pipe, uint16_t flagId);
void CrossWait(int mode, pipe_t pipe, uint16_t flagId);
void HardSyncAll(bool aivOnly);
void SoftSyncAll(const GlobalTensor<int32_t>& gm, const LocalTensor<int32_t>& ub, int32_t usedCores);
// A2's system workspace ahead of the user's (RESERVED_WORKSPACE in asc-devkit's
// kernel_operator_common_impl.h, "reserved 16 * 1024 * 1024 Bytes").
constexpr uint64_t kSystemWorkspaceBytes = 16u << 20;
}  // namespace twin

template <uint8_t modeId, pipe_t pipe>
inline void CrossCoreSetFlag(uint16_t flagId) {
  twin::CrossSet(modeId, pipe, flagId);
}
template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
inline void CrossCoreWaitFlag(uint16_t flagId) {
  twin::CrossWait(modeId, pipe, flagId);
}
template <bool isAIVOnly = true>
inline void SyncAll() {
  twin::HardSyncAll(isAIVOnly);
}
template <bool isAIVOnly = true>
inline void SyncAll(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                    const int32_t usedCores = 0) {
  static_assert(isAIVOnly, "SyncAll's soft form is for pure vector kernels (SyncAll.md: isAIVOnly)");
  twin::SoftSyncAll(gmWorkspace, ubWorkspace, usedCores);
}

// GetSubBlockNum.md: AIVs per core group on an AIV (2 for MIX_AIC_1_2), 1 elsewhere.
inline int64_t GetSubBlockNum() { return twin::Core().aic ? 1 : twin::Core().taskRation; }
inline int64_t GetSubBlockIdx() { return twin::Core().subBlockIdx; }
inline int64_t GetTaskRation() { return GetSubBlockNum(); }

inline void SetSysWorkspace(uint8_t* workspace) { twin::tSysWorkspace = workspace; }
inline uint8_t* GetSysWorkSpacePtr() { return twin::tSysWorkspace; }
inline uint8_t* GetUserWorkspace(uint8_t* workspace) {
  uint8_t* sys = GetSysWorkSpacePtr();
  return (sys ? sys : workspace) + twin::kSystemWorkspaceBytes;
}

// SetAtomicAdd.md: later UB->GM copies (and Fixpipe) add into GM in T until SetAtomicNone.
template <typename T>
inline void SetAtomicAdd() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, int16_t> ||
                    std::is_same_v<T, int32_t> || std::is_same_v<T, int8_t> || std::is_same_v<T, bfloat16_t>,
                "SetAtomicAdd on A2: float, half, int16_t, int32_t, int8_t, bfloat16_t");
  twin::Core().atomicDtype = twin::DtypeName<T>();
}
inline void SetAtomicNone() { twin::Core().atomicDtype = nullptr; }
inline void DisableDmaAtomic() { SetAtomicNone(); }  // DisableDmaAtomic.md: the same switch, named so

}  // namespace AscendC

#define ASCEND_IS_AIC (::AscendC::twin::Core().aic)
#define ASCEND_IS_AIV (!::AscendC::twin::Core().aic)
