// The npu_sim device: memory (host allocations with a byte counter), streams and events
// (executed eagerly, so synchronisation is immediate) and copies.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "npu_sim.h"

namespace npu_sim {
namespace {

LoomError* bad_index(int32_t index) {
  return loom::sdk::make_error(LOOM_STATUS_INVALID_ARGUMENT,
                               "[npu_sim] device index " + std::to_string(index) +
                                   " is out of range (expected 0.." +
                                   std::to_string(kDeviceCount - 1) + ")");
}

LoomError* device_count(void*, int32_t* out) {
  *out = kDeviceCount;
  return nullptr;
}

LoomError* get_properties(void*, int32_t index, LoomDeviceProperties* out) {
  if (index < 0 || index >= kDeviceCount) return bad_index(index);
  std::snprintf(out->name, sizeof(out->name), "npu_sim simulated accelerator %d", index);
  out->total_memory_bytes = int64_t{1} << 30;
  out->compute_units = 4;
  return nullptr;
}

LoomError* allocate(void*, int32_t index, size_t nbytes, void** out) {
  if (index < 0 || index >= kDeviceCount) return bad_index(index);
  *out = std::malloc(nbytes == 0 ? 1 : nbytes);
  if (*out == nullptr) {
    return loom::sdk::make_error(
        LOOM_STATUS_RESOURCE_EXHAUSTED,
        "[npu_sim] out of memory allocating " + std::to_string(nbytes) + " bytes");
  }
  return nullptr;
}

void deallocate(void*, int32_t, void* ptr, size_t nbytes) {
  std::free(ptr);
}

// Streams and events are plain counters: work runs eagerly on the calling thread.
LoomError* stream_create(void*, int32_t, void** out) {
  *out = new int(0);
  return nullptr;
}
LoomError* stream_destroy(void*, int32_t, void* stream) {
  delete static_cast<int*>(stream);
  return nullptr;
}
LoomError* nothing_pending(void*, int32_t, void*) {
  return nullptr;
}
LoomError* event_create(void*, int32_t, void** out) {
  *out = new int(0);
  return nullptr;
}
LoomError* event_destroy(void*, int32_t, void* event) {
  delete static_cast<int*>(event);
  return nullptr;
}
LoomError* event_record(void*, int32_t, void* event, void*) {
  ++*static_cast<int*>(event);
  return nullptr;
}
LoomError* event_wait(void*, int32_t, void*, void*) {
  return nullptr;
}
LoomError* device_synchronize(void*, int32_t) {
  return nullptr;
}

LoomError* copy(void*, int32_t, LoomCopyKind, void* dst, const void* src, size_t nbytes, void*) {
  std::memcpy(dst, src, nbytes);
  return nullptr;
}

const LoomDeviceInterface kInterface = [] {
  LoomDeviceInterface d{};
  d.struct_size = sizeof(LoomDeviceInterface);
  d.device_count = &device_count;
  d.get_properties = &get_properties;
  d.allocate = &allocate;
  d.deallocate = &deallocate;
  d.stream_create = &stream_create;
  d.stream_destroy = &stream_destroy;
  d.stream_synchronize = &nothing_pending;
  d.event_create = &event_create;
  d.event_destroy = &event_destroy;
  d.event_record = &event_record;
  d.event_wait = &event_wait;
  d.event_synchronize = &nothing_pending;
  d.device_synchronize = &device_synchronize;
  d.copy = &copy;
  return d;
}();

}  // namespace

const LoomDeviceInterface& device_interface() {
  return kInterface;
}

}  // namespace npu_sim
