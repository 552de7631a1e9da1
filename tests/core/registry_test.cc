// Tests of the core's run-time registries and small value types: DeviceTypeRegistry and
// parse_device, AllocatorRegistry (stacking, observers, missing allocators), tensor
// extension slots, DispatchKeySet, ScalarType helpers, Scalar, and ReadSection /
// synchronize_readers. Device types and extension slots are process-global, so every test
// uses names of its own ("coretest_...").
#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "loom/core/allocator.h"
#include "loom/core/device.h"
#include "loom/core/dispatch_key.h"
#include "loom/core/error.h"
#include "loom/core/read_section.h"
#include "loom/core/scalar.h"
#include "loom/core/scalar_type.h"
#include "loom/core/tensor_base.h"
#include "loom_error_assertions.h"

namespace loom {
namespace {

using Shape = std::vector<int64_t>;

DispatchKey Vendor(int i) {
  return static_cast<DispatchKey>(static_cast<int>(DispatchKey::Vendor0) + i);
}

DeviceTypeRegistry& Devices() {
  return DeviceTypeRegistry::instance();
}
AllocatorRegistry& Allocators() {
  return AllocatorRegistry::instance();
}

// A malloc-backed allocator that counts what passes through it.
class CountingAllocator final : public Allocator {
 public:
  explicit CountingAllocator(std::string name) : name_(std::move(name)) {}
  void* allocate(size_t nbytes, Device device) override {
    ++allocs;
    bytes_allocated += nbytes;
    last_device = device;
    last_ptr = std::malloc(nbytes == 0 ? 1 : nbytes);
    return last_ptr;
  }
  void deallocate(void* ptr, size_t nbytes, Device device) override {
    ++frees;
    bytes_freed += nbytes;
    std::free(ptr);
  }
  std::string owner() const override { return name_; }
  void on_storage_created() override { ++storages_created; }
  void on_storage_destroyed() override { ++storages_destroyed; }

  int allocs = 0, frees = 0, storages_created = 0, storages_destroyed = 0;
  size_t bytes_allocated = 0, bytes_freed = 0;
  void* last_ptr = nullptr;
  Device last_device{};

 private:
  std::string name_;
};

// Removes an allocator registration when it goes out of scope (unless removed earlier).
class ScopedAllocator {
 public:
  ScopedAllocator(DeviceType type, Allocator* a) : id_(Allocators().add(type, a)) {}
  ~ScopedAllocator() { remove(); }
  void remove() {
    if (id_ != 0) Allocators().remove(id_);
    id_ = 0;
  }

 private:
  uint64_t id_;
};

// Records the allocation events of one device type while in scope.
class ScopedObserver {
 public:
  explicit ScopedObserver(DeviceType type) {
    id_ = Allocators().add_observer([this, type](const AllocationEvent& e) {
      if (e.device.type == type) events.push_back(e);
    });
  }
  ~ScopedObserver() { Allocators().remove_observer(id_); }
  std::vector<AllocationEvent> events;

 private:
  uint64_t id_;
};

// ---------------------------------------------------------------------------------------
// DeviceTypeRegistry and parse_device

TEST(DeviceTypeRegistry, CpuAndMetaAreBuiltIn) {
  EXPECT_EQ(Devices().find("cpu"), kCPU);
  EXPECT_EQ(Devices().find("meta"), kMeta);
  EXPECT_EQ(Devices().name(kCPU), "cpu");
  EXPECT_EQ(Devices().name(kMeta), "meta");
  EXPECT_EQ(Devices().backend(kCPU), DispatchKey::CPU);
  EXPECT_EQ(Devices().backend(kMeta), DispatchKey::Meta);
  EXPECT_TRUE(Devices().is_registered(kCPU));
  EXPECT_TRUE(Devices().is_registered(kMeta));
  EXPECT_EQ(Devices().find("nosuch"), -1);
  EXPECT_EQ(Devices().find(""), -1);
  EXPECT_EQ(Devices().backend(-1), DispatchKey::Undefined);
  EXPECT_EQ(Devices().backend(kMaxDeviceTypes), DispatchKey::Undefined);
  EXPECT_FALSE(Devices().is_registered(kMaxDeviceTypes - 1));
  EXPECT_EQ(Devices().name(kMaxDeviceTypes), "device_type_64");
  EXPECT_EQ(Devices().name(-3), "device_type_-3");
}

TEST(DeviceTypeRegistry, RegisterNewTypeWithVendorBackend) {
  DeviceType t = Devices().register_type("coretest_dev_a", Vendor(2));
  EXPECT_GE(t, 2);
  EXPECT_LT(t, kMaxDeviceTypes);
  EXPECT_EQ(Devices().find("coretest_dev_a"), t);
  EXPECT_EQ(Devices().name(t), "coretest_dev_a");
  EXPECT_EQ(Devices().backend(t), Vendor(2));
  EXPECT_TRUE(Devices().is_registered(t));
  EXPECT_EQ((Device{t, 3}).to_string(), "coretest_dev_a:3");
  EXPECT_EQ((Device{t, -1}).to_string(), "coretest_dev_a");
  EXPECT_EQ(parse_device("coretest_dev_a:3"), (Device{t, 3}));
  EXPECT_EQ(parse_device("coretest_dev_a"), (Device{t, -1}));

  DeviceType u = Devices().register_type("coretest_dev_a2", DispatchKey::CUDA);
  EXPECT_NE(u, t);
  EXPECT_EQ(Devices().backend(u), DispatchKey::CUDA);
  Devices().unregister_type(u);
  Devices().unregister_type(t);
}

TEST(DeviceTypeRegistry, UnregisterHidesTheTypeAndFreesItsId) {
  DeviceType t = Devices().register_type("coretest_dev_b", Vendor(3));
  ASSERT_EQ(Devices().find("coretest_dev_b"), t);
  Devices().unregister_type(t);
  EXPECT_EQ(Devices().find("coretest_dev_b"), -1);
  EXPECT_FALSE(Devices().is_registered(t));
  EXPECT_EQ(Devices().backend(t), DispatchKey::Undefined);
  EXPECT_EQ(Devices().name(t), "coretest_dev_b (unregistered)");  // still printable
  EXPECT_LOOM_ERROR(parse_device("coretest_dev_b:0"), "device",
                    "unknown device type 'coretest_dev_b'");
  // The name can be registered again, and the freed id is reused.
  DeviceType again = Devices().register_type("coretest_dev_b", Vendor(3));
  EXPECT_EQ(again, t);
  EXPECT_EQ(Devices().find("coretest_dev_b"), again);
  EXPECT_EQ(Devices().name(again), "coretest_dev_b");
  Devices().unregister_type(again);
}

// 64 ids in all: a plugin loaded and unloaded many times must not run out of them.
TEST(DeviceTypeRegistry, RegisterUnregisterCyclesNeverRunOutOfIds) {
  for (int cycle = 0; cycle < 200; ++cycle) {
    DeviceType t = Devices().register_type("coretest_cycle", Vendor(4));
    ASSERT_TRUE(Devices().is_registered(t)) << "cycle " << cycle;
    Devices().unregister_type(t);
  }
}

TEST(DeviceTypeRegistry, DuplicateNamesRejected) {
  DeviceType t = Devices().register_type("coretest_dev_dup", Vendor(4));
  EXPECT_LOOM_ERROR(Devices().register_type("coretest_dev_dup", Vendor(5)), "device",
                    "device type 'coretest_dev_dup' is already registered");
  EXPECT_LOOM_ERROR(Devices().register_type("cpu", DispatchKey::CPU), "device",
                    "device type 'cpu' is already registered");
  EXPECT_LOOM_ERROR(Devices().register_type("meta", Vendor(0)), "device", "already registered");
  EXPECT_EQ(Devices().backend(t), Vendor(4));  // the first registration is untouched
  Devices().unregister_type(t);
}

TEST(DeviceTypeRegistry, InvalidNamesRejected) {
  for (const char* bad : {"", "Npu", "1npu", "_npu", "npu-x", "npu x", "npu:0", "np.u"}) {
    EXPECT_LOOM_ERROR(
        Devices().register_type(bad, Vendor(6)), "device",
        "invalid device type name '" + std::string(bad) + "' (expected [a-z][a-z0-9_]*)");
    EXPECT_EQ(Devices().find(bad), -1) << bad;
  }
  DeviceType ok = Devices().register_type("coretest_dev_9_z", Vendor(6));
  EXPECT_EQ(Devices().find("coretest_dev_9_z"), ok);
  Devices().unregister_type(ok);
}

TEST(DeviceTypeRegistry, BackendMustBeABackendKey) {
  EXPECT_LOOM_ERROR(Devices().register_type("coretest_dev_func", DispatchKey::Autograd), "device",
                    "device type 'coretest_dev_func' must be served by a backend key, found "
                    "Autograd");
  EXPECT_LOOM_ERROR(Devices().register_type("coretest_dev_func", DispatchKey::Dense), "device",
                    "found Dense");
  EXPECT_EQ(Devices().find("coretest_dev_func"), -1);
}

TEST(DeviceTypeRegistry, BuiltInsCannotBeUnregistered) {
  EXPECT_LOOM_ERROR(Devices().unregister_type(kCPU), "device", "cannot unregister device type 0");
  EXPECT_LOOM_ERROR(Devices().unregister_type(kMeta), "device", "cannot unregister device type 1");
  EXPECT_LOOM_ERROR(Devices().unregister_type(kMaxDeviceTypes), "device",
                    "cannot unregister device type 64");
  EXPECT_TRUE(Devices().is_registered(kCPU));
}

TEST(ParseDevice, ValidAndInvalidText) {
  EXPECT_EQ(parse_device("cpu"), (Device{kCPU, -1}));
  EXPECT_EQ(parse_device("cpu:0"), (Device{kCPU, 0}));
  EXPECT_EQ(parse_device("cpu:12"), (Device{kCPU, 12}));
  EXPECT_EQ(parse_device("meta"), (Device{kMeta, -1}));
  EXPECT_EQ(Device{}.to_string(), "cpu");
  EXPECT_EQ((Device{kCPU, 1}).to_string(), "cpu:1");
  EXPECT_EQ((Device{kMeta, -1}).to_string(), "meta");

  EXPECT_LOOM_ERROR(parse_device("nosuch:0"), "device",
                    "unknown device type 'nosuch' in 'nosuch:0' (is the plugin that provides it "
                    "loaded?)");
  EXPECT_LOOM_ERROR(parse_device("nosuch"), "device", "unknown device type 'nosuch'");
  EXPECT_LOOM_ERROR(parse_device("CPU"), "device", "unknown device type 'CPU'");
  EXPECT_LOOM_ERROR(parse_device(""), "device", "unknown device type ''");
  for (const char* bad :
       {"cpu:x", "cpu:-1", "cpu:", "cpu:1:2", "cpu:1x", "cpu: 1", "cpu:99999999999"}) {
    EXPECT_LOOM_ERROR(parse_device(bad), "device",
                      "invalid device '" + std::string(bad) +
                          "' (expected TYPE or TYPE:INDEX, e.g. cpu or npu:0)");
  }
}

// ---------------------------------------------------------------------------------------
// AllocatorRegistry

TEST(AllocatorRegistry, CoreRegistersTheCpuAllocator) {
  EXPECT_EQ(Allocators().find(kCPU), &cpu_allocator());
  EXPECT_EQ(&Allocators().get(kCPU), &cpu_allocator());
  EXPECT_EQ(cpu_allocator().owner(), "core");
  EXPECT_EQ(Allocators().find(-1), nullptr);
  EXPECT_EQ(Allocators().find(kMaxDeviceTypes), nullptr);
}

TEST(AllocatorRegistry, MetaTensorsHaveShapesButNoMemory) {
  ASSERT_NE(Allocators().find(kMeta), nullptr);
  TensorBase t = empty(Shape{2, 3}, ScalarType::Float32, Device{kMeta, -1});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.device(), (Device{kMeta, -1}));
  EXPECT_EQ(t.impl()->storage()->data(), nullptr);
  EXPECT_EQ(t.t().sizes()[0], 3);  // views work without memory
}

TEST(AllocatorRegistry, NewDeviceTypeWithoutAllocatorCannotAllocate) {
  DeviceType t = Devices().register_type("coretest_alloc_none", Vendor(7));
  EXPECT_EQ(Allocators().find(t), nullptr);
  EXPECT_LOOM_ERROR(empty(Shape{4}, ScalarType::Int32, Device{t, 0}), "allocator",
                    "no allocator is registered for device type 'coretest_alloc_none'");
  Devices().unregister_type(t);
}

TEST(AllocatorRegistry, CustomAllocatorServesTensorsOfItsDevice) {
  DeviceType t = Devices().register_type("coretest_alloc_dev", Vendor(8));
  CountingAllocator a("plugin 'coretest'");
  {
    ScopedAllocator reg(t, &a);
    EXPECT_EQ(Allocators().find(t), &a);
    EXPECT_EQ(Allocators().get(t).owner(), "plugin 'coretest'");
    {
      TensorBase x = empty(Shape{2, 3}, ScalarType::Float32, Device{t, 1});
      EXPECT_EQ(a.allocs, 1);
      EXPECT_EQ(a.bytes_allocated, 24u);
      EXPECT_EQ(a.last_device, (Device{t, 1}));
      EXPECT_EQ(a.storages_created, 1);
      EXPECT_EQ(x.data_ptr(), a.last_ptr);
      EXPECT_EQ(x.device(), (Device{t, 1}));
      EXPECT_EQ(x.key_set(), DispatchKeySet::for_tensor_on(Vendor(8)));
      EXPECT_EQ(x.describe(), "Tensor(sizes=[2, 3], dtype=float32, device=coretest_alloc_dev:1)");
      TensorBase view = x.t();  // views on any device are metadata only
      EXPECT_EQ(a.allocs, 1);
      x = TensorBase();
      EXPECT_EQ(a.frees, 0);
    }
    EXPECT_EQ(a.frees, 1);
    EXPECT_EQ(a.bytes_freed, 24u);
    EXPECT_EQ(a.storages_destroyed, 1);
    // CPU tensors are not affected.
    TensorBase c = empty(Shape{8}, ScalarType::Float32);
    EXPECT_EQ(a.allocs, 1);
  }
  EXPECT_EQ(Allocators().find(t), nullptr);
  EXPECT_LOOM_ERROR(empty(Shape{1}, ScalarType::Float32, Device{t, 0}), "allocator",
                    "no allocator is registered for device type 'coretest_alloc_dev'");
  Devices().unregister_type(t);
}

TEST(AllocatorRegistry, LaterRegistrationOverridesAndRemovalRestores) {
  DeviceType t = Devices().register_type("coretest_alloc_stack", Vendor(9));
  CountingAllocator first("first"), second("second");
  ScopedAllocator reg_first(t, &first);
  TensorBase a = empty(Shape{4}, ScalarType::Int64, Device{t, 0});
  EXPECT_EQ(first.allocs, 1);
  TensorBase b_tensor;
  {
    ScopedAllocator reg_second(t, &second);
    EXPECT_EQ(Allocators().find(t), &second);
    b_tensor = empty(Shape{3}, ScalarType::Int64, Device{t, 0});
    EXPECT_EQ(second.allocs, 1);
    EXPECT_EQ(second.bytes_allocated, 24u);
    EXPECT_EQ(first.allocs, 1);
  }
  // Removing the override restores the first allocator for new tensors...
  EXPECT_EQ(Allocators().find(t), &first);
  TensorBase c = empty(Shape{2}, ScalarType::Int64, Device{t, 0});
  EXPECT_EQ(first.allocs, 2);
  EXPECT_EQ(second.allocs, 1);
  // ...while a storage made by the removed one is still freed through it.
  b_tensor = TensorBase();
  EXPECT_EQ(second.frees, 1);
  EXPECT_EQ(first.frees, 0);
  a = TensorBase();
  c = TensorBase();
  EXPECT_EQ(first.frees, 2);
  reg_first.remove();
  EXPECT_EQ(Allocators().find(t), nullptr);
  Devices().unregister_type(t);
}

TEST(AllocatorRegistry, RemovingAnOlderRegistrationKeepsTheNewest) {
  DeviceType t = Devices().register_type("coretest_alloc_bury", Vendor(10));
  CountingAllocator first("first"), second("second");
  ScopedAllocator reg_first(t, &first);
  ScopedAllocator reg_second(t, &second);
  reg_first.remove();
  EXPECT_EQ(Allocators().find(t), &second);
  reg_second.remove();
  EXPECT_EQ(Allocators().find(t), nullptr);
  Allocators().remove(987654321);  // unknown ids are ignored
  Devices().unregister_type(t);
}

TEST(AllocatorRegistry, ObserversSeeAllocationAndFreeEvents) {
  DeviceType t = Devices().register_type("coretest_alloc_obs", Vendor(11));
  CountingAllocator a("observed");
  ScopedAllocator reg(t, &a);
  const void* ptr = nullptr;
  {
    ScopedObserver obs(t);
    EXPECT_TRUE(Allocators().has_observers());
    {
      TensorBase x = empty(Shape{5, 2}, ScalarType::Float64, Device{t, 2});
      ptr = x.data_ptr();
      ASSERT_EQ(obs.events.size(), 1u);
      EXPECT_FALSE(obs.events[0].is_free);
      EXPECT_EQ(obs.events[0].nbytes, 80u);
      EXPECT_EQ(obs.events[0].ptr, ptr);
      EXPECT_EQ(obs.events[0].device, (Device{t, 2}));
    }
    ASSERT_EQ(obs.events.size(), 2u);
    EXPECT_TRUE(obs.events[1].is_free);
    EXPECT_EQ(obs.events[1].nbytes, 80u);
    EXPECT_EQ(obs.events[1].ptr, ptr);
    EXPECT_EQ(obs.events[1].device, (Device{t, 2}));
  }
  // After removal the observer sees nothing more.
  std::vector<AllocationEvent> late;
  uint64_t id = Allocators().add_observer([&](const AllocationEvent& e) {
    if (e.device.type == t) late.push_back(e);
  });
  Allocators().remove_observer(id);
  { TensorBase y = empty(Shape{3}, ScalarType::Float32, Device{t, 0}); }
  EXPECT_TRUE(late.empty());
  EXPECT_EQ(a.allocs, 2);
  EXPECT_EQ(a.frees, 2);
  reg.remove();
  Devices().unregister_type(t);
}

TEST(AllocatorRegistry, AddRejectsBadArguments) {
  CountingAllocator a("bad");
  EXPECT_LOOM_ERROR(Allocators().add(-1, &a), "allocator", "device type -1 is out of range");
  EXPECT_LOOM_ERROR(Allocators().add(kMaxDeviceTypes, &a), "allocator",
                    "device type 64 is out of range");
  Allocator* meta_before = Allocators().find(kMeta);
  EXPECT_LOOM_ERROR(Allocators().add(kMeta, nullptr), "allocator",
                    "null allocator for device type 1");
  EXPECT_EQ(Allocators().find(kMeta), meta_before);  // a rejected add changes nothing
}

TEST(AllocatorRegistry, UnregisteredDeviceTypeRejectsTensorsWithoutLeaking) {
  DeviceType t = Devices().register_type("coretest_alloc_gone", Vendor(0));
  CountingAllocator a("gone");
  ScopedAllocator reg(t, &a);
  Devices().unregister_type(t);
  EXPECT_LOOM_ERROR(empty(Shape{2}, ScalarType::Float32, Device{t, 0}), "tensor",
                    "device type 'coretest_alloc_gone (unregistered)' is not registered");
  EXPECT_EQ(a.allocs, a.frees);  // the storage made before the check was released
}

// ---------------------------------------------------------------------------------------
// Extension slots

struct Payload {
  int* destroyed;
  int value;
};
void DestroyPayload(void* p) {
  auto* payload = static_cast<Payload*>(p);
  ++*payload->destroyed;
  delete payload;
}

TEST(ExtensionSlots, ClaimIsIdempotentPerName) {
  int a = ExtensionSlots::claim("coretest_ext_a");
  int b = ExtensionSlots::claim("coretest_ext_b");
  EXPECT_NE(a, b);
  EXPECT_EQ(ExtensionSlots::claim("coretest_ext_a"), a);
  EXPECT_EQ(ExtensionSlots::claim("coretest_ext_b"), b);
  EXPECT_GE(a, 0);
  EXPECT_LT(a, kMaxExtensionSlots);
  EXPECT_EQ(ExtensionSlots::name(a), "coretest_ext_a");
  EXPECT_EQ(ExtensionSlots::name(b), "coretest_ext_b");
  EXPECT_EQ(ExtensionSlots::name(-1), "<unclaimed>");
  EXPECT_EQ(ExtensionSlots::name(kMaxExtensionSlots), "<unclaimed>");
}

TEST(ExtensionSlots, SetReplacesAndTheTensorDestroysItsValue) {
  int slot = ExtensionSlots::claim("coretest_ext_life");
  int destroyed = 0;
  {
    TensorBase t = empty(Shape{2}, ScalarType::Float32);
    EXPECT_EQ(t.impl()->extension(slot), nullptr);
    auto* first = new Payload{&destroyed, 1};
    t.impl()->set_extension(slot, first, DestroyPayload);
    EXPECT_EQ(t.impl()->extension(slot), first);
    auto* second = new Payload{&destroyed, 2};
    t.impl()->set_extension(slot, second, DestroyPayload);
    EXPECT_EQ(destroyed, 1);  // the previous value went
    EXPECT_EQ(static_cast<Payload*>(t.impl()->extension(slot))->value, 2);

    // Extensions belong to the impl: copies see them, views (new impls) do not.
    TensorBase copy = t;
    EXPECT_EQ(copy.impl()->extension(slot), second);
    TensorBase view = t.view(Shape{2, 1});
    EXPECT_EQ(view.impl()->extension(slot), nullptr);
    EXPECT_EQ(t.impl()->extension(kMaxExtensionSlots), nullptr);
    EXPECT_EQ(t.impl()->extension(-1), nullptr);
    t = TensorBase();
    EXPECT_EQ(destroyed, 1);  // `copy` still holds the impl
  }
  EXPECT_EQ(destroyed, 2);
}

TEST(ExtensionSlots, NullDestroyAndOutOfRangeSlots) {
  int slot = ExtensionSlots::claim("coretest_ext_plain");
  int value = 5;
  {
    TensorBase t = empty(Shape{}, ScalarType::Int32);
    t.impl()->set_extension(slot, &value, nullptr);  // nothing to destroy
    EXPECT_EQ(t.impl()->extension(slot), &value);
    t.impl()->set_extension(slot, nullptr, nullptr);
    EXPECT_EQ(t.impl()->extension(slot), nullptr);
    EXPECT_LOOM_ERROR(t.impl()->set_extension(kMaxExtensionSlots, &value, nullptr), "tensor",
                      "extension slot 8 is out of range (expected 0..7)");
    EXPECT_LOOM_ERROR(t.impl()->set_extension(-1, &value, nullptr), "tensor",
                      "extension slot -1 is out of range");
  }
  EXPECT_EQ(value, 5);
}

TEST(ExtensionSlotsDeathTest, ClaimFailsWhenAllSlotsAreTaken) {
  // Runs in a child process so the exhausted slots do not leak into other tests.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        int first = ExtensionSlots::claim("coretest_fill_0");
        std::string error;
        try {
          for (int i = 1; i <= kMaxExtensionSlots; ++i) {
            ExtensionSlots::claim("coretest_fill_" + std::to_string(i));
          }
        } catch (const Error& e) {
          error = e.what();
        }
        bool ok = error.rfind("[tensor] cannot claim extension slot 'coretest_fill_", 0) == 0 &&
                  error.find("all 8 slots are taken") != std::string::npos &&
                  ExtensionSlots::claim("coretest_fill_0") == first;  // existing names still work
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// ---------------------------------------------------------------------------------------
// DispatchKeySet

TEST(DispatchKeySet, ForBackend) {
  DispatchKeySet cpu = DispatchKeySet::for_backend(DispatchKey::CPU);
  EXPECT_EQ(cpu.raw(), (uint64_t{1} << 0) | (uint64_t{1} << 16));
  EXPECT_TRUE(cpu.has(DispatchKey::CPU));
  EXPECT_TRUE(cpu.has(DispatchKey::Dense));
  EXPECT_FALSE(cpu.has(DispatchKey::CUDA));
  EXPECT_FALSE(cpu.empty());
  EXPECT_TRUE(DispatchKeySet().empty());
  EXPECT_EQ(cpu.backend_bits(), uint64_t{1});
  EXPECT_EQ(cpu.functionality_bits(), uint64_t{1} << 16);
  DispatchKeySet v = DispatchKeySet::for_backend(Vendor(3));
  EXPECT_EQ(v.backend_bits(), uint64_t{1} << 7);
  EXPECT_EQ(v.highest_priority(), Vendor(3));
  // A tensor's key set adds Structured, which an op without a Structured kernel skips.
  DispatchKeySet tensor_keys = DispatchKeySet::for_tensor_on(DispatchKey::CPU);
  EXPECT_EQ(tensor_keys, cpu.add(DispatchKey::Structured));
  EXPECT_EQ(tensor_keys.highest_priority(), DispatchKey::Structured);
  EXPECT_EQ(tensor_keys.after(DispatchKey::Structured), cpu);
}

TEST(DispatchKeySet, SetOperations) {
  DispatchKeySet cpu = DispatchKeySet::for_backend(DispatchKey::CPU);
  DispatchKeySet grad = cpu.add(DispatchKey::Autograd);
  EXPECT_TRUE(grad.has(DispatchKey::Autograd));
  EXPECT_FALSE(cpu.has(DispatchKey::Autograd));  // add returns a new set
  EXPECT_EQ(grad.remove(DispatchKey::Autograd), cpu);
  EXPECT_EQ(cpu | DispatchKeySet(DispatchKey::Autograd), grad);
  EXPECT_EQ(grad & DispatchKeySet(DispatchKey::Autograd), DispatchKeySet(DispatchKey::Autograd));
  EXPECT_EQ(grad - cpu, DispatchKeySet(DispatchKey::Autograd));
  EXPECT_NE(grad, cpu);
}

TEST(DispatchKeySet, HighestPriority) {
  DispatchKeySet cpu = DispatchKeySet::for_backend(DispatchKey::CPU);
  EXPECT_EQ(cpu.highest_priority(), DispatchKey::CPU);
  EXPECT_EQ(cpu.add(DispatchKey::Autograd).highest_priority(), DispatchKey::Autograd);
  EXPECT_EQ(cpu.add(DispatchKey::Autograd).add(DispatchKey::Tracer).highest_priority(),
            DispatchKey::Tracer);
  EXPECT_EQ(cpu.add(DispatchKey::Quantized).highest_priority(), DispatchKey::Quantized);
  EXPECT_EQ(cpu.add(DispatchKey::Profiler).add(DispatchKey::Autocast).highest_priority(),
            DispatchKey::Profiler);
  // Dense picks the highest backend bit.
  EXPECT_EQ(cpu.add(DispatchKey::CUDA).highest_priority(), DispatchKey::CUDA);
  EXPECT_EQ(cpu.add(Vendor(5)).add(DispatchKey::HIP).highest_priority(), Vendor(5));
  // Nothing to run.
  EXPECT_EQ(DispatchKeySet().highest_priority(), DispatchKey::Undefined);
  EXPECT_EQ(DispatchKeySet(DispatchKey::Dense).highest_priority(), DispatchKey::Undefined);
  EXPECT_EQ(DispatchKeySet(DispatchKey::CPU).highest_priority(), DispatchKey::Undefined);
  // A functionality above Dense runs even without a backend bit.
  EXPECT_EQ(DispatchKeySet(DispatchKey::Autograd).highest_priority(), DispatchKey::Autograd);
}

TEST(DispatchKeySet, After) {
  DispatchKeySet all = DispatchKeySet::for_backend(DispatchKey::CPU)
                           .add(DispatchKey::Quantized)
                           .add(DispatchKey::Autograd)
                           .add(DispatchKey::Profiler)
                           .add(DispatchKey::Tracer);
  DispatchKeySet after_profiler = all.after(DispatchKey::Profiler);
  EXPECT_EQ(after_profiler, DispatchKeySet::for_backend(DispatchKey::CPU)
                                .add(DispatchKey::Quantized)
                                .add(DispatchKey::Autograd));
  EXPECT_EQ(after_profiler.highest_priority(), DispatchKey::Autograd);
  DispatchKeySet after_autograd = all.after(DispatchKey::Autograd);
  EXPECT_EQ(after_autograd,
            DispatchKeySet::for_backend(DispatchKey::CPU).add(DispatchKey::Quantized));
  EXPECT_EQ(after_autograd.highest_priority(), DispatchKey::Quantized);
  EXPECT_EQ(after_autograd.after(DispatchKey::Quantized).highest_priority(), DispatchKey::CPU);
  EXPECT_EQ(all.after(DispatchKey::Dense), DispatchKeySet(DispatchKey::CPU));
  EXPECT_TRUE(all.after(DispatchKey::CPU).empty());
  // A key not in the set still cuts at its priority.
  EXPECT_EQ(all.after(DispatchKey::Autocast), after_profiler);
}

TEST(DispatchKeySet, ToStringAndKeyNames) {
  EXPECT_EQ(DispatchKeySet::for_backend(DispatchKey::CPU).add(DispatchKey::Autograd).to_string(),
            "[Autograd, Dense, CPU]");
  EXPECT_EQ(DispatchKeySet().to_string(), "[]");
  EXPECT_EQ(DispatchKeySet(DispatchKey::Tracer).add(DispatchKey::Meta).to_string(),
            "[Tracer, Meta]");

  EXPECT_EQ(dispatch_key_name(DispatchKey::CPU), "CPU");
  EXPECT_EQ(dispatch_key_name(DispatchKey::CUDA), "CUDA");
  EXPECT_EQ(dispatch_key_name(DispatchKey::HIP), "HIP");
  EXPECT_EQ(dispatch_key_name(DispatchKey::Meta), "Meta");
  EXPECT_EQ(dispatch_key_name(DispatchKey::Dense), "Dense");
  EXPECT_EQ(dispatch_key_name(DispatchKey::Quantized), "Quantized");
  EXPECT_EQ(dispatch_key_name(DispatchKey::Autograd), "Autograd");
  EXPECT_EQ(dispatch_key_name(DispatchKey::Autocast), "Autocast");
  EXPECT_EQ(dispatch_key_name(DispatchKey::Profiler), "Profiler");
  EXPECT_EQ(dispatch_key_name(DispatchKey::Tracer), "Tracer");
  EXPECT_EQ(dispatch_key_name(DispatchKey::CompositeExplicit), "CompositeExplicit");
  EXPECT_EQ(dispatch_key_name(DispatchKey::CompositeImplicit), "CompositeImplicit");
  EXPECT_EQ(dispatch_key_name(DispatchKey::Undefined), "Undefined");
  EXPECT_EQ(dispatch_key_name(static_cast<DispatchKey>(30)), "Key30");

  // Vendor slots print their run-time name once one is installed.
  set_vendor_backend_name(11, "");
  EXPECT_EQ(dispatch_key_name(Vendor(11)), "Vendor11");
  set_vendor_backend_name(11, "coretest_npu");
  EXPECT_EQ(dispatch_key_name(Vendor(11)), "coretest_npu");
  EXPECT_EQ(DispatchKeySet::for_backend(Vendor(11)).to_string(), "[Dense, coretest_npu]");
  set_vendor_backend_name(11, "");
  EXPECT_EQ(dispatch_key_name(Vendor(11)), "Vendor11");
}

TEST(DispatchKeySet, RuntimeIndices) {
  EXPECT_EQ(kNumRuntimeKeys, 22);
  EXPECT_EQ(runtime_index(DispatchKey::CPU), 0);
  EXPECT_EQ(runtime_index(Vendor(11)), 15);
  EXPECT_EQ(runtime_index(DispatchKey::Structured), 16);
  EXPECT_EQ(runtime_index(DispatchKey::Quantized), 17);
  EXPECT_EQ(runtime_index(DispatchKey::Tracer), 21);
  for (int i = 0; i < kNumRuntimeKeys; ++i) {
    DispatchKey k = runtime_key_at(i);
    EXPECT_TRUE(is_runtime_key(k)) << i;
    EXPECT_EQ(runtime_index(k), i);
  }
  EXPECT_FALSE(is_runtime_key(DispatchKey::Dense));
  EXPECT_FALSE(is_runtime_key(DispatchKey::CompositeImplicit));
  EXPECT_TRUE(is_alias_key(DispatchKey::CompositeExplicit));
  EXPECT_FALSE(is_alias_key(DispatchKey::Autograd));
  EXPECT_TRUE(is_backend_key(Vendor(11)));
  EXPECT_FALSE(is_functionality_key(DispatchKey::Dense));
  EXPECT_TRUE(is_functionality_key(DispatchKey::Tracer));
}

// ---------------------------------------------------------------------------------------
// ScalarType helpers

TEST(ScalarTypeHelpers, SizesNamesAndCategories) {
  struct Row {
    ScalarType t;
    size_t size;
    const char* name;
    bool floating, integral, quantized;
  };
  const Row rows[] = {
      {ScalarType::Bool, 1, "bool", false, false, false},
      {ScalarType::UInt8, 1, "uint8", false, true, false},
      {ScalarType::Int8, 1, "int8", false, true, false},
      {ScalarType::Int16, 2, "int16", false, true, false},
      {ScalarType::Int32, 4, "int32", false, true, false},
      {ScalarType::Int64, 8, "int64", false, true, false},
      {ScalarType::Float16, 2, "float16", true, false, false},
      {ScalarType::BFloat16, 2, "bfloat16", true, false, false},
      {ScalarType::Float32, 4, "float32", true, false, false},
      {ScalarType::Float64, 8, "float64", true, false, false},
      {ScalarType::QInt8, 1, "qint8", false, false, true},
      {ScalarType::QUInt8, 1, "quint8", false, false, true},
      {ScalarType::QInt32, 4, "qint32", false, false, true},
      {ScalarType::ComplexFloat, 8, "complex64", false, false, false},
      {ScalarType::ComplexDouble, 16, "complex128", false, false, false},
  };
  static_assert(sizeof(rows) / sizeof(rows[0]) == kNumScalarTypes);
  for (const Row& r : rows) {
    EXPECT_EQ(element_size(r.t), r.size) << r.name;
    EXPECT_EQ(scalar_type_name(r.t), r.name);
    EXPECT_EQ(is_floating_point(r.t), r.floating) << r.name;
    EXPECT_EQ(is_integral(r.t, /*include_bool=*/false), r.integral) << r.name;
    EXPECT_EQ(is_integral(r.t, /*include_bool=*/true), r.integral || r.t == ScalarType::Bool)
        << r.name;
    EXPECT_EQ(is_quantized(r.t), r.quantized) << r.name;
    EXPECT_EQ(parse_scalar_type(r.name), r.t);  // canonical names round-trip
  }
}

TEST(ScalarTypeHelpers, ParseAliasesAndErrors) {
  EXPECT_EQ(parse_scalar_type("float"), ScalarType::Float32);
  EXPECT_EQ(parse_scalar_type("f32"), ScalarType::Float32);
  EXPECT_EQ(parse_scalar_type("double"), ScalarType::Float64);
  EXPECT_EQ(parse_scalar_type("f64"), ScalarType::Float64);
  EXPECT_EQ(parse_scalar_type("half"), ScalarType::Float16);
  EXPECT_EQ(parse_scalar_type("f16"), ScalarType::Float16);
  EXPECT_EQ(parse_scalar_type("bf16"), ScalarType::BFloat16);
  EXPECT_EQ(parse_scalar_type("long"), ScalarType::Int64);
  EXPECT_EQ(parse_scalar_type("int"), ScalarType::Int32);
  EXPECT_EQ(parse_scalar_type("short"), ScalarType::Int16);
  EXPECT_LOOM_ERROR(parse_scalar_type("float128"), "dtype",
                    "unknown dtype 'float128' (expected one of bool, uint8");
  EXPECT_LOOM_ERROR(parse_scalar_type("Float32"), "dtype", "unknown dtype 'Float32'");
  EXPECT_LOOM_ERROR(parse_scalar_type(""), "dtype", "unknown dtype ''");
  EXPECT_LOOM_ERROR(parse_scalar_type("float32 "), "dtype", "unknown dtype");
}

TEST(ScalarTypeHelpers, FromInt) {
  EXPECT_EQ(scalar_type_from_int(0, "abi"), ScalarType::Bool);
  EXPECT_EQ(scalar_type_from_int(5, "abi"), ScalarType::Int64);
  EXPECT_EQ(scalar_type_from_int(12, "abi"), ScalarType::QInt32);
  EXPECT_LOOM_ERROR(scalar_type_from_int(15, "abi"), "abi",
                    "dtype code 15 is out of range (expected 0..14)");
  EXPECT_LOOM_ERROR(scalar_type_from_int(-1, "plugin 'x'"), "plugin 'x'", "dtype code -1");
}

// ---------------------------------------------------------------------------------------
// Scalar

TEST(Scalar, Kinds) {
  Scalar def;
  EXPECT_EQ(def.kind(), Scalar::Kind::Int);
  EXPECT_EQ(def.to_int(), 0);

  Scalar i(int64_t{-7});
  EXPECT_TRUE(i.is_integral());
  EXPECT_FALSE(i.is_floating_point());
  EXPECT_FALSE(i.is_bool());
  EXPECT_EQ(Scalar(3).kind(), Scalar::Kind::Int);
  EXPECT_EQ(Scalar(static_cast<int8_t>(-2)).to_int(), -2);
  EXPECT_EQ(Scalar(uint16_t{65535}).to_int(), 65535);

  Scalar d(2.5);
  EXPECT_TRUE(d.is_floating_point());
  EXPECT_EQ(d.kind(), Scalar::Kind::Float);
  EXPECT_EQ(Scalar(2.5f).kind(), Scalar::Kind::Float);

  Scalar b(true);
  EXPECT_TRUE(b.is_bool());
  EXPECT_EQ(b.kind(), Scalar::Kind::Bool);
}

TEST(Scalar, Conversions) {
  EXPECT_EQ(Scalar(int64_t{-7}).to_double(), -7.0);
  EXPECT_TRUE(Scalar(int64_t{-7}).to_bool());
  EXPECT_FALSE(Scalar(0).to_bool());
  const int64_t big = (int64_t{1} << 62) + 1;  // not representable as a double
  EXPECT_EQ(Scalar(big).to_int(), big);

  EXPECT_EQ(Scalar(2.75).to_int(), 2);  // truncates
  EXPECT_EQ(Scalar(-2.75).to_int(), -2);
  EXPECT_EQ(Scalar(2.75).to_double(), 2.75);
  EXPECT_TRUE(Scalar(0.25).to_bool());
  EXPECT_FALSE(Scalar(0.0).to_bool());
  EXPECT_EQ(Scalar(1.5f).to_double(), 1.5);

  EXPECT_EQ(Scalar(true).to_int(), 1);
  EXPECT_EQ(Scalar(false).to_int(), 0);
  EXPECT_EQ(Scalar(true).to_double(), 1.0);
  EXPECT_TRUE(Scalar(true).to_bool());
  EXPECT_FALSE(Scalar(false).to_bool());
}

TEST(Scalar, NaturalDtypeAndToString) {
  EXPECT_EQ(Scalar(true).natural_dtype(), ScalarType::Bool);
  EXPECT_EQ(Scalar(1).natural_dtype(), ScalarType::Int64);
  EXPECT_EQ(Scalar(int8_t{1}).natural_dtype(), ScalarType::Int64);
  EXPECT_EQ(Scalar(1.0).natural_dtype(), ScalarType::Float32);  // default float, not float64
  EXPECT_EQ(Scalar(1.0f).natural_dtype(), ScalarType::Float32);
  EXPECT_EQ(Scalar(true).to_string(), "True");
  EXPECT_EQ(Scalar(false).to_string(), "False");
  EXPECT_EQ(Scalar(-42).to_string(), "-42");
  EXPECT_EQ(Scalar(2.5).to_string(), "2.5");
}

// ---------------------------------------------------------------------------------------
// ReadSection / synchronize_readers

TEST(ReadSection, WriterWaitsForAReaderInsideASection) {
  std::atomic<bool> reader_inside{false};
  std::atomic<bool> release_reader{false};
  std::atomic<bool> writer_started{false};
  std::atomic<bool> writer_done{false};

  std::thread reader([&] {
    ReadSection section;
    reader_inside.store(true);
    while (!release_reader.load()) std::this_thread::yield();
  });
  while (!reader_inside.load()) std::this_thread::yield();

  std::thread writer([&] {
    writer_started.store(true);
    synchronize_readers();
    writer_done.store(true);
  });
  while (!writer_started.load()) std::this_thread::yield();
  // Observation only: the writer cannot finish while the reader is inside.
  bool returned_early = false;
  for (int i = 0; i < 2000 && !returned_early; ++i) {
    returned_early = writer_done.load();
    std::this_thread::yield();
  }
  release_reader.store(true);
  writer.join();
  reader.join();
  EXPECT_FALSE(returned_early) << "synchronize_readers returned while a reader was inside";
  EXPECT_TRUE(writer_done.load());
}

TEST(ReadSection, WriterWaitsUntilTheOutermostSectionEnds) {
  std::atomic<bool> reader_inside{false};
  std::atomic<bool> leave_inner{false};
  std::atomic<bool> inner_left{false};
  std::atomic<bool> leave_outer{false};
  std::atomic<bool> writer_started{false};
  std::atomic<bool> writer_done{false};

  std::thread reader([&] {
    ReadSection outer;
    {
      ReadSection inner;
      reader_inside.store(true);
      while (!leave_inner.load()) std::this_thread::yield();
    }
    inner_left.store(true);
    while (!leave_outer.load()) std::this_thread::yield();
  });
  while (!reader_inside.load()) std::this_thread::yield();
  std::thread writer([&] {
    writer_started.store(true);
    synchronize_readers();
    writer_done.store(true);
  });
  while (!writer_started.load()) std::this_thread::yield();
  bool returned_in_inner = false, returned_in_outer = false;
  for (int i = 0; i < 500 && !returned_in_inner; ++i) {
    returned_in_inner = writer_done.load();
    std::this_thread::yield();
  }
  leave_inner.store(true);
  while (!inner_left.load()) std::this_thread::yield();
  // Still inside the outer section: the writer keeps waiting.
  for (int i = 0; i < 500 && !returned_in_outer; ++i) {
    returned_in_outer = writer_done.load();
    std::this_thread::yield();
  }
  leave_outer.store(true);
  writer.join();
  reader.join();
  EXPECT_FALSE(returned_in_inner) << "returned while the reader was in a nested section";
  EXPECT_FALSE(returned_in_outer) << "returned while the reader was in its outer section";
  EXPECT_TRUE(writer_done.load());
}

TEST(ReadSection, WaitingFromInsideASectionIsRefusedNotADeadlock) {
  {
    ReadSection outer;
    ReadSection inner;
    EXPECT_TRUE(in_read_section());
    EXPECT_LOOM_ERROR(synchronize_readers(), "read-section", "from inside an op call");
  }
  EXPECT_FALSE(in_read_section());
  synchronize_readers();  // fine outside any section
}

TEST(ReadSection, FinishedReadersAreNotWaitedFor) {
  // Threads that entered and left sections (and exited, freeing their records for reuse)
  // leave nothing for a writer to wait on.
  for (int round = 0; round < 4; ++round) {
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([] {
        ReadSection a;
        { ReadSection b; }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  synchronize_readers();
  // A live thread that has left its section is not waited for either.
  std::atomic<bool> left{false}, finish{false};
  std::thread idle([&] {
    { ReadSection s; }
    left.store(true);
    while (!finish.load()) std::this_thread::yield();
  });
  while (!left.load()) std::this_thread::yield();
  synchronize_readers();
  finish.store(true);
  idle.join();
}

}  // namespace
}  // namespace loom
