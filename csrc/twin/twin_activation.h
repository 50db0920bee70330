// CPU twin, advanced activation APIs (CANN's adv_api/activation): one call in the kernel, one
// pass here. On the device SwiGLU expands to Muls/Exp/Adds/Div/Mul over 256-byte repeats; the
// twin computes the same function elementwise in fp32 with its 1-ulp Exp.
#pragma once
#include "twin_math.h"
#include "twin_vector.h"

namespace AscendC {

// dst = src0 * swish(src1, beta), swish(x, beta) = x / (1 + exp(-beta * x)); half and float.
template <typename T, bool isReuseSource = false>
inline void SwiGLU(LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                   const float& scalarValue, const uint32_t calCount) {
  twin::CheckBinary<twin::DtypeSet::kFloat>("SwiGLU", dstTensor, srcTensor0, srcTensor1, int32_t(calCount));
  if constexpr (twin::InSet<T>(twin::DtypeSet::kFloat)) {
    const float beta = scalarValue;
    twin::FuseBinary(dstTensor.TwinPtr(), srcTensor0.TwinPtr(), srcTensor1.TwinPtr(), calCount, [beta](T up, T gate) {
      const float g = float(gate);
      return T(float(up) * (g / (1.0f + twin::ExpF(-beta * g))));
    });
  }
}

}  // namespace AscendC
