// The autocast plugin: a whole-key fallback on the Autocast key casts each op's floating
// tensors by the op's policy (Note [Autocast policy]) for the device types the calling
// thread has autocast on (Note [Autocast regions]), then runs the op below the key. Apps
// open regions with loom::autocast::Guard through the extension table "loom.autocast"
// (loom/autocast_api.h). Built like a vendor's plugin: the SDK alone.
#include <string>
#include <unordered_map>
#include <vector>

#include "autocast_policy.h"
#include "autocast_region.h"
#include "loom/sdk/extension.hpp"
#include "loom/sdk/plugin.hpp"

namespace loom::autocast {
namespace {

bool is_lower_or_float32(LoomDType d) {
  return d == LOOM_DTYPE_FLOAT16 || d == LOOM_DTYPE_BFLOAT16 || d == LOOM_DTYPE_FLOAT32;
}
bool is_floating(LoomDType d) {
  return is_lower_or_float32(d) || d == LOOM_DTYPE_FLOAT64;
}

// The cast of `op` on `device_type`, by the backend's overrides, else the default;
// memoised per thread (policy tables are static).
int32_t cast_for(int16_t device_type, const std::string& type_name, const LoomOperator* op) {
  thread_local std::unordered_map<int16_t, std::unordered_map<const LoomOperator*, int32_t>> memo;
  auto& by_op = memo[device_type];
  auto it = by_op.find(op);
  if (it != by_op.end()) return it->second;
  const std::string name = sdk::host().op_name(op);
  int32_t cast = override_cast(policy_table(type_name.c_str()), name);
  if (cast < LOOM_AUTOCAST_KEEP || cast > LOOM_AUTOCAST_PROMOTE) cast = default_cast(name);
  if (writes_its_arguments(name)) cast = LOOM_AUTOCAST_KEEP;
  by_op.emplace(op, cast);
  return cast;
}

// Visits the tensor arguments (list elements included) of `call` in order while visit
// returns true.
template <typename F>
void for_each_tensor(const LoomKernelCall& call, F&& visit) {
  for (size_t i = 0; i < call.num_args; ++i) {
    const LoomValue& v = call.args[i];
    if (v.tag == LOOM_VALUE_TENSOR && v.u.tensor != nullptr && !visit(v.u.tensor)) return;
    if (v.tag == LOOM_VALUE_TENSOR_LIST) {
      for (uint32_t k = 0; k < v.length; ++k) {
        if (v.u.tensors[k] != nullptr && !visit(v.u.tensors[k])) return;
      }
    }
  }
}

// The device type of the op's first tensor argument; -1 when it has none.
int16_t device_type_of(const LoomKernelCall& call) {
  int16_t type = -1;
  for_each_tensor(call, [&](LoomTensor* h) {
    type = sdk::Tensor::borrow(h).device().type;
    return false;
  });
  return type;
}

// The dtype the op's floating tensors on `device_type` are cast to; -1: none is.
int32_t target_dtype(const LoomKernelCall& call, int32_t cast, int16_t device_type, int32_t lower) {
  if (cast == LOOM_AUTOCAST_LOWER) return lower;
  if (cast == LOOM_AUTOCAST_FLOAT32) return LOOM_DTYPE_FLOAT32;
  // Promote: the widest floating dtype among them; float16 with bfloat16 is float32.
  int32_t widest = -1;
  bool mixed = false;
  for_each_tensor(call, [&](LoomTensor* h) {
    const sdk::Tensor t = sdk::Tensor::borrow(h);
    const LoomDType d = t.dtype();
    if (!is_floating(d) || t.device().type != device_type) return true;
    if (widest < 0) {
      widest = d;
    } else if (d != widest) {
      mixed = true;
      const bool either_wide = d == LOOM_DTYPE_FLOAT64 || widest == LOOM_DTYPE_FLOAT64;
      widest = either_wide ? LOOM_DTYPE_FLOAT64 : LOOM_DTYPE_FLOAT32;
    }
    return true;
  });
  return mixed ? widest : -1;
}

// Whether autocast casts tensor `t` to `target` under `cast` (never float64, as PyTorch).
bool is_cast(const sdk::Tensor& t, int32_t cast, int32_t target, int16_t device_type) {
  const LoomDType d = t.dtype();
  if (t.device().type != device_type || d == target) return false;
  if (cast == LOOM_AUTOCAST_LOWER) return is_lower_or_float32(d);  // float16 <-> bfloat16 too
  if (cast == LOOM_AUTOCAST_FLOAT32) return d == LOOM_DTYPE_FLOAT16 || d == LOOM_DTYPE_BFLOAT16;
  return is_floating(d);
}

// The fallback on the Autocast key.
LoomError* autocast_op(void*, const LoomKernelCall* call) {
  return sdk::catch_all([&] {
    const int16_t device_type = device_type_of(*call);
    const DeviceState* state = device_type >= 0 ? state_of(device_type) : nullptr;
    const int32_t cast = state != nullptr && state->enabled
                             ? cast_for(device_type, state->name, call->op)
                             : LOOM_AUTOCAST_KEEP;
    const int32_t target =
        cast == LOOM_AUTOCAST_KEEP ? -1 : target_dtype(*call, cast, device_type, state->dtype);
    if (target < 0) {
      sdk::redispatch_with_keys(*call, {}, {LOOM_KEY_AUTOCAST});
      return;
    }
    // The casts and the op run below the key: what they call is not autocast again.
    sdk::LocalKeyGuard below({}, {LOOM_KEY_AUTOCAST});
    std::vector<LoomValue> args(call->args, call->args + call->num_args);
    std::vector<sdk::Tensor> owners;
    std::vector<std::vector<LoomTensor*>> lists;
    lists.reserve(call->num_args);
    auto converted = [&](LoomTensor* h) -> LoomTensor* {
      const sdk::Tensor t = sdk::Tensor::borrow(h);
      if (!is_cast(t, cast, target, device_type)) return h;
      owners.push_back(cached_cast(t, static_cast<LoomDType>(target)));
      return owners.back().get();
    };
    for (LoomValue& v : args) {
      if (v.tag == LOOM_VALUE_TENSOR && v.u.tensor != nullptr) v.u.tensor = converted(v.u.tensor);
      if (v.tag == LOOM_VALUE_TENSOR_LIST) {
        std::vector<LoomTensor*>& list = lists.emplace_back(v.u.tensors, v.u.tensors + v.length);
        for (LoomTensor*& h : list) {
          if (h != nullptr) h = converted(h);
        }
        v.u.tensors = list.data();
      }
    }
    sdk::check(sdk::host().redispatch(call->op, call->key_set, args.data(), args.size(),
                                      call->returns, call->num_returns));
  });
}

LoomError* cast_of(const char* device_type, const char* op, int32_t* out_cast) {
  return sdk::catch_all([&] {
    if (device_type == nullptr || op == nullptr || out_cast == nullptr) {
      throw sdk::Error("[autocast] cast_of: expected a device type, an op and an output");
    }
    int32_t cast = override_cast(policy_table(device_type), op);
    if (cast < LOOM_AUTOCAST_KEEP || cast > LOOM_AUTOCAST_PROMOTE) cast = default_cast(op);
    *out_cast = writes_its_arguments(op) ? LOOM_AUTOCAST_KEEP : cast;
  });
}

const LoomAutocastApi kApi = {sizeof(LoomAutocastApi), &enter, &exit_region, &query, &cast_of};

void init(sdk::Registrar& r) {
  if (!LOOM_SDK_HOST_HAS(redispatch_with_keys)) {
    throw sdk::Error("[autocast] needs a loom host with ABI 1.6, found " +
                         std::to_string(sdk::host().abi_major) + "." +
                         std::to_string(sdk::host().abi_minor),
                     LOOM_STATUS_VERSION_MISMATCH);
  }
  r.fallback(LOOM_KEY_AUTOCAST, &autocast_op);
  sdk::publish_extension(LOOM_AUTOCAST_EXTENSION_NAME, &kApi);
}

}  // namespace
}  // namespace loom::autocast

LOOM_PLUGIN("autocast", "0.1.0", loom::autocast::init)
