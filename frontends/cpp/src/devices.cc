// Device counts, properties, synchronisation and the current-device guard, through the
// device types' runtimes.
#include "loom/devices.h"

#include <string>

#include "loom/core/error.h"
#include "loom/core/read_section.h"
#include "loom/device_memory_api.h"
#include "loom/dispatcher/extensions.h"

namespace loom {
namespace {

// The runtime of a plugin device type; throws for cpu/meta (callers handle them) and for
// types without one.
const DeviceRuntime& runtime_for(DeviceType type, const char* what) {
  const DeviceRuntime* runtime = find_device_runtime(type);
  LOOM_CHECK(runtime != nullptr, "device", "device type '",
             DeviceTypeRegistry::instance().name(type), "' has no device runtime to ", what);
  return *runtime;
}

DeviceType known_type(std::string_view name) {
  DeviceType type = DeviceTypeRegistry::instance().find(name);
  LOOM_CHECK(type >= 0, "device", "unknown device type '", name,
             "' (is the plugin that provides it loaded?)");
  return type;
}

// The memory table of `device`'s type (`device` resolved), or the reason there is none.
const LoomDeviceMemoryApi& memory_api(Device& device) {
  LOOM_CHECK(device.type != kCPU && device.type != kMeta, "device", device.to_string(),
             " has no caching allocator to report on (memory statistics are for plugin devices)");
  device = resolve_device(device);
  const std::string type_name(DeviceTypeRegistry::instance().name(device.type));
  const auto* api = static_cast<const LoomDeviceMemoryApi*>(
      dispatch::find_extension(LOOM_DEVICE_MEMORY_EXTENSION_PREFIX + type_name));
  LOOM_CHECK(api != nullptr && LOOM_HAS_FIELD(api, LoomDeviceMemoryApi, reset_peak), "device",
             "device type '", type_name,
             "' publishes no memory statistics (expected a table "
             "named '",
             LOOM_DEVICE_MEMORY_EXTENSION_PREFIX, type_name, "' from its plugin)");
  return *api;
}

// Rethrows a plugin's error as loom::Error("[device] ...").
void check_memory_call(LoomError* err, const Device& device, const char* what) {
  if (err == nullptr) return;
  std::string message = err->message != nullptr ? err->message : "(no message)";
  const auto code = static_cast<ErrorCode>(err->code);
  if (err->destroy != nullptr) err->destroy(err);
  throw Error("device", str_cat(what, " of ", device.to_string(), ": ", message), code);
}

}  // namespace

MemoryStats memory_stats(Device device) {
  ReadSection section;  // the table stays while its plugin cannot unload
  const LoomDeviceMemoryApi& api = memory_api(device);
  LoomDeviceMemoryStats s{};
  s.struct_size = sizeof(s);
  check_memory_call(api.stats(device.index, &s), device, "memory_stats");
  return {s.allocated_bytes, s.reserved_bytes, s.peak_allocated_bytes, s.peak_reserved_bytes,
          s.allocations,     s.cache_hits,     s.driver_allocations,   s.driver_frees};
}

MemoryStats pinned_memory_stats(std::string_view device_type) {
  ReadSection section;
  const DeviceType type = known_type(device_type);
  const std::string type_name(device_type);
  const auto* api = static_cast<const LoomDeviceMemoryApi*>(
      dispatch::find_extension(LOOM_DEVICE_MEMORY_EXTENSION_PREFIX + type_name));
  LOOM_CHECK(type > kMeta && api != nullptr &&
                 LOOM_HAS_FIELD(api, LoomDeviceMemoryApi, host_stats) && api->host_stats != nullptr,
             "device", "device type '", type_name,
             "' reports no pinned host memory (expected host_stats in the table '",
             LOOM_DEVICE_MEMORY_EXTENSION_PREFIX, type_name, "' of its plugin)");
  LoomDeviceMemoryStats s{};
  s.struct_size = sizeof(s);
  check_memory_call(api->host_stats(&s), Device{type, -1}, "pinned_memory_stats");
  return {s.allocated_bytes, s.reserved_bytes, s.peak_allocated_bytes, s.peak_reserved_bytes,
          s.allocations,     s.cache_hits,     s.driver_allocations,   s.driver_frees};
}

bool lends_pinned_memory(std::string_view device_type) {
  const std::string_view type_name = device_type.substr(0, device_type.find(':'));
  ReadSection section;
  const DeviceTypeRegistry& registry = DeviceTypeRegistry::instance();
  for (DeviceType type = kMeta + 1; type < kMaxDeviceTypes; ++type) {
    if (!registry.is_registered(type) || registry.name(type) != type_name) continue;
    const DeviceRuntime* runtime = find_device_runtime(type);
    return runtime != nullptr && runtime->pinned_host_allocator() != nullptr;
  }
  return false;
}

std::vector<Device> devices_with_memory_stats() {
  ReadSection section;  // no plugin loads or unloads meanwhile
  const DeviceTypeRegistry& registry = DeviceTypeRegistry::instance();
  std::vector<Device> devices;
  for (DeviceType type = kMeta + 1; type < kMaxDeviceTypes; ++type) {
    if (!registry.is_registered(type)) continue;
    const auto* api = static_cast<const LoomDeviceMemoryApi*>(
        dispatch::find_extension(LOOM_DEVICE_MEMORY_EXTENSION_PREFIX + registry.name(type)));
    const DeviceRuntime* runtime = find_device_runtime(type);
    if (api == nullptr || !LOOM_HAS_FIELD(api, LoomDeviceMemoryApi, reset_peak) ||
        runtime == nullptr) {
      continue;
    }
    const int32_t count = runtime->device_count();
    for (int32_t i = 0; i < count; ++i) devices.push_back({type, static_cast<int16_t>(i)});
  }
  return devices;
}

void empty_cache(Device device) {
  ReadSection section;
  const bool every_device = device.index < 0;  // "cuda": all of them, as PyTorch's does
  const LoomDeviceMemoryApi& api = memory_api(device);
  check_memory_call(api.empty_cache(every_device ? -1 : device.index), device, "empty_cache");
}

void reset_peak_memory_stats(Device device) {
  ReadSection section;
  const LoomDeviceMemoryApi& api = memory_api(device);
  check_memory_call(api.reset_peak(device.index), device, "reset_peak_memory_stats");
}

int64_t device_count(std::string_view device_type) {
  DeviceType type = known_type(device_type);
  if (type == kCPU || type == kMeta) return 1;
  ReadSection section;
  int32_t count = runtime_for(type, "count devices").device_count();
  LOOM_CHECK(count >= 0, "device", "device type '", device_type,
             "' does not report its device count");
  return count;
}

DeviceProperties device_properties(Device device) {
  if (device.type == kCPU || device.type == kMeta) {
    return DeviceProperties{DeviceTypeRegistry::instance().name(device.type), 0, 0};
  }
  ReadSection section;
  device = resolve_device(device);
  return runtime_for(device.type, "report properties").properties(device.index);
}

void synchronize(Device device) {
  if (device.type == kCPU || device.type == kMeta) return;
  ReadSection section;
  device = resolve_device(device);
  runtime_for(device.type, "synchronize").synchronize(device.index);
}

DeviceGuard::DeviceGuard(Device device)
    : type_(device.type), previous_(current_device_index(device.type)) {
  if (device.type != kCPU && device.type != kMeta) {
    set_current_device_index(type_, resolve_device(device).index);
  }
}

DeviceGuard::~DeviceGuard() {
  if (type_ != kCPU && type_ != kMeta) set_current_device_index(type_, previous_);
}

// --- streams and events ---

namespace {

// The device's runtime for streams and events; cpu and meta have none.
const DeviceRuntime& stream_runtime(Device device) {
  LOOM_CHECK(device.type != kCPU && device.type != kMeta, "device", device.to_string(),
             " has no streams or events");
  return runtime_for(device.type, "make streams and events");
}

}  // namespace

Stream Stream::create(Device device) {
  ReadSection section;
  device = resolve_device(device);
  const DeviceRuntime& runtime = stream_runtime(device);
  void* raw = runtime.stream_create(device.index);
  // The plugin cannot unload while the stream lives (it counts as its object).
  return Stream(device, std::shared_ptr<void>(raw, [device, &runtime](void* s) {
                  try {
                    runtime.stream_destroy(device.index, s);
                  } catch (const Error&) {
                    // a destructor: the plugin's failure to destroy is not recoverable here
                  }
                }));
}

Stream Stream::default_stream(Device device) {
  return Stream(resolve_device(device), nullptr);
}

void Stream::synchronize() const {
  if (device_.type == kCPU || device_.type == kMeta) return;
  ReadSection section;
  stream_runtime(device_).stream_synchronize(device_.index, handle_.get());
}

StreamGuard::StreamGuard(const Stream& stream)
    : stream_(stream),
      previous_index_(current_device_index(stream.device().type)),
      previous_stream_(current_stream(stream.device().type)) {
  set_current_device_index(stream.device().type, stream.device().index);
  set_current_stream(stream.device().type, stream.handle());
}

StreamGuard::~StreamGuard() {
  set_current_stream(stream_.device().type, previous_stream_);
  set_current_device_index(stream_.device().type, previous_index_);
}

Event::Event(Device device) : device_(resolve_device(device)) {
  ReadSection section;
  const DeviceRuntime& runtime = stream_runtime(device_);
  Device d = device_;
  handle_ = std::shared_ptr<void>(runtime.event_create(d.index), [d, &runtime](void* e) {
    try {
      runtime.event_destroy(d.index, e);
    } catch (const Error&) {
    }
  });
}

void Event::record(const Stream& stream) {
  LOOM_CHECK(stream.device() == device_, "device", "an event of ", device_.to_string(),
             " cannot record on a stream of ", stream.device().to_string());
  stream_runtime(device_).event_record(device_.index, handle_.get(), stream.handle());
}

void Event::wait(const Stream& stream) const {
  LOOM_CHECK(stream.device().type == device_.type, "device", "an event of ", device_.to_string(),
             " cannot be waited for on a stream of ", stream.device().to_string());
  stream_runtime(device_).event_wait(stream.device().index, handle_.get(), stream.handle());
}

void Event::synchronize() const {
  stream_runtime(device_).event_synchronize(device_.index, handle_.get());
}

}  // namespace loom
