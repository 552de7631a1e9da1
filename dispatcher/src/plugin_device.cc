// The host's side of a plugin's device interface (LoomDeviceInterface): the allocator
// and device runtime a registered device type gets (PluginDeviceAllocator), and the
// streams and events made through it, each live handle counted as an object of its
// plugin so the plugin is not unloaded under it.
#include <string>

#include "dispatcher_internal.h"
#include "loom/core/device.h"
#include "loom/core/device_runtime.h"
#include "loom/core/error.h"
#include "plugin_record.h"

namespace loom::dispatch {

// --- PluginDeviceAllocator ---

void* PluginDeviceAllocator::allocate(size_t nbytes, Device device) {
  void* ptr = nullptr;
  LoomError* err =
      device_->allocate(device_->ctx, device.index < 0 ? 0 : device.index, nbytes, &ptr);
  if (err != nullptr) {
    std::string message = take_error(err).message;
    fail_with(ErrorCode::ResourceExhausted, "allocator", "plugin '", plugin_->registrant.name,
              "' failed to allocate ", nbytes, " bytes on ", device.to_string(), ": ", message);
  }
  LOOM_CHECK(ptr != nullptr || nbytes == 0, "allocator", "plugin '", plugin_->registrant.name,
             "' returned a null pointer and no error for ", nbytes, " bytes on ",
             device.to_string());
  return ptr;
}

void PluginDeviceAllocator::deallocate(void* ptr, size_t nbytes, Device device) {
  device_->deallocate(device_->ctx, device.index < 0 ? 0 : device.index, ptr, nbytes);
}

std::string PluginDeviceAllocator::owner() const {
  return str_cat("plugin '", plugin_->registrant.name, "'");
}

int32_t PluginDeviceAllocator::device_count() const {
  int32_t cached = device_count_.load(std::memory_order_relaxed);
  if (cached != -2) return cached;
  int32_t count = -1;
  if (LOOM_HAS_FIELD(device_, LoomDeviceInterface, device_count) &&
      device_->device_count != nullptr) {
    if (LoomError* err = device_->device_count(device_->ctx, &count)) {
      take_error(err);
      count = -1;
    }
  }
  device_count_.store(count, std::memory_order_relaxed);
  return count;
}

void PluginDeviceAllocator::require(bool present, const char* function) const {
  LOOM_CHECK(present, "device", "device type '", device_type_name_, "' of plugin '",
             plugin_->registrant.name, "' has no ", function, " in its device interface");
}

void PluginDeviceAllocator::check(LoomError* err, const std::string& what) const {
  if (err == nullptr) return;
  TakenError taken = take_error(err);
  fail_with(taken.code, "device", "plugin '", plugin_->registrant.name, "' failed to ", what, ": ",
            taken.message);
}

void PluginDeviceAllocator::check_wait(LoomError* err, const std::string& what) const {
  if (err == nullptr) return;
  TakenError taken = take_error(err);
  const size_t close = taken.message.find("] ");
  // the contract since ABI 1.7; an older plugin's wait errors are its own
  if (plugin_->abi_minor < 7 || taken.code != ErrorCode::InvalidArgument ||
      taken.message.rfind('[', 0) != 0 || close == std::string::npos) {
    fail_with(taken.code, "device", "plugin '", plugin_->registrant.name, "' failed to ", what,
              ": ", taken.message);
  }
  throw Error(taken.message.substr(1, close - 1),
              str_cat(taken.message.substr(close + 2), " (raised by the next wait: ", what, ")"),
              taken.code);
}

DeviceProperties PluginDeviceAllocator::properties(int16_t index) const {
  require(LOOM_HAS_FIELD(device_, LoomDeviceInterface, get_properties) &&
              device_->get_properties != nullptr,
          "get_properties");
  LoomDeviceProperties p{};
  p.struct_size = sizeof(LoomDeviceProperties);
  check(device_->get_properties(device_->ctx, index, &p),
        str_cat("report the properties of ", device_type_name_, ":", index));
  p.name[sizeof(p.name) - 1] = '\0';  // never trust the plugin to terminate it
  return DeviceProperties{p.name, p.total_memory_bytes, p.compute_units};
}

void PluginDeviceAllocator::synchronize(int16_t index) const {
  require(LOOM_HAS_FIELD(device_, LoomDeviceInterface, device_synchronize) &&
              device_->device_synchronize != nullptr,
          "device_synchronize");
  check_wait(device_->device_synchronize(device_->ctx, index),
             str_cat("synchronize ", device_type_name_, ":", index));
}

LoomCopyKind PluginDeviceAllocator::abi_copy_kind(CopyKind kind) {
  return kind == CopyKind::HostToDevice   ? LOOM_COPY_HOST_TO_DEVICE
         : kind == CopyKind::DeviceToHost ? LOOM_COPY_DEVICE_TO_HOST
                                          : LOOM_COPY_DEVICE_TO_DEVICE;
}

bool PluginDeviceAllocator::has_copy() const {
  return LOOM_HAS_FIELD(device_, LoomDeviceInterface, copy) && device_->copy != nullptr;
}

bool PluginDeviceAllocator::takes_host_scalars() const {
  return LOOM_HAS_FIELD(device_, LoomDeviceInterface, flags) &&
         (device_->flags & LOOM_DEVICE_TAKES_HOST_SCALARS) != 0;
}

void PluginDeviceAllocator::copy(CopyKind kind, int16_t index, void* dst, const void* src,
                                 size_t nbytes) const {
  require(has_copy(), "copy");
  const LoomCopyKind abi_kind = abi_copy_kind(kind);
  // Queued on the thread's current stream (Note [Current stream]), after the kernels
  // queued there, then waited for, so the caller may read or free the memory at once;
  // not a copy to the device whose plugin says its source is released on return
  // (LOOM_DEVICE_COPY_TO_DEVICE_RELEASES_SOURCE).
  void* stream = current_stream(DeviceTypeRegistry::instance().find(device_type_name_));
  check(device_->copy(device_->ctx, index, abi_kind, dst, src, nbytes, stream),
        str_cat("copy ", nbytes, " bytes on ", device_type_name_, ":", index));
  const bool source_released = kind == CopyKind::HostToDevice &&
                               LOOM_HAS_FIELD(device_, LoomDeviceInterface, flags) &&
                               (device_->flags & LOOM_DEVICE_COPY_TO_DEVICE_RELEASES_SOURCE) != 0;
  if (!source_released && LOOM_HAS_FIELD(device_, LoomDeviceInterface, stream_synchronize) &&
      device_->stream_synchronize != nullptr) {
    stream_synchronize(index, stream);
  }
}

// --- pinned host memory (Note [Pinned host memory]) ---

Allocator* PluginDeviceAllocator::pinned_host_allocator() const {
  const bool lends = LOOM_HAS_FIELD(device_, LoomDeviceInterface, host_deallocate) &&
                     device_->host_allocate != nullptr && device_->host_deallocate != nullptr;
  return lends ? &pinned_ : nullptr;
}

void PluginDeviceAllocator::copy_async(CopyKind kind, int16_t index, void* dst, const void* src,
                                       size_t nbytes) const {
  if (!LOOM_HAS_FIELD(device_, LoomDeviceInterface, copy_async) || device_->copy_async == nullptr) {
    copy(kind, index, dst, src, nbytes);  // a blocking copy is a correct one
    return;
  }
  void* stream = current_stream(DeviceTypeRegistry::instance().find(device_type_name_));
  check(device_->copy_async(device_->ctx, index, abi_copy_kind(kind), dst, src, nbytes, stream),
        str_cat("queue a copy of ", nbytes, " bytes on ", device_type_name_, ":", index));
}

void* PluginPinnedHostAllocator::allocate(size_t nbytes, Device) {
  void* ptr = nullptr;
  LoomError* err = device_->host_allocate(device_->ctx, nbytes, &ptr);
  if (err != nullptr) {
    std::string message = take_error(err).message;
    fail_with(ErrorCode::ResourceExhausted, "pin_memory", "plugin '", plugin_->registrant.name,
              "' failed to allocate ", nbytes, " bytes of pinned host memory for ",
              *device_type_name_, ": ", message);
  }
  LOOM_CHECK(ptr != nullptr || nbytes == 0, "pin_memory", "plugin '", plugin_->registrant.name,
             "' returned a null pointer and no error for ", nbytes, " bytes of pinned host memory");
  return ptr;
}

void PluginPinnedHostAllocator::deallocate(void* ptr, size_t nbytes, Device) {
  device_->host_deallocate(device_->ctx, ptr, nbytes);
}

std::string PluginPinnedHostAllocator::owner() const {
  return str_cat("plugin '", plugin_->registrant.name, "' (pinned host memory of ",
                 *device_type_name_, ")");
}

void PluginPinnedHostAllocator::on_storage_created() {
  plugin_->live_objects.fetch_add(1, std::memory_order_relaxed);
}

void PluginPinnedHostAllocator::on_storage_destroyed() {
  plugin_->live_objects.fetch_sub(1, std::memory_order_release);
}

// --- streams and events: each live handle counts as an object of the plugin ---

void* PluginDeviceAllocator::stream_create(int16_t index) const {
  require(LOOM_HAS_FIELD(device_, LoomDeviceInterface, stream_create) &&
              device_->stream_create != nullptr && device_->stream_destroy != nullptr,
          "stream_create and stream_destroy");
  void* stream = nullptr;
  check(device_->stream_create(device_->ctx, index, &stream),
        str_cat("create a stream on ", device_type_name_, ":", index));
  plugin_->live_objects.fetch_add(1, std::memory_order_acq_rel);
  return stream;
}

void PluginDeviceAllocator::stream_destroy(int16_t index, void* stream) const {
  LoomError* err = device_->stream_destroy(device_->ctx, index, stream);
  plugin_->live_objects.fetch_sub(1, std::memory_order_acq_rel);
  check(err, str_cat("destroy a stream on ", device_type_name_, ":", index));
}

void PluginDeviceAllocator::stream_synchronize(int16_t index, void* stream) const {
  require(LOOM_HAS_FIELD(device_, LoomDeviceInterface, stream_synchronize) &&
              device_->stream_synchronize != nullptr,
          "stream_synchronize");
  check_wait(device_->stream_synchronize(device_->ctx, index, stream),
             str_cat("synchronize a stream of ", device_type_name_, ":", index));
}

void* PluginDeviceAllocator::event_create(int16_t index) const {
  require(LOOM_HAS_FIELD(device_, LoomDeviceInterface, event_synchronize) &&
              device_->event_create != nullptr && device_->event_destroy != nullptr &&
              device_->event_record != nullptr && device_->event_wait != nullptr &&
              device_->event_synchronize != nullptr,
          "event functions");
  void* event = nullptr;
  check(device_->event_create(device_->ctx, index, &event),
        str_cat("create an event on ", device_type_name_, ":", index));
  plugin_->live_objects.fetch_add(1, std::memory_order_acq_rel);
  return event;
}

void PluginDeviceAllocator::event_destroy(int16_t index, void* event) const {
  LoomError* err = device_->event_destroy(device_->ctx, index, event);
  plugin_->live_objects.fetch_sub(1, std::memory_order_acq_rel);
  check(err, str_cat("destroy an event on ", device_type_name_, ":", index));
}

void PluginDeviceAllocator::event_record(int16_t index, void* event, void* stream) const {
  check(device_->event_record(device_->ctx, index, event, stream),
        str_cat("record an event on ", device_type_name_, ":", index));
}

void PluginDeviceAllocator::event_wait(int16_t index, void* event, void* stream) const {
  check(device_->event_wait(device_->ctx, index, event, stream),
        str_cat("wait for an event on ", device_type_name_, ":", index));
}

void PluginDeviceAllocator::event_synchronize(int16_t index, void* event) const {
  check_wait(device_->event_synchronize(device_->ctx, index, event),
             str_cat("synchronize an event on ", device_type_name_, ":", index));
}

void PluginDeviceAllocator::on_storage_created() {
  plugin_->live_objects.fetch_add(1, std::memory_order_relaxed);
}

void PluginDeviceAllocator::on_storage_destroyed() {
  plugin_->live_objects.fetch_sub(1, std::memory_order_release);
}

}  // namespace loom::dispatch
