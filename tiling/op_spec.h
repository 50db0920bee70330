// An op's arguments as its prototype (op_proto/<family>/<op>.json) declares them, and the one way every layer
// rejects bad ones: the torch binding, its Meta kernel and the CANN op_host all call the per-op
// problem functions (tiling/<family>_problem.h), which throw ArgError. Pure C++: no torch, no CANN.
#pragma once
#include <algorithm>
#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "platform.h"

namespace tiling {

// One prototype: generated from op_proto/*/*.json into op_proto_gen.h.
struct OpSpec {
  const char* name;    // torch op name, e.g. "rotary_mul"
  const char* schema;  // torch schema string
  std::vector<const char*> inputs;
  std::vector<std::vector<DType>> inputDtypes;  // the supported combinations, one dtype per input
};

// One attribute of a prototype, generated into op_proto_gen.h (<Op>Attrs, one member per attribute): its index
// among the op's attributes (where a CANN op_host's RuntimeAttrs holds it) and the prototype's default, used
// where the attribute is absent. T is int64_t, float, bool, const char* (string), std::optional<int64_t> (an int
// whose default is None) or AttrIntList; a required attribute's default is T{}.
struct AttrIntList {};  // list_int, whose default is None
template <class T>
struct Attr {
  size_t index;
  T fallback = T{};
};

// A bad argument. The message names the op, the argument, what was expected and what came; the
// torch binding raises it as a ValueError or TypeError (kind), the op_host as a graph failure.
struct ArgError : std::invalid_argument {
  enum Kind { kValue, kType } kind;
  ArgError(Kind k, const std::string& message) : std::invalid_argument(message), kind(k) {}
};

// torch's name for a dtype ("float16", ...).
inline const char* DTypeName(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kFloat64: return "float64";
    case DType::kBool: return "bool";
    case DType::kUInt8: return "uint8";
    default: return "an unsupported dtype";
  }
}

// A tensor argument as the checks see it: its shape in Int (int64_t, or c10::SymInt in the Meta
// kernels, where a comparison becomes a guard) and its dtype. Absent optional tensors: !defined.
template <class Int>
struct TensorArg {
  std::vector<Int> shape;
  DType dtype = DType::kOther;
  bool defined = true;
  int64_t dim() const { return int64_t(shape.size()); }
};

// For an optional tensor's pointer parameter: Int comes from the other arguments, so nullptr works.
template <class T>
using NotDeduced = typename std::enable_if<true, T>::type;

namespace detail {
inline void Put(std::ostringstream& s, DType t) { s << DTypeName(t); }
template <class T>
void Put(std::ostringstream& s, const std::vector<T>& v) {
  s << "[";
  for (size_t k = 0; k < v.size(); ++k) s << (k ? ", " : "") << v[k];
  s << "]";
}
template <class T>
void Put(std::ostringstream& s, const T& v) {
  s << v;
}
}  // namespace detail

// Throws ArgError(kind, "<op>: <parts...>"); shapes print as [2, 3], dtypes by their torch names.
template <class... Parts>
[[noreturn]] void Fail(ArgError::Kind kind, const OpSpec& op, const Parts&... parts) {
  std::ostringstream s;
  s << op.name << ": ";
  (detail::Put(s, parts), ...);
  throw ArgError(kind, s.str());
}

// Input `index` must have a dtype that some supported combination allows.
inline void CheckDtype(const OpSpec& op, size_t index, DType got) {
  std::vector<DType> allowed;
  for (const auto& combo : op.inputDtypes) {
    if (combo[index] == got) return;
    if (std::find(allowed.begin(), allowed.end(), combo[index]) == allowed.end()) allowed.push_back(combo[index]);
  }
  std::string listed;
  for (DType t : allowed) listed += (listed.empty() ? "" : ", ") + std::string(DTypeName(t));
  Fail(ArgError::kType, op, op.inputs[index], " must be one of ", listed, ", got ", got);
}

// Input `index` must have input `refIndex`'s dtype (a TypeError naming both).
inline void CheckSameDtype(const OpSpec& op, size_t index, DType got, size_t refIndex, DType ref) {
  if (got == ref) return;
  const std::string refName = op.inputs[refIndex];
  const char* possessive = !refName.empty() && refName.back() == 's' ? "'" : "'s";
  Fail(ArgError::kType, op, op.inputs[index], " must have ", refName, possessive, " dtype ", ref, ", got ", got);
}

// The first got.size() inputs' dtypes must form (the start of) one supported combination.
inline void CheckDtypes(const OpSpec& op, const std::vector<DType>& got) {
  for (const auto& combo : op.inputDtypes)
    if (std::equal(got.begin(), got.end(), combo.begin())) return;
  std::ostringstream s;
  s << "unsupported dtypes (";
  size_t i = 0;
  for (DType t : got) s << (i ? ", " : "") << op.inputs[i] << "=" << DTypeName(t), ++i;
  s << "); supported:";
  std::vector<std::string> seen;
  for (const auto& combo : op.inputDtypes) {
    std::string c = " (";
    for (size_t k = 0; k < got.size(); ++k) c += std::string(k ? ", " : "") + DTypeName(combo[k]);
    c += ")";
    if (std::find(seen.begin(), seen.end(), c) == seen.end()) seen.push_back(c), s << c;
  }
  Fail(ArgError::kType, op, s.str());
}

// A dim attribute in [-rank, rank) of `tensor` (input `index`), normalised to [0, rank).
template <class Int>
int64_t NormalizeDim(const OpSpec& op, size_t index, const TensorArg<Int>& tensor, int64_t dim) {
  const int64_t rank = tensor.dim();
  if (dim < -rank || dim >= rank)
    Fail(ArgError::kValue, op, "dim must be in [", -rank, ", ", rank - 1, "] for ", op.inputs[index], " of shape ",
         tensor.shape, ", got ", dim);
  return dim < 0 ? dim + rank : dim;
}

}  // namespace tiling
