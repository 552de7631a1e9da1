// The dispatcher's calling side: argument checks, key set computation, table lookup,
// the kernel call and turning kernel errors into loom::Error. This is the hot path:
// no locks, no heap allocation unless something fails.
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "dispatcher_internal.h"
#include "loom/core/device.h"
#include "loom/core/device_runtime.h"
#include "loom/core/error.h"
#include "loom/core/memory_overlap.h"
#include "loom/core/tensor_impl.h"
#include "loom/core/type_promotion.h"
#include "loom/dispatcher/abi_keys.h"
#include "operator_entry.h"

namespace loom::dispatch {

namespace detail {
thread_local LocalDispatchKeySet tls_local_keys = {};
std::atomic<uint64_t> g_process_included{0};
}  // namespace detail

void include_key_in_process(DispatchKey key, bool include) {
  static std::mutex mutex;
  static uint32_t counts[64] = {};
  const uint64_t bit = DispatchKeySet(key).raw();
  const int index = __builtin_ctzll(bit);
  std::lock_guard<std::mutex> lock(mutex);
  if (include) {
    if (counts[index]++ == 0) detail::g_process_included.fetch_or(bit, std::memory_order_relaxed);
    return;
  }
  LOOM_CHECK(counts[index] > 0, "dispatch", "key ", dispatch_key_name(key),
             " is not included in the process's dispatches; it cannot be taken back");
  if (--counts[index] == 0) detail::g_process_included.fetch_and(~bit, std::memory_order_relaxed);
}

namespace {

constexpr uint16_t tag_bit(LoomValueTag t) {
  return static_cast<uint16_t>(1u << t);
}

uint16_t accepted_tags(const SchemaType& type) {
  using K = SchemaType::Kind;
  switch (type.kind) {
    case K::Tensor:
      return tag_bit(LOOM_VALUE_TENSOR);
    case K::Int:
      return tag_bit(LOOM_VALUE_INT);
    case K::Float:
      return tag_bit(LOOM_VALUE_DOUBLE) | tag_bit(LOOM_VALUE_INT);
    case K::Bool:
      return tag_bit(LOOM_VALUE_BOOL);
    case K::Str:
      return tag_bit(LOOM_VALUE_STRING);
    case K::Scalar:
      return tag_bit(LOOM_VALUE_INT) | tag_bit(LOOM_VALUE_DOUBLE) | tag_bit(LOOM_VALUE_BOOL);
    case K::ScalarType:
      return tag_bit(LOOM_VALUE_DTYPE);
    case K::Device:
      return tag_bit(LOOM_VALUE_DEVICE);
    case K::Generator:
    case K::Layout:
    case K::MemoryFormat:
      return tag_bit(LOOM_VALUE_INT) | tag_bit(LOOM_VALUE_NONE);
    case K::Optional:
      return accepted_tags(*type.elem) | tag_bit(LOOM_VALUE_NONE);
    case K::List: {
      const SchemaType& elem = type.elem->kind == K::Optional ? *type.elem->elem : *type.elem;
      switch (elem.kind) {
        case K::Int:
          return tag_bit(LOOM_VALUE_INT_LIST);  // callers expand int[2]=3
        case K::Float:
          return tag_bit(LOOM_VALUE_DOUBLE_LIST);
        case K::Bool:
          return tag_bit(LOOM_VALUE_BOOL_LIST);
        case K::Tensor:
          return tag_bit(LOOM_VALUE_TENSOR_LIST);
        default:
          return 0xFFFF;  // lists of other types are not checked
      }
    }
  }
  return 0xFFFF;
}

std::string_view tag_name(uint32_t tag) {
  switch (tag) {
    case LOOM_VALUE_NONE:
      return "None";
    case LOOM_VALUE_TENSOR:
      return "Tensor";
    case LOOM_VALUE_INT:
      return "int";
    case LOOM_VALUE_DOUBLE:
      return "float";
    case LOOM_VALUE_BOOL:
      return "bool";
    case LOOM_VALUE_STRING:
      return "str";
    case LOOM_VALUE_DTYPE:
      return "ScalarType";
    case LOOM_VALUE_DEVICE:
      return "Device";
    case LOOM_VALUE_INT_LIST:
      return "int[]";
    case LOOM_VALUE_DOUBLE_LIST:
      return "float[]";
    case LOOM_VALUE_BOOL_LIST:
      return "bool[]";
    case LOOM_VALUE_TENSOR_LIST:
      return "Tensor[]";
    default:
      return "an invalid value";
  }
}

void host_error_destroy(LoomError* e) {
  std::free(const_cast<char*>(e->message));
  delete e;
}

const TensorImpl* as_impl(const LoomTensor* t) {
  return reinterpret_cast<const TensorImpl*>(t);
}

[[noreturn]] void bad_arguments(const OperatorEntry& e, const Signature* sig, const LoomValue* args,
                                size_t num_args, size_t num_returns) {
  LOOM_CHECK(sig != nullptr, e.name, "operator is not defined (no loaded plugin defines it)");
  const FunctionSchema& s = sig->schema;
  LOOM_CHECK(num_args == s.arguments.size(), e.name, "expected ", s.arguments.size(),
             " arguments but got ", num_args, " (schema: ", sig->schema_text, ")");
  LOOM_CHECK(num_returns == s.returns.size(), e.name, "expected room for ", s.returns.size(),
             " returns but got ", num_returns, " (schema: ", sig->schema_text, ")");
  for (size_t i = 0; i < num_args; ++i) {
    uint32_t tag = args[i].tag;
    LOOM_CHECK(tag <= LOOM_VALUE_TENSOR_LIST && (sig->accepted_arg_tags[i] & (1u << tag)), e.name,
               "argument ", i, " '", s.arguments[i].name, "' expected ",
               s.arguments[i].type.to_string(), " but got ", tag_name(tag));
    LOOM_CHECK(tag != LOOM_VALUE_TENSOR || args[i].u.tensor != nullptr, e.name, "argument ", i,
               " '", s.arguments[i].name, "' is a null tensor handle");
  }
  fail(e.name, "invalid arguments");
}

// Validates arity and tags; cheap enough for every call (one mask test per argument).
inline const Signature* check_arguments(const OperatorEntry& e, const LoomValue* args,
                                        size_t num_args, size_t num_returns) {
  const Signature* sig = e.signature.load(std::memory_order_acquire);
  if (sig == nullptr || num_args != sig->accepted_arg_tags.size() ||
      num_returns != sig->accepted_return_tags.size()) [[unlikely]] {
    bad_arguments(e, sig, args, num_args, num_returns);
  }
  for (size_t i = 0; i < num_args; ++i) {
    uint32_t tag = args[i].tag;
    if (tag > LOOM_VALUE_TENSOR_LIST || !(sig->accepted_arg_tags[i] & (1u << tag)) ||
        (tag == LOOM_VALUE_TENSOR && args[i].u.tensor == nullptr)) [[unlikely]] {
      bad_arguments(e, sig, args, num_args, num_returns);
    }
  }
  return sig;
}

inline DispatchKeySet keys_of_arguments(const LoomValue* args, size_t num_args) {
  uint64_t keys = 0;
  for (size_t i = 0; i < num_args; ++i) {
    const LoomValue& v = args[i];
    if (v.tag == LOOM_VALUE_TENSOR) {
      keys |= as_impl(v.u.tensor)->key_set().raw();
    } else if (v.tag == LOOM_VALUE_TENSOR_LIST) {
      for (uint32_t j = 0; j < v.length; ++j) {
        if (v.u.tensors[j] != nullptr) keys |= as_impl(v.u.tensors[j])->key_set().raw();
      }
    } else if (v.tag == LOOM_VALUE_DEVICE) [[unlikely]] {
      DispatchKey backend = DeviceTypeRegistry::instance().backend(v.u.device.type);
      if (backend != DispatchKey::Undefined) keys |= DispatchKeySet::for_tensor_on(backend).raw();
    }
  }
  return DispatchKeySet(keys);
}

// "add" for "loom::add_.Tensor", "loom::add.out", "add": the op family's base name.
std::string_view family_name(std::string_view name) {
  if (size_t sep = name.find("::"); sep != std::string_view::npos) name = name.substr(sep + 2);
  if (size_t dot = name.find('.'); dot != std::string_view::npos) name = name.substr(0, dot);
  if (!name.empty() && name.back() == '_') name.remove_suffix(1);
  return name;
}

// Strips a leading "[name] " the kernel already put on its message when it names this
// op or another variant of its family (a structured op's out= kernel).
std::string_view strip_own_prefix(std::string_view message, const std::string& op_name) {
  if (message.size() < 3 || message[0] != '[') return message;
  size_t close = message.find("] ");
  if (close == std::string_view::npos) return message;
  std::string_view inside = message.substr(1, close - 1);
  if (family_name(inside) == family_name(op_name)) return message.substr(close + 2);
  return message;
}

[[noreturn]] void raise_kernel_error(LoomError* err, const OperatorEntry& e, const KernelSlot& slot,
                                     DispatchKey key, LoomValue* returns, size_t num_returns) {
  for (size_t i = 0; i < num_returns; ++i) release_value(returns[i]);
  auto [code, message] = take_error(err);
  std::string detail(strip_own_prefix(message, e.name));
  if (slot.owner != nullptr && !slot.owner->forwards_errors) {
    bool is_plugin = !slot.owner->file.empty();
    std::string from = str_cat(is_plugin ? "plugin '" : "'", slot.owner->name, "'");
    if (slot.registered_key == key) {
      detail += str_cat(" (kernel for ", dispatch_key_name(key), " from ", from, ")");
    } else {
      detail += str_cat(" (", dispatch_key_name(slot.registered_key), " kernel used for ",
                        dispatch_key_name(key), ", from ", from, ")");
    }
  }
  throw Error(e.name, detail, code);
}

[[noreturn]] void bad_returns(const OperatorEntry& e, const Signature& sig, const KernelSlot& slot,
                              LoomValue* returns, size_t num_returns) {
  std::string detail;
  for (size_t i = 0; i < num_returns; ++i) {
    if (returns[i].tag > LOOM_VALUE_TENSOR_LIST ||
        !(sig.accepted_return_tags[i] & (1u << returns[i].tag)) ||
        (returns[i].tag == LOOM_VALUE_TENSOR && returns[i].u.tensor == nullptr)) {
      detail = str_cat("kernel '", slot.debug, "' from ",
                       slot.owner ? slot.owner->name : "the dispatcher", " returned ",
                       tag_name(returns[i].tag), " for return ", i, ", expected ",
                       sig.schema.returns[i].type.to_string());
      break;
    }
  }
  for (size_t i = 0; i < num_returns; ++i) release_value(returns[i]);
  throw Error(e.name, detail, ErrorCode::Internal);
}

}  // namespace

// Note [Dtype claims]
// ~~~~~~~~~~~~~~~~~~~
// A plugin may declare which dtypes a kernel accepts (declare_capability, or the SDK's
// impl<&fn>(op, key, dtypes)). The claim is about the op's first tensor argument (self, or
// out for ops without tensor inputs): index and mask arguments keep their own dtypes.
// A call in an unclaimed dtype is refused here, before the kernel runs, with a message
// that lists the claim; kernels without a claim cost one relaxed load and a branch.
[[noreturn]] void refuse_dtype(const OperatorEntry& e, DispatchKey key, ScalarType dtype,
                               uint64_t claim) {
  std::string claims;
  for (int t = 0; t < kNumScalarTypes; ++t) {
    if ((claim >> t) & 1) {
      if (!claims.empty()) claims += ", ";
      claims += std::string(scalar_type_name(static_cast<ScalarType>(t)));
    }
  }
  fail_with(ErrorCode::Unimplemented, e.name, "backend ", dispatch_key_name(key),
            " does not support dtype ", scalar_type_name(dtype), " (claims: ", claims, ")");
}

void check_dtype_claim(const OperatorEntry& e, const KernelSlot& slot, DispatchKey key,
                       uint64_t claim, const LoomValue* args, size_t num_args) {
  for (size_t i = 0; i < num_args; ++i) {
    const TensorImpl* t = nullptr;
    if (args[i].tag == LOOM_VALUE_TENSOR) {
      t = reinterpret_cast<const TensorImpl*>(args[i].u.tensor);
    } else if (args[i].tag == LOOM_VALUE_TENSOR_LIST && args[i].length > 0) {
      t = reinterpret_cast<const TensorImpl*>(args[i].u.tensors[0]);
    }
    if (t == nullptr) continue;
    if (!((claim >> static_cast<int>(t->dtype())) & 1)) refuse_dtype(e, key, t->dtype(), claim);
    return;
  }
}

void invoke_kernel(const OperatorEntry& e, const Signature* sig, const KernelSlot& slot,
                   DispatchKey key, DispatchKeySet keys, const LoomValue* args, size_t num_args,
                   LoomValue* returns, size_t num_returns) {
  if (uint64_t claim = slot.dtype_claim.load(std::memory_order_relaxed)) [[unlikely]] {
    check_dtype_claim(e, slot, key, claim, args, num_args);
  }
  for (size_t i = 0; i < num_returns; ++i) returns[i].tag = LOOM_VALUE_NONE;
  LoomKernelCall call{sizeof(LoomKernelCall),
                      reinterpret_cast<const LoomOperator*>(&e),
                      keys.after(key).raw(),
                      key_to_abi(key),
                      args,
                      num_args,
                      returns,
                      num_returns,
                      current_stream_of_backend(key)};
  LoomError* err = slot.kernel.fn(slot.kernel.ctx, &call);
  if (err != nullptr) [[unlikely]]
    raise_kernel_error(err, e, slot, key, returns, num_returns);
  for (size_t i = 0; i < num_returns; ++i) {
    if (returns[i].tag > LOOM_VALUE_TENSOR_LIST ||
        !(sig->accepted_return_tags[i] & (1u << returns[i].tag)) ||
        (returns[i].tag == LOOM_VALUE_TENSOR && returns[i].u.tensor == nullptr)) [[unlikely]] {
      bad_returns(e, *sig, slot, returns, num_returns);
    }
  }
}

namespace {

// Bumps the version counter of every tensor the call wrote (Note [Version counter]).
void bump_versions(const Signature& sig, const LoomValue* args) {
  for (uint32_t i : sig.written_args) {
    const LoomValue& v = args[i];
    if (v.tag == LOOM_VALUE_TENSOR) {
      reinterpret_cast<TensorImpl*>(v.u.tensor)->storage()->bump_version();
    } else if (v.tag == LOOM_VALUE_TENSOR_LIST) {
      for (uint32_t j = 0; j < v.length; ++j) {
        if (v.u.tensors[j] != nullptr) {
          reinterpret_cast<TensorImpl*>(v.u.tensors[j])->storage()->bump_version();
        }
      }
    }
  }
}

// Refuses a call whose written tensors overlap themselves or partially overlap an input
// (Note [Overlapping writes]), before any kernel runs.
void check_overlapping_writes(const OperatorEntry& e, const Signature& sig, const LoomValue* args) {
  auto check_written = [&](const TensorImpl& written) {
    if (!written.is_contiguous() && !sig.idempotent_writes &&
        internal_overlap(written) == InternalOverlap::Yes) {
      fail(e.name,
           "more than one element of the written-to tensor refers to a single memory location "
           "(shape ",
           shape_to_string(written.sizes()), ", strides ", shape_to_string(written.strides()),
           "); clone it first");
    }
    auto check_input = [&](const LoomTensor* input) {
      if (input == nullptr) return;
      const auto& read = *reinterpret_cast<const TensorImpl*>(input);
      if (read.storage().get() != written.storage().get()) return;  // the common case
      if (overlap(written, read) == Overlap::Partial) {
        fail(e.name,
             "some elements of an input and of the written-to tensor refer to the same memory "
             "location (written shape ",
             shape_to_string(written.sizes()), ", input shape ", shape_to_string(read.sizes()),
             "); clone the input first");
      }
    };
    for (uint32_t i : sig.read_tensor_args) {
      const LoomValue& v = args[i];
      if (v.tag == LOOM_VALUE_TENSOR) {
        check_input(v.u.tensor);
      } else if (v.tag == LOOM_VALUE_TENSOR_LIST) {
        for (uint32_t j = 0; j < v.length; ++j) check_input(v.u.tensors[j]);
      }
    }
  };
  for (uint32_t i : sig.written_args) {
    const LoomValue& v = args[i];
    if (v.tag == LOOM_VALUE_TENSOR) {
      check_written(*reinterpret_cast<const TensorImpl*>(v.u.tensor));
    } else if (v.tag == LOOM_VALUE_TENSOR_LIST) {
      for (uint32_t j = 0; j < v.length; ++j) {
        if (v.u.tensors[j] != nullptr) {
          check_written(*reinterpret_cast<const TensorImpl*>(v.u.tensors[j]));
        }
      }
    }
  }
}

inline void dispatch(const OperatorEntry& e, const Signature* sig, DispatchKeySet keys,
                     const LoomValue* args, size_t num_args, LoomValue* returns,
                     size_t num_returns) {
  keys = keys.valid() - DispatchKeySet(e.fallthrough_keys.load(std::memory_order_acquire));
  DispatchKey key = keys.highest_priority();
  if (key == DispatchKey::Undefined) [[unlikely]] {
    fail(e.name, "nothing to dispatch to: the key set ", keys.to_string(),
         " has no backend kernel left (a kernel redispatched below its backend?)");
  }
  const KernelSlot* slot = e.table[runtime_index(key)].load(std::memory_order_acquire);
  invoke_kernel(e, sig, *slot, key, keys, args, num_args, returns, num_returns);
}

// Tensor, Tensor?, Tensor[] and Tensor?[].
bool holds_tensors(const SchemaType& type) {
  const SchemaType* t = &type;
  if (t->kind == SchemaType::Kind::Optional) t = t->elem.get();
  if (t->kind == SchemaType::Kind::List) t = t->elem.get();
  if (t->kind == SchemaType::Kind::Optional) t = t->elem.get();
  return t->kind == SchemaType::Kind::Tensor;
}

}  // namespace

Signature make_signature(FunctionSchema schema) {
  Signature sig;
  sig.schema_text = schema.to_string();
  for (size_t i = 0; i < schema.arguments.size(); ++i) {
    const Argument& a = schema.arguments[i];
    sig.accepted_arg_tags.push_back(accepted_tags(a.type));
    if (a.alias && a.alias->is_write) {
      sig.written_args.push_back(static_cast<uint32_t>(i));
    } else if (holds_tensors(a.type)) {
      sig.read_tensor_args.push_back(static_cast<uint32_t>(i));
    }
  }
  for (const Argument& r : schema.returns) {
    sig.accepted_return_tags.push_back(accepted_tags(r.type));
  }
  sig.schema = std::move(schema);
  return sig;
}

TakenError take_error(LoomError* err) {
  TakenError taken{ErrorCode::Internal, "(an error object with no message)"};
  if (err == nullptr) return taken;
  if (LOOM_HAS_FIELD(err, LoomError, code) && err->code > 0 &&
      err->code <= static_cast<int32_t>(ErrorCode::VersionMismatch)) {
    taken.code = static_cast<ErrorCode>(err->code);
  }
  if (LOOM_HAS_FIELD(err, LoomError, message) && err->message != nullptr) {
    taken.message = err->message;
  }
  if (LOOM_HAS_FIELD(err, LoomError, destroy) && err->destroy != nullptr) err->destroy(err);
  return taken;
}

LoomError* make_host_error(int32_t code, std::string message) {
  char* text = static_cast<char*>(std::malloc(message.size() + 1));
  if (text != nullptr) std::memcpy(text, message.c_str(), message.size() + 1);
  return new LoomError{sizeof(LoomError), code, text, &host_error_destroy};
}

LoomError* missing_kernel(void* ctx, const LoomKernelCall* call) {
  auto* e = static_cast<OperatorEntry*>(ctx);
  std::string key = dispatch_key_name(key_from_abi(call->dispatch_key));
  std::string have;
  for (const TableRow& row : Dispatcher::instance().dump_table(OperatorHandle(e))) {
    if (!is_backend_key(row.key)) continue;  // which backends can run it
    if (row.source == EntrySource::Kernel || row.source == EntrySource::Fallback ||
        row.source == EntrySource::CompositeExplicit || row.source == EntrySource::Decomposition) {
      have += str_cat(have.empty() ? "" : ", ", dispatch_key_name(row.key));
    }
  }
  return make_host_error(LOOM_STATUS_UNIMPLEMENTED,
                         str_cat("no kernel for dispatch key ", key,
                                 "; keys with kernels: ", have.empty() ? "none" : have,
                                 " (is the plugin for ", key, " loaded?)"));
}

// A skipped functionality key: passes the call on to the keys below. The fallthrough
// mask normally keeps such keys from being selected at all; this covers a caller that
// read the mask just before a registration change (Note [Dispatch table precedence]).
LoomError* fallthrough_kernel(void* ctx, const LoomKernelCall* call) {
  try {
    Dispatcher::instance().redispatch(OperatorHandle(static_cast<OperatorEntry*>(ctx)),
                                      DispatchKeySet(call->key_set), call->args, call->num_args,
                                      call->returns, call->num_returns);
    return nullptr;
  } catch (const Error& e) {
    return make_host_error(static_cast<int32_t>(e.code()), e.what());
  }
}

LoomError* undefined_kernel(void* ctx, const LoomKernelCall* call) {
  return make_host_error(LOOM_STATUS_NOT_FOUND,
                         "operator is not defined (no loaded plugin defines it)");
}

void release_value(LoomValue& v) {
  switch (v.tag) {
    case LOOM_VALUE_TENSOR:
      if (v.u.tensor != nullptr) reinterpret_cast<TensorImpl*>(v.u.tensor)->release();
      break;
    case LOOM_VALUE_TENSOR_LIST:
      for (uint32_t i = 0; i < v.length; ++i) {
        if (v.u.tensors[i] != nullptr) reinterpret_cast<TensorImpl*>(v.u.tensors[i])->release();
      }
      std::free(const_cast<LoomTensor**>(v.u.tensors));
      break;
    case LOOM_VALUE_INT_LIST:
    case LOOM_VALUE_DOUBLE_LIST:
    case LOOM_VALUE_BOOL_LIST:
    case LOOM_VALUE_STRING:
      std::free(const_cast<void*>(static_cast<const void*>(v.u.ints)));
      break;
    default:
      break;
  }
  v.tag = LOOM_VALUE_NONE;
}

void Dispatcher::call(OperatorHandle op, const LoomValue* args, size_t num_args, LoomValue* returns,
                      size_t num_returns) const {
  const OperatorEntry& e = *op.entry();
  ReadSection section;
  const Signature* sig = check_arguments(e, args, num_args, num_returns);
  LocalDispatchKeySet local = detail::tls_local_keys;
  DispatchKeySet keys = keys_of_arguments(args, num_args);
  if (keys.backend_bits() == 0) [[unlikely]] {
    keys = keys | DispatchKeySet::for_tensor_on(DispatchKey::CPU);  // factory ops default to CPU
  }
  keys = (keys | DispatchKeySet(local.included |
                                detail::g_process_included.load(std::memory_order_relaxed))) -
         DispatchKeySet(local.excluded);
  if (!sig->written_args.empty()) [[unlikely]] {
    check_overlapping_writes(e, *sig, args);
    dispatch(e, sig, keys, args, num_args, returns, num_returns);
    bump_versions(*sig, args);
    return;
  }
  dispatch(e, sig, keys, args, num_args, returns, num_returns);
}

void Dispatcher::redispatch(OperatorHandle op, DispatchKeySet keys, const LoomValue* args,
                            size_t num_args, LoomValue* returns, size_t num_returns) const {
  const OperatorEntry& e = *op.entry();
  ReadSection section;
  const Signature* sig = check_arguments(e, args, num_args, num_returns);
  dispatch(e, sig, keys, args, num_args, returns, num_returns);
}

void Dispatcher::redispatch_checked_arguments(OperatorHandle op, DispatchKeySet keys,
                                              const LoomValue* args, size_t num_args,
                                              LoomValue* returns, size_t num_returns) const {
  const OperatorEntry& e = *op.entry();
  dispatch(e, e.signature.load(std::memory_order_acquire), keys, args, num_args, returns,
           num_returns);
}

}  // namespace loom::dispatch
