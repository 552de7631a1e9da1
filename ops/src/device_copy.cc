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
//
// Note [Copies through a backend's copy_ kernel]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Before ABI 1.2 the op library had no path of its own between devices: copy_(dst, src)
// went to the highest backend key of its two tensors, and the plugin guides of ABI 1.0
// and 1.1 taught a device plugin to move bytes in its own copy_ kernel, with only
// device_count, allocate and deallocate in its device interface. Such a plugin's binary
// must keep working (a plugin built for 1.x runs on 1.y), so a device type whose
// interface has no copy (DeviceRuntime::has_copy) keeps that path: a copy between it and
// the host, or between two of its devices, is handed to the copy_ kernel of its backend
// key with the caller's own tensors, non_blocking included, so the kernel sees the dtype
// casts and strided layouts it saw on a 1.1 host. A copy between such a device and a
// device of another plugin type goes through a host tensor in the source's dtype (two
// copies of the kinds above). Only a device type with neither an interface copy nor a
// copy_ kernel is refused, and the message names both ways to provide a copy.
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

// True for a plugin device whose interface has no copy: its copy_ kernel moves the bytes
// (Note [Copies through a backend's copy_ kernel]).
bool copies_through_kernel(Device device) {
  if (device.type == kCPU) return false;
  const DeviceRuntime* runtime = find_device_runtime(device.type);
  return runtime != nullptr && !runtime->has_copy();
}

bool has_backend_kernel(OperatorHandle op, DispatchKey backend) {
  for (const dispatch::TableRow& row : Dispatcher::instance().dump_table(op)) {
    if (row.key != backend) continue;
    return row.source == dispatch::EntrySource::Kernel ||
           row.source == dispatch::EntrySource::Fallback;
  }
  return false;
}

// The call, unchanged, on the copy_ kernel of `device`'s backend key.
void copy_with_backend_kernel(const LoomKernelCall* call, Device device) {
  const DispatchKey backend = DeviceTypeRegistry::instance().backend(device.type);
  const OperatorHandle op = OperatorHandle::from_abi(call->op);
  try {
    Dispatcher::instance().redispatch_checked_arguments(op, DispatchKeySet::for_backend(backend),
                                                        call->args, call->num_args, call->returns,
                                                        call->num_returns);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::Unimplemented || has_backend_kernel(op, backend)) throw;
    const std::string type = DeviceTypeRegistry::instance().name(device.type);
    fail_with(ErrorCode::Unimplemented, "loom::copy_", "device type '", type, "' of ",
              runtime_of(device).provider(),
              " has no copy in its device interface and no loom::copy_ kernel for its "
              "dispatch key ",
              dispatch_key_name(backend),
              ": to move tensors to and from it the plugin must provide "
              "LoomDeviceInterface::copy or register a loom::copy_ kernel for backend '",
              type, "'");
  }
}

// src to dst between two devices of which at least one copies through its kernel: one
// copy_ call per side through the host, or the kernel itself when one device type holds
// both or the other side is the host.
void copy_through_kernels(const LoomKernelCall* call, const Tensor& dst, const Tensor& src) {
  const Device dst_device = dst.device(), src_device = src.device();
  if (dst_device.type == src_device.type || dst_device.type == kCPU || src_device.type == kCPU) {
    copy_with_backend_kernel(call, copies_through_kernel(dst_device) ? dst_device : src_device);
    return;
  }
  Tensor host = empty(src.sizes(), src.dtype());
  loom::copy_(host, src);
  loom::copy_(dst, host);
  dst.impl()->retain();
  call->returns[0] = call->args[0];
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
    Tensor s = Tensor::borrow(const_cast<TensorImpl*>(src));
    if (copies_through_kernel(dst->device()) || copies_through_kernel(src->device())) [[unlikely]] {
      copy_through_kernels(call, d, s);
      return;
    }
    const bool non_blocking = call->num_args > 2 && call->args[2].u.i != 0;
    copy_between_devices(d, s, non_blocking);
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
