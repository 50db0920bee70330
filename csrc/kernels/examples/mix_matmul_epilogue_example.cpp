// The template of a mix kernel (KERNEL_TYPE_MIX_AIC_1_2): one core group computes
// y[M, N] = (A[M, K] x B[K, N]) * scale + bias[N], the matmul on the cube core, the epilogue on its
// two vector cores, handing C over through GM workspace:
//   AIC:  the cube example's stages (cube_matmul_example.h), Fixpipe C (fp32) into the workspace,
//         CrossCoreSetFlag<2, PIPE_FIX>(kCReady)    -- after FIX wrote C, both AIVs may read it
//         CrossCoreWaitFlag<2>(kCFree)              -- both AIVs are done with the workspace
//   AIV i (GetSubBlockIdx): CrossCoreWaitFlag<2>(kCReady), rows [i M/2, (i+1) M/2) of C from the
//         workspace, Muls + Add of the bias row, store to y, CrossCoreSetFlag<2, PIPE_MTE3>(kCFree)
// Mode 2 pairs one AIC with its AIVs (CrossCoreSetFlag(ISASI).md): the AIC's set raises each AIV's
// counter; the AIVs' sets raise the AIC's once both have set. Twin tests: tests/twin/test_crosscore.py.
#include "cube_matmul_example.h"

using namespace AscendC;

namespace mix_example {
constexpr uint32_t M = cube_example::M, N = cube_example::N;
constexpr uint32_t ROWS = M / 2;         // rows per vector core
constexpr uint16_t kCReady = 0, kCFree = 1;  // cross-core flag ids (no Matmul object, no hard SyncAll)
}  // namespace mix_example

class KernelMatmulEpilogue {
 public:
  __aicore__ inline KernelMatmulEpilogue() {}
  __aicore__ inline void Init(GM_ADDR bias, GM_ADDR y, GM_ADDR c, float scale) {
    using namespace mix_example;
    const uint32_t row0 = GetSubBlockIdx() * ROWS;
    cGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c) + row0 * N, ROWS * N);
    yGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(y) + row0 * N, ROWS * N);
    biasGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias), N);
    scale_ = scale;
    pipe_.InitBuffer(in_, 1, ROWS * N * sizeof(float));
    pipe_.InitBuffer(out_, 1, ROWS * N * sizeof(float));
    pipe_.InitBuffer(biasBuf_, N * sizeof(float));
  }
  __aicore__ inline void Process() {
    using namespace mix_example;
    LocalTensor<float> bias = biasBuf_.Get<float>();
    DataCopy(bias, biasGm_, N);
    CrossCoreWaitFlag<2, PIPE_MTE2>(kCReady);
    LocalTensor<float> c = in_.AllocTensor<float>();
    DataCopy(c, cGm_, ROWS * N);
    in_.EnQue(c);
    c = in_.DeQue<float>();
    LocalTensor<float> y = out_.AllocTensor<float>();
    Muls(y, c, scale_, ROWS * N);
    // the bias load (MTE2) must land before V reads it; the queue above ordered C only
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    for (uint32_t r = 0; r < ROWS; ++r) Add(y[r * N], y[r * N], bias, N);
    in_.FreeTensor(c);
    out_.EnQue(y);
    y = out_.DeQue<float>();
    DataCopy(yGm_, y, ROWS * N);
    out_.FreeTensor(y);
    CrossCoreSetFlag<2, PIPE_MTE3>(kCFree);
  }

 private:
  TPipe pipe_;
  TQue<TPosition::VECIN, 1> in_;
  TQue<TPosition::VECOUT, 1> out_;
  TBuf<TPosition::VECCALC> biasBuf_;
  GlobalTensor<float> cGm_, yGm_, biasGm_;
  float scale_ = 1.0f;
};

// a, b: half [M, K], [K, N]; bias: float [N]; y: float [M, N]; workspace: the system workspace,
// then M x N floats of C.
extern "C" __global__ __aicore__ void mix_matmul_epilogue_example(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR y,
                                                                  GM_ADDR workspace, float scale) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  GM_ADDR c = GetUserWorkspace(workspace);
  if ASCEND_IS_AIC {
    KernelCubeMatmulExample<float> mm;
    mm.Init(a, b, c);
    mm.Process();
    CrossCoreSetFlag<2, PIPE_FIX>(mix_example::kCReady);
    CrossCoreWaitFlag<2, PIPE_FIX>(mix_example::kCFree);
  }
  if ASCEND_IS_AIV {
    KernelMatmulEpilogue ep;
    ep.Init(bias, y, c, scale);
    ep.Process();
  }
}
