// Copies between devices: the op library's kernel for loom::copy_ on the Structured key,
// which moves bytes through the device types' runtimes (their LoomDeviceInterface copies)
// so no backend's copy_ needs to know any other device.
//
// Note [Copies between devices]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// copy_(dst, src) with dst and src on different devices (meta aside) never reaches a
// backend kernel. The bytes move as one block, in one dense layout (row-major, channels
// last, transposed) on both sides. Reorders run on the device side rather than on the
// host: from the host, a dense source of dst's shape and dtype moves as it is and, when
// dst's strides differ, lands in a temporary of its layout on dst's device, where a
// same-device copy_ puts it in place; from a device, the source device first brings the
// source to dst's shape, dtype and layout (row-major when dst is not dense) unless it is
// already so. Conversions of the source's shape or dtype always run on its own device.
// Between two devices that are not the host the block goes through a host buffer (device
// to host, then host to device; a direct path between indices is left to a later
// interface function). Every other copy_
// goes on to the backends unchanged.
#include <cstring>
#include <vector>

#include "device_copy.h"

#include "loom/core/device_runtime.h"
#include "loom/core/error.h"
#include "loom/core/memory_overlap.h"
#include "loom/core/read_section.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/ops/generated/ops.h"
#include "structured_key_kernel.h"

namespace loom::ops {
namespace {

using dispatch::Dispatcher;
using dispatch::OperatorHandle;

const DeviceRuntime& runtime_of(Device device) {
  const DeviceRuntime* runtime = find_device_runtime(device.type);
  LOOM_CHECK(runtime != nullptr, "loom::copy_", "device type ",
             DeviceTypeRegistry::instance().name(device.type),
             " has no device runtime to copy with (only plugin device types have one)");
  return *runtime;
}

// nbytes from src's memory to dst's memory; either side may be the host.
void move_bytes(Device dst_device, void* dst, Device src_device, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  if (src_device.type == kCPU) {
    runtime_of(dst_device).copy(CopyKind::HostToDevice, dst_device.index, dst, src, nbytes);
  } else if (dst_device.type == kCPU) {
    runtime_of(src_device).copy(CopyKind::DeviceToHost, src_device.index, dst, src, nbytes);
  } else {
    std::vector<unsigned char> host(nbytes);
    runtime_of(src_device).copy(CopyKind::DeviceToHost, src_device.index, host.data(), src, nbytes);
    runtime_of(dst_device).copy(CopyKind::HostToDevice, dst_device.index, dst, host.data(), nbytes);
  }
}

bool is_dense(const Tensor& t) {
  return t.is_contiguous() || is_non_overlapping_and_dense(*t.impl());
}

void copy_between_devices(const Tensor& dst, const Tensor& src) {
  const bool dense_dst = is_dense(dst);
  const bool reorder_on_source =
      src.device().type != kCPU && dense_dst && !same_shape(src.strides(), dst.strides());
  Tensor block = src;
  if (!(src.dtype() == dst.dtype() && same_shape(src.sizes(), dst.sizes()) && is_dense(src)) ||
      reorder_on_source) {
    block = dense_dst ? empty_strided(dst.sizes(), dst.strides(), dst.dtype(), src.device())
                      : empty(dst.sizes(), dst.dtype(), src.device());
    loom::copy_(block, src);
  }
  Tensor landing =
      same_shape(block.strides(), dst.strides())
          ? dst
          : Tensor(empty_strided(dst.sizes(), block.strides(), dst.dtype(), dst.device()));
  move_bytes(dst.device(), landing.data_ptr(), src.device(), block.data_ptr(),
             static_cast<size_t>(dst.numel()) * element_size(dst.dtype()));
  if (landing.impl() != dst.impl()) loom::copy_(dst, landing);
}

bool crosses_devices(const TensorImpl* dst, const TensorImpl* src) {
  if (dst->device() == src->device()) return false;
  return dst->device().type != kMeta && src->device().type != kMeta;
}

LoomError* copy_kernel(void*, const LoomKernelCall* call) {
  return run_structured_kernel([&] {
    const auto* dst = reinterpret_cast<const TensorImpl*>(call->args[0].u.tensor);
    const auto* src = reinterpret_cast<const TensorImpl*>(call->args[1].u.tensor);
    if (!crosses_devices(dst, src)) {
      redispatch_below(call);
      return;
    }
    Tensor d = Tensor::borrow(const_cast<TensorImpl*>(dst));
    copy_between_devices(d, Tensor::borrow(const_cast<TensorImpl*>(src)));
    d.impl()->retain();
    call->returns[0] = call->args[0];
  });
}

}  // namespace

void register_device_copy(const dispatch::Registrant* owner) {
  Dispatcher& d = Dispatcher::instance();
  d.register_kernel(d.find_defined("loom::copy_"), DispatchKey::Structured, {&copy_kernel, nullptr},
                    owner, "copy between devices")
      .release();
}

}  // namespace loom::ops

namespace loom {

Tensor Tensor::to(std::string_view device) const {
  return to(parse_device(device));
}

}  // namespace loom
