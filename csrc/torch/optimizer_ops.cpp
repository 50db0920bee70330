// AdamW on the CPU twin: apply_adam_w runs csrc/kernels/optimizer.cpp over var, m, v (and the amsgrad maximum) in
// place; foreach_adam_w over lists of them in one launch, through a table of their addresses.
#include "optimizer_ops.h"

#include <torch/library.h>

#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "optimizer_problem.h"
#include "twin_backend.h"

// The AdamW kernel entry points compiled for the CPU twin (csrc/kernels/optimizer.cpp), from their lists.
OPTIMIZER_KERNELS(ASCENDC_TWIN_KERNELS)

namespace ascendc_ops {

namespace {
// The checks torch's own layouts need before the shapes are read: AdamW has no sparse update.
void CheckDense(const OpProto& op, std::initializer_list<std::pair<size_t, const at::Tensor*>> tensors) {
  for (const auto& [index, t] : tensors)
    if (t->defined() && t->layout() != at::kStrided)
      Checked(op, [&] {
        tiling::Fail(tiling::ArgError::kValue, op, op.inputs[index], " must be a dense (strided) tensor, got layout ",
                     t->layout(), " (AdamW has no sparse update)");
      });
}

template <class Int>
Int CheckAdamWArgs(const OpProto& op, const at::Tensor& var, const at::Tensor& m, const at::Tensor& v,
                   const at::Tensor& grad, const at::Tensor& maxV, const tiling::AdamWHyper& hyper) {
  CheckDense(op, {{0, &var}, {1, &m}, {2, &v}, {3, &grad}, {4, &maxV}});
  CheckSameDevice(op, {var, m, v, grad});
  return Checked(op, [&] {
    tiling::CheckAdamWHyper(op, hyper);
    tiling::TensorArg<Int> maxArg;
    maxArg.defined = false;
    if (maxV.defined()) maxArg = ArgOf<Int>(maxV);
    return tiling::CheckAdamW(op, ArgOf<Int>(var), ArgOf<Int>(m), ArgOf<Int>(v), ArgOf<Int>(grad), maxArg,
                              hyper.amsgrad);
  });
}
}  // namespace

AdamWLaunch PrepareApplyAdamW(const OpProto& op, const at::Tensor& var, const at::Tensor& m, const at::Tensor& v,
                              const at::Tensor& grad, const std::optional<at::Tensor>& maxV,
                              const tiling::AdamWHyper& hyper, const tiling::PlatformInfo& platform) {
  // the amsgrad maximum only matters with amsgrad (torch_npu passes it either way)
  const at::Tensor maxArg = hyper.amsgrad && maxV.has_value() ? *maxV : at::Tensor();
  const int64_t n = CheckAdamWArgs<int64_t>(op, var, m, v, grad, maxArg, hyper);
  AdamWLaunch l;
  l.var = var.contiguous();
  l.m = m.contiguous();
  l.v = v.contiguous();
  l.grad = grad.contiguous();
  if (maxArg.defined()) l.maxV = maxArg.contiguous();
  Checked(op, [&] { l.tiling = tiling::TileAdamW({n, 1, TilingDtype(var.scalar_type()), hyper}, platform); });
  return l;
}

void FinishApplyAdamW(const AdamWLaunch& l, const at::Tensor& var, const at::Tensor& m, const at::Tensor& v,
                      const std::optional<at::Tensor>& maxV) {
  if (!l.var.is_same(var)) const_cast<at::Tensor&>(var).copy_(l.var);
  if (!l.m.is_same(m)) const_cast<at::Tensor&>(m).copy_(l.m);
  if (!l.v.is_same(v)) const_cast<at::Tensor&>(v).copy_(l.v);
  if (l.maxV.defined() && !l.maxV.is_same(*maxV)) const_cast<at::Tensor&>(*maxV).copy_(l.maxV);
}

namespace {
std::vector<at::Tensor> Contiguous(at::TensorList list) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : list) out.push_back(t.contiguous());
  return out;
}
void WriteBack(const std::vector<at::Tensor>& updated, at::TensorList list) {
  for (size_t i = 0; i < updated.size(); ++i)
    if (!updated[i].is_same(list[i])) const_cast<at::Tensor&>(list[i]).copy_(updated[i]);
}

template <class Int>
std::vector<Int> CheckForeachAdamWArgs(const OpProto& op, const AdamWLists& l, const tiling::AdamWHyper& hyper) {
  const at::TensorList lists[] = {l.var, l.m, l.v, l.grad, l.maxV, l.master};
  std::optional<at::Device> device;
  std::vector<tiling::TensorArg<Int>> args[6];
  for (size_t k = 0; k < 6; ++k)
    for (size_t i = 0; i < lists[k].size(); ++i) {
      const at::Tensor& t = lists[k][i];
      CheckDense(op, {{k, &t}});
      if (!device) device = t.device();
      if (t.device() != *device)
        Checked(op, [&] {
          tiling::Fail(tiling::ArgError::kValue, op, "every tensor must be on one device: ", op.inputs[k], "[", i,
                       "] is on ", t.device().str(), ", the first on ", device->str());
        });
      args[k].push_back(ArgOf<Int>(t));
    }
  return Checked(op, [&] {
    tiling::CheckAdamWHyper(op, hyper);
    return tiling::CheckForeachAdamW(op, args[0], args[1], args[2], args[3], args[4], hyper.amsgrad, args[5]);
  });
}
}  // namespace

ForeachAdamWLaunch PrepareForeachAdamW(const OpProto& op, const AdamWLists& lists, const tiling::AdamWHyper& hyper,
                                       const tiling::PlatformInfo& platform) {
  const std::vector<int64_t> counts = CheckForeachAdamWArgs<int64_t>(op, lists, hyper);
  ForeachAdamWLaunch l;
  l.var = Contiguous(lists.var);
  l.m = Contiguous(lists.m);
  l.v = Contiguous(lists.v);
  l.grad = Contiguous(lists.grad);
  if (hyper.amsgrad) l.maxV = Contiguous(lists.maxV);
  l.master = Contiguous(lists.master);
  const bool master = !l.master.empty();
  const int64_t n = int64_t(counts.size());
  l.table = at::zeros({n, int64_t(ADAM_W_TABLE_COLUMNS)}, at::kLong);
  int64_t* row = l.table.data_ptr<int64_t>();
  int64_t start = 0;
  const auto addr = [](const at::Tensor& t) { return int64_t(reinterpret_cast<uintptr_t>(t.data_ptr())); };
  for (int64_t i = 0; i < n; ++i, row += ADAM_W_TABLE_COLUMNS) {
    row[ADAM_W_TABLE_VAR] = addr(l.var[i]);
    row[ADAM_W_TABLE_M] = addr(l.m[i]);
    row[ADAM_W_TABLE_V] = addr(l.v[i]);
    row[ADAM_W_TABLE_GRAD] = addr(l.grad[i]);
    row[ADAM_W_TABLE_MAX] = hyper.amsgrad ? addr(l.maxV[i]) : 0;
    row[ADAM_W_TABLE_MASTER] = master ? addr(l.master[i]) : 0;
    row[ADAM_W_TABLE_START] = start;
    start += counts[i];
    // var read and written (with a master: written only, the master read and written)
    l.bytes += l.var[i].nbytes() * (master ? 1 : 2) + l.grad[i].nbytes() + (l.m[i].nbytes() + l.v[i].nbytes()) * 2 +
               (hyper.amsgrad ? l.maxV[i].nbytes() * 2 : 0) + (master ? l.master[i].nbytes() * 2 : 0);
  }
  const tiling::DType dtype = n > 0 ? TilingDtype(l.var[0].scalar_type()) : tiling::DType::kFloat32;
  Checked(op, [&] { l.tiling = tiling::TileAdamW({start, n, dtype, hyper, master}, platform); });
  return l;
}

void FinishForeachAdamW(const ForeachAdamWLaunch& l, const AdamWLists& lists) {
  WriteBack(l.var, lists.var);
  WriteBack(l.m, lists.m);
  WriteBack(l.v, lists.v);
  WriteBack(l.maxV, lists.maxV);
  WriteBack(l.master, lists.master);
}

namespace {
template <class Int>
std::vector<Int> CheckForeachNormArgs(const OpProto& op, at::TensorList x, double p, ForeachNormKind& kind) {
  std::vector<tiling::TensorArg<Int>> args;
  for (size_t i = 0; i < x.size(); ++i) {
    CheckDense(op, {{0, &x[i]}});
    if (x[i].device() != x[0].device())
      Checked(op, [&] {
        tiling::Fail(tiling::ArgError::kValue, op, "every tensor must be on one device: ", op.inputs[0], "[", i,
                     "] is on ", x[i].device().str(), ", the first on ", x[0].device().str());
      });
    args.push_back(ArgOf<Int>(x[i]));
  }
  return Checked(op, [&] { return tiling::CheckForeachNorm(op, args, p, kind); });
}
}  // namespace

ForeachNormLaunch PrepareForeachNorm(const OpProto& op, at::TensorList x, double p,
                                     const tiling::PlatformInfo& platform) {
  ForeachNormKind kind = FOREACH_NORM_L2;
  const std::vector<int64_t> counts = CheckForeachNormArgs<int64_t>(op, x, p, kind);
  ForeachNormLaunch l;
  l.x = Contiguous(x);
  const int64_t n = int64_t(counts.size());
  l.table = at::zeros({n, 2}, at::kLong);
  int64_t* row = l.table.data_ptr<int64_t>();
  int64_t start = 0;
  for (int64_t i = 0; i < n; ++i, row += 2) {
    row[0] = int64_t(reinterpret_cast<uintptr_t>(l.x[i].data_ptr()));
    row[1] = start;
    start += counts[i];
    l.bytes += l.x[i].nbytes();
  }
  const tiling::DType dtype = n > 0 ? TilingDtype(x[0].scalar_type()) : tiling::DType::kFloat32;
  Checked(op, [&] { l.tiling = tiling::TileForeachNorm({start, n, dtype, kind}, platform); });
  const int64_t blocks = l.tiling.blockDim, slots = n + blocks;
  const at::Device device = n > 0 ? x[0].device() : at::Device(at::kCPU);
  l.partials =
      at::zeros({slots * int64_t(kForeachNormSlotFloats)}, at::TensorOptions().dtype(at::kFloat).device(device));
  // slot b + k holds tensor k's piece in block b: the blocks its elements fall in
  l.owner = at::full({slots}, n, at::kLong);
  int64_t* owner = l.owner.data_ptr<int64_t>();
  for (int64_t k = 0, first = 0; k < n; first += counts[k], ++k)
    if (counts[k] > 0)
      for (int64_t b = first / l.tiling.data.blockElems; b <= (first + counts[k] - 1) / l.tiling.data.blockElems; ++b)
        owner[b + k] = k;
  l.bytes += l.partials.nbytes();
  return l;
}

std::vector<at::Tensor> FinishForeachNorm(const ForeachNormLaunch& l, at::TensorList x) {
  const int64_t n = int64_t(x.size());
  if (n == 0) return {};
  const ForeachNormKind kind = ForeachNormKind(l.tiling.data.kind);
  const at::Tensor partial = l.partials.view({-1, int64_t(kForeachNormSlotFloats)}).select(1, 0);
  at::Tensor norms = at::zeros({n + 1}, partial.options());
  norms.scatter_reduce_(0, l.owner.to(partial.device()), partial, kind == FOREACH_NORM_INF ? "amax" : "sum");
  norms = norms.narrow(0, 0, n);
  if (kind == FOREACH_NORM_L2) norms = norms.sqrt();
  norms = norms.to(x[0].scalar_type());
  std::vector<at::Tensor> out;
  for (int64_t k = 0; k < n; ++k) out.push_back(norms.select(0, k).clone());  // separate tensors, as torch's
  return out;
}

namespace {
template <class Int>
std::vector<Int> CheckForeachClipArgs(const OpProto& op, at::TensorList x, at::TensorList norms,
                                      const at::Tensor& totalNorm, const ClipAttrs& attrs, ForeachNormKind& kind) {
  std::vector<tiling::TensorArg<Int>> xArgs, normArgs;
  const at::TensorList lists[] = {x, norms};
  for (size_t k = 0; k < 2; ++k)
    for (size_t i = 0; i < lists[k].size(); ++i) {
      const at::Tensor& t = lists[k][i];
      CheckDense(op, {{k, &t}});
      if (t.device() != totalNorm.device())
        Checked(op, [&] {
          tiling::Fail(tiling::ArgError::kValue, op, "every tensor must be on one device: ", op.inputs[k], "[", i,
                       "] is on ", t.device().str(), ", total_norm on ", totalNorm.device().str());
        });
      (k == 0 ? xArgs : normArgs).push_back(ArgOf<Int>(t));
    }
  CheckDense(op, {{2, &totalNorm}});
  return Checked(
      op, [&] { return tiling::CheckForeachClip(op, xArgs, normArgs, ArgOf<Int>(totalNorm), attrs.normType, kind); });
}
}  // namespace

ForeachClipLaunch PrepareForeachClip(const OpProto& op, at::TensorList x, at::TensorList norms,
                                     const at::Tensor& totalNorm, const ClipAttrs& attrs,
                                     const tiling::PlatformInfo& platform) {
  ForeachNormKind kind = FOREACH_NORM_L2;
  const std::vector<int64_t> counts = CheckForeachClipArgs<int64_t>(op, x, norms, totalNorm, attrs, kind);
  ForeachClipLaunch l;
  l.x = Contiguous(x);
  l.total = totalNorm.contiguous();
  const int64_t n = int64_t(counts.size()), normCount = int64_t(norms.size());
  l.table = at::zeros({2 * n + normCount}, at::kLong);
  int64_t* row = l.table.data_ptr<int64_t>();
  int64_t start = 0;
  for (int64_t i = 0; i < n; ++i) {
    row[2 * i] = int64_t(reinterpret_cast<uintptr_t>(l.x[i].data_ptr()));
    row[2 * i + 1] = start;
    start += counts[i];
    l.bytes += 2 * l.x[i].nbytes();
  }
  for (int64_t k = 0; k < normCount; ++k)  // a one-element tensor's element, wherever its strides put it
    row[2 * n + k] = int64_t(reinterpret_cast<uintptr_t>(norms[k].data_ptr()));
  const tiling::DType dtype = TilingDtype(totalNorm.scalar_type());
  Checked(op, [&] {
    l.tiling =
        tiling::TileForeachClip({start, n, normCount, dtype, kind, attrs.maxNorm, attrs.errorIfNonfinite}, platform);
  });
  l.bytes += (uint64_t(normCount) * l.tiling.blockDim + 1) * totalNorm.element_size();  // every block reads them
  return l;
}

void FinishForeachClip(const ForeachClipLaunch& l, at::TensorList x, const at::Tensor& totalNorm) {
  WriteBack(l.x, x);
  if (!l.total.is_same(totalNorm)) const_cast<at::Tensor&>(totalNorm).copy_(l.total);
}

namespace {

void ForeachClipOnTwin(const OpProto& op, at::TensorList x, at::TensorList norms, const at::Tensor& totalNorm,
                       const ClipAttrs& attrs) {
  ForeachClipLaunch l = PrepareForeachClip(op, x, norms, totalNorm, attrs, TwinPlatform());
  const auto args = EntryArgs(Gm, std::tie(l.table, l.total), nullptr, reinterpret_cast<uint8_t*>(&l.tiling.data));
  const auto& e = PickEntry(twin_entries::foreach_clip_by_total_norm, l.total.scalar_type());
  LaunchOnTwin(l.bytes, e.name, l.tiling.blockDim, e.fn, args);
  FinishForeachClip(l, x, totalNorm);
}

void ForeachClipMeta(const OpProto& op, at::TensorList x, at::TensorList norms, const at::Tensor& totalNorm,
                     const ClipAttrs& attrs) {
  ForeachNormKind kind;
  CheckForeachClipArgs<c10::SymInt>(op, x, norms, totalNorm, attrs, kind);
}

std::vector<at::Tensor> ForeachNormOnTwin(const OpProto& op, at::TensorList x, double p) {
  ForeachNormLaunch l = PrepareForeachNorm(op, x, p, TwinPlatform());
  if (l.tiling.blockDim > 0) {
    const auto args = EntryArgs(Gm, std::tie(l.table, l.partials), nullptr, reinterpret_cast<uint8_t*>(&l.tiling.data));
    const auto& e = PickEntry(twin_entries::foreach_norm, l.x[0].scalar_type());
    LaunchOnTwin(l.bytes, e.name, l.tiling.blockDim, e.fn, args);
  }
  return FinishForeachNorm(l, x);
}

std::vector<at::Tensor> ForeachNormMeta(const OpProto& op, at::TensorList x, double p) {
  ForeachNormKind kind;
  CheckForeachNormArgs<c10::SymInt>(op, x, p, kind);
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : x) out.push_back(at::empty({}, t.options()));
  return out;
}

void ForeachAdamWOnTwin(const OpProto& op, const AdamWLists& lists, const tiling::AdamWHyper& hyper) {
  ForeachAdamWLaunch l = PrepareForeachAdamW(op, lists, hyper, TwinPlatform());
  if (l.tiling.blockDim == 0) return;
  const auto args = EntryArgs(Gm, std::tie(l.table), nullptr, reinterpret_cast<uint8_t*>(&l.tiling.data));
  const auto& e = PickEntry(twin_entries::foreach_adam_w, l.var[0].scalar_type(), at::kFloat);
  LaunchOnTwin(l.bytes, e.name, l.tiling.blockDim, e.fn, args);
  FinishForeachAdamW(l, lists);
}

void ForeachAdamWMeta(const OpProto& op, const AdamWLists& lists, const tiling::AdamWHyper& hyper) {
  CheckForeachAdamWArgs<c10::SymInt>(op, lists, hyper);
}

void ApplyAdamWOnTwin(const OpProto& op, const at::Tensor& var, const at::Tensor& m, const at::Tensor& v,
                      const at::Tensor& grad, const std::optional<at::Tensor>& maxV, const tiling::AdamWHyper& hyper) {
  AdamWLaunch l = PrepareApplyAdamW(op, var, m, v, grad, maxV, hyper, TwinPlatform());
  if (l.tiling.blockDim == 0) return;
  uint64_t bytes = 0;
  const CountedGm gm{bytes};
  const auto args = EntryArgs(gm, l.Tensors(), nullptr, reinterpret_cast<uint8_t*>(&l.tiling.data));
  const auto& e = PickEntry(twin_entries::apply_adam_w, l.var.scalar_type(), at::kFloat);
  LaunchOnTwin(bytes, e.name, l.tiling.blockDim, e.fn, args);
  FinishApplyAdamW(l, var, m, v, maxV);
}

// Meta (FakeTensor, torch.compile): the checks only (the op writes its inputs, creates nothing).
void ApplyAdamWMeta(const OpProto& op, const at::Tensor& var, const at::Tensor& m, const at::Tensor& v,
                    const at::Tensor& grad, const std::optional<at::Tensor>& maxV, const tiling::AdamWHyper& hyper) {
  CheckAdamWArgs<c10::SymInt>(op, var, m, v, grad, hyper.amsgrad && maxV.has_value() ? *maxV : at::Tensor(), hyper);
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, Meta, m) {
  ImplOptimizerOps<ApplyAdamWMeta, ForeachAdamWMeta, ForeachNormMeta, ForeachClipMeta>(m);
}

TORCH_LIBRARY_IMPL(custom, CPU, m) {
  ImplOptimizerOps<ApplyAdamWOnTwin, ForeachAdamWOnTwin, ForeachNormOnTwin, ForeachClipOnTwin>(m);
}

// A sparse grad dispatches here: the same checks, which refuse it by name rather than as a missing kernel.
TORCH_LIBRARY_IMPL(custom, SparseCPU, m) {
  ImplOptimizerOps<ApplyAdamWOnTwin, ForeachAdamWOnTwin, ForeachNormOnTwin, ForeachClipOnTwin>(m);
}

}  // namespace ascendc_ops
