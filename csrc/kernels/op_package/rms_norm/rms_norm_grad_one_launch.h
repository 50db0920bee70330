// The RMSNorm backward as one op-package launch. Direct launch (the torch path) runs the row
// kernel and the dgamma reduction as two kernels; an op is one kernel, so here the blocks run the
// row phase, meet at SyncAll, then run the reduction -- the same two phase functions, in order.
// The host (csrc/op_host/rms_norm/rms_norm_host.h) launches max(blockDim, reduceBlockDim) blocks in batch
// schedule mode and sizes the user workspace for the fp32 partials [blockDim, hidden].
#pragma once
#include "kernels/rms_norm_grad.cpp"

template <typename T, typename G, bool ADD, bool GATE = false>
__aicore__ inline void RmsNormGradOneLaunch(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dxOut,
                                            GM_ADDR dx, GM_ADDR dgamma, GM_ADDR workspace,
                                            const NormTilingData& tilingData, GM_ADDR z = nullptr,
                                            GM_ADDR dz = nullptr) {
  GM_ADDR partials = GetUserWorkspace(workspace);
  if (GetBlockIdx() < tilingData.blockDim) {
    RmsNormGradRows<T, G, ADD, GATE>(dy, x, rstd, gamma, dxOut, dx, partials, tilingData, z, dz);
  }
  SyncAll();  // every block's dgamma partial row is in GM
  if (GetBlockIdx() < tilingData.reduceBlockDim) RmsNormDgammaReduce<G>(partials, dgamma, tilingData);
}
