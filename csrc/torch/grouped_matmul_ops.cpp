// Grouped matmul on the CPU twin: grouped_matmul and grouped_matmul_weight_grad run the cube
// kernels csrc/kernels/grouped_matmul*.cpp. The twin's cube arithmetic is handed a tuned GEMM
// here (at::mm on views of the operands, fp32 accumulation, one rounding).
#include <torch/library.h>

#include <string>

#include "grouped_matmul_ops.h"
#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "twin_backend.h"
#include "twin_cube_gemm.h"
#include "twin_isa.h"

// The cube kernels' entry points (csrc/kernels/grouped_matmul*.cpp), compiled for the twin, from their lists.
ASCENDC_TWIN_KERNELS(GROUPED_MATMUL_DTYPES, grouped_matmul, GROUPED_MATMUL_PARAMS)
ASCENDC_TWIN_KERNELS(GROUPED_MATMUL_WEIGHT_GRAD_DTYPES, grouped_matmul_weight_grad, GROUPED_MATMUL_WEIGHT_GRAD_PARAMS)

namespace ascendc_ops {
namespace {

namespace twin = AscendC::twin;

at::ScalarType TorchDtype(twin::CubeDtype t) {
  return t == twin::CubeDtype::kFloat32 ? at::kFloat : t == twin::CubeDtype::kFloat16 ? at::kHalf : at::kBFloat16;
}

// A [rows, cols] operand (pitch ld), or its transpose when stored as [cols, rows].
at::Tensor View(const void* p, int64_t rows, int64_t cols, int64_t ld, bool trans, at::ScalarType dtype) {
  void* data = const_cast<void*>(p);
  const auto opts = at::TensorOptions().dtype(dtype);
  return trans ? at::from_blob(data, {cols, rows}, {ld, 1}, opts).t()
               : at::from_blob(data, {rows, cols}, {ld, 1}, opts);
}

// fp32 scratch for the widened operands, one per operand and thread, reused from block to block:
// a fresh buffer per block would be faulted in again each time (1/3 of a bf16 experts block).
at::Tensor Scratch(int slot, int64_t elems) {
  thread_local at::Tensor buf[3];
  if (!buf[slot].defined()) buf[slot] = at::empty({0}, at::kFloat);
  return buf[slot].resize_({elems});
}

// The operand widened to fp32 in its stored layout, copied row by stored row (a copy between two
// transposed views runs 7x slower), then viewed transposed again if it is read so.
at::Tensor Widened(int slot, const void* p, int64_t rows, int64_t cols, int64_t ld, bool trans, at::ScalarType in) {
  const int64_t outer = trans ? cols : rows, inner = trans ? rows : cols;
  at::Tensor dst = Scratch(slot, rows * cols).view({outer, inner});
  dst.copy_(at::from_blob(const_cast<void*>(p), {outer, inner}, {ld, 1}, at::TensorOptions().dtype(in)));
  return trans ? dst.t() : dst;
}

// Where the CPU has bf16 (fp16) dot products, torch's reduced-precision GEMM (oneDNN) multiplies the stored
// operands with fp32 accumulation and rounds C once: the cube's semantics, without widening. Elsewhere
// torch's bf16 GEMM is emulated (7x slower than fp32), so the operands are widened. The loaded ISA path
// decides (python/ascendc_ops/_isa.py): ASCENDC_OPS_ISA=avx2 or avx512 forces the widened GEMM anywhere.
bool NativeGemm(at::ScalarType in) {
  static const bool widePath = [] {  // read once: this runs for every cube block
    const std::string isa = twin::CompiledIsa();
    return isa == "avx512bf16" || isa == "native";
  }();
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool bf16 = __builtin_cpu_supports("avx512bf16"), fp16 = __builtin_cpu_supports("avx512fp16");
#else
  static const bool bf16 = false, fp16 = false;
#endif
  return widePath && ((in == at::kBFloat16 && bf16) || (in == at::kHalf && fp16));
}

// fp32, or fp16/bf16 in and out with native dot products: at::mm straight into C. Otherwise the operands are
// widened, multiplied in fp32 and rounded once into C.
void TorchGemm(const twin::GemmCall& g) {
  const at::ScalarType in = TorchDtype(g.inDtype), out = TorchDtype(g.outDtype);
  at::Tensor c = at::from_blob(g.c, {g.m, g.n}, {g.ldc, 1}, at::TensorOptions().dtype(out));
  if (in == out && (in == at::kFloat || NativeGemm(in))) {
    at::mm_out(c, View(g.a, g.m, g.k, g.lda, g.transA, in), View(g.b, g.k, g.n, g.ldb, g.transB, in));
    return;
  }
  at::Tensor acc = Scratch(2, g.m * g.n).view({g.m, g.n});
  at::mm_out(acc, Widened(0, g.a, g.m, g.k, g.lda, g.transA, in), Widened(1, g.b, g.k, g.n, g.ldb, g.transB, in));
  c.copy_(acc);
}

const bool kTorchGemmProvided = [] {
  twin::SetGemmProvider(&TorchGemm);
  return true;
}();

// group_list is read on the host: its rows must be counts >= 0 (type 1) or non-decreasing
// cumulative ends (type 0), and they may not exceed x's rows. Returns each group's rows.
std::vector<int64_t> CheckGroupList(const OpProto& op, const at::Tensor& groupList, int64_t type, int64_t rows,
                                    const char* rowsOf) {
  const at::Tensor gl = groupList.to(at::kCPU).contiguous();
  const int64_t* v = gl.data_ptr<int64_t>();
  int64_t prev = 0, total = 0;
  std::vector<int64_t> perGroup(size_t(gl.numel()));
  for (int64_t e = 0; e < gl.numel(); ++e) {
    const int64_t r = type == 1 ? v[e] : v[e] - prev;
    TORCH_CHECK_VALUE(r >= 0, op.name, ": group_list[", e, "] = ", v[e],
                      type == 1 ? " is a negative row count" : " is below the previous cumulative end ", prev,
                      " (group_list_type=", type, ")");
    prev = type == 1 ? prev : v[e];
    total += r;
    perGroup[size_t(e)] = r;
  }
  TORCH_CHECK_VALUE(total <= rows, op.name, ": group_list covers ", total, " rows but ", rowsOf, " has ", rows,
                    " (group_list_type=", type, type == 1 ? ": counts" : ": cumulative ends", ")");
  return perGroup;
}

}  // namespace

GroupedMatmulLaunch PrepareGroupedMatmul(const OpProto& op, const at::Tensor& a, const at::Tensor& b,
                                         const at::Tensor& groupList, int64_t groupListType, bool transposeWeight,
                                         bool weightGrad, const tiling::CubePlatform& platform) {
  CheckSameDevice(op, {a, b, groupList});
  const char* an = op.inputs[0];
  const char* bn = op.inputs[1];
  TORCH_CHECK_VALUE(groupListType == 0 || groupListType == 1, op.name,
                    ": group_list_type must be 0 (cumulative ends) or 1 (counts), got ", groupListType);
  TORCH_CHECK_VALUE(a.dim() == 2, op.name, ": ", an, " must be 2-D [M, K], got shape ", ShapeString(a));
  TORCH_CHECK_VALUE(groupList.dim() == 1 && groupList.size(0) >= 1, op.name,
                    ": group_list must be 1-D with one entry per group (at least 1), got shape ",
                    ShapeString(groupList));
  CheckDtypes(op, {a, b, groupList});
  const int64_t m = a.size(0), k = a.size(1), groups = groupList.size(0);
  int64_t n;
  if (weightGrad) {
    TORCH_CHECK_VALUE(b.dim() == 2 && b.size(0) == m, op.name, ": ", bn, " must be 2-D [M, N] with M = ", m, " (", an,
                      " rows), got shape ", ShapeString(b));
    n = b.size(1);
  } else {
    TORCH_CHECK_VALUE(b.dim() == 3 && b.size(0) == groups, op.name, ": ", bn, " must be 3-D [E, ",
                      transposeWeight ? "N, K" : "K, N", "] with E = ", groups, " (group_list entries), got shape ",
                      ShapeString(b));
    const int64_t wk = transposeWeight ? b.size(2) : b.size(1);
    TORCH_CHECK_VALUE(wk == k, op.name, ": ", bn, " must have K = ", k, " (", an, ".size(1)) in dim ",
                      transposeWeight ? 2 : 1, " (transpose_weight=", transposeWeight ? "True" : "False",
                      "), got shape ", ShapeString(b));
    n = transposeWeight ? b.size(1) : b.size(2);
  }
  const std::vector<int64_t> groupRows = CheckGroupList(op, groupList, groupListType, m, an);
  int64_t covered = 0;
  for (int64_t r : groupRows) covered += r;
  GroupedMatmulLaunch l;
  l.a = a.contiguous();
  l.b = b.contiguous();
  l.groupList = groupList.contiguous();
  if (weightGrad) {
    l.out = at::empty({groups, k, n}, a.options());
    for (int64_t e = 0; e < groups; ++e)
      if (groupRows[size_t(e)] == 0) l.out[e].zero_();  // the kernel writes only the groups that have rows
  } else {
    l.out = at::empty({m, n}, a.options());
    l.out.narrow(0, covered, m - covered).zero_();
  }
  try {
    l.tiling = tiling::TileGroupedMatmul(
        {m, k, n, groups, TilingDtype(a.scalar_type()), int32_t(groupListType), transposeWeight, weightGrad}, platform);
  } catch (const tiling::TilingError& e) {
    TORCH_CHECK_VALUE(false, op.name, ": ", e.what());
  }
  return l;
}

namespace {

at::Tensor RunOnTwin(const OpProto& op, const at::Tensor& a, const at::Tensor& b, const at::Tensor& groupList,
                     int64_t groupListType, bool transposeWeight, bool weightGrad) {
  GroupedMatmulLaunch l = PrepareGroupedMatmul(op, a, b, groupList, groupListType, transposeWeight, weightGrad,
                                               tiling::CpuTwinCube(uint32_t(at::get_num_threads())));
  if (l.tiling.blockDim == 0) return l.out;
  const at::ScalarType dtype = l.a.scalar_type();
  const auto kernel = weightGrad ? PickEntry(twin_entries::grouped_matmul_weight_grad, dtype).fn
                                 : PickEntry(twin_entries::grouped_matmul, dtype).fn;
  const char* name = weightGrad ? "grouped_matmul_weight_grad" : "grouped_matmul";
  LaunchOnTwin(name, l.tiling.blockDim, kernel, Gm(l.a), Gm(l.b), Gm(l.groupList), Gm(l.out),
               static_cast<uint8_t*>(nullptr), reinterpret_cast<uint8_t*>(&l.tiling.data));
  return l.out;
}

at::Tensor GroupedMatmul(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& groupList,
                         int64_t groupListType, bool transposeWeight) {
  return RunOnTwin(kGroupedMatmul, x, weight, groupList, groupListType, transposeWeight, false);
}

at::Tensor GroupedMatmulWeightGrad(const at::Tensor& x, const at::Tensor& dy, const at::Tensor& groupList,
                                   int64_t groupListType) {
  return RunOnTwin(kGroupedMatmulWeightGrad, x, dy, groupList, groupListType, false, true);
}

// The dtypes whose cube blocks the GEMM provider multiplies as stored (the rest are widened to fp32).
std::vector<std::string> CubeGemmNative() {
  std::vector<std::string> native{"float32"};
  if (NativeGemm(at::kHalf)) native.push_back("float16");
  if (NativeGemm(at::kBFloat16)) native.push_back("bfloat16");
  return native;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(ascendc_ops, m) { m.def("cube_gemm_native() -> str[]", &CubeGemmNative); }

TORCH_LIBRARY_IMPL(custom, CPU, m) {
  m.impl("grouped_matmul", &GroupedMatmul);
  m.impl("grouped_matmul_weight_grad", &GroupedMatmulWeightGrad);
}

}  // namespace ascendc_ops
