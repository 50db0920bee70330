// A hand-written cube kernel with the basic API: C[M, N] = A[M, K] x B[K, N], half in, fp32 (or
// half) out, one block, the reduction split in two K chunks accumulated in L0C. The four stages
// and their pipes, each hand-off a TQue (EnQue = SetFlag, DeQue = WaitFlag on the pair below):
//   DataCopy ND2NZ  (MTE2)  GM (ND)   -> L1 A1/B1 (Nz)           A1/B1: MTE2 -> MTE1
//   LoadData 2D     (MTE1)  L1 (Nz)   -> L0A A2 (Zz) / L0B B2 (Zn, each fractal transposed)
//                                                                 A2/B2: MTE1 -> M
//   Mmad            (M)     L0A x L0B -> L0C CO1 (Nz, fp32)        CO1:   M -> FIX
//   Fixpipe         (FIX)   L0C       -> GM (ND, fp32 -> half with CAST_RINT for the half entry)
// The twin runs it on the CPU under the A2 rules (csrc/twin/twin_cube_basic.h); tests in
// tests/twin/test_twin_cube_basic.py. Built only into the test library (not an op of the package).
#include "cube_matmul_example.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void cube_matmul_example(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
  KernelCubeMatmulExample<float> op;
  op.Init(a, b, c);
  op.Process();
}

extern "C" __global__ __aicore__ void cube_matmul_example_half(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
  KernelCubeMatmulExample<half> op;
  op.Init(a, b, c);
  op.Process();
}
