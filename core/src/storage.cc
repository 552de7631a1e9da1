// Storage allocation, wrapping and release, reporting to allocation observers.
#include "loom/core/storage.h"

#include "loom/core/device_runtime.h"
#include "loom/core/read_section.h"

namespace loom {

Ref<Storage> Storage::allocate(size_t nbytes, Device device) {
  Ref<Storage> s = Ref<Storage>::adopt(new Storage());
  ReadSection section;  // the registered allocator may be replaced concurrently
  AllocatorRegistry& registry = AllocatorRegistry::instance();
  Allocator& allocator = registry.get(device.type);
  if (device.type != kCPU && device.type != kMeta) device = resolve_device(device);
  s->data_ = allocator.allocate(nbytes, device);
  s->nbytes_ = nbytes;
  s->device_ = device;
  s->allocator_ = &allocator;
  allocator.on_storage_created();
  if (registry.has_observers()) [[unlikely]] {
    registry.notify({device, s->data_, nbytes, /*is_free=*/false});
  }
  return s;
}

Ref<Storage> Storage::wrap(void* data, size_t nbytes, Device device,
                           void (*deleter)(void* ctx, void* data), void* ctx) {
  Ref<Storage> s = Ref<Storage>::adopt(new Storage());
  s->data_ = data;
  s->nbytes_ = nbytes;
  s->device_ = device;
  s->deleter_ = deleter;
  s->deleter_ctx_ = ctx;
  return s;
}

Storage::~Storage() {
  if (allocator_ != nullptr) {
    // The allocator's owner cannot go away while this storage lives: it counts us
    // through on_storage_created (see Note [Plugin lifetime]).
    AllocatorRegistry& registry = AllocatorRegistry::instance();
    if (registry.has_observers()) [[unlikely]] {
      // Inside a read section, as for allocations: a plugin's observer is removed, and
      // readers waited for, before its code is unmapped.
      ReadSection section;
      registry.notify({device_, data_, nbytes_, /*is_free=*/true});
    }
    allocator_->deallocate(data_, nbytes_, device_);
    allocator_->on_storage_destroyed();
  } else if (deleter_ != nullptr) {
    deleter_(deleter_ctx_, data_);
  }
}

}  // namespace loom
