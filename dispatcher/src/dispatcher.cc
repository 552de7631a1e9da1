// The dispatcher's registry side: operator definitions, kernel/fallback registration
// and deregistration, incremental table computation, vendor backend slots and table
// dumps. The calling side is in dispatcher_call.cc.
#include "loom/dispatcher/dispatcher.h"

#include <algorithm>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "dispatcher_internal.h"
#include "loom/core/error.h"
#include "operator_entry.h"

namespace loom::dispatch {

// Note [Dispatch table precedence]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Each runtime key's entry of an operator is recomputed whenever a registration that
// could affect it changes (a kernel of that op, or a fallback of that key), and is
// resolved in this order (docs/architecture.md §3):
//   backend key B:        kernel for B > CompositeExplicit > CompositeImplicit
//                         (decomposition) > fallback for B > error kernel
//   functionality key F:  kernel for F > (Autograd only) CompositeImplicit when the op
//                         has no backend or CompositeExplicit kernel > fallback for F
//                         > fallthrough
// Among several registrations for the same key the newest wins; removing it makes the
// previous one visible again. A fallthrough entry is not stored as a kernel: its key is
// set in the op's fallthrough_keys and removed from the key set before lookup, so it
// costs nothing at call time. An undefined op resolves every entry to an error.

namespace {

const KernelSlot* top(const std::vector<RegistrationRecord*>& records) {
  return records.empty() ? nullptr : records.back()->slot.get();
}

}  // namespace

const Registrant* app_registrant() {
  static const Registrant* app = new Registrant{"app", ""};
  return app;
}

std::string_view entry_source_name(EntrySource source) {
  switch (source) {
    case EntrySource::Kernel:
      return "kernel";
    case EntrySource::CompositeExplicit:
      return "composite explicit";
    case EntrySource::Decomposition:
      return "decomposition";
    case EntrySource::Fallback:
      return "fallback";
    case EntrySource::Fallthrough:
      return "fallthrough";
    case EntrySource::Missing:
      return "missing";
    case EntrySource::Undefined:
      return "undefined op";
  }
  return "?";
}

OperatorEntry::OperatorEntry(std::string n) : name(std::move(n)) {
  missing_slot.kernel = {&missing_kernel, this};
  missing_slot.debug = "missing";
  undefined_slot.kernel = {&undefined_kernel, this};
  undefined_slot.debug = "undefined";
  fallthrough_slot.kernel = {&fallthrough_kernel, this};
  fallthrough_slot.debug = "fallthrough";
  for (auto& e : table) e.store(&undefined_slot, std::memory_order_relaxed);
}

const std::string& OperatorHandle::name() const {
  return entry_->name;
}

bool OperatorHandle::is_defined() const {
  return entry_->signature.load(std::memory_order_acquire) != nullptr;
}

FunctionSchema OperatorHandle::schema() const {
  ReadSection section;
  const Signature* sig = entry_->signature.load(std::memory_order_acquire);
  LOOM_CHECK(sig != nullptr, "dispatcher", "operator '", entry_->name, "' is not defined");
  return sig->schema;
}

Registration& Registration::operator=(Registration&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = std::exchange(o.id_, 0);
  }
  return *this;
}

void Registration::reset() {
  if (id_ != 0) Dispatcher::instance().deregister(std::exchange(id_, 0));
}

Dispatcher& Dispatcher::instance() {
  static Dispatcher* dispatcher = new Dispatcher();  // never destroyed: plugins may outlive main
  return *dispatcher;
}

Dispatcher::Dispatcher() : impl_(new Impl) {}

Dispatcher::Impl::Resolution Dispatcher::Impl::resolve(const OperatorEntry& e, int index) const {
  if (e.definition == nullptr) return {&e.undefined_slot, EntrySource::Undefined};
  DispatchKey key = runtime_key_at(index);
  if (const KernelSlot* k = top(e.kernels[index])) return {k, EntrySource::Kernel};
  const auto& explicit_k = e.kernels[registration_index(DispatchKey::CompositeExplicit)];
  const auto& implicit_k = e.kernels[registration_index(DispatchKey::CompositeImplicit)];
  const auto& fallback = fallbacks[index];
  if (is_backend_key(key)) {
    if (const KernelSlot* k = top(explicit_k)) return {k, EntrySource::CompositeExplicit};
    if (const KernelSlot* k = top(implicit_k)) return {k, EntrySource::Decomposition};
    if (!fallback.empty()) {
      if (fallback.back()->kind == RegistrationRecord::Kind::Fallthrough) {
        return {&e.missing_slot, EntrySource::Missing};  // a backend cannot fall through
      }
      return {fallback.back()->slot.get(), EntrySource::Fallback};
    }
    return {&e.missing_slot, EntrySource::Missing};
  }
  if (key == DispatchKey::Autograd && !implicit_k.empty() && explicit_k.empty()) {
    bool has_backend_kernel = false;
    for (int b = 0; b < kNumBackends; ++b) has_backend_kernel |= !e.kernels[b].empty();
    if (!has_backend_kernel) return {top(implicit_k), EntrySource::Decomposition};
  }
  if (!fallback.empty() && fallback.back()->kind == RegistrationRecord::Kind::Fallback) {
    return {fallback.back()->slot.get(), EntrySource::Fallback};
  }
  return {nullptr, EntrySource::Fallthrough};
}

void Dispatcher::Impl::recompute(OperatorEntry& e) {
  uint64_t fallthrough = 0;
  for (int i = 0; i < kNumRuntimeKeys; ++i) {
    Resolution r = resolve(e, i);
    if (r.source == EntrySource::Fallthrough) {
      fallthrough |= uint64_t{1} << static_cast<int>(runtime_key_at(i));
      e.table[i].store(&e.fallthrough_slot, std::memory_order_release);
    } else {
      e.table[i].store(r.slot, std::memory_order_release);
    }
  }
  e.fallthrough_keys.store(fallthrough, std::memory_order_release);
}

void Dispatcher::Impl::recompute_all() {
  for (auto& [name, entry] : entries) recompute(*entry);
}

OperatorEntry& Dispatcher::Impl::entry_for(std::string_view qualified_name) {
  auto it = entries.find(absl::string_view(qualified_name.data(), qualified_name.size()));
  if (it != entries.end()) return *it->second;
  auto entry = std::make_unique<OperatorEntry>(std::string(qualified_name));
  OperatorEntry& ref = *entry;
  entries.emplace(std::string(qualified_name), std::move(entry));
  return ref;
}

RegistrationRecord* Dispatcher::Impl::add_record(RegistrationRecord::Kind kind,
                                                 const Registrant* owner, DispatchKey key) {
  check_open(owner);
  auto record = std::make_unique<RegistrationRecord>();
  record->kind = kind;
  record->owner = owner;
  record->key = key;
  record->id = next_id++;
  RegistrationRecord* raw = record.get();
  records.emplace(raw->id, std::move(record));
  return raw;
}

Registration Dispatcher::define(std::string_view schema_text, const Registrant* owner,
                                OperatorHandle* out_op, OpTraits traits) {
  if (owner == nullptr) owner = app_registrant();
  FunctionSchema schema = parse_schema(schema_text);
  auto signature = std::make_unique<Signature>(make_signature(std::move(schema)));
  signature->idempotent_writes = traits.idempotent_writes;
  std::string name = signature->schema.name.qualified();
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->check_open(owner);
  OperatorEntry& e = impl_->entry_for(name);
  if (e.definition != nullptr) {
    const Signature* existing = e.signature.load(std::memory_order_relaxed);
    fail_with(
        ErrorCode::AlreadyExists, "dispatcher", "operator '", name, "' is already defined by ",
        e.definition->owner->name,
        e.definition->owner->file.empty() ? "" : str_cat(" (", e.definition->owner->file, ")"),
        " as '", existing->schema_text, "'; ", owner->name, " cannot define it again",
        owner->file.empty() ? "" : str_cat(" (", owner->file, ")"));
  }
  RegistrationRecord* record = impl_->add_record(RegistrationRecord::Kind::Definition, owner);
  record->op = &e;
  e.definition = record;
  e.signature.store(signature.release(), std::memory_order_release);
  impl_->recompute(e);
  if (out_op != nullptr) *out_op = OperatorHandle(&e);
  return Registration(record->id);
}

OperatorHandle Dispatcher::get_or_create(std::string_view qualified_name) {
  OperatorName parsed = parse_operator_name(qualified_name);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return OperatorHandle(&impl_->entry_for(parsed.qualified()));
}

std::optional<OperatorHandle> Dispatcher::find(std::string_view qualified_name) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto it = impl_->entries.find(absl::string_view(qualified_name.data(), qualified_name.size()));
  if (it == impl_->entries.end()) return std::nullopt;
  return OperatorHandle(it->second.get());
}

OperatorHandle Dispatcher::find_defined(std::string_view qualified_name) const {
  std::optional<OperatorHandle> op = find(qualified_name);
  if (!op || !op->is_defined()) {
    fail_with(ErrorCode::NotFound, "dispatcher", "unknown operator '", qualified_name,
              "' (no loaded plugin defines it; `loom ops` lists the defined ones)");
  }
  return *op;
}

std::vector<OperatorHandle> Dispatcher::defined_operators() const {
  std::vector<OperatorHandle> out;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    for (const auto& [name, entry] : impl_->entries) {
      if (entry->definition != nullptr) out.emplace_back(entry.get());
    }
  }
  std::sort(out.begin(), out.end(),
            [](const OperatorHandle& a, const OperatorHandle& b) { return a.name() < b.name(); });
  return out;
}

Registration Dispatcher::register_kernel(OperatorHandle op, DispatchKey key, KernelFunction kernel,
                                         const Registrant* owner, std::string debug) {
  LOOM_CHECK(op.valid(), "dispatcher", "register_kernel got an invalid operator handle");
  LOOM_CHECK(is_runtime_key(key) || is_alias_key(key), "dispatcher",
             "cannot register a kernel of '", op.name(), "' for key ", dispatch_key_name(key),
             " (expected a backend, functionality or composite key)");
  LOOM_CHECK(kernel.fn != nullptr, "dispatcher", "null kernel function for '", op.name(),
             "' on key ", dispatch_key_name(key));
  if (owner == nullptr) owner = app_registrant();
  std::lock_guard<std::mutex> lock(impl_->mutex);
  RegistrationRecord* record = impl_->add_record(RegistrationRecord::Kind::Kernel, owner, key);
  record->op = op.entry();
  record->slot = std::make_unique<KernelSlot>(kernel, owner,
                                              debug.empty() ? op.name() : std::move(debug), key);
  op.entry()->kernels[registration_index(key)].push_back(record);
  impl_->recompute(*op.entry());
  return Registration(record->id);
}

Registration Dispatcher::register_fallback(DispatchKey key, KernelFunction kernel,
                                           const Registrant* owner, std::string debug) {
  LOOM_CHECK(is_runtime_key(key), "dispatcher", "cannot register a fallback for key ",
             dispatch_key_name(key), " (expected a backend or functionality key)");
  LOOM_CHECK(kernel.fn != nullptr, "dispatcher", "null fallback function for key ",
             dispatch_key_name(key));
  if (owner == nullptr) owner = app_registrant();
  std::lock_guard<std::mutex> lock(impl_->mutex);
  RegistrationRecord* record = impl_->add_record(RegistrationRecord::Kind::Fallback, owner, key);
  record->slot = std::make_unique<KernelSlot>(
      kernel, owner, debug.empty() ? str_cat(dispatch_key_name(key), " fallback") : debug, key);
  impl_->fallbacks[runtime_index(key)].push_back(record);
  impl_->recompute_all();
  return Registration(record->id);
}

Registration Dispatcher::register_fallthrough(DispatchKey key, const Registrant* owner) {
  LOOM_CHECK(is_functionality_key(key), "dispatcher", "cannot register a fallthrough for key ",
             dispatch_key_name(key), " (only functionality keys can be skipped)");
  if (owner == nullptr) owner = app_registrant();
  std::lock_guard<std::mutex> lock(impl_->mutex);
  RegistrationRecord* record = impl_->add_record(RegistrationRecord::Kind::Fallthrough, owner, key);
  impl_->fallbacks[runtime_index(key)].push_back(record);
  impl_->recompute_all();
  return Registration(record->id);
}

// Unlinks a record and recomputes what it affected; the caller frees it after readers
// are done with it. Requires the mutex.
std::unique_ptr<RegistrationRecord> Dispatcher::Impl::unlink(uint64_t id) {
  auto it = records.find(id);
  if (it == records.end()) return nullptr;
  std::unique_ptr<RegistrationRecord> record = std::move(it->second);
  records.erase(it);
  auto erase_from = [&](std::vector<RegistrationRecord*>& v) {
    v.erase(std::remove(v.begin(), v.end(), record.get()), v.end());
  };
  switch (record->kind) {
    case RegistrationRecord::Kind::Definition: {
      OperatorEntry& e = *record->op;
      e.definition = nullptr;
      retired_signatures.emplace_back(e.signature.exchange(nullptr, std::memory_order_acq_rel));
      recompute(e);
      break;
    }
    case RegistrationRecord::Kind::Kernel:
      erase_from(record->op->kernels[registration_index(record->key)]);
      recompute(*record->op);
      break;
    case RegistrationRecord::Kind::Fallback:
    case RegistrationRecord::Kind::Fallthrough:
      erase_from(fallbacks[runtime_index(record->key)]);
      recompute_all();
      break;
    case RegistrationRecord::Kind::Backend:
      release_backend(record->backend_name);
      break;
  }
  return record;
}

void Dispatcher::Impl::check_open(const Registrant* owner) const {
  if (owner->closing) {
    fail_with(ErrorCode::FailedPrecondition, "dispatcher", "'", owner->name,
              "' is being unloaded; it cannot register anything more");
  }
}

// Note [Freeing what readers may hold]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// An unlinked kernel slot may still be in use by a caller that loaded it from the table
// just before, so it is freed only after synchronize_readers(). A thread that is itself
// inside an op call (a kernel removing a registration, maybe its own) cannot wait: two
// such threads would wait for each other, and its own frames may still use the slot. It
// moves the records to a graveyard instead, which the next deregistration made outside
// any op call frees after its grace period.
void Dispatcher::Impl::reclaim(std::vector<std::unique_ptr<RegistrationRecord>> removed) {
  if (in_read_section()) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& r : removed) graveyard.push_back(std::move(r));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& r : graveyard) removed.push_back(std::move(r));
    graveyard.clear();
  }
  if (!removed.empty()) synchronize_readers();
}

void Dispatcher::deregister(uint64_t registration_id) {
  std::vector<std::unique_ptr<RegistrationRecord>> removed;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (auto record = impl_->unlink(registration_id)) removed.push_back(std::move(record));
  }
  impl_->reclaim(std::move(removed));
}

void Dispatcher::close_registrant(const Registrant* owner) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  owner->closing = true;
}

void Dispatcher::deregister_all(const Registrant* owner) {
  std::vector<std::unique_ptr<RegistrationRecord>> removed;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    std::vector<uint64_t> ids;
    for (const auto& [id, record] : impl_->records) {
      if (record->owner == owner) ids.push_back(id);
    }
    std::sort(ids.rbegin(), ids.rend());  // newest first, like handles going out of scope
    removed.reserve(ids.size());
    for (uint64_t id : ids) removed.push_back(impl_->unlink(id));
  }
  impl_->reclaim(std::move(removed));
}

Dispatcher::Counts Dispatcher::counts_for(const Registrant* owner) const {
  Counts counts;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  for (const auto& [id, record] : impl_->records) {
    if (record->owner != owner) continue;
    switch (record->kind) {
      case RegistrationRecord::Kind::Definition:
        ++counts.ops_defined;
        break;
      case RegistrationRecord::Kind::Kernel:
        ++counts.kernels;
        break;
      case RegistrationRecord::Kind::Fallback:
      case RegistrationRecord::Kind::Fallthrough:
        ++counts.fallbacks;
        break;
      case RegistrationRecord::Kind::Backend:
        break;
    }
  }
  return counts;
}

DispatchKey Dispatcher::register_backend(std::string_view name, const Registrant* owner,
                                         uint64_t* out_registration_id) {
  if (owner == nullptr) owner = app_registrant();
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->check_open(owner);
  DispatchKey key = impl_->acquire_backend(name);
  RegistrationRecord* record = impl_->add_record(RegistrationRecord::Kind::Backend, owner, key);
  record->backend_name = std::string(name);
  if (out_registration_id != nullptr) *out_registration_id = record->id;
  return key;
}

std::optional<DispatchKey> Dispatcher::find_backend(std::string_view name) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->lookup_backend(name);
}

std::optional<DispatchKey> Dispatcher::Impl::lookup_backend(std::string_view name) const {
  if (name == "cpu") return DispatchKey::CPU;
  if (name == "cuda") return DispatchKey::CUDA;
  if (name == "hip") return DispatchKey::HIP;
  if (name == "meta") return DispatchKey::Meta;
  for (int i = 0; i < kNumVendorBackends; ++i) {
    if (vendor_slots[i].users > 0 && vendor_slots[i].name == name) {
      return static_cast<DispatchKey>(static_cast<int>(DispatchKey::Vendor0) + i);
    }
  }
  return std::nullopt;
}

DispatchKey Dispatcher::Impl::acquire_backend(std::string_view name) {
  if (std::optional<DispatchKey> builtin = lookup_backend(name);
      builtin && !(*builtin >= DispatchKey::Vendor0 && is_backend_key(*builtin))) {
    return *builtin;
  }
  LOOM_CHECK(!name.empty() && name.size() <= 64, "dispatcher", "invalid backend name '", name,
             "' (expected 1 to 64 characters)");
  int free_slot = -1;
  for (int i = 0; i < kNumVendorBackends; ++i) {
    if (vendor_slots[i].users > 0 && vendor_slots[i].name == name) {
      ++vendor_slots[i].users;
      return static_cast<DispatchKey>(static_cast<int>(DispatchKey::Vendor0) + i);
    }
    if (vendor_slots[i].users == 0 && free_slot < 0) free_slot = i;
  }
  if (free_slot < 0) {
    std::string taken;
    for (const auto& s : vendor_slots) taken += (taken.empty() ? "" : ", ") + s.name;
    fail("dispatcher", "cannot register backend '", name, "': all ", kNumVendorBackends,
         " vendor backend slots are taken (", taken, ")");
  }
  vendor_slots[free_slot] = {std::string(name), 1};
  set_vendor_backend_name(free_slot, std::string(name));
  return static_cast<DispatchKey>(static_cast<int>(DispatchKey::Vendor0) + free_slot);
}

void Dispatcher::Impl::release_backend(const std::string& name) {
  for (auto& slot : vendor_slots) {
    if (slot.users > 0 && slot.name == name) {
      --slot.users;
      return;
    }
  }
}

std::vector<TableRow> Dispatcher::dump_table(OperatorHandle op) const {
  std::vector<TableRow> rows;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  for (int i = 0; i < kNumRuntimeKeys; ++i) {
    DispatchKey key = runtime_key_at(i);
    if (key >= DispatchKey::Vendor0 && is_backend_key(key)) {
      int vendor = static_cast<int>(key) - static_cast<int>(DispatchKey::Vendor0);
      if (impl_->vendor_slots[vendor].users == 0 && op.entry()->kernels[i].empty()) continue;
    }
    Impl::Resolution r = impl_->resolve(*op.entry(), i);
    TableRow row{key, r.source, "", ""};
    if (r.slot != nullptr && r.slot->owner != nullptr) {
      row.provider = r.slot->owner->name;
      row.debug = r.slot->debug;
      row.dtype_claim = r.slot->dtype_claim.load(std::memory_order_relaxed);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

int Dispatcher::declare_dtypes(OperatorHandle op, DispatchKey key, const Registrant* owner,
                               uint64_t mask) {
  LOOM_CHECK(op.valid(), "dispatcher", "declare_dtypes got an invalid operator handle");
  std::lock_guard<std::mutex> lock(impl_->mutex);
  int applied = 0;
  for (RegistrationRecord* record : op.entry()->kernels[registration_index(key)]) {
    if (record->owner != owner) continue;
    record->slot->dtype_claim.fetch_or(mask, std::memory_order_relaxed);
    ++applied;
  }
  return applied;
}

std::string Dispatcher::defined_by(OperatorHandle op) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const RegistrationRecord* def = op.entry()->definition;
  return def == nullptr ? "" : def->owner->name;
}

}  // namespace loom::dispatch
