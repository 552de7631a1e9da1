// The allocator registry, the core's CPU allocator and allocation observers.
#include "loom/core/allocator.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "host_block_cache.h"
#include "loom/core/error.h"
#include "loom/core/read_section.h"

namespace loom {
namespace {

class AlignedHostAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Device device) override {
    if (nbytes == 0) return nullptr;
    void* p = host_blocks::allocate(nbytes);
    LOOM_CHECK(p != nullptr, "allocator", "out of host memory allocating ", nbytes, " bytes");
    return p;
  }
  void deallocate(void* ptr, size_t nbytes, Device) override {
    host_blocks::deallocate(ptr, nbytes);
  }
  std::string owner() const override { return "core"; }
};

// Meta tensors have shapes and dtypes but no memory: shape rules run on them.
class MetaAllocator final : public Allocator {
 public:
  void* allocate(size_t, Device) override { return nullptr; }
  void deallocate(void*, size_t, Device) override {}
  std::string owner() const override { return "core (meta: no memory)"; }
};

struct Registration {
  uint64_t id;
  DeviceType type;
  Allocator* allocator;
};

}  // namespace

Allocator& cpu_allocator() {
  static AlignedHostAllocator* allocator = new AlignedHostAllocator();
  return *allocator;
}

struct AllocatorRegistry::Impl {
  std::array<std::atomic<Allocator*>, kMaxDeviceTypes> current{};
  std::mutex mutex;
  std::vector<Registration> registrations;  // guarded by mutex, oldest first
  std::atomic<uint64_t> next_id{1};

  std::atomic<int> num_observers{0};
  mutable std::mutex observers_mutex;
  std::vector<std::pair<uint64_t, AllocationObserver>> observers;

  void republish(DeviceType type) {
    Allocator* top = nullptr;
    for (const Registration& r : registrations) {
      if (r.type == type) top = r.allocator;
    }
    current[type].store(top, std::memory_order_release);
  }
};

AllocatorRegistry& AllocatorRegistry::instance() {
  static AllocatorRegistry* registry = new AllocatorRegistry();  // never destroyed
  return *registry;
}

AllocatorRegistry::AllocatorRegistry() : impl_(new Impl) {
  add(kCPU, &cpu_allocator());
  static MetaAllocator* meta = new MetaAllocator();
  add(kMeta, meta);
}

uint64_t AllocatorRegistry::add(DeviceType type, Allocator* allocator) {
  LOOM_CHECK(type >= 0 && type < kMaxDeviceTypes, "allocator", "device type ", type,
             " is out of range");
  LOOM_CHECK(allocator != nullptr, "allocator", "null allocator for device type ", type);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  uint64_t id = impl_->next_id++;
  impl_->registrations.push_back({id, type, allocator});
  impl_->republish(type);
  return id;
}

void AllocatorRegistry::remove(uint64_t registration_id) {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto& regs = impl_->registrations;
    for (auto it = regs.begin(); it != regs.end(); ++it) {
      if (it->id == registration_id) {
        DeviceType type = it->type;
        regs.erase(it);
        impl_->republish(type);
        break;
      }
    }
  }
  synchronize_readers();
}

Allocator* AllocatorRegistry::find(DeviceType type) const {
  if (type < 0 || type >= kMaxDeviceTypes) return nullptr;
  return impl_->current[type].load(std::memory_order_acquire);
}

Allocator& AllocatorRegistry::get(DeviceType type) const {
  Allocator* a = find(type);
  LOOM_CHECK(a != nullptr, "allocator", "no allocator is registered for device type '",
             DeviceTypeRegistry::instance().name(type), "'");
  return *a;
}

uint64_t AllocatorRegistry::add_observer(AllocationObserver observer) {
  std::lock_guard<std::mutex> lock(impl_->observers_mutex);
  uint64_t id = impl_->next_id++;
  impl_->observers.emplace_back(id, std::move(observer));
  impl_->num_observers.fetch_add(1, std::memory_order_release);
  return id;
}

void AllocatorRegistry::remove_observer(uint64_t id) {
  std::lock_guard<std::mutex> lock(impl_->observers_mutex);
  auto& obs = impl_->observers;
  for (auto it = obs.begin(); it != obs.end(); ++it) {
    if (it->first == id) {
      obs.erase(it);
      impl_->num_observers.fetch_sub(1, std::memory_order_release);
      return;
    }
  }
}

bool AllocatorRegistry::has_observers() const {
  return impl_->num_observers.load(std::memory_order_acquire) > 0;
}

void AllocatorRegistry::notify(const AllocationEvent& event) const {
  std::vector<AllocationObserver> observers;
  {
    // Called outside the lock, so an observer may itself allocate or (un)register.
    std::lock_guard<std::mutex> lock(impl_->observers_mutex);
    for (const auto& [id, observer] : impl_->observers) observers.push_back(observer);
  }
  for (const AllocationObserver& observer : observers) observer(event);
}

}  // namespace loom
