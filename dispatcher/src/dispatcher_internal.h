// Dispatcher::Impl: the registry state behind the dispatcher's mutex, shared by the
// registration side (dispatcher.cc) and the calling side (dispatcher_call.cc).
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "loom/core/error.h"
#include "loom/dispatcher/dispatcher.h"
#include "operator_entry.h"

namespace loom::dispatch {

struct Dispatcher::Impl {
  struct Resolution {
    const KernelSlot* slot;
    EntrySource source;
  };
  struct VendorSlot {
    std::string name;
    int users = 0;
  };

  mutable std::mutex mutex;
  absl::flat_hash_map<std::string, std::unique_ptr<OperatorEntry>> entries;
  absl::flat_hash_map<uint64_t, std::unique_ptr<RegistrationRecord>> records;
  std::array<std::vector<RegistrationRecord*>, kNumRuntimeKeys> fallbacks;  // newest last
  std::array<VendorSlot, kNumVendorBackends> vendor_slots;
  // Signatures of undefined ops are never freed: op_schema() hands out their text.
  std::vector<std::unique_ptr<const Signature>> retired_signatures;
  // Records unlinked by a thread inside an op call, freed by the next deregistration
  // made outside any (after its grace period).
  std::vector<std::unique_ptr<RegistrationRecord>> graveyard;
  uint64_t next_id = 1;

  Resolution resolve(const OperatorEntry& e, int index) const;
  void recompute(OperatorEntry& e);
  void recompute_all();
  OperatorEntry& entry_for(std::string_view qualified_name);
  // Files a new record of `kind` made by `owner` (refused while `owner` is closing) and
  // returns it with its id set. Requires the mutex.
  RegistrationRecord* add_record(RegistrationRecord::Kind kind, const Registrant* owner,
                                 DispatchKey key = DispatchKey::Undefined);
  std::unique_ptr<RegistrationRecord> unlink(uint64_t id);
  std::optional<DispatchKey> lookup_backend(std::string_view name) const;
  DispatchKey acquire_backend(std::string_view name);
  void release_backend(const std::string& name);
  void check_open(const Registrant* owner) const;
  // Frees `removed` after a grace period, or defers it when called inside an op call.
  void reclaim(std::vector<std::unique_ptr<RegistrationRecord>> removed);
};

// The dispatcher's own error kernels; ctx is the OperatorEntry.
LoomError* missing_kernel(void* ctx, const LoomKernelCall* call);
LoomError* undefined_kernel(void* ctx, const LoomKernelCall* call);
LoomError* fallthrough_kernel(void* ctx, const LoomKernelCall* call);

// Calls one kernel with arguments already checked: presets the returns, turns a
// returned error into loom::Error and checks the returned tags.
void invoke_kernel(const OperatorEntry& e, const Signature* sig, const KernelSlot& slot,
                   DispatchKey key, DispatchKeySet keys, const LoomValue* args, size_t num_args,
                   LoomValue* returns, size_t num_returns);

// Argument/return tag masks from a schema.
Signature make_signature(FunctionSchema schema);

// Copies what an error object from a plugin says, checking each field against its
// struct_size, and destroys it. Unknown codes become Internal.
struct TakenError {
  ErrorCode code;
  std::string message;
};
TakenError take_error(LoomError* err);

}  // namespace loom::dispatch
