// apply_adam_w arguments -> the problem (the element count and the hyperparameters), or an ArgError naming the
// op, the argument, what was expected and what came. Called by the torch binding, its Meta kernel and the op_host;
// the multi-tensor form calls it once per tensor of its lists.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "op_spec.h"
#include "optimizer_tiling.h"

namespace tiling {

// torch.optim.AdamW's own rules (its constructor's), said with the op's attribute names.
inline void CheckAdamWHyper(const OpSpec& op, const AdamWHyper& h) {
  const auto check = [&](bool ok, const char* name, const char* expected, double got) {
    if (!ok) Fail(ArgError::kValue, op, name, " must be ", expected, ", got ", got);
  };
  check(h.lr >= 0.0 && std::isfinite(h.lr), "lr", "a finite number >= 0", h.lr);
  check(h.beta1 >= 0.0 && h.beta1 < 1.0, "beta1", "in [0, 1)", h.beta1);
  check(h.beta2 >= 0.0 && h.beta2 < 1.0, "beta2", "in [0, 1)", h.beta2);
  check(h.weightDecay >= 0.0 && std::isfinite(h.weightDecay), "weight_decay", "a finite number >= 0", h.weightDecay);
  check(h.eps >= 0.0 && std::isfinite(h.eps), "eps", "a finite number >= 0", h.eps);
  check(h.step >= 1.0 && std::isfinite(h.step), "step", "a finite number >= 1 (this update's count)", h.step);
}

// var, m, v, grad and the optional amsgrad maximum (max_grad_norm): one shape; var and grad in one float dtype, the
// states float32. `at` follows each argument's name (the multi-tensor form's "[k]"). Returns the element count.
template <class Int>
Int CheckAdamW(const OpSpec& op, const TensorArg<Int>& var, const TensorArg<Int>& m, const TensorArg<Int>& v,
               const TensorArg<Int>& grad, const TensorArg<Int>& maxV, bool amsgrad, const std::string& at = "") {
  CheckDtype(op, 0, var.dtype);
  CheckDtype(op, 1, m.dtype);
  CheckDtype(op, 2, v.dtype);
  CheckSameDtype(op, 3, grad.dtype, 0, var.dtype);
  if (amsgrad && !maxV.defined)
    Fail(ArgError::kValue, op, op.inputs[4], " must be given when amsgrad=True (v's running maximum), got None");
  const TensorArg<Int>* same[] = {&m, &v, &grad, &maxV};
  for (size_t k = 0; k < 4; ++k) {
    const TensorArg<Int>& t = *same[k];
    if (!t.defined) continue;
    bool equal = t.shape.size() == var.shape.size();
    for (size_t i = 0; equal && i < var.shape.size(); ++i) equal = t.shape[i] == var.shape[i];
    if (!equal)
      Fail(ArgError::kValue, op, op.inputs[k + 1], at, " must have ", op.inputs[0], at, "'s shape ", var.shape,
           ", got ", t.shape);
  }
  if (maxV.defined) CheckDtype(op, 4, maxV.dtype);
  Int n(1);
  for (const Int& s : var.shape) n = n * s;
  return n;
}

// The multi-tensor form: lists of one length (max_grad_norm: that length with amsgrad, else ignored), each entry
// as apply_adam_w's arguments, every var of one dtype (one kernel entry serves the launch); master empty, or an
// fp32 copy of each var of var's shape when var is 16-bit. Returns each tensor's element count.
template <class Int>
std::vector<Int> CheckForeachAdamW(const OpSpec& op, const std::vector<TensorArg<Int>>& var,
                                   const std::vector<TensorArg<Int>>& m, const std::vector<TensorArg<Int>>& v,
                                   const std::vector<TensorArg<Int>>& grad, const std::vector<TensorArg<Int>>& maxV,
                                   bool amsgrad, const std::vector<TensorArg<Int>>& master = {}) {
  const std::vector<TensorArg<Int>>* lists[] = {&m, &v, &grad, &maxV};
  for (size_t k = 0; k < 4; ++k)
    if ((k < 3 || amsgrad) && lists[k]->size() != var.size())
      Fail(ArgError::kValue, op, op.inputs[k + 1], " must hold as many tensors as ", op.inputs[0], " (", var.size(),
           k == 3 ? ") when amsgrad=True" : ")", ", got ", lists[k]->size());
  std::vector<Int> counts;
  for (size_t i = 0; i < var.size(); ++i) {
    const std::string at = "[" + std::to_string(i) + "]";
    if (var[i].dtype != var[0].dtype)
      Fail(ArgError::kType, op, op.inputs[0], at, " must have ", op.inputs[0], "[0]'s dtype ", var[0].dtype, ", got ",
           var[i].dtype);
    TensorArg<Int> none{{}, DType::kOther, false};
    counts.push_back(CheckAdamW(op, var[i], m[i], v[i], grad[i], amsgrad ? maxV[i] : none, amsgrad, at));
  }
  if (master.empty()) return counts;
  if (master.size() != var.size())
    Fail(ArgError::kValue, op, op.inputs[5], " must be empty or hold as many tensors as ", op.inputs[0], " (",
         var.size(), "), got ", master.size());
  if (var[0].dtype == DType::kFloat32)
    Fail(ArgError::kValue, op, op.inputs[5], " must be empty when ", op.inputs[0],
         " is float32 (a master copy stands for a float16 or bfloat16 parameter)");
  for (size_t i = 0; i < master.size(); ++i) {
    CheckDtype(op, 5, master[i].dtype);
    if (master[i].shape != var[i].shape)
      Fail(ArgError::kValue, op, op.inputs[5], "[", i, "] must have ", op.inputs[0], "[", i, "]'s shape ", var[i].shape,
           ", got ", master[i].shape);
  }
  return counts;
}

// foreach_norm: the norm's p (1, 2 or inf) and a list of float tensors of one dtype. Returns each one's element count.
template <class Int>
std::vector<Int> CheckForeachNorm(const OpSpec& op, const std::vector<TensorArg<Int>>& x, double p,
                                  ForeachNormKind& kind) {
  if (p == 1.0) kind = FOREACH_NORM_L1;
  else if (p == 2.0) kind = FOREACH_NORM_L2;
  else if (std::isinf(p) && p > 0) kind = FOREACH_NORM_INF;
  else Fail(ArgError::kValue, op, "scalar (the norm's p) must be 1, 2 or inf, got ", p);
  std::vector<Int> counts;
  for (size_t i = 0; i < x.size(); ++i) {
    CheckDtype(op, 0, x[i].dtype);
    if (x[i].dtype != x[0].dtype)
      Fail(ArgError::kType, op, op.inputs[0], "[", i, "] must have ", op.inputs[0], "[0]'s dtype ", x[0].dtype,
           ", got ", x[i].dtype);
    Int n(1);
    for (const Int& s : x[i].shape) n = n * s;
    if (kind == FOREACH_NORM_INF && n == 0)  // max has no identity: torch._foreach_norm refuses it too
      Fail(ArgError::kValue, op, op.inputs[0], "[", i, "] is empty, and the inf norm of no element is undefined");
    counts.push_back(n);
  }
  return counts;
}

// foreach_clip_by_total_norm: x a list of float tensors of one dtype; norms (the norms of x's tensors and of any other
// lists clipped with them) and total_norm one element each, in x's dtype; norm_type 1, 2 or inf. Returns each x's
// element count.
template <class Int>
std::vector<Int> CheckForeachClip(const OpSpec& op, const std::vector<TensorArg<Int>>& x,
                                  const std::vector<TensorArg<Int>>& norms, const TensorArg<Int>& totalNorm,
                                  double normType, ForeachNormKind& kind) {
  if (normType == 1.0) kind = FOREACH_NORM_L1;
  else if (normType == 2.0) kind = FOREACH_NORM_L2;
  else if (std::isinf(normType) && normType > 0) kind = FOREACH_NORM_INF;
  else Fail(ArgError::kValue, op, "norm_type must be 1, 2 or inf, got ", normType);
  const auto elems = [](const TensorArg<Int>& t) {
    Int n(1);
    for (const Int& s : t.shape) n = n * s;
    return n;
  };
  // every tensor in the first x's dtype (x empty: the total's), as one kernel entry serves the launch
  const DType dtype = x.empty() ? totalNorm.dtype : x[0].dtype;
  CheckDtype(op, 2, totalNorm.dtype);
  CheckSameDtype(op, 2, totalNorm.dtype, 0, dtype);
  if (elems(totalNorm) != Int(1))
    Fail(ArgError::kValue, op, op.inputs[2], " must hold one element (the total norm is written there), got shape ",
         totalNorm.shape);
  std::vector<Int> counts;
  for (size_t i = 0; i < x.size(); ++i) {
    CheckDtype(op, 0, x[i].dtype);
    if (x[i].dtype != dtype)
      Fail(ArgError::kType, op, op.inputs[0], "[", i, "] must have ", op.inputs[0], "[0]'s dtype ", dtype, ", got ",
           x[i].dtype);
    counts.push_back(elems(x[i]));
  }
  for (size_t i = 0; i < norms.size(); ++i) {
    if (norms[i].dtype != dtype)
      Fail(ArgError::kType, op, op.inputs[1], "[", i, "] must have ", x.empty() ? op.inputs[2] : op.inputs[0],
           x.empty() ? "'s" : "[0]'s", " dtype ", dtype, ", got ", norms[i].dtype);
    if (elems(norms[i]) != Int(1))
      Fail(ArgError::kValue, op, op.inputs[1], "[", i, "] must hold one element (a tensor's norm), got shape ",
           norms[i].shape);
  }
  return counts;
}

}  // namespace tiling
