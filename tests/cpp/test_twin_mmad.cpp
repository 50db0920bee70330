// Mmad's blocked arithmetic (csrc/twin/twin_cube_mmad.h) against the one-element loop that defines the
// twin's sum (start, then + a * b in k order, C = sum or C + sum), bit for bit: fp32, fp16 and bf16
// operands, gemv, a bias, accumulation into C, and m, n, k off every block edge; built once per ISA path
// (tests/cpp/CMakeLists.txt). Prints "N passed, M failed".
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "expect.h"
#include "twin_cube_mmad.h"
#include "twin_types.h"

namespace {
template <typename S>
void Reference(const S* a, const S* b, float* c, const float* bias, uint32_t m, uint32_t n, uint32_t k, uint32_t k0,
               uint32_t k1, uint32_t m1, uint32_t n1, bool gemv, bool init) {
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t j = 0; j < n; ++j) {
      float acc = bias ? bias[j] : 0.0f;
      for (uint32_t q = 0; q < k; ++q) {
        const float av = float(gemv ? a[q] : a[(uint64_t(i / 16) * k1 + q / k0) * 16 * k0 + (i % 16) * k0 + q % k0]);
        const float prod = av * float(b[(uint64_t(q / k0) * n1 + j / 16) * 16 * k0 + (j % 16) * k0 + q % k0]);
        acc = acc + prod;
      }
      float& out = c[(uint64_t(j / 16) * m1 + i / 16) * 256 + (i % 16) * 16 + j % 16];
      out = init ? acc : out + acc;
    }
}

// scale: the operands' magnitude (bf16 products below fp32's normal range, or near its top, take the
// two-rounding path; elsewhere fp16/bf16 products are exact and a fused multiply-add must give the same bits).
// nearTies: the first product near 2^-125 and the rest near 2^-149, so a sum rounds on a grid coarser than the
// products' own: there the products' rounding changes the sum, and a fused multiply-add would show.
template <typename S>
void Case(std::mt19937& rng, uint32_t m, uint32_t n, uint32_t k, bool withBias, bool init, float scale = 1.0f,
          bool nearTies = false) {
  const uint32_t k0 = 32 / sizeof(S), k1 = (k + k0 - 1) / k0;
  const uint32_t m1 = (m + 15) / 16, n1 = (n + 15) / 16;
  const bool gemv = m == 1;
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<S> a(uint64_t(m1) * k1 * 16 * k0), b(uint64_t(k1) * n1 * 16 * k0);
  for (auto& x : a) x = S(dist(rng) * scale);
  for (auto& x : b) x = S(dist(rng) * scale);
  std::uniform_real_distribution<float> unit(1.0f, 2.0f);
  for (uint32_t i = 0; nearTies && i < m; ++i)
    for (uint32_t q = 0; q < k; ++q)
      a[(uint64_t(i / 16) * k1 + q / k0) * 16 * k0 + (i % 16) * k0 + q % k0] =
          S(std::ldexp(unit(rng), q == 0 ? -62 : -75));
  for (uint32_t q = 0; nearTies && q < k; ++q)
    for (uint32_t j = 0; j < n; ++j)
      b[(uint64_t(q / k0) * n1 + j / 16) * 16 * k0 + (j % 16) * k0 + q % k0] =
          S(q == 0 ? std::ldexp(1.0f, -63) : std::ldexp(unit(rng), -75));
  std::vector<float> bias(n), c0(uint64_t(m1) * n1 * 256), c1;
  for (auto& x : bias) x = dist(rng);
  for (auto& x : c0) x = dist(rng);
  c1 = c0;
  const float* bp = withBias ? bias.data() : nullptr;
  Reference(a.data(), b.data(), c0.data(), bp, m, n, k, k0, k1, m1, n1, gemv, init);
  AscendC::twin::MmadFractal(a.data(), b.data(), c1.data(), bp, m, n, k, k0, k1, m1, n1, gemv, init);
  const bool same = std::memcmp(c0.data(), c1.data(), c0.size() * sizeof(float)) == 0;
  EXPECT(same);
  if (!same)
    std::printf("  Mmad %s m %u n %u k %u bias %d init %d scale %g differs from the one-element loop\n",
                AscendC::twin::DtypeName<S>(), m, n, k, int(withBias), int(init), double(scale));
}
}  // namespace

int main() {
#if defined(__x86_64__) && defined(__AVX512F__)
  __builtin_cpu_init();
  // x86-64-v4, which this path is built for: AVX-512 F, BW, CD, DQ, VL
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512cd") || !__builtin_cpu_supports("avx512dq") ||
      !__builtin_cpu_supports("avx512vl")) {
    std::printf("0 passed, 0 failed: this CPU has no AVX-512, the path these blocks are for\n");
    return 0;
  }
#endif
  std::mt19937 rng(7);
  const uint32_t ms[] = {1, 3, 16, 17, 64, 130}, ns[] = {1, 16, 40, 65, 128, 200}, ks[] = {1, 8, 40, 128, 257};
  for (uint32_t m : ms)
    for (uint32_t n : ns)
      for (uint32_t k : ks) {
        const bool bias = (m + n + k) % 2 == 0, init = (m * n + k) % 3 != 0;
        Case<float>(rng, m, n, k, bias, init);
        Case<half>(rng, m, n, k, bias, init);
        Case<bfloat16_t>(rng, m, n, k, !bias, true);
      }
  for (float scale : {1e-20f, 3e-19f, 1e19f, 2e-10f})  // subnormal products, some of them, near overflow, all normal
    for (uint32_t k : {40u, 257u}) {
      Case<bfloat16_t>(rng, 33, 70, k, false, true, scale);
      Case<bfloat16_t>(rng, 16, 64, k, true, false, scale);
    }
  Case<bfloat16_t>(rng, 32, 64, 24, false, true, 1.0f, true);
  Case<half>(rng, 20, 40, 64, false, true, 3e-4f);  // fp16 subnormal operands: products still exact
  return expect::Report();
}
