// The dispatcher: operator registry, per-op dispatch tables, kernel and fallback
// registration with RAII handles, vendor backend slots, and boxed calling.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/core/dispatch_key.h"
#include "loom/core/read_section.h"
#include "loom/dispatcher/function_schema.h"
#include "loom/dispatcher/local_dispatch_key_set.h"
#include "loom/plugin.h"

namespace loom::dispatch {

// Who made a registration: a plugin (name and file), the application ("app"), or a
// library of loom's own such as the op library ("core").
struct Registrant {
  std::string name;
  std::string file;  // the plugin's file; empty for the app and loom's own libraries
  // Its kernels only call other ops (composites): their errors already name the kernel
  // that failed, so the dispatcher does not add "(kernel for K from R)" to them.
  bool forwards_errors = false;
  // Set by Dispatcher::close_registrant when a plugin starts unloading: its new
  // registrations are refused from then on. Guarded by the dispatcher's mutex.
  mutable bool closing = false;
};
const Registrant* app_registrant();

struct KernelFunction {
  LoomKernelFn fn = nullptr;
  void* ctx = nullptr;
};

class OperatorEntry;
class Dispatcher;

// A stable handle to an operator (it lives as long as the process; it is the
// LoomOperator* of the ABI).
class OperatorHandle {
 public:
  OperatorHandle() = default;
  explicit OperatorHandle(OperatorEntry* entry) : entry_(entry) {}
  static OperatorHandle from_abi(const LoomOperator* op) {
    return OperatorHandle(reinterpret_cast<OperatorEntry*>(const_cast<LoomOperator*>(op)));
  }
  const LoomOperator* abi() const { return reinterpret_cast<const LoomOperator*>(entry_); }
  OperatorEntry* entry() const { return entry_; }
  bool valid() const { return entry_ != nullptr; }

  const std::string& name() const;  // "ns::name" or "ns::name.overload"
  bool is_defined() const;
  // Throws when the operator is not defined.
  FunctionSchema schema() const;

 private:
  OperatorEntry* entry_ = nullptr;
};

// Removes its registration when destroyed (or at reset()), restoring what it hid.
class Registration {
 public:
  Registration() = default;
  explicit Registration(uint64_t id) : id_(id) {}
  Registration(Registration&& o) noexcept : id_(std::exchange(o.id_, 0)) {}
  Registration& operator=(Registration&& o) noexcept;
  ~Registration() { reset(); }
  void reset();
  uint64_t id() const { return id_; }
  // Keeps the registration for the life of the process.
  uint64_t release() { return std::exchange(id_, 0); }

 private:
  uint64_t id_ = 0;
};

// How one dispatch table entry was resolved (Note [Dispatch table precedence]).
enum class EntrySource : uint8_t {
  Kernel,             // registered for this key
  CompositeExplicit,  // the op's CompositeExplicit kernel
  Decomposition,      // the op's CompositeImplicit kernel
  Fallback,           // the key's whole-key fallback
  Fallthrough,        // functionality key skipped
  Missing,            // error kernel
  Undefined,          // the op has no definition
};
std::string_view entry_source_name(EntrySource source);

struct TableRow {
  DispatchKey key;
  EntrySource source;
  std::string provider;      // registrant name, empty for Missing/Fallthrough
  std::string debug;         // the kernel's debug name
  uint64_t dtype_claim = 0;  // the kernel's claimed dtypes (bit = ScalarType); 0: none
};

// What a definition says about its op beyond the schema.
struct OpTraits {
  // The op writes the same value into every element of its written tensors (fill_), so
  // elements that share memory are fine: calls skip the internal-overlap check of
  // Note [Overlapping writes] (the partial-overlap check with inputs stays).
  bool idempotent_writes = false;
};

class Dispatcher {
 public:
  static Dispatcher& instance();

  // --- operators ---
  // Defines an operator from a schema. Throws "[dispatcher] operator 'x' is already
  // defined by ..." for a second definition. The returned handle undefines it.
  Registration define(std::string_view schema, const Registrant* owner = nullptr,
                      OperatorHandle* out_op = nullptr, OpTraits traits = {});
  // The handle for a name, creating an undefined entry when none exists (kernels may
  // be registered before the definition arrives).
  OperatorHandle get_or_create(std::string_view qualified_name);
  std::optional<OperatorHandle> find(std::string_view qualified_name) const;
  // Throws "[dispatcher] unknown operator 'x'" when not defined.
  OperatorHandle find_defined(std::string_view qualified_name) const;
  // Defined operators, sorted by name.
  std::vector<OperatorHandle> defined_operators() const;

  // --- registration ---
  Registration register_kernel(OperatorHandle op, DispatchKey key, KernelFunction kernel,
                               const Registrant* owner = nullptr, std::string debug = "");
  Registration register_fallback(DispatchKey key, KernelFunction kernel,
                                 const Registrant* owner = nullptr, std::string debug = "");
  Registration register_fallthrough(DispatchKey key, const Registrant* owner = nullptr);
  void deregister(uint64_t registration_id);
  // Refuses every later registration by `owner` (a plugin about to unload).
  void close_registrant(const Registrant* owner);
  // Removes every registration `owner` made (plugin unload). Waits for readers.
  void deregister_all(const Registrant* owner);
  // Counts of what `owner` registered.
  struct Counts {
    int ops_defined = 0;
    int kernels = 0;
    int fallbacks = 0;
  };
  Counts counts_for(const Registrant* owner) const;

  // --- vendor backend slots (Note [Dispatch key layout]) ---
  // Returns the backend key for `name`: cpu/cuda/hip/meta are built in; other names get
  // a vendor slot, shared by every registrant using the same name. The slot is freed
  // when its last registrant's registration goes.
  DispatchKey register_backend(std::string_view name, const Registrant* owner,
                               uint64_t* out_registration_id = nullptr);
  std::optional<DispatchKey> find_backend(std::string_view name) const;

  // --- calling ---
  // Boxed call from the top: keys from the tensor / device arguments plus the
  // thread-local include set, minus the exclude set. args are borrowed; returns are
  // filled with owned values. Throws loom::Error on bad arguments or kernel errors.
  void call(OperatorHandle op, const LoomValue* args, size_t num_args, LoomValue* returns,
            size_t num_returns) const;
  // Call with an explicit key set (what a kernel got in LoomKernelCall::key_set).
  void redispatch(OperatorHandle op, DispatchKeySet keys, const LoomValue* args, size_t num_args,
                  LoomValue* returns, size_t num_returns) const;
  // redispatch for a kernel written in C++ on the host (the op library's) that passes on
  // arguments the dispatcher already checked for this op's schema, with tensors it made
  // itself in place of some: no argument check and no new read section (the caller runs
  // inside an op call, whose read section covers this one). Keeps composite kernels of
  // small ops cheap; anything a plugin hands over goes through redispatch.
  void redispatch_checked_arguments(OperatorHandle op, DispatchKeySet keys, const LoomValue* args,
                                    size_t num_args, LoomValue* returns, size_t num_returns) const;

  // --- introspection ---
  std::vector<TableRow> dump_table(OperatorHandle op) const;
  // Records the dtypes (bit i = ScalarType i) that `owner`'s kernels of `op` under `key`
  // accept (Note [Dtype claims]); calls in other dtypes are refused before the kernel
  // runs. Returns how many of its kernels it applied to (0: none registered yet).
  int declare_dtypes(OperatorHandle op, DispatchKey key, const Registrant* owner, uint64_t mask);
  // Who defined the op ("core", a plugin name), empty when undefined.
  std::string defined_by(OperatorHandle op) const;

  struct Impl;

 private:
  Dispatcher();
  Impl* impl_;
};

// Releases what a returned value owns (tensor references, list arrays).
void release_value(LoomValue& value);

// An error object for a kernel written in C++ on the host side (the op library's) to
// return across the ABI; destroyed by err->destroy.
LoomError* make_host_error(int32_t code, std::string message);

}  // namespace loom::dispatch
