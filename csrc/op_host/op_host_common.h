// What every csrc/op_host/<family>/<op>.cpp shares: the platform from platform_ascendc (npu_platform.h),
// the attributes by their generated index and default, ge <-> tiling dtypes, shapes as plain vectors, handing the plain
// tiling struct (CANN 8 standard-C++ tiling) to the kernel, and the infer-shape/dtype steps most ops are made of. The
// tiling itself is the pure tiling/ function the CPU twin and the torch bindings call.
#pragma once
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "exe_graph/runtime/infer_datatype_context.h"
#include "exe_graph/runtime/infer_shape_context.h"
#include "exe_graph/runtime/tiling_context.h"
#include "npu_platform.h"
#include "op_proto_gen.h"
#include "op_spec.h"
#include "platform.h"
#include "register/op_def_registry.h"
#include "register/tilingdata_base.h"
#include "tiling/platform/platform_ascendc.h"

namespace ascendc_ops_host {

// The chip the kernel will run on (npu_platform.h): its vector cores and UB, or its cube cores and L1 / L0.
inline tiling::PlatformInfo NpuPlatform(const gert::TilingContext* context) {
  return VectorPlatformOf(platform_ascendc::PlatformAscendC(context->GetPlatformInfo()));
}
inline tiling::CubePlatform NpuCubePlatform(const gert::TilingContext* context) {
  return CubePlatformOf(platform_ascendc::PlatformAscendC(context->GetPlatformInfo()));
}

// Attribute `a` of op_proto_gen.h's <Op>Attrs (its index and the prototype's default): the value the graph
// gives, or the default where the attrs or the attribute are absent. A list is absent when empty too.
inline int64_t ReadAttr(const gert::RuntimeAttrs* attrs, tiling::Attr<int64_t> a) {
  const int64_t* v = attrs == nullptr ? nullptr : attrs->GetInt(a.index);
  return v == nullptr ? a.fallback : *v;
}
inline std::optional<int64_t> ReadAttr(const gert::RuntimeAttrs* attrs, tiling::Attr<std::optional<int64_t>> a) {
  const int64_t* v = attrs == nullptr ? nullptr : attrs->GetInt(a.index);
  return v == nullptr ? a.fallback : std::optional<int64_t>(*v);
}
inline float ReadAttr(const gert::RuntimeAttrs* attrs, tiling::Attr<float> a) {
  const float* v = attrs == nullptr ? nullptr : attrs->GetFloat(a.index);
  return v == nullptr ? a.fallback : *v;
}
inline bool ReadAttr(const gert::RuntimeAttrs* attrs, tiling::Attr<bool> a) {
  const bool* v = attrs == nullptr ? nullptr : attrs->GetBool(a.index);
  return v == nullptr ? a.fallback : *v;
}
inline std::string ReadAttr(const gert::RuntimeAttrs* attrs, tiling::Attr<const char*> a) {
  const char* v = attrs == nullptr ? nullptr : attrs->GetStr(a.index);
  return v != nullptr ? v : a.fallback != nullptr ? a.fallback : "";
}
inline std::optional<std::vector<int64_t>> ReadAttr(const gert::RuntimeAttrs* attrs,
                                                    tiling::Attr<tiling::AttrIntList> a) {
  const auto* v = attrs == nullptr ? nullptr : attrs->GetListInt(a.index);
  if (v == nullptr || v->GetSize() == 0) return std::nullopt;
  return std::vector<int64_t>(v->GetData(), v->GetData() + v->GetSize());
}

// ge dtype -> tiling dtype; false for a dtype no prototype lists (the OpDef admits none of those).
inline bool TilingDtype(ge::DataType t, tiling::DType& out) {
  switch (t) {
    case ge::DT_FLOAT: out = tiling::DType::kFloat32; return true;
    case ge::DT_FLOAT16: out = tiling::DType::kFloat16; return true;
    case ge::DT_BF16: out = tiling::DType::kBFloat16; return true;
    case ge::DT_BOOL: out = tiling::DType::kBool; return true;  // masks
    case ge::DT_UINT8: out = tiling::DType::kUInt8; return true;
    case ge::DT_INT64: out = tiling::DType::kInt64; return true;  // indices (target, group_list)
    case ge::DT_INT32: out = tiling::DType::kInt32; return true;
    default: return false;
  }
}

inline bool InputDtype(const gert::TilingContext* context, size_t index, tiling::DType& out) {
  const auto* desc = context->GetInputDesc(index);
  return desc != nullptr && TilingDtype(desc->GetDataType(), out);
}

inline std::vector<int64_t> Dims(const gert::Shape& shape) {
  std::vector<int64_t> dims(shape.GetDimNum());
  for (size_t k = 0; k < dims.size(); ++k) dims[k] = shape.GetDim(k);
  return dims;
}

// Input `index`'s shape as the kernel sees it (storage shape; ND only, so the same as origin).
inline bool InputDims(const gert::TilingContext* context, size_t index, std::vector<int64_t>& dims) {
  const gert::StorageShape* shape = context->GetInputShape(index);
  if (shape == nullptr) return false;
  dims = Dims(shape->GetStorageShape());
  return true;
}

inline const gert::Shape& PlainShape(const gert::Shape& shape) { return shape; }
inline const gert::Shape& PlainShape(const gert::StorageShape& shape) { return shape.GetStorageShape(); }

// Input `index` as the problem functions (tiling/<family>_problem.h) see it: shape and dtype, from
// an infer-shape or a tiling context. An absent optional input comes back !defined.
template <typename Context>
tiling::TensorArg<int64_t> InputArg(const Context* context, size_t index, bool optional = false) {
  const auto* shape = optional ? context->GetOptionalInputShape(index) : context->GetInputShape(index);
  const auto* desc = context->GetInputDesc(index);
  if (shape == nullptr) return {{}, tiling::DType::kOther, false};
  tiling::TensorArg<int64_t> arg{Dims(PlainShape(*shape)), tiling::DType::kOther, true};
  if (desc == nullptr || !TilingDtype(desc->GetDataType(), arg.dtype)) arg.dtype = tiling::DType::kOther;
  return arg;
}

// Runs a problem function (and the tiling): the graph fails on an ArgError or a TilingError, whose
// message (naming the op, the argument, what was expected and what came) goes to stderr.
template <typename F>
ge::graphStatus Checked(F&& f) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return ge::GRAPH_FAILED;
  }
}

// Writes `dims` into output `index`'s shape.
inline ge::graphStatus SetOutputShape(gert::InferShapeContext* context, size_t index,
                                      const std::vector<int64_t>& dims) {
  gert::Shape* out = context->GetOutputShape(index);
  if (out == nullptr) return ge::GRAPH_FAILED;
  out->SetDimNum(dims.size());
  for (size_t k = 0; k < dims.size(); ++k) out->SetDim(k, dims[k]);
  return ge::GRAPH_SUCCESS;
}

// Hands the kernel its tiling: the plain struct (read there with GET_TILING_DATA_WITH_STRUCT),
// blocks, key, and the workspace: the library's system workspace plus `userBytes`.
template <typename Data>
ge::graphStatus Publish(gert::TilingContext* context, const Data& data, uint32_t blockDim, uint64_t tilingKey,
                        size_t userBytes = 0) {
  Data* out = context->GetTilingData<Data>();
  if (out == nullptr) return ge::GRAPH_FAILED;  // the buffer is smaller than the struct
  *out = data;
  context->SetBlockDim(blockDim);
  context->SetTilingKey(tilingKey);
  size_t* workspace = context->GetWorkspaceSizes(1);
  if (workspace == nullptr) return ge::GRAPH_FAILED;
  platform_ascendc::PlatformAscendC soc(context->GetPlatformInfo());
  workspace[0] = soc.GetLibApiWorkSpaceSize() + userBytes;
  return ge::GRAPH_SUCCESS;
}

// Output `out` has input `in`'s shape / dtype.
inline ge::graphStatus SameShape(gert::InferShapeContext* context, size_t in, size_t out) {
  const gert::Shape* from = context->GetInputShape(in);
  gert::Shape* to = context->GetOutputShape(out);
  if (from == nullptr || to == nullptr) return ge::GRAPH_FAILED;
  *to = *from;
  return ge::GRAPH_SUCCESS;
}

inline ge::graphStatus SameDtype(gert::InferDataTypeContext* context, size_t in, size_t out) {
  return context->SetOutputDataType(out, context->GetInputDataType(in));
}

// Output `out` is input `in`'s shape with its trailing `normDims` dims set to 1 (RMSNorm's rstd).
inline ge::graphStatus KeepDimShape(gert::InferShapeContext* context, size_t in, size_t normDims, size_t out) {
  if (SameShape(context, in, out) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  gert::Shape* to = context->GetOutputShape(out);
  if (normDims > to->GetDimNum()) return ge::GRAPH_FAILED;
  for (size_t k = to->GetDimNum() - normDims; k < to->GetDimNum(); ++k) to->SetDim(k, 1);
  return ge::GRAPH_SUCCESS;
}

}  // namespace ascendc_ops_host

// The three functions gen_op_def.py's <op>_def.h registers for op <Op> (optiling::<Op>Tiling,
// ge::<Op>InferShape, ge::<Op>InferDataType), each returning one expression of `context` -- every
// op_host/<family>/<op>.cpp is this and its two includes; the logic lives in its <family>_host.h.
#define ASCENDC_OP_HOST(Op, tiling, inferShape, inferDataType)                                        \
  namespace optiling {                                                                                \
  static ge::graphStatus Op##Tiling(gert::TilingContext* context) { return tiling; }                  \
  }                                                                                                   \
  namespace ge {                                                                                      \
  static graphStatus Op##InferShape(gert::InferShapeContext* context) { return inferShape; }          \
  static graphStatus Op##InferDataType(gert::InferDataTypeContext* context) { return inferDataType; } \
  }
