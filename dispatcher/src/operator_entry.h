// OperatorEntry: one operator's schema, registrations and dispatch table. Private to the
// dispatcher; the hot path (dispatcher_call.cc) reads only the atomics.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "loom/core/dispatch_key.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/function_schema.h"

namespace loom::dispatch {

// What the table points at: immutable once published, but for the dtype claim, which a
// plugin may declare after registering the kernel.
struct KernelSlot {
  KernelSlot() = default;
  KernelSlot(KernelFunction k, const Registrant* o, std::string d, DispatchKey key)
      : kernel(k), owner(o), debug(std::move(d)), registered_key(key) {}

  KernelFunction kernel;
  const Registrant* owner = nullptr;  // null for the dispatcher's own error kernels
  std::string debug;
  DispatchKey registered_key = DispatchKey::Undefined;
  // Note [Dtype claims]: bit i = ScalarType i the kernel accepts; 0 = no claim (any).
  std::atomic<uint64_t> dtype_claim{0};
};

// The argument and return checks of a defined op, immutable once published.
struct Signature {
  FunctionSchema schema;
  std::string schema_text;
  std::vector<uint16_t> accepted_arg_tags;  // bit t: LoomValueTag t is accepted
  std::vector<uint16_t> accepted_return_tags;
  // Arguments the op writes (`Tensor(a!)`), whose storages' version counters a call from
  // the top bumps (Note [Version counter] in storage.h). Empty for most ops.
  std::vector<uint32_t> written_args;
  // Tensor and Tensor-list arguments that are not written: the inputs a written tensor
  // must not partially overlap (Note [Overlapping writes]).
  std::vector<uint32_t> read_tensor_args;
  bool idempotent_writes = false;  // OpTraits::idempotent_writes
};

// One registration of a kernel, fallback, fallthrough or definition.
struct RegistrationRecord {
  enum class Kind { Definition, Kernel, Fallback, Fallthrough, Backend } kind;
  uint64_t id = 0;
  OperatorEntry* op = nullptr;  // Definition, Kernel
  DispatchKey key = DispatchKey::Undefined;
  std::unique_ptr<KernelSlot> slot;  // Kernel, Fallback
  const Registrant* owner = nullptr;
  std::string backend_name;  // Backend
};

// Registration keys: the runtime keys then the two alias keys.
inline constexpr int kNumRegistrationKeys = kNumRuntimeKeys + 2;
inline int registration_index(DispatchKey k) {
  if (k == DispatchKey::CompositeExplicit) return kNumRuntimeKeys;
  if (k == DispatchKey::CompositeImplicit) return kNumRuntimeKeys + 1;
  return runtime_index(k);
}

class OperatorEntry {
 public:
  explicit OperatorEntry(std::string name);

  const std::string name;

  // --- read lock-free by callers ---
  std::array<std::atomic<const KernelSlot*>, kNumRuntimeKeys> table;
  std::atomic<uint64_t> fallthrough_keys{0};  // removed from the key set before lookup
  std::atomic<const Signature*> signature{nullptr};

  // --- guarded by the dispatcher's mutex ---
  RegistrationRecord* definition = nullptr;
  std::array<std::vector<RegistrationRecord*>, kNumRegistrationKeys> kernels;  // newest last
  // The dispatcher's own kernels for this op; ctx = this.
  KernelSlot missing_slot;
  KernelSlot undefined_slot;
  KernelSlot fallthrough_slot;
};

}  // namespace loom::dispatch
