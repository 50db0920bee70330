// AdamW tiling unit tests: block runs, tile sizes and the UB budget for the 910B (40 and 48 vector cores) and the
// CPU twin; the scalars formed in double; the problem function's readable errors. Prints "N passed, M failed";
// exits non-zero on any failure.
#include <cmath>
#include <cstdio>
#include <string>

#include "expect.h"
#include "optimizer_buffers.h"
#include "optimizer_problem.h"

using namespace tiling;

static const AdamWHyper kDefaults{1e-3, 0.9, 0.999, 0.01, 1e-8, 1.0, false, false};

// Every element lies in exactly one block's run; tiles are whole repeats and fit the budget.
static AdamWTiling Tile(int64_t n, DType dtype, const PlatformInfo& plat, AdamWHyper h = kDefaults) {
  const AdamWTiling t = TileAdamW({n, 1, dtype, h}, plat);
  const AdamWTilingData& d = t.data;
  EXPECT(d.totalElems == n);
  if (n == 0) {
    EXPECT(t.blockDim == 0);
    return t;
  }
  EXPECT(t.blockDim >= 1 && t.blockDim <= plat.vectorCores);
  EXPECT(d.blockElems * (t.blockDim - 1) < n && d.blockElems * t.blockDim >= n);
  EXPECT(d.blockElems % kAdamWAlign == 0 && d.blockElems >= kAdamWMinBlockElems);
  EXPECT(d.tileElems % kAdamWAlign == 0 && d.tileElems >= kAdamWAlign);
  EXPECT(uint64_t(d.tileElems) * AdamWBytesPerElem(dtype, h.amsgrad) <= plat.UbBudget());
  EXPECT(d.amsgrad == (h.amsgrad ? 1u : 0u));
  return t;
}

static const OpSpec kOp{"apply_adam_w",
                        "",
                        {"var", "m", "v", "grad", "max_grad_norm"},
                        {{DType::kFloat32, DType::kFloat32, DType::kFloat32, DType::kFloat32, DType::kFloat32},
                         {DType::kFloat16, DType::kFloat32, DType::kFloat32, DType::kFloat16, DType::kFloat32},
                         {DType::kBFloat16, DType::kFloat32, DType::kFloat32, DType::kBFloat16, DType::kFloat32}}};

static TensorArg<int64_t> T(std::vector<int64_t> shape, DType dtype = DType::kFloat32) { return {shape, dtype, true}; }

// Whether `f` throws an ArgError whose message holds `text`.
template <class F>
static bool Says(F&& f, const std::string& text) {
  return expect::ArgErrorOf(f).find(text) != std::string::npos;
}

int main() {
  const PlatformInfo b3 = Ascend910B(40), b2 = Ascend910B(48), cpu = CpuTwin(2);

  // Bytes per element: param and grad in, param out, the fp32 states in and out, all double-buffered; the widened
  // copies (16-bit) and two scratch tiles.
  EXPECT(AdamWBytesPerElem(DType::kFloat32, false) == 2 * (4 + 4 + 8 + 4 + 8) + 8);
  EXPECT(AdamWBytesPerElem(DType::kBFloat16, false) == 2 * (2 + 2 + 8 + 2 + 8) + 16);
  EXPECT(AdamWBytesPerElem(DType::kFloat32, true) == 2 * (4 + 4 + 12 + 4 + 12) + 8);
  // an fp32 master: one more state in and out, the parameter only written, only the grad widened
  EXPECT(AdamWBytesPerElem(DType::kBFloat16, false, true) == 2 * (2 + 12 + 2 + 12) + 12);
  {
    const AdamWTiling t = TileAdamW({5125, 2, DType::kBFloat16, kDefaults, true}, b2);
    EXPECT(t.data.master == 1 &&
           uint64_t(t.data.tileElems) * AdamWBytesPerElem(DType::kBFloat16, false, true) <= b2.UbBudget());
    EXPECT(TileAdamW({5125, 2, DType::kBFloat16, kDefaults}, b2).data.master == 0);
  }

  for (const PlatformInfo& plat : {b3, b2, cpu})
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16})
      for (int64_t n : {int64_t(0), int64_t(1), int64_t(7), int64_t(83), int64_t(769), int64_t(5125), int64_t(1) << 20,
                        int64_t(100003)}) {
        Tile(n, dtype, plat);
        Tile(n, dtype, plat, AdamWHyper{1e-3, 0.9, 0.999, 0.01, 1e-8, 3.0, true, true});
      }

  // Small runs stay on few blocks; large ones use every core with tiles as large as UB allows.
  EXPECT(Tile(5125, DType::kFloat32, b2).blockDim == 6);
  const AdamWTiling big = Tile(int64_t(100) << 20, DType::kFloat32, b2);
  EXPECT(big.blockDim == 48);
  EXPECT(big.data.tileElems > 2800);  // 2944 fit (188,416 B at 64 B an element), evened over the run

  // The scalars, formed in double: step 10 of the defaults.
  const AdamWTiling s = Tile(64, DType::kFloat32, cpu, AdamWHyper{1e-3, 0.9, 0.999, 0.01, 1e-8, 10.0, false, true});
  EXPECT(s.data.decay == float(1.0 - 1e-5) && s.data.gradSign == -1.0f && s.data.weight1 == float(1.0 - 0.9));
  EXPECT(s.data.negStepSize == float(-1e-3 / (1.0 - std::pow(0.9, 10.0))));
  EXPECT(s.data.rsqrtCorrection2 == float(1.0 / std::sqrt(1.0 - std::pow(0.999, 10.0))));

  // The problem function: shapes, dtypes, amsgrad's maximum, the hyperparameters' ranges.
  const TensorArg<int64_t> none{{}, DType::kOther, false};
  EXPECT(CheckAdamW<int64_t>(kOp, T({3, 5}), T({3, 5}), T({3, 5}), T({3, 5}), none, false) == 15);
  EXPECT(CheckAdamW<int64_t>(kOp, T({3, 5}, DType::kBFloat16), T({3, 5}), T({3, 5}), T({3, 5}, DType::kBFloat16),
                             T({3, 5}), true) == 15);
  EXPECT(Says([&] { CheckAdamW<int64_t>(kOp, T({3, 5}), T({3, 4}), T({3, 5}), T({3, 5}), none, false); },
              "apply_adam_w: m must have var's shape [3, 5], got [3, 4]"));
  EXPECT(Says([&] { CheckAdamW<int64_t>(kOp, T({3}), T({3}, DType::kFloat16), T({3}), T({3}), none, false); },
              "apply_adam_w: m must be one of float32, got float16"));
  EXPECT(Says([&] { CheckAdamW<int64_t>(kOp, T({3}), T({3}), T({3}), T({3}, DType::kFloat16), none, false); },
              "apply_adam_w: grad must have var's dtype float32, got float16"));
  EXPECT(Says([&] { CheckAdamW<int64_t>(kOp, T({3}), T({3}), T({3}), T({3}), none, true); },
              "apply_adam_w: max_grad_norm must be given when amsgrad=True"));
  AdamWHyper bad = kDefaults;
  bad.lr = -1.0;
  EXPECT(Says([&] { CheckAdamWHyper(kOp, bad); }, "apply_adam_w: lr must be a finite number >= 0, got -1"));
  bad = kDefaults;
  bad.beta2 = 1.0;
  EXPECT(Says([&] { CheckAdamWHyper(kOp, bad); }, "apply_adam_w: beta2 must be in [0, 1), got 1"));
  bad = kDefaults;
  bad.step = 0.0;
  EXPECT(Says([&] { CheckAdamWHyper(kOp, bad); }, "step must be a finite number >= 1"));
  // The multi-tensor form: list lengths, per-entry shapes named by index, one dtype for every var.
  const OpSpec lists{"foreach_adam_w", "", kOp.inputs, kOp.inputDtypes};
  const std::vector<TensorArg<int64_t>> two{T({3}), T({5})}, one{T({3})};
  const std::vector<TensorArg<int64_t>> empty;
  EXPECT((CheckForeachAdamW<int64_t>(lists, two, two, two, two, empty, false) == std::vector<int64_t>{3, 5}));
  EXPECT(Says([&] { CheckForeachAdamW<int64_t>(lists, two, one, two, two, empty, false); },
              "foreach_adam_w: m must hold as many tensors as var (2), got 1"));
  EXPECT(Says([&] { CheckForeachAdamW<int64_t>(lists, two, two, two, two, one, true); },
              "foreach_adam_w: max_grad_norm must hold as many tensors as var (2) when amsgrad=True, got 1"));
  EXPECT(Says([&] { CheckForeachAdamW<int64_t>(lists, two, two, {T({3}), T({4})}, two, empty, false); },
              "foreach_adam_w: v[1] must have var[1]'s shape [5], got [4]"));
  const std::vector<TensorArg<int64_t>> mixed{T({3}), T({5}, DType::kBFloat16)};
  EXPECT(Says([&] { CheckForeachAdamW<int64_t>(lists, mixed, two, two, mixed, empty, false); },
              "foreach_adam_w: var[1] must have var[0]'s dtype float32, got bfloat16"));
  // the master copies: fp32, one per 16-bit var, of its shape
  const OpSpec withMaster{
      "foreach_adam_w",
      "",
      {"var", "m", "v", "grad", "max_grad_norm", "master"},
      {{DType::kFloat32, DType::kFloat32, DType::kFloat32, DType::kFloat32, DType::kFloat32, DType::kFloat32},
       {DType::kBFloat16, DType::kFloat32, DType::kFloat32, DType::kBFloat16, DType::kFloat32, DType::kFloat32}}};
  const std::vector<TensorArg<int64_t>> bf{T({3}, DType::kBFloat16), T({5}, DType::kBFloat16)};
  EXPECT((CheckForeachAdamW<int64_t>(withMaster, bf, two, two, bf, empty, false, two) == std::vector<int64_t>{3, 5}));
  EXPECT(Says([&] { CheckForeachAdamW<int64_t>(withMaster, two, two, two, two, empty, false, two); },
              "foreach_adam_w: master must be empty when var is float32"));
  EXPECT(Says([&] { CheckForeachAdamW<int64_t>(withMaster, bf, two, two, bf, empty, false, one); },
              "foreach_adam_w: master must be empty or hold as many tensors as var (2), got 1"));
  EXPECT(Says([&] { CheckForeachAdamW<int64_t>(withMaster, bf, two, two, bf, empty, false, {T({3}), T({4})}); },
              "foreach_adam_w: master[1] must have var[1]'s shape [5], got [4]"));
  EXPECT(Says([&] { CheckForeachAdamW<int64_t>(withMaster, bf, two, two, bf, empty, false, bf); },
              "foreach_adam_w: master must be one of float32, got bfloat16"));
  // foreach_norm: the same dealing, slots for every (block, tensor) piece; p must be 1, 2 or inf.
  for (const PlatformInfo& plat : {b3, b2, cpu})
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16})
      for (int64_t n : {int64_t(1), int64_t(769), int64_t(70001), int64_t(1) << 24}) {
        const ForeachNormTiling t = TileForeachNorm({n, 3, dtype, FOREACH_NORM_L2}, plat);
        const ForeachNormTilingData& d = t.data;
        EXPECT(t.blockDim == d.blockDim && t.blockDim >= 1 && t.blockDim <= plat.vectorCores);
        EXPECT(d.blockElems * (t.blockDim - 1) < n && d.blockElems * t.blockDim >= n);
        EXPECT(d.tileElems % kAdamWAlign == 0 &&
               uint64_t(d.tileElems) * ForeachNormBytesPerElem(dtype) + kForeachNormFixedBytes <= plat.UbBudget());
      }
  EXPECT(TileForeachNorm({0, 2, DType::kFloat32, FOREACH_NORM_L1}, cpu).blockDim == 0);
  const OpSpec norm{"foreach_norm", "", {"x"}, {{DType::kFloat16}, {DType::kFloat32}, {DType::kBFloat16}}};
  ForeachNormKind kind = FOREACH_NORM_L1;
  EXPECT((CheckForeachNorm<int64_t>(norm, {T({3, 2}), T({0})}, 2.0, kind) == std::vector<int64_t>{6, 0}));
  EXPECT(kind == FOREACH_NORM_L2);
  EXPECT(Says([&] { CheckForeachNorm<int64_t>(norm, {T({3})}, 3.0, kind); },
              "foreach_norm: scalar (the norm's p) must be 1, 2 or inf, got 3"));
  EXPECT(Says([&] { CheckForeachNorm<int64_t>(norm, {T({3}), T({0})}, INFINITY, kind); },
              "foreach_norm: x[1] is empty, and the inf norm of no element is undefined"));
  // foreach_clip_by_total_norm: the same dealing, at least one block (it writes the total), the fixed norm buffers
  // beside the tiles within UB; the attributes carried; norms and total one element each in x's dtype.
  EXPECT(ForeachClipBytesPerElem(DType::kFloat32) == 2 * 2 * 4 && ForeachClipBytesPerElem(DType::kBFloat16) == 8 + 4);
  for (const PlatformInfo& plat : {b3, b2, cpu})
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16})
      for (int64_t n : {int64_t(0), int64_t(1), int64_t(769), int64_t(70001), int64_t(1) << 24}) {
        const ForeachClipTiling t = TileForeachClip({n, 3, 5, dtype, FOREACH_NORM_INF, 0.5, true}, plat);
        const ForeachClipTilingData& d = t.data;
        EXPECT(t.blockDim >= 1 && t.blockDim <= plat.vectorCores);
        EXPECT(n == 0 || (d.blockElems * (t.blockDim - 1) < n && d.blockElems * t.blockDim >= n));
        EXPECT(d.tileElems % kAdamWAlign == 0 &&
               uint64_t(d.tileElems) * ForeachClipBytesPerElem(dtype) + ForeachClipFixedBytes(kForeachClipNormChunk) <=
                   plat.UbBudget());
        EXPECT(d.normCount == 5 && d.tensorCount == 3 && d.maxNorm == 0.5f && d.errorIfNonfinite == 1 &&
               d.kind == FOREACH_NORM_INF);
      }
  EXPECT(TileForeachClip({int64_t(100) << 20, 200, 291, DType::kBFloat16, FOREACH_NORM_L2, 1.0, false}, b2).blockDim ==
         48);
  const OpSpec clip{"foreach_clip_by_total_norm",
                    "",
                    {"x", "norms", "total_norm"},
                    {{DType::kFloat16, DType::kFloat16, DType::kFloat16},
                     {DType::kFloat32, DType::kFloat32, DType::kFloat32},
                     {DType::kBFloat16, DType::kBFloat16, DType::kBFloat16}}};
  EXPECT((CheckForeachClip<int64_t>(clip, {T({3, 2}), T({0})}, {T({}), T({1})}, T({}), INFINITY, kind) ==
          std::vector<int64_t>{6, 0}));
  EXPECT(kind == FOREACH_NORM_INF);
  EXPECT(CheckForeachClip<int64_t>(clip, {}, {}, T({1, 1}), 1.0, kind).empty() && kind == FOREACH_NORM_L1);
  EXPECT(Says([&] { CheckForeachClip<int64_t>(clip, {T({3})}, {T({})}, T({}), 0.5, kind); },
              "foreach_clip_by_total_norm: norm_type must be 1, 2 or inf, got 0.5"));
  EXPECT(Says([&] { CheckForeachClip<int64_t>(clip, {T({3})}, {T({2})}, T({}), 2.0, kind); },
              "foreach_clip_by_total_norm: norms[0] must hold one element (a tensor's norm), got shape [2]"));
  EXPECT(Says([&] { CheckForeachClip<int64_t>(clip, {T({3})}, {T({}, DType::kFloat16)}, T({}), 2.0, kind); },
              "foreach_clip_by_total_norm: norms[0] must have x[0]'s dtype float32, got float16"));
  EXPECT(Says([&] { CheckForeachClip<int64_t>(clip, {T({3}, DType::kBFloat16)}, {}, T({}), 2.0, kind); },
              "foreach_clip_by_total_norm: total_norm must have x's dtype bfloat16, got float32"));
  EXPECT(Says([&] { CheckForeachClip<int64_t>(clip, {T({3})}, {}, T({2}), 2.0, kind); },
              "foreach_clip_by_total_norm: total_norm must hold one element"));
  return expect::Report();
}
