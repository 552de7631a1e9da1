// The calling thread's autocast regions and the parameter cast cache (autocast_region.h).
#include "autocast_region.h"

#include <string>
#include <utility>

#include "loom/autograd_api.h"
#include "loom/sdk/dtype.hpp"
#include "loom/sdk/error.hpp"
#include "loom/sdk/extension.hpp"
#include "loom/sdk/ops.hpp"

namespace loom::autocast {
namespace {

struct Frame {
  uint64_t token = 0;
  int16_t device_type = -1;
  DeviceState previous;
  bool previous_cache_enabled = true;
  LoomLocalKeysArgs saved_keys{};
};

struct CachedCast {
  sdk::Tensor source;  // kept alive so its handle is not reused while cached
  sdk::Tensor cast;
};

struct ThreadState {
  std::map<int16_t, DeviceState> devices;
  std::vector<Frame> frames;
  bool cache_enabled = true;
  uint64_t next_token = 1;
  std::map<std::pair<LoomTensor*, int32_t>, CachedCast> cache;
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

bool any_enabled(const ThreadState& s) {
  for (const auto& [type, device] : s.devices) {
    if (device.enabled) return true;
  }
  return false;
}

int16_t device_type_id(const char* name) {
  int16_t id = -1;
  LoomError* err = sdk::host().find_device_type(name, &id);
  if (err != nullptr) {
    if (err->destroy != nullptr) err->destroy(err);
    return -1;
  }
  return id;
}

// Whether `t` is a leaf that requires grad (a parameter), by the autograd plugin's table.
bool is_parameter(const sdk::Tensor& t) {
  if (!sdk::has_key(t, LOOM_KEY_AUTOGRAD)) return false;
  const auto* autograd = sdk::find_extension<LoomAutogradApi>(LOOM_AUTOGRAD_EXTENSION_NAME);
  if (autograd == nullptr) return false;
  int32_t requires_grad = 0, leaf = 0;
  sdk::check(autograd->requires_grad(t.get(), &requires_grad));
  sdk::check(autograd->is_leaf(t.get(), &leaf));
  return requires_grad != 0 && leaf != 0;
}

}  // namespace

const LoomAutocastPolicyTable* policy_table(const char* device_type_name) {
  const std::string name = std::string(LOOM_AUTOCAST_POLICY_EXTENSION_PREFIX) + device_type_name;
  return sdk::find_extension<LoomAutocastPolicyTable>(name.c_str());
}

int32_t default_dtype(int16_t device_type, const char* device_type_name) {
  const LoomAutocastPolicyTable* table = policy_table(device_type_name);
  if (table != nullptr &&
      (table->default_dtype == LOOM_DTYPE_FLOAT16 || table->default_dtype == LOOM_DTYPE_BFLOAT16)) {
    return table->default_dtype;
  }
  return device_type == 0 ? LOOM_DTYPE_BFLOAT16 : LOOM_DTYPE_FLOAT16;  // 0: cpu
}

const DeviceState* state_of(int16_t device_type) {
  const ThreadState& s = thread_state();
  auto it = s.devices.find(device_type);
  return it == s.devices.end() ? nullptr : &it->second;
}

LoomError* enter(LoomAutocastRegion* region) {
  return sdk::catch_all([&] {
    if (region == nullptr || region->device_type == nullptr) {
      throw sdk::Error("[autocast] expected a region naming a device type, found none");
    }
    const std::string name = region->device_type;
    const int16_t type = device_type_id(name.c_str());
    if (type < 0) {
      throw sdk::Error("[autocast] device type '" + name +
                           "' is not loaded (expected a device type of the loaded plugins: "
                           "cpu, or one a backend plugin registers)",
                       LOOM_STATUS_INVALID_ARGUMENT);
    }
    int32_t dtype = region->dtype;
    if (dtype < 0) dtype = default_dtype(type, name.c_str());
    if (dtype != LOOM_DTYPE_FLOAT16 && dtype != LOOM_DTYPE_BFLOAT16) {
      throw sdk::Error("[autocast] expected float16 or bfloat16 as the lower dtype for " + name +
                           ", found " + sdk::dtype_name(static_cast<LoomDType>(dtype)),
                       LOOM_STATUS_INVALID_ARGUMENT);
    }
    ThreadState& s = thread_state();
    Frame f;
    f.token = s.next_token++;
    f.device_type = type;
    const DeviceState* previous = state_of(type);
    f.previous = previous != nullptr ? *previous : DeviceState{false, -1, name};
    f.previous_cache_enabled = s.cache_enabled;
    s.devices[type] = DeviceState{region->enabled != 0, dtype, name};
    s.cache_enabled = region->cache_enabled != 0;
    // The key while any device type has autocast on (a disabled region inside an enabled
    // one keeps it: the fallback then passes its ops through). Never excluded: an enabled
    // region inside a disabled one must reach the fallback.
    const uint32_t key = LOOM_KEY_AUTOCAST;
    f.saved_keys.struct_size = sizeof(LoomLocalKeysArgs);
    const bool on = any_enabled(s);
    f.saved_keys.include = on ? &key : nullptr;
    f.saved_keys.num_include = on ? 1 : 0;
    f.saved_keys.exclude = nullptr;
    f.saved_keys.num_exclude = 0;
    LoomError* err = sdk::host().local_keys_push(&f.saved_keys);
    if (err != nullptr) {
      s.devices[type] = f.previous;
      s.cache_enabled = f.previous_cache_enabled;
      sdk::check(err);
    }
    f.saved_keys.include = nullptr;
    region->out_token = f.token;
    s.frames.push_back(f);
  });
}

LoomError* exit_region(uint64_t token) {
  return sdk::catch_all([&] {
    ThreadState& s = thread_state();
    if (s.frames.empty() || s.frames.back().token != token) {
      throw sdk::Error("[autocast] regions must end in reverse order: ending region " +
                           std::to_string(token) + ", expected " +
                           (s.frames.empty() ? std::string("none (no region is open)")
                                             : "region " + std::to_string(s.frames.back().token)),
                       LOOM_STATUS_FAILED_PRECONDITION);
    }
    const Frame f = s.frames.back();
    s.frames.pop_back();
    s.devices[f.device_type] = f.previous;
    s.cache_enabled = f.previous_cache_enabled;
    if (s.frames.empty()) s.cache.clear();
    sdk::check(sdk::host().local_keys_restore(&f.saved_keys));
  });
}

LoomError* query(LoomAutocastRegion* region) {
  return sdk::catch_all([&] {
    if (region == nullptr || region->device_type == nullptr) {
      throw sdk::Error("[autocast] expected a region naming a device type, found none");
    }
    const int16_t type = device_type_id(region->device_type);
    if (type < 0) {
      throw sdk::Error(
          std::string("[autocast] device type '") + region->device_type + "' is not loaded",
          LOOM_STATUS_INVALID_ARGUMENT);
    }
    const DeviceState* d = state_of(type);
    const bool on = d != nullptr && d->enabled;
    region->enabled = on ? 1 : 0;
    region->dtype = on ? d->dtype : default_dtype(type, region->device_type);
    region->cache_enabled = thread_state().cache_enabled ? 1 : 0;
  });
}

sdk::Tensor cached_cast(const sdk::Tensor& t, LoomDType dtype) {
  ThreadState& s = thread_state();
  if (!s.cache_enabled || s.frames.empty() || !is_parameter(t)) return sdk::op::to(t, dtype);
  const auto key = std::make_pair(t.get(), static_cast<int32_t>(dtype));
  auto it = s.cache.find(key);
  if (it != s.cache.end()) return it->second.cast;
  sdk::Tensor cast = sdk::op::to(t, dtype);
  s.cache.emplace(key, CachedCast{t, cast});
  return cast;
}

}  // namespace loom::autocast
