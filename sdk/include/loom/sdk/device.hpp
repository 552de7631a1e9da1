// Device interfaces for devices whose memory is host memory (simulators, CPU-like
// accelerators, the start of a real port): the SDK supplies every slot, so a vendor
// writes only what differs.
//
//   static const LoomDeviceInterface npu = loom::sdk::host_memory_device<2>("npu_sim");
//   r.device_type("npu_sim", key, &npu);
//
// Note [Optional device slots]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// loom/plugin.h marks which LoomDeviceInterface slots a device must provide (allocate,
// deallocate, and copy for tensors to move on and off it) and which may be NULL. The
// defaults here: malloc/free memory; memcpy copies; streams and events that complete at
// once (work runs on the calling thread, so every wait is already satisfied); device
// count and properties from the template arguments.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "loom/plugin.h"
#include "loom/sdk/error.hpp"

namespace loom::sdk {
namespace detail {

template <int32_t Count>
LoomError* check_index(const char* name, int32_t index) {
  if (index >= 0 && index < Count) return nullptr;
  return make_error(LOOM_STATUS_INVALID_ARGUMENT,
                    std::string("[") + name + "] device index " + std::to_string(index) +
                        " is out of range (expected 0.." + std::to_string(Count - 1) + ")");
}

}  // namespace detail

// A complete interface for `Count` devices of host memory named `name` (static string).
template <int32_t Count>
LoomDeviceInterface host_memory_device(const char* name) {
  struct Impl {
    static LoomError* count(void*, int32_t* out) {
      *out = Count;
      return nullptr;
    }
    static LoomError* properties(void* ctx, int32_t index, LoomDeviceProperties* out) {
      if (LoomError* e = detail::check_index<Count>(static_cast<const char*>(ctx), index)) return e;
      std::snprintf(out->name, sizeof(out->name), "%s %d", static_cast<const char*>(ctx), index);
      out->compute_units = 1;
      return nullptr;
    }
    static LoomError* allocate(void* ctx, int32_t index, size_t nbytes, void** out) {
      if (LoomError* e = detail::check_index<Count>(static_cast<const char*>(ctx), index)) return e;
      *out = std::malloc(nbytes == 0 ? 1 : nbytes);
      if (*out != nullptr) return nullptr;
      return make_error(LOOM_STATUS_RESOURCE_EXHAUSTED,
                        std::string("[") + static_cast<const char*>(ctx) +
                            "] out of memory allocating " + std::to_string(nbytes) + " bytes");
    }
    static void deallocate(void*, int32_t, void* ptr, size_t) { std::free(ptr); }
    static LoomError* handle_create(void*, int32_t, void** out) {
      *out = new char(0);  // a distinct non-null handle
      return nullptr;
    }
    static LoomError* handle_destroy(void*, int32_t, void* handle) {
      delete static_cast<char*>(handle);
      return nullptr;
    }
    static LoomError* done(void*, int32_t, void*) { return nullptr; }
    static LoomError* done2(void*, int32_t, void*, void*) { return nullptr; }
    static LoomError* device_done(void*, int32_t) { return nullptr; }
    static LoomError* copy(void*, int32_t, LoomCopyKind, void* dst, const void* src, size_t n,
                           void*) {
      if (n != 0) std::memcpy(dst, src, n);
      return nullptr;
    }
  };
  LoomDeviceInterface d{};
  d.struct_size = sizeof(LoomDeviceInterface);
  d.ctx = const_cast<char*>(name);
  d.device_count = &Impl::count;
  d.get_properties = &Impl::properties;
  d.allocate = &Impl::allocate;
  d.deallocate = &Impl::deallocate;
  d.stream_create = &Impl::handle_create;
  d.stream_destroy = &Impl::handle_destroy;
  d.stream_synchronize = &Impl::done;
  d.event_create = &Impl::handle_create;
  d.event_destroy = &Impl::handle_destroy;
  d.event_record = &Impl::done2;
  d.event_wait = &Impl::done2;
  d.event_synchronize = &Impl::done;
  d.device_synchronize = &Impl::device_done;
  d.copy = &Impl::copy;
  return d;
}

}  // namespace loom::sdk
