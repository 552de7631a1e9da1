// Storage allocation, wrapping and release, reporting to allocation observers.
#include "loom/core/storage.h"

#include <cstring>

#include "host_block_cache.h"
#include "loom/core/device_runtime.h"
#include "loom/core/error.h"
#include "loom/core/read_section.h"

namespace loom {

// Note [Small host objects] in tensor_impl.cc.
void* Storage::operator new(size_t size) {
  return host_blocks::allocate_object(size);
}
void Storage::operator delete(void* object, size_t size) {
  host_blocks::deallocate(object, size);
}

Ref<Storage> Storage::allocate(size_t nbytes, Device device) {
  ReadSection section;  // the registered allocator may be replaced concurrently
  return allocate(nbytes, device, AllocatorRegistry::instance().get(device.type));
}

Ref<Storage> Storage::allocate(size_t nbytes, Device device, Allocator& allocator) {
  Ref<Storage> s = Ref<Storage>::adopt(new Storage());
  AllocatorRegistry& registry = AllocatorRegistry::instance();
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

void Storage::grow(size_t nbytes) {
  if (nbytes <= nbytes_) return;
  LOOM_CHECK(allocator_ != nullptr, "resize", "expected memory that loom allocated, found ",
             nbytes_, " bytes owned elsewhere (a wrapped or DLPack tensor) that cannot grow to ",
             nbytes);
  ReadSection section;
  AllocatorRegistry& registry = AllocatorRegistry::instance();
  void* data = allocator_->allocate(nbytes, device_);
  try {
    if (nbytes_ > 0 && device_.type == kCPU) {
      std::memcpy(data, data_, nbytes_);
    } else if (nbytes_ > 0 && device_.type != kMeta) {
      const DeviceRuntime* runtime = find_device_runtime(device_.type);
      LOOM_CHECK(runtime != nullptr, "resize", "expected a device runtime to copy ",
                 device_.to_string(), " memory, found none");
      runtime->copy(CopyKind::DeviceToDevice, device_.index, data, data_, nbytes_);
    }
  } catch (...) {
    allocator_->deallocate(data, nbytes, device_);
    throw;
  }
  if (registry.has_observers()) [[unlikely]] {
    registry.notify({device_, data, nbytes, /*is_free=*/false});
    registry.notify({device_, data_, nbytes_, /*is_free=*/true});
  }
  allocator_->deallocate(data_, nbytes_, device_);
  data_ = data;
  nbytes_ = nbytes;
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
