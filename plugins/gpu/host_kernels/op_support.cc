// The helpers every GPU op wrapper shares (op_support.h): the device check, contiguous
// copies on the device, and the operand checks.
#include "op_support.h"

#include <cstring>
#include <string>
#include <vector>

#include "../kernels/launch.h"

namespace loom::gpu {

void prepare(const char* op, const sdk::Tensor& out,
             std::initializer_list<const sdk::Tensor*> inputs) {
  const LoomDevice d = out.device();
  for (const sdk::Tensor* t : inputs) {
    const LoomDevice in = t->device();
    if (in.type != d.type || in.index != d.index) {
      throw sdk::Error("[" + std::string(op) +
                       "] expected every tensor on " LOOM_GPU_DEVICE_TYPE ":" +
                       std::to_string(d.index) + ", found one on device type " +
                       std::to_string(in.type) + " index " + std::to_string(in.index));
    }
  }
  use_device(d.index);
}

HostScalars prepare_pointwise(const char* op, const sdk::Tensor& out,
                              std::initializer_list<const sdk::Tensor*> inputs) {
  HostScalars scalars;
  int k = 0;
  for (const sdk::Tensor* t : inputs) {
    if (is_host_scalar(*t)) {
      const size_t bytes = sdk::element_size(t->dtype());
      if (bytes == 0 || bytes > sizeof(scalars.bytes[0])) {
        throw sdk::Error("[" + std::string(op) + "] a number of dtype " +
                         std::to_string(t->dtype()) + " cannot be passed to a kernel by value");
      }
      std::memcpy(scalars.bytes[k], t->data(), bytes);
      scalars.mask |= 1u << k;
    } else {
      prepare(op, out, {t});
    }
    ++k;
  }
  use_device(out.device().index);
  return scalars;
}

sdk::Tensor contiguous(const sdk::DispatchContext& ctx, const char* op, const sdk::Tensor& t,
                       int32_t dtype) {
  sdk::Tensor copy =
      sdk::empty(t.sizes(), dtype < 0 ? t.dtype() : static_cast<LoomDType>(dtype), t.device());
  const sdk::Tensor* operands[2] = {&copy, &t};
  check_launch(launch_copy(copy.dtype(), t.dtype(), space_of(op, copy, operands), copy.data(),
                           t.data(), stream_of(ctx)),
               op);
  return copy;
}

int64_t wrapped_dim(const char* op, int64_t dim, int64_t ndim) {
  const int64_t n = ndim == 0 ? 1 : ndim;
  if (dim < -n || dim >= n) {
    throw sdk::Error("[" + std::string(op) + "] dim " + std::to_string(dim) +
                     " is out of range for a tensor of " + std::to_string(ndim) + " dims");
  }
  return dim < 0 ? dim + n : dim;
}

void broadcast_binary(const sdk::DispatchContext& ctx, const char* op, BinaryOp kind, double alpha,
                      const sdk::Tensor& out, const sdk::Tensor& self, const sdk::Tensor& other) {
  const int64_t nd = out.dim(), other_nd = other.dim();
  if (self.dim() != nd) {
    throw sdk::Error("[" + std::string(op) + "] expected self with the result's " +
                     std::to_string(nd) + " dims, found " + std::to_string(self.dim()));
  }
  std::vector<int64_t> other_strides(static_cast<size_t>(nd), 0);
  for (int64_t d = 0; d < other_nd; ++d) {
    const int64_t size = other.sizes()[d];
    const int64_t at = d + nd - other_nd;
    if (at < 0 || (size != 1 && size != out.sizes()[at])) {
      throw sdk::Error("[" + std::string(op) + "] cannot broadcast an operand of " +
                       std::to_string(other_nd) + " dims to the result's " + std::to_string(nd));
    }
    other_strides[static_cast<size_t>(at)] = size == 1 ? 0 : other.strides()[d];
  }
  const int64_t* strides[3] = {out.strides().data(), self.strides().data(), other_strides.data()};
  StridedSpace<3> space;
  if (!make_strided_space<3>(out.sizes().data(), static_cast<int>(nd), strides, &space)) {
    throw sdk::Error("[" + std::string(op) +
                     "] too many dims for the " LOOM_GPU_PLATFORM_NAME " kernels");
  }
  check_launch(launch_binary(kind, out.dtype(), alpha, space, out.data(), self.data(), other.data(),
                             stream_of(ctx)),
               op);
}

void copy_into(const sdk::DispatchContext& ctx, const char* op, const sdk::Tensor& out,
               const sdk::Tensor& src) {
  if (out.get() == src.get()) return;
  const sdk::Tensor* pair[2] = {&out, &src};
  check_launch(launch_copy(out.dtype(), src.dtype(), space_of(op, out, pair), out.data(),
                           src.data(), stream_of(ctx)),
               op);
}

sdk::Tensor scalar_tensor(const sdk::DispatchContext& ctx, const char* op, double value,
                          int32_t dtype, LoomDevice device) {
  sdk::Tensor t = sdk::empty(std::span<const int64_t>{}, static_cast<LoomDType>(dtype), device);
  const sdk::Tensor* one[1] = {&t};
  check_launch(launch_fill(dtype, true, value, 0, space_of(op, t, one), t.data(), stream_of(ctx)),
               op);
  return t;
}

bool loom_kernels_option(sdk::Registrar& r, const char* name) {
  const std::string value(r.option(name, "vendor"));
  if (value != "vendor" && value != "loom") {
    throw sdk::Error("[" LOOM_GPU_PLATFORM_NAME "] option " + std::string(name) +
                         ": expected \"vendor\" or \"loom\", found \"" + value + "\"",
                     LOOM_STATUS_INVALID_ARGUMENT);
  }
  return value == "loom";
}

}  // namespace loom::gpu
