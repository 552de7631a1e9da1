// Device counts, properties, synchronisation and the current-device guard, through the
// device types' runtimes.
#include "loom/devices.h"

#include <string>

#include "loom/core/error.h"
#include "loom/core/read_section.h"

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

}  // namespace

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
