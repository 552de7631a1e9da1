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
// goes on to the backends unchanged. A copy_ with non_blocking set between a tensor in
// pinned host memory of the device's type and a device tensor, with no temporary on
// either side, is queued and not waited for (Note [Pinned host memory]); with a temporary,
// or from or to pageable memory, it waits as any copy does, as PyTorch's does.
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

// True when `host`, a cpu tensor, is pinned host memory of `runtime`'s device type.
bool pinned_for(const Tensor& host, const DeviceRuntime& runtime) {
  const Allocator* pinned = runtime.pinned_host_allocator();
  return pinned != nullptr && host.impl()->storage()->allocator() == pinned;
}

// All of dst from all of src, dense in the same layout; either side may be the host. A
// copy between the host and a device is queued without a wait when `may_queue` and the
// host side is that device type's pinned memory.
void move_bytes(const Tensor& dst, const Tensor& src, bool may_queue) {
  const size_t nbytes = static_cast<size_t>(dst.numel()) * element_size(dst.dtype());
  if (nbytes == 0) return;
  const Device dst_device = dst.device(), src_device = src.device();
  if (src_device.type == kCPU || dst_device.type == kCPU) {
    const bool to_device = src_device.type == kCPU;
    const Device device = to_device ? dst_device : src_device;
    const DeviceRuntime& runtime = runtime_of(device);
    const CopyKind kind = to_device ? CopyKind::HostToDevice : CopyKind::DeviceToHost;
    if (may_queue && pinned_for(to_device ? src : dst, runtime)) {
      runtime.copy_async(kind, device.index, dst.data_ptr(), src.data_ptr(), nbytes);
    } else {
      runtime.copy(kind, device.index, dst.data_ptr(), src.data_ptr(), nbytes);
    }
  } else {
    const void* src_bytes = src.data_ptr();
    void* dst_bytes = dst.data_ptr();
    std::vector<unsigned char> host(nbytes);
    runtime_of(src_device)
        .copy(CopyKind::DeviceToHost, src_device.index, host.data(), src_bytes, nbytes);
    runtime_of(dst_device)
        .copy(CopyKind::HostToDevice, dst_device.index, dst_bytes, host.data(), nbytes);
  }
}

bool is_dense(const Tensor& t) {
  return t.is_contiguous() || is_non_overlapping_and_dense(*t.impl());
}

void copy_between_devices(const Tensor& dst, const Tensor& src, bool non_blocking) {
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
  // Queued only between the caller's own tensors: a temporary would be freed, or read on
  // the host, before the copy has run.
  const bool no_temporary = block.impl() == src.impl() && landing.impl() == dst.impl();
  move_bytes(landing, block, non_blocking && no_temporary);
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
    const bool non_blocking = call->num_args > 2 && call->args[2].u.i != 0;
    Tensor d = Tensor::borrow(const_cast<TensorImpl*>(dst));
    copy_between_devices(d, Tensor::borrow(const_cast<TensorImpl*>(src)), non_blocking);
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

Tensor Tensor::to(std::string_view device, bool non_blocking) const {
  return to(parse_device(device), std::nullopt, non_blocking);
}

Tensor Tensor::to(Device device, bool non_blocking, bool copy) const {
  return to(device, std::nullopt, non_blocking, copy);
}

}  // namespace loom
