// The host services of the plugin ABI (LoomHostApi): each function checks its inputs,
// forwards to the dispatcher, core or plugin record, and turns any loom::Error into a
// LoomError so no exception crosses the boundary.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "dispatcher_internal.h"
#include "loom/core/device.h"
#include "loom/core/device_runtime.h"
#include "loom/core/error.h"
#include "loom/core/generator.h"
#include "loom/core/quantizer.h"
#include "loom/core/small_objects.h"
#include "loom/core/storage.h"
#include "loom/core/tensor_base.h"
#include "loom/dispatcher/abi_keys.h"
#include "loom/dispatcher/dlpack_conversion.h"
#include "loom/dispatcher/extensions.h"
#include "loom/dispatcher/local_dispatch_key_set.h"
#include "loom/dispatcher/trace.h"
#include "plugin_record.h"

namespace loom::dispatch {
namespace {

// Runs `body`, converting exceptions into a host error object.
template <typename F>
LoomError* guarded(F&& body) {
  try {
    body();
    return nullptr;
  } catch (const Error& e) {
    return make_host_error(static_cast<int32_t>(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return make_host_error(LOOM_STATUS_RESOURCE_EXHAUSTED, "[host] out of memory");
  } catch (const std::exception& e) {
    return make_host_error(LOOM_STATUS_INTERNAL, str_cat("[host] ", e.what()));
  } catch (...) {
    return make_host_error(LOOM_STATUS_INTERNAL, "[host] unknown exception");
  }
}

PluginRecord& plugin_of(LoomPluginContext* ctx, const char* function) {
  LOOM_CHECK(ctx != nullptr, "host", function, ": the plugin context is null");
  return *PluginRecord::from(ctx);
}

const char* check_string(const char* s, const char* function, const char* what) {
  LOOM_CHECK(s != nullptr, "host", function, ": ", what, " is null");
  return s;
}

OperatorHandle check_op(const LoomOperator* op, const char* function) {
  LOOM_CHECK(op != nullptr, "host", function, ": the operator handle is null");
  return OperatorHandle::from_abi(op);
}

LoomRegistration* to_abi_registration(uint64_t id) {
  return reinterpret_cast<LoomRegistration*>(static_cast<uintptr_t>(id));
}

TensorImpl* as_impl(LoomTensor* t) {
  return reinterpret_cast<TensorImpl*>(t);
}

// --- operators ---

LoomError* define_op(LoomPluginContext* ctx, const char* schema, const LoomOperator** out_op) {
  return guarded([&] {
    PluginRecord& plugin = plugin_of(ctx, "define_op");
    OperatorHandle op;
    Dispatcher::instance()
        .define(check_string(schema, "define_op", "schema"), &plugin.registrant, &op)
        .release();  // owned by the plugin until unload (deregister_all)
    if (out_op != nullptr) *out_op = op.abi();
  });
}

LoomError* find_op(const char* name, const LoomOperator** out_op) {
  return guarded([&] {
    LOOM_CHECK(out_op != nullptr, "host", "find_op: out_op is null");
    std::optional<OperatorHandle> op =
        Dispatcher::instance().find(check_string(name, "find_op", "name"));
    *out_op = op ? op->abi() : nullptr;
  });
}

const char* op_name(const LoomOperator* op) {
  return op == nullptr ? "" : OperatorHandle::from_abi(op).name().c_str();
}

const char* op_schema(const LoomOperator* op) {
  if (op == nullptr) return "";
  const Signature* sig =
      OperatorHandle::from_abi(op).entry()->signature.load(std::memory_order_acquire);
  return sig == nullptr ? "" : sig->schema_text.c_str();
}

// --- registration ---

LoomError* register_kernel(LoomPluginContext* ctx, const LoomOperator* op, uint32_t key,
                           LoomKernelFn fn, void* kernel_ctx, LoomRegistration** out) {
  return guarded([&] {
    PluginRecord& plugin = plugin_of(ctx, "register_kernel");
    OperatorHandle handle = check_op(op, "register_kernel");
    DispatchKey dispatch_key = key_from_abi(key);
    Registration r = Dispatcher::instance().register_kernel(handle, dispatch_key, {fn, kernel_ctx},
                                                            &plugin.registrant);
    uint64_t claim = 0;  // declared before the kernel was registered
    {
      std::lock_guard<std::mutex> lock(plugin.mutex);
      auto op_claims = plugin.capabilities.find(handle.name());
      if (op_claims != plugin.capabilities.end()) {
        auto it = op_claims->second.find(dispatch_key_name(dispatch_key));
        if (it != op_claims->second.end()) claim = it->second;
      }
    }
    if (claim != 0) {
      Dispatcher::instance().declare_dtypes(handle, dispatch_key, &plugin.registrant, claim);
    }
    uint64_t id = r.release();
    if (out != nullptr) *out = to_abi_registration(id);
  });
}

LoomError* register_fallback(LoomPluginContext* ctx, uint32_t key, LoomKernelFn fn,
                             void* kernel_ctx, LoomRegistration** out) {
  return guarded([&] {
    PluginRecord& plugin = plugin_of(ctx, "register_fallback");
    Registration r = Dispatcher::instance().register_fallback(key_from_abi(key), {fn, kernel_ctx},
                                                              &plugin.registrant);
    uint64_t id = r.release();
    if (out != nullptr) *out = to_abi_registration(id);
  });
}

LoomError* register_fallthrough(LoomPluginContext* ctx, uint32_t key, LoomRegistration** out) {
  return guarded([&] {
    PluginRecord& plugin = plugin_of(ctx, "register_fallthrough");
    Registration r =
        Dispatcher::instance().register_fallthrough(key_from_abi(key), &plugin.registrant);
    uint64_t id = r.release();
    if (out != nullptr) *out = to_abi_registration(id);
  });
}

LoomError* deregister(LoomRegistration* registration) {
  return guarded([&] {
    LOOM_CHECK(registration != nullptr, "host", "deregister: the registration is null");
    const uint64_t id = reinterpret_cast<uintptr_t>(registration);
    if (id & kTracerRegistrationBit) {
      trace::remove_tracer(id & ~kTracerRegistrationBit);
      return;
    }
    if (id & kObserverRegistrationBit) {
      // An allocation observer; unload would remove it again, which is a no-op.
      AllocatorRegistry::instance().remove_observer(id & ~kObserverRegistrationBit);
      return;
    }
    Dispatcher::instance().deregister(id);
  });
}

LoomError* register_backend(LoomPluginContext* ctx, const char* name, uint32_t* out_key) {
  return guarded([&] {
    PluginRecord& plugin = plugin_of(ctx, "register_backend");
    check_string(name, "register_backend", "name");
    {
      // Idempotent per plugin and name: a second call returns the same key.
      std::lock_guard<std::mutex> lock(plugin.mutex);
      if (std::find(plugin.backends.begin(), plugin.backends.end(), name) !=
          plugin.backends.end()) {
        if (out_key != nullptr) {
          *out_key = key_to_abi(*Dispatcher::instance().find_backend(name));
        }
        return;
      }
    }
    DispatchKey key = Dispatcher::instance().register_backend(name, &plugin.registrant);
    {
      std::lock_guard<std::mutex> lock(plugin.mutex);
      plugin.backends.emplace_back(name);
    }
    if (out_key != nullptr) *out_key = key_to_abi(key);
  });
}

LoomError* register_device_type(LoomPluginContext* ctx, const char* name, uint32_t backend_key,
                                const LoomDeviceInterface* device, int16_t* out_type) {
  return guarded([&] {
    PluginRecord& plugin = plugin_of(ctx, "register_device_type");
    check_string(name, "register_device_type", "name");
    LOOM_CHECK(device != nullptr, "host", "register_device_type('", name,
               "'): the device interface is null");
    LOOM_CHECK(LOOM_HAS_FIELD(device, LoomDeviceInterface, deallocate) &&
                   device->allocate != nullptr && device->deallocate != nullptr,
               "host", "register_device_type('", name,
               "'): the device interface must provide allocate and deallocate (struct_size ",
               device->struct_size, ")");
    LOOM_CHECK(!LOOM_HAS_FIELD(device, LoomDeviceInterface, host_deallocate) ||
                   (device->host_allocate == nullptr) == (device->host_deallocate == nullptr),
               "host", "register_device_type('", name,
               "'): the device interface must provide host_allocate and host_deallocate "
               "together, found only ",
               device->host_allocate != nullptr ? "host_allocate" : "host_deallocate");
    DispatchKey backend = key_from_abi(backend_key);
    std::lock_guard<std::mutex> lock(plugin.mutex);  // unload cannot start meanwhile
    if (plugin.closing) {
      fail_with(ErrorCode::FailedPrecondition, "host", "register_device_type('", name,
                "'): plugin '", plugin.registrant.name, "' is being unloaded");
    }
    auto allocator = std::make_unique<PluginDeviceAllocator>(&plugin, device, name);
    plugin.device_types.reserve(plugin.device_types.size() + 1);
    plugin.device_type_names.reserve(plugin.device_type_names.size() + 1);
    plugin.allocators.reserve(plugin.allocators.size() + 1);
    plugin.allocator_registrations.reserve(plugin.allocator_registrations.size() + 1);
    DeviceType type = DeviceTypeRegistry::instance().register_type(name, backend);
    uint64_t reg = AllocatorRegistry::instance().add(type, allocator.get());
    plugin.device_types.push_back(type);
    plugin.device_type_names.emplace_back(name);
    plugin.allocators.push_back(std::move(allocator));
    plugin.allocator_registrations.push_back(reg);
    if (out_type != nullptr) *out_type = type;
  });
}

LoomError* find_device_type(const char* name, int16_t* out_type) {
  return guarded([&] {
    LOOM_CHECK(out_type != nullptr, "host", "find_device_type: out_device_type is null");
    *out_type = DeviceTypeRegistry::instance().find(check_string(name, "find_device_type", "name"));
    LOOM_CHECK(*out_type >= 0, "host", "unknown device type '", name, "'");
  });
}

// --- tensors ---

LoomError* tensor_empty(const int64_t* sizes, const int64_t* strides, int32_t ndim, int32_t dtype,
                        LoomDevice device, LoomTensor** out) {
  return guarded([&] {
    LOOM_CHECK(out != nullptr, "host", "tensor_empty: out is null");
    LOOM_CHECK(ndim >= 0 && ndim <= 64 && (ndim == 0 || sizes != nullptr), "host",
               "tensor_empty: invalid ndim ", ndim, " or null sizes");
    ScalarType type = scalar_type_from_int(dtype, "host");
    IntArrayRef size_ref(sizes, ndim);
    Device d{device.type, device.index};
    TensorBase t = strides == nullptr
                       ? empty(size_ref, type, d)
                       : empty_strided(size_ref, IntArrayRef(strides, ndim), type, d);
    *out = reinterpret_cast<LoomTensor*>(t.release());
  });
}

// Per-channel parameters as the quantizer keeps them: a contiguous 1-D CPU tensor of
// `to` (float64 scales, int64 zero points) copied from `from`, any real dtype.
Ref<TensorImpl> channel_parameters(LoomTensor* from, ScalarType to, const char* what) {
  LOOM_CHECK(from != nullptr, "quantizer", "per-channel quantization needs ", what);
  const TensorImpl* src = as_impl(from);
  LOOM_CHECK(src->dim() == 1 && src->device().type == kCPU, "quantizer", "per-channel ", what,
             " must be a 1-D CPU tensor, found ", src->dim(), " dims");
  const bool floating = to == ScalarType::Float64;
  LOOM_CHECK(floating ? is_floating_point(src->dtype()) : is_integral(src->dtype(), false),
             "quantizer", "per-channel ", what, " must be ", floating ? "floating" : "integer",
             ", found ", scalar_type_name(src->dtype()));
  const int64_t n = src->numel();
  TensorBase out = empty(std::vector<int64_t>{n}, to, Device{});
  const char* base = static_cast<const char*>(src->data());
  const int64_t step = src->strides()[0] * static_cast<int64_t>(element_size(src->dtype()));
  for (int64_t i = 0; i < n; ++i) {
    const void* e = base + i * step;
    double v = 0;
    switch (src->dtype()) {
      case ScalarType::Float32:
        v = *static_cast<const float*>(e);
        break;
      case ScalarType::Float64:
        v = *static_cast<const double*>(e);
        break;
      case ScalarType::Int8:
        v = *static_cast<const int8_t*>(e);
        break;
      case ScalarType::UInt8:
        v = *static_cast<const uint8_t*>(e);
        break;
      case ScalarType::Int16:
        v = *static_cast<const int16_t*>(e);
        break;
      case ScalarType::Int32:
        v = *static_cast<const int32_t*>(e);
        break;
      case ScalarType::Int64:
        // exact: zero points are far below 2^53
        v = static_cast<double>(*static_cast<const int64_t*>(e));
        break;
      default:
        LOOM_CHECK(false, "quantizer", "per-channel ", what, " of dtype ",
                   scalar_type_name(src->dtype()), " are not supported (use float32/64, int)");
    }
    if (floating) {
      static_cast<double*>(out.impl()->data())[i] = v;
    } else {
      static_cast<int64_t*>(out.impl()->data())[i] = static_cast<int64_t>(v);
    }
  }
  return Ref<TensorImpl>::retain(out.impl());
}

LoomError* tensor_empty_quantized(const int64_t* sizes, int32_t ndim, int32_t dtype,
                                  LoomDevice device, const LoomQuantizer* q, LoomTensor** out) {
  return guarded([&] {
    LOOM_CHECK(out != nullptr && q != nullptr, "quantizer",
               "tensor_empty_quantized: out or the quantizer is null");
    LOOM_CHECK(ndim >= 0 && ndim <= 64 && (ndim == 0 || sizes != nullptr), "quantizer",
               "tensor_empty_quantized: invalid ndim ", ndim, " or null sizes");
    const ScalarType type = scalar_type_from_int(dtype, "quantizer");
    IntArrayRef size_ref(sizes, ndim);
    Ref<Quantizer> quantizer;
    if (q->scheme == LOOM_QSCHEME_PER_TENSOR_AFFINE) {
      quantizer = Quantizer::per_tensor(q->scale, q->zero_point, type, "quantizer");
    } else {
      LOOM_CHECK(q->scheme == LOOM_QSCHEME_PER_CHANNEL_AFFINE, "quantizer",
                 "unknown quantization scheme ", q->scheme);
      LOOM_CHECK(q->axis >= 0 && q->axis < ndim, "quantizer", "the channel axis ", q->axis,
                 " is out of range for a tensor of ", ndim, " dims");
      quantizer = Quantizer::per_channel(
          channel_parameters(q->scales, ScalarType::Float64, "scales"),
          channel_parameters(q->zero_points, ScalarType::Int64, "zero points"), q->axis, type,
          "quantizer");
      LOOM_CHECK(quantizer->channels() == sizes[q->axis], "quantizer", "expected ", sizes[q->axis],
                 " scales (the size of axis ", q->axis, "), found ", quantizer->channels());
    }
    TensorBase t = empty(size_ref, type, Device{device.type, device.index});
    t.impl()->set_quantizer(std::move(quantizer));
    *out = reinterpret_cast<LoomTensor*>(t.release());
  });
}

void tensor_retain(LoomTensor* t) {
  if (t != nullptr) as_impl(t)->retain();
}

void tensor_release(LoomTensor* t) {
  if (t != nullptr) as_impl(t)->release();
}

// tensor_view runs for every tensor of every kernel call: a table, not a call.
const DLDataType& dl_dtype_of(ScalarType t) {
  static const std::array<DLDataType, kNumScalarTypes> table = [] {
    std::array<DLDataType, kNumScalarTypes> dl{};
    for (int i = 0; i < kNumScalarTypes; ++i) dl[i] = to_dl_dtype(static_cast<ScalarType>(i));
    return dl;
  }();
  return table[static_cast<int>(t)];
}

void fill_view(const TensorImpl* impl, LoomTensorView& v) {
  const Device device = impl->device();
  const ScalarType dtype = impl->dtype();
  v.dl.data = impl->storage()->data();
  v.dl.device = device.type == kCPU ? DLDevice{kDLCPU, 0} : to_dl_device(device);
  v.dl.ndim = static_cast<int32_t>(impl->dim());
  v.dl.dtype = dl_dtype_of(dtype);
  v.dl.shape = const_cast<int64_t*>(impl->sizes_data());
  v.dl.strides = const_cast<int64_t*>(impl->strides_data());
  v.dl.byte_offset = impl->storage_offset() == 0 ? 0 : impl->storage_offset() * element_size(dtype);
  v.dtype = static_cast<int32_t>(dtype);
  v.device = {device.type, device.index};
  v.numel = impl->numel();
  v.is_contiguous = impl->is_contiguous();
  v.view_base = reinterpret_cast<LoomTensor*>(impl->view_base());
  v.quantizer = impl->quantizer()
                    ? reinterpret_cast<const LoomQuantizer*>(&impl->quantizer()->params())
                    : nullptr;
}

// The core's quantizer fields are the ABI's LoomQuantizer (TensorImpl* is LoomTensor*).
static_assert(sizeof(QuantizerParams) == sizeof(LoomQuantizer));
static_assert(offsetof(QuantizerParams, axis) == offsetof(LoomQuantizer, axis));
static_assert(offsetof(QuantizerParams, scale) == offsetof(LoomQuantizer, scale));
static_assert(offsetof(QuantizerParams, zero_point) == offsetof(LoomQuantizer, zero_point));
static_assert(offsetof(QuantizerParams, scales) == offsetof(LoomQuantizer, scales));
static_assert(offsetof(QuantizerParams, zero_points) == offsetof(LoomQuantizer, zero_points));

// A plugin built against an older header has a shorter view: fill ours, copy its part.
__attribute__((noinline)) void fill_older_view(const TensorImpl* impl, LoomTensorView* out) {
  LoomTensorView local;
  fill_view(impl, local);
  std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t),
              reinterpret_cast<const char*>(&local) + sizeof(size_t),
              out->struct_size - sizeof(size_t));
}

LoomError* tensor_view(LoomTensor* t, LoomTensorView* out) {
  if (t == nullptr || out == nullptr || out->struct_size < offsetof(LoomTensorView, dtype))
      [[unlikely]] {
    return make_host_error(LOOM_STATUS_INVALID_ARGUMENT,
                           "[host] tensor_view: null tensor, null view, or view.struct_size too "
                           "small to hold the DLPack view (set it to sizeof(LoomTensorView))");
  }
  if (out->struct_size >= sizeof(LoomTensorView)) [[likely]] {
    fill_view(as_impl(t), *out);  // in place: the plugin's struct is at least ours
  } else {
    fill_older_view(as_impl(t), out);
  }
  return nullptr;
}

// --- calling ---

LoomError* call_op(const LoomOperator* op, const LoomValue* args, size_t num_args,
                   LoomValue* returns, size_t num_returns) {
  return guarded([&] {
    Dispatcher::instance().call(check_op(op, "call_op"), args, num_args, returns, num_returns);
  });
}

LoomError* redispatch(const LoomOperator* op, uint64_t key_set, const LoomValue* args,
                      size_t num_args, LoomValue* returns, size_t num_returns) {
  return guarded([&] {
    Dispatcher::instance().redispatch(check_op(op, "redispatch"), DispatchKeySet(key_set), args,
                                      num_args, returns, num_returns);
  });
}

void value_release(LoomValue* value) {
  if (value != nullptr) release_value(*value);
}

void* list_allocate(size_t nbytes) {
  return std::malloc(nbytes == 0 ? 1 : nbytes);
}

// --- capabilities ---

LoomError* declare_capability(LoomPluginContext* ctx, const LoomOperator* op, uint32_t key,
                              uint64_t dtype_mask) {
  return guarded([&] {
    PluginRecord& plugin = plugin_of(ctx, "declare_capability");
    OperatorHandle handle = check_op(op, "declare_capability");
    std::string key_name = dispatch_key_name(key_from_abi(key));
    LOOM_CHECK(dtype_mask < (uint64_t{1} << kNumScalarTypes), "host", "declare_capability(",
               handle.name(), "): dtype mask 0x", absl::Hex(dtype_mask),
               " names dtypes that do not exist (expected bits 0..", kNumScalarTypes - 1, ")");
    {
      std::lock_guard<std::mutex> lock(plugin.mutex);
      plugin.capabilities[handle.name()][key_name] |= dtype_mask;
    }
    // Enforced from now on (Note [Dtype claims]); a kernel registered later gets the
    // claim at its registration.
    Dispatcher::instance().declare_dtypes(handle, key_from_abi(key), &plugin.registrant,
                                          dtype_mask);
  });
}

LoomError* set_attribute(LoomPluginContext* ctx, const char* key, const char* value) {
  return guarded([&] {
    PluginRecord& plugin = plugin_of(ctx, "set_attribute");
    check_string(key, "set_attribute", "key");
    check_string(value, "set_attribute", "value");
    std::lock_guard<std::mutex> lock(plugin.mutex);
    plugin.attributes[key] = value;
  });
}

LoomError* error_create(int32_t code, const char* message) {
  try {
    return make_host_error(code, message == nullptr ? "" : message);
  } catch (...) {
    return nullptr;  // out of memory: nothing better to return
  }
}

// --- random numbers ---

LoomError* generator_reserve(LoomDevice device, uint64_t count, uint64_t* out_seed,
                             uint64_t* out_offset) {
  return guarded([&] {
    LOOM_CHECK(out_seed != nullptr && out_offset != nullptr, "host",
               "generator_reserve: out_seed or out_offset is null");
    LOOM_CHECK(DeviceTypeRegistry::instance().is_registered(device.type), "host",
               "generator_reserve: device type ", device.type, " is not registered");
    PhiloxState reserved = default_generator(device.type).reserve(count);
    *out_seed = reserved.seed;
    *out_offset = reserved.offset;
  });
}

// --- ABI 1.2: argument structs (Note [Argument structs] in loom/plugin.h) ---

// Note [Host checks off the hot path]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The services below run several times per op that records a graph (a slot read per
// tensor argument, a slot set per result, a redispatch), so their checks are inline tests
// whose failures are cold functions that build the message: a check that passes costs a
// compare, not a call.

[[noreturn]] __attribute__((noinline, cold)) void fail_args(const void* args, size_t size,
                                                            size_t needed, const char* function) {
  LOOM_CHECK(args != nullptr, "host", function, ": the argument struct is null");
  fail("host", function, ": struct_size ", size, " is smaller than the ", needed,
       " bytes of the fields it must have");
}

// Checks an argument struct's pointer and size: it must hold at least `needed` bytes (the
// fields of the minor that introduced the function; later fields are optional).
template <typename Args>
inline Args& check_args(Args* args, size_t needed, const char* function) {
  if (args == nullptr || args->struct_size < needed) [[unlikely]]
    fail_args(args, args == nullptr ? 0 : args->struct_size, needed, function);
  return *args;
}

TensorImpl* check_tensor(LoomTensor* t, const char* function) {
  LOOM_CHECK(t != nullptr, "host", function, ": the tensor is null");
  return as_impl(t);
}

// A slot value set through the ABI: the plugin's value and destroy, and the plugin that
// must stay loaded until destroy has run (its live_objects counts the value).
struct PluginSlotValue {
  void* value;
  void (*destroy)(void*);
  PluginRecord* plugin;
  static void* operator new(size_t size) { return allocate_small_object(size); }
  static void operator delete(void* box, size_t size) { free_small_object(box, size); }
};

void destroy_plugin_slot_value(void* box) {
  auto* v = static_cast<PluginSlotValue*>(box);
  if (v->destroy != nullptr) v->destroy(v->value);
  if (v->plugin != nullptr) v->plugin->live_objects.fetch_sub(1, std::memory_order_acq_rel);
  delete v;
}

[[noreturn]] __attribute__((noinline, cold)) void fail_functionality_key(uint32_t abi_key,
                                                                         const char* function) {
  const DispatchKey key = key_from_abi(abi_key);  // throws for an unknown id
  fail("host", function, ": key ", abi_key, " (", dispatch_key_name(key),
       ") is not a functionality key a plugin may set (expected LOOM_KEY_QUANTIZED .. "
       "LOOM_KEY_TRACER)");
}

// LOOM_KEY_QUANTIZED .. LOOM_KEY_TRACER, in the order of DispatchKey::Quantized .. Tracer.
static_assert(LOOM_KEY_TRACER - LOOM_KEY_QUANTIZED ==
              static_cast<int>(DispatchKey::Tracer) - static_cast<int>(DispatchKey::Quantized));
static_assert(LOOM_KEY_AUTOGRAD - LOOM_KEY_QUANTIZED ==
              static_cast<int>(DispatchKey::Autograd) - static_cast<int>(DispatchKey::Quantized));
static_assert(LOOM_KEY_PROFILER - LOOM_KEY_QUANTIZED ==
              static_cast<int>(DispatchKey::Profiler) - static_cast<int>(DispatchKey::Quantized));

inline DispatchKey check_functionality_key(uint32_t abi_key, const char* function) {
  const uint32_t offset = abi_key - LOOM_KEY_QUANTIZED;  // wraps below QUANTIZED
  if (offset > LOOM_KEY_TRACER - LOOM_KEY_QUANTIZED) [[unlikely]]
    fail_functionality_key(abi_key, function);
  return static_cast<DispatchKey>(static_cast<int>(DispatchKey::Quantized) + offset);
}

[[noreturn]] __attribute__((noinline, cold)) void fail_slot(int32_t slot, const char* function) {
  fail("host", function, ": slot ", slot, " is out of range (expected 0..", kMaxExtensionSlots - 1,
       ", from slot_claim)");
}

inline int32_t check_slot(int32_t slot, const char* function) {
  if (slot < 0 || slot >= kMaxExtensionSlots) [[unlikely]]
    fail_slot(slot, function);
  return slot;
}

LoomError* slot_claim(LoomSlotClaimArgs* args) {
  return guarded([&] {
    LoomSlotClaimArgs& a = check_args(args, sizeof(LoomSlotClaimArgs), "slot_claim");
    plugin_of(a.plugin, "slot_claim");
    a.out_slot = ExtensionSlots::claim(check_string(a.name, "slot_claim", "name"));
  });
}

LoomError* tensor_slot_get(LoomTensorSlotArgs* args) {
  return guarded([&] {
    LoomTensorSlotArgs& a =
        check_args(args, offsetof(LoomTensorSlotArgs, plugin), "tensor_slot_get");
    TensorImpl* t = check_tensor(a.tensor, "tensor_slot_get");
    auto* box = static_cast<PluginSlotValue*>(t->extension(check_slot(a.slot, "tensor_slot_get")));
    a.value = box == nullptr ? nullptr : box->value;
  });
}

LoomError* tensor_slot_set(LoomTensorSlotArgs* args) {
  return guarded([&] {
    LoomTensorSlotArgs& a = check_args(args, offsetof(LoomTensorSlotArgs, key), "tensor_slot_set");
    TensorImpl* t = check_tensor(a.tensor, "tensor_slot_set");
    int32_t slot = check_slot(a.slot, "tensor_slot_set");
    // ABI 1.6: a key bit set with the value (checked before anything changes).
    const uint32_t abi_key = LOOM_HAS_FIELD(&a, LoomTensorSlotArgs, key) ? a.key : 0;
    const DispatchKey key = abi_key == LOOM_KEY_UNDEFINED
                                ? DispatchKey::Undefined
                                : check_functionality_key(abi_key, "tensor_slot_set");
    if (a.value == nullptr) {
      t->set_extension(slot, nullptr, nullptr);
    } else {
      PluginRecord* plugin =
          a.destroy == nullptr ? nullptr : &plugin_of(a.plugin, "tensor_slot_set");
      auto* box = new PluginSlotValue{a.value, a.destroy, plugin};
      if (plugin != nullptr) plugin->live_objects.fetch_add(1, std::memory_order_acq_rel);
      t->set_extension(slot, box, &destroy_plugin_slot_value);
    }
    if (key != DispatchKey::Undefined) t->add_key(key);
  });
}

LoomError* tensor_key_get(LoomTensorKeyArgs* args) {
  return guarded([&] {
    LoomTensorKeyArgs& a = check_args(args, sizeof(LoomTensorKeyArgs), "tensor_key_get");
    TensorImpl* t = check_tensor(a.tensor, "tensor_key_get");
    a.present = t->key_set().has(check_functionality_key(a.dispatch_key, "tensor_key_get")) ? 1 : 0;
  });
}

LoomError* tensor_key_set(LoomTensorKeyArgs* args) {
  return guarded([&] {
    LoomTensorKeyArgs& a = check_args(args, sizeof(LoomTensorKeyArgs), "tensor_key_set");
    TensorImpl* t = check_tensor(a.tensor, "tensor_key_set");
    DispatchKey key = check_functionality_key(a.dispatch_key, "tensor_key_set");
    if (a.present != 0) {
      t->add_key(key);
    } else {
      t->remove_key(key);
    }
  });
}

LoomError* tensor_version(LoomTensorVersionArgs* args) {
  return guarded([&] {
    LoomTensorVersionArgs& a = check_args(args, sizeof(LoomTensorVersionArgs), "tensor_version");
    TensorImpl* t = check_tensor(a.tensor, "tensor_version");
    if (a.bump != 0) t->storage()->bump_version(a.bump);
    a.out_version = t->storage()->version();
  });
}

LoomError* tensor_alias(LoomTensorAliasArgs* args) {
  return guarded([&] {
    LoomTensorAliasArgs& a = check_args(args, sizeof(LoomTensorAliasArgs), "tensor_alias");
    TensorImpl* t = check_tensor(a.tensor, "tensor_alias");
    a.out_alias = reinterpret_cast<LoomTensor*>(TensorBase::borrow(t).detached_alias().release());
  });
}

[[noreturn]] __attribute__((noinline, cold)) void fail_key_array(size_t count,
                                                                 const char* function) {
  fail("host", function, ": ", count, " keys given but the array is null");
}

inline DispatchKeySet keys_from_abi(const uint32_t* keys, size_t count, const char* function) {
  if (count != 0 && keys == nullptr) [[unlikely]]
    fail_key_array(count, function);
  DispatchKeySet set;
  for (size_t i = 0; i < count; ++i) set = set.add(check_functionality_key(keys[i], function));
  return set;
}

LoomError* local_keys_push(LoomLocalKeysArgs* args) {
  return guarded([&] {
    LoomLocalKeysArgs& a = check_args(args, sizeof(LoomLocalKeysArgs), "local_keys_push");
    DispatchKeySet include = keys_from_abi(a.include, a.num_include, "local_keys_push");
    DispatchKeySet exclude = keys_from_abi(a.exclude, a.num_exclude, "local_keys_push");
    LocalDispatchKeySet& local = detail::tls_local_keys;
    a.out_saved[0] = local.included;
    a.out_saved[1] = local.excluded;
    local.included |= include.raw();
    local.excluded |= exclude.raw();
  });
}

LoomError* local_keys_restore(const LoomLocalKeysArgs* args) {
  return guarded([&] {
    const LoomLocalKeysArgs& a = check_args(args, sizeof(LoomLocalKeysArgs), "local_keys_restore");
    detail::tls_local_keys.included = a.out_saved[0];
    detail::tls_local_keys.excluded = a.out_saved[1];
  });
}

// ABI 1.6: local_keys_push, redispatch and local_keys_restore in one call.
LoomError* redispatch_with_keys(const LoomRedispatchArgs* args) {
  return guarded([&] {
    const LoomRedispatchArgs& a =
        check_args(args, sizeof(LoomRedispatchArgs), "redispatch_with_keys");
    OperatorHandle op = check_op(a.op, "redispatch_with_keys");
    const uint64_t include = keys_from_abi(a.include, a.num_include, "redispatch_with_keys").raw();
    const uint64_t exclude = keys_from_abi(a.exclude, a.num_exclude, "redispatch_with_keys").raw();
    LocalDispatchKeySet& local = detail::tls_local_keys;
    struct Restore {
      LocalDispatchKeySet& local;
      const LocalDispatchKeySet saved;
      ~Restore() { local = saved; }
    } restore{local, local};
    local.included |= include;
    local.excluded |= exclude;
    Dispatcher::instance().redispatch(op, DispatchKeySet(a.key_set), a.args, a.num_args, a.returns,
                                      a.num_returns);
  });
}

LoomError* add_allocation_observer(LoomAllocationObserverArgs* args) {
  return guarded([&] {
    LoomAllocationObserverArgs& a =
        check_args(args, sizeof(LoomAllocationObserverArgs), "add_allocation_observer");
    PluginRecord& plugin = plugin_of(a.plugin, "add_allocation_observer");
    LOOM_CHECK(a.fn != nullptr, "host", "add_allocation_observer: fn is null");
    LoomAllocationObserverFn fn = a.fn;
    void* ctx = a.ctx;
    std::lock_guard<std::mutex> lock(plugin.mutex);
    LOOM_CHECK(!plugin.closing, "host", "add_allocation_observer: plugin '", plugin.registrant.name,
               "' is unloading");
    uint64_t id = AllocatorRegistry::instance().add_observer([fn, ctx](const AllocationEvent& e) {
      LoomAllocationEvent event{sizeof(LoomAllocationEvent),
                                {e.device.type, e.device.index},
                                e.ptr,
                                e.nbytes,
                                e.is_free ? 1 : 0};
      fn(ctx, &event);
    });
    plugin.observer_registrations.push_back(id);
    a.out_registration = to_abi_registration(id | kObserverRegistrationBit);
  });
}
LoomError* process_keys_include(LoomProcessKeysArgs* args) {
  return guarded([&] {
    LoomProcessKeysArgs& a = check_args(args, sizeof(LoomProcessKeysArgs), "process_keys_include");
    include_key_in_process(check_functionality_key(a.dispatch_key, "process_keys_include"),
                           a.include != 0);
  });
}

LoomError* extension_publish(LoomExtensionArgs* args) {
  return guarded([&] {
    LoomExtensionArgs& a = check_args(args, sizeof(LoomExtensionArgs), "extension_publish");
    PluginRecord& plugin = plugin_of(a.plugin, "extension_publish");
    check_string(a.name, "extension_publish", "name");
    std::lock_guard<std::mutex> lock(plugin.mutex);
    LOOM_CHECK(!plugin.closing, "host", "extension_publish: plugin '", plugin.registrant.name,
               "' is unloading");
    publish_extension(a.name, a.table, &plugin.registrant);
  });
}

LoomError* extension_find(LoomExtensionArgs* args) {
  return guarded([&] {
    LoomExtensionArgs& a = check_args(args, sizeof(LoomExtensionArgs), "extension_find");
    a.out_table = find_extension(check_string(a.name, "extension_find", "name"));
  });
}

LoomError* key_set_backend(LoomKeySetArgs* args) {
  return guarded([&] {
    LoomKeySetArgs& a = check_args(args, sizeof(LoomKeySetArgs), "key_set_backend");
    uint64_t backends = DispatchKeySet(a.key_set).valid().backend_bits();
    a.out_backend_key = backends == 0
                            ? uint32_t{LOOM_KEY_UNDEFINED}
                            : key_to_abi(static_cast<DispatchKey>(63 - __builtin_clzll(backends)));
  });
}

LoomError* set_tracer(LoomTracerArgs* args) {
  return guarded([&] {
    LoomTracerArgs& a = check_args(args, sizeof(LoomTracerArgs), "set_tracer");
    PluginRecord& plugin = plugin_of(a.plugin, "set_tracer");
    std::lock_guard<std::mutex> lock(plugin.mutex);
    LOOM_CHECK(!plugin.closing, "host", "set_tracer: plugin '", plugin.registrant.name,
               "' is unloading");
    trace::Tracer tracer{
        a.ctx,          a.range_begin,     a.range_end, a.sequence, a.correlation_id,
        a.device_event, &plugin.registrant};
    uint64_t token = trace::set_tracer(tracer);
    a.out_registration = to_abi_registration(token | kTracerRegistrationBit);
  });
}

LoomError* trace_state(LoomTraceStateArgs* args) {
  return guarded([&] {
    LoomTraceStateArgs& a = check_args(args, sizeof(LoomTraceStateArgs), "trace_state");
    a.out_recording = trace::recording() ? 1 : 0;
    a.out_correlation_id = trace::correlation_id();
  });
}

LoomError* trace_range_begin(LoomTraceRangeArgs* args) {
  return guarded([&] {
    LoomTraceRangeArgs& a = check_args(args, sizeof(LoomTraceRangeArgs), "trace_range_begin");
    check_string(a.name, "trace_range_begin", "name");
    LOOM_CHECK(a.kind == LOOM_TRACE_USER_RANGE || a.kind == LOOM_TRACE_BACKWARD_NODE, "host",
               "trace_range_begin: kind must be LOOM_TRACE_USER_RANGE or "
               "LOOM_TRACE_BACKWARD_NODE, found ",
               a.kind);
    a.out_id = trace::range_begin(a.name, a.kind, a.sequence_nr);
  });
}

LoomError* trace_range_end(const LoomTraceRangeArgs* args) {
  return guarded([&] {
    const LoomTraceRangeArgs& a = check_args(args, sizeof(LoomTraceRangeArgs), "trace_range_end");
    trace::range_end(a.out_id);
  });
}

LoomError* trace_sequence(const LoomTraceSequenceArgs* args) {
  return guarded([&] {
    trace::sequence(check_args(args, sizeof(LoomTraceSequenceArgs), "trace_sequence").sequence_nr);
  });
}

LoomError* trace_device_event(const LoomTraceDeviceEventArgs* args) {
  return guarded([&] {
    const LoomTraceDeviceEventArgs& a =
        check_args(args, sizeof(LoomTraceDeviceEventArgs), "trace_device_event");
    check_string(a.name, "trace_device_event", "name");
    LOOM_CHECK(a.kind >= LOOM_TRACE_DEVICE_KERNEL && a.kind <= LOOM_TRACE_DEVICE_OTHER, "host",
               "trace_device_event: kind must be a device kind (LOOM_TRACE_DEVICE_KERNEL .. "
               "LOOM_TRACE_DEVICE_OTHER), found ",
               a.kind);
    LOOM_CHECK(a.end_ns >= a.start_ns, "host", "trace_device_event: '", a.name, "' ends (",
               a.end_ns, " ns) before it starts (", a.start_ns, " ns)");
    trace::device_event(a);
  });
}

LoomError* current_stream_of_type(LoomCurrentStreamArgs* args) {
  return guarded([&] {
    LoomCurrentStreamArgs& a = check_args(args, sizeof(LoomCurrentStreamArgs), "current_stream");
    LOOM_CHECK(a.device_type >= LOOM_DEVICE_FIRST_DYNAMIC &&
                   DeviceTypeRegistry::instance().is_registered(a.device_type),
               "host", "current_stream: device_type ", a.device_type,
               " is not a device type registered by a plugin");
    a.out_stream = loom::current_stream(a.device_type);
  });
}
}  // namespace

const LoomHostApi* host_api() {
  static const LoomHostApi api = {
      .struct_size = sizeof(LoomHostApi),
      .abi_major = LOOM_ABI_VERSION_MAJOR,
      .abi_minor = LOOM_ABI_VERSION_MINOR,
      .host_version = "0.1.0",
      .define_op = &define_op,
      .find_op = &find_op,
      .op_name = &op_name,
      .op_schema = &op_schema,
      .register_kernel = &register_kernel,
      .register_fallback = &register_fallback,
      .register_fallthrough = &register_fallthrough,
      .deregister = &deregister,
      .register_backend = &register_backend,
      .register_device_type = &register_device_type,
      .find_device_type = &find_device_type,
      .tensor_empty = &tensor_empty,
      .tensor_retain = &tensor_retain,
      .tensor_release = &tensor_release,
      .tensor_view = &tensor_view,
      .call_op = &call_op,
      .redispatch = &redispatch,
      .value_release = &value_release,
      .list_allocate = &list_allocate,
      .declare_capability = &declare_capability,
      .set_attribute = &set_attribute,
      .error_create = &error_create,
      .generator_reserve = &generator_reserve,
      .slot_claim = &slot_claim,
      .tensor_slot_get = &tensor_slot_get,
      .tensor_slot_set = &tensor_slot_set,
      .tensor_key_get = &tensor_key_get,
      .tensor_key_set = &tensor_key_set,
      .tensor_version = &tensor_version,
      .local_keys_push = &local_keys_push,
      .local_keys_restore = &local_keys_restore,
      .add_allocation_observer = &add_allocation_observer,
      .tensor_alias = &tensor_alias,
      .process_keys_include = &process_keys_include,
      .extension_publish = &extension_publish,
      .extension_find = &extension_find,
      .key_set_backend = &key_set_backend,
      .set_tracer = &set_tracer,
      .trace_state = &trace_state,
      .trace_range_begin = &trace_range_begin,
      .trace_range_end = &trace_range_end,
      .trace_sequence = &trace_sequence,
      .trace_device_event = &trace_device_event,
      .current_stream = &current_stream_of_type,
      .redispatch_with_keys = &redispatch_with_keys,
      .tensor_empty_quantized = &tensor_empty_quantized,
  };
  return &api;
}

}  // namespace loom::dispatch
