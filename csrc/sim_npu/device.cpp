// SIMULATOR -- a PrivateUse1 device backed by host memory, enough for torch to treat it as "npu":
// allocator, device guard, hooks (pinned staging memory), the kernels no fallback can provide
// (empty, views, resize, copies, scalar reads), and a CPU fallback for every other aten op. The
// custom ops are refused by that fallback: on this device they must run their PrivateUse1 launchers.
#include <ATen/EmptyTensor.h>
#include <ATen/InferSize.h>
#include <ATen/ATen.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorShape.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <cstring>

namespace ascendc_ops::sim_npu {
namespace {

constexpr c10::DeviceType kNpu = c10::DeviceType::PrivateUse1;
const c10::Device kDevice(kNpu, 0);  // one device: multi-device code is not simulated

struct DeviceAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t bytes) override {
    void* data = bytes ? c10::alloc_cpu(bytes) : nullptr;
    return {data, data, &c10::free_cpu, kDevice};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &c10::free_cpu; }
  void copy_data(void* dst, const void* src, std::size_t bytes) const override { std::memcpy(dst, src, bytes); }
};
DeviceAllocator deviceAllocator;
REGISTER_ALLOCATOR(kNpu, &deviceAllocator);

struct Guard final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kNpu; }
  c10::Device exchangeDevice(c10::Device d) const override { return Check(d); }
  c10::Device getDevice() const override { return kDevice; }
  void setDevice(c10::Device d) const override { Check(d); }
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device d) const noexcept override { return c10::Stream(c10::Stream::DEFAULT, kDevice); }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override { return s; }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
  void synchronizeDevice(c10::DeviceIndex) const override {}
  static c10::Device Check(c10::Device d) {
    TORCH_CHECK(d.type() == kNpu && d.index() <= 0, "simulated NPU: only device npu:0 exists, got ", d);
    return kDevice;
  }
};
C10_REGISTER_GUARD_IMPL(PrivateUse1, Guard);

// Pinned host memory (torch_npu's pin_memory, which TilingOnDevice stages tiling through) is plain host memory here.
struct Hooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override { return 1; }
  c10::DeviceIndex getCurrentDevice() const override { return 0; }
  at::Allocator* getPinnedMemoryAllocator() const override { return c10::GetCPUAllocator(); }
  bool isPinnedPtr(const void*) const override { return true; }
  at::Device getDeviceFromPtr(void*) const override { return kDevice; }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t bytes) const override {
    at::native::resize_bytes_cpu(storage.unsafeGetStorageImpl(), bytes);
  }
};
const bool kHooks = [] {
  static Hooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
  return true;
}();

// A CPU tensor over the same bytes: how host code and CPU kernels see device memory here.
at::Tensor HostAlias(const at::Tensor& t) {
  if (t.device().is_cpu()) return t;
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU));
}

at::Tensor Empty(at::IntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                 std::optional<at::Device> device, std::optional<bool> pin, std::optional<at::MemoryFormat> format) {
  if (device) Guard::Check(*device);
  return at::detail::empty_generic(size, &deviceAllocator, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   c10::dtype_or_default(dtype), format);
}

at::Tensor EmptyStrided(at::IntArrayRef size, at::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                        std::optional<at::Layout> layout, std::optional<at::Device> device, std::optional<bool> pin) {
  if (device) Guard::Check(*device);
  return at::detail::empty_strided_generic(
      size, stride, &deviceAllocator, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), c10::dtype_or_default(dtype));
}

at::Tensor AsStrided(const at::Tensor& self, at::IntArrayRef size, at::IntArrayRef stride,
                     std::optional<int64_t> offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, offset);
}

at::Tensor View(const at::Tensor& self, at::IntArrayRef size) { return at::native::view(self, size); }

at::Tensor ReshapeAlias(const at::Tensor& self, at::IntArrayRef size, at::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

const at::Tensor& Resize(const at::Tensor& self, at::IntArrayRef size, std::optional<at::MemoryFormat> format) {
  at::native::resize_impl_cpu_(self.unsafeGetTensorImpl(), size, std::nullopt);  // grows storage by its allocator
  if (format) self.unsafeGetTensorImpl()->empty_tensor_restride(*format);
  return self;
}

// Both sides are host memory: copy through CPU aliases (synchronous, so non_blocking changes nothing).
at::Tensor CopyFrom(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  HostAlias(dst).copy_(HostAlias(self));
  return dst;
}

at::Tensor CopyFromAndResize(const at::Tensor& self, const at::Tensor& dst) {
  Resize(dst, self.sizes(), std::nullopt);
  return CopyFrom(self, dst, false);
}

at::Scalar LocalScalarDense(const at::Tensor& self) { return HostAlias(self).item(); }

void CpuFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  TORCH_CHECK(op.schema().name().rfind("custom::", 0) != 0, "simulated NPU: ", op.schema().name(),
              " has no PrivateUse1 launcher registered (csrc/torch/npu)");
  at::native::cpu_fallback(op, stack);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", &Empty);
  m.impl("empty_strided", &EmptyStrided);
  m.impl("as_strided", &AsStrided);
  m.impl("view", &View);
  m.impl("_reshape_alias", &ReshapeAlias);
  m.impl("resize_", &Resize);
  m.impl("_copy_from", &CopyFrom);
  m.impl("_copy_from_and_resize", &CopyFromAndResize);
  m.impl("_local_scalar_dense", &LocalScalarDense);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&CpuFallback>()); }

}  // namespace ascendc_ops::sim_npu
