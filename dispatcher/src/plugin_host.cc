// Loading, handshaking, initialising, reporting and unloading plugins.
#include "loom/dispatcher/plugin_host.h"

#include <algorithm>
#include <filesystem>
#include <mutex>

#include <boost/dll/shared_library.hpp>

#include "dispatcher_internal.h"
#include "loom/core/device.h"
#include "loom/core/error.h"
#include "loom/dispatcher/elf_inspection.h"
#include "loom/dispatcher/extensions.h"
#include "loom/dispatcher/trace.h"
#include "plugin_record.h"

namespace loom::dispatch {

// Note [Plugin loading sequence]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// 1. The file must exist and be an ELF shared object exporting LOOM_PLUGIN_ENTRY_SYMBOL
//    in its dynamic symbol table (kept by stripped libraries); both are checked by
//    reading the file (elf_inspection.h) before anything of it runs, so a wrong file
//    never executes its constructors.
// 2. dlopen through Boost.DLL (RTLD_NOW | RTLD_LOCAL: unresolved symbols fail here,
//    plugins do not see each other's symbols), then call the entry with the host
//    services table.
// 3. The returned LoomPluginApi is checked: struct_size, ABI major equal to ours, ABI
//    minor not newer than ours, a valid name not already loaded.
// 4. initialize() registers everything through the host services. If it fails, every
//    registration it made is removed and the library is closed.
// Every failure is a loom::Error("plugin-host") naming the plugin file. Loading and
// unloading are refused from inside an op call, and run under an operation mutex that
// is separate from the one guarding the plugin list, so kernels can still list plugins
// while another thread waits for them to finish.

namespace {

std::string take_error_message(LoomError* err) {
  return take_error(err).message;
}

// "{gemm: loom, conv: loom}", or "{}".
std::string describe_options(const std::vector<std::pair<std::string, std::string>>& options) {
  std::string out = "{";
  for (const auto& [key, value] : options) {
    out += (out.size() > 1 ? ", " : "") + key + ": " + value;
  }
  return out + "}";
}

bool valid_plugin_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

struct PluginHost::Impl {
  // Serialises loads and unloads; held across plugin code and grace periods.
  std::mutex operation_mutex;
  // Guards the lists only, briefly: kernels may list plugins while another thread loads.
  mutable std::mutex mutex;
  std::vector<std::unique_ptr<PluginRecord>> plugins;
  // Plugins whose init failed after creating objects that are still alive.
  std::vector<std::unique_ptr<PluginRecord>> failed_but_mapped;

  PluginRecord* find_by_name(std::string_view name) const {
    for (const auto& p : plugins) {
      if (p->registrant.name == name) return p.get();
    }
    return nullptr;
  }

  // Stops new allocations through the plugin's allocators (waits for readers).
  static void remove_allocators(PluginRecord& plugin) {
    std::vector<uint64_t> allocator_regs;
    {
      std::lock_guard<std::mutex> lock(plugin.mutex);
      allocator_regs.swap(plugin.allocator_registrations);
    }
    for (uint64_t reg : allocator_regs) AllocatorRegistry::instance().remove(reg);
  }

  // Puts the allocators back (an unload that had to be refused).
  static void restore_allocators(PluginRecord& plugin) {
    std::lock_guard<std::mutex> lock(plugin.mutex);
    for (size_t i = 0; i < plugin.device_types.size(); ++i) {
      plugin.allocator_registrations.push_back(
          AllocatorRegistry::instance().add(plugin.device_types[i], plugin.allocators[i].get()));
    }
  }

  // Refuses the plugin's later registrations (a kernel of it may still be running).
  static void close(PluginRecord& plugin) {
    {
      std::lock_guard<std::mutex> lock(plugin.mutex);
      plugin.closing = true;
    }
    Dispatcher::instance().close_registrant(&plugin.registrant);
  }

  // Removes everything the plugin registered; waits for readers.
  static void undo_registrations(PluginRecord& plugin) {
    std::vector<uint64_t> observers;
    {
      std::lock_guard<std::mutex> lock(plugin.mutex);
      observers.swap(plugin.observer_registrations);
    }
    // Before deregister_all, whose wait for readers covers observers being notified.
    for (uint64_t id : observers) AllocatorRegistry::instance().remove_observer(id);
    trace::remove_tracers_of(&plugin.registrant);  // waits for threads inside the tracer
    remove_extensions_of(&plugin.registrant);
    Dispatcher::instance().deregister_all(&plugin.registrant);
    remove_allocators(plugin);
    std::vector<int16_t> device_types;
    {
      std::lock_guard<std::mutex> lock(plugin.mutex);
      device_types.swap(plugin.device_types);
    }
    for (int16_t type : device_types) DeviceTypeRegistry::instance().unregister_type(type);
  }

  static PluginInfo info(PluginRecord& p) {
    PluginInfo info;
    info.name = p.registrant.name;
    info.version = p.version;
    info.file = p.registrant.file;
    info.abi_major = p.abi_major;
    info.abi_minor = p.abi_minor;
    info.options = p.options;
    Dispatcher::Counts counts = Dispatcher::instance().counts_for(&p.registrant);
    info.ops_defined = counts.ops_defined;
    info.kernels = counts.kernels;
    info.fallbacks = counts.fallbacks;
    info.live_objects = p.live_objects.load(std::memory_order_acquire);
    std::lock_guard<std::mutex> lock(p.mutex);
    info.device_types = p.device_type_names;
    for (const auto& allocator : p.allocators)
      info.device_counts.push_back(allocator->device_count());
    info.backends = p.backends;
    info.attributes = p.attributes;
    info.capabilities = p.capabilities;
    return info;
  }
};

PluginHost& PluginHost::instance() {
  static PluginHost* host = new PluginHost();  // never destroyed: plugins stay until exit
  return *host;
}

PluginHost::PluginHost() : impl_(new Impl) {}

PluginInfo PluginHost::load(const std::string& file,
                            const std::vector<std::pair<std::string, std::string>>& options) {
  LOOM_CHECK(!in_read_section(), "plugin-host", "cannot load plugin file '", file,
             "' from inside an op call (expected a caller outside any kernel)");
  std::error_code ec;
  std::filesystem::path path = std::filesystem::absolute(file, ec);
  std::string shown = path.string();
  if (!std::filesystem::exists(path, ec)) {
    fail_with(ErrorCode::NotFound, "plugin-host", "cannot load plugin file '", shown,
              "': the file does not exist");
  }
  LOOM_CHECK(std::filesystem::is_regular_file(path, ec), "plugin-host", "cannot load plugin file '",
             shown, "': expected a regular file");
  path = std::filesystem::canonical(path, ec);
  shown = path.string();

  std::vector<std::pair<std::string, std::string>> sorted_options = options;
  std::sort(sorted_options.begin(), sorted_options.end());
  std::lock_guard<std::mutex> operation(impl_->operation_mutex);
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    for (const auto& p : impl_->plugins) {
      if (p->registrant.file != shown) continue;
      // Its options were read at initialisation: other ones would be silently ignored.
      if (p->options != sorted_options) {
        fail_with(ErrorCode::AlreadyExists, "plugin-host", "plugin '", p->registrant.name, "' (",
                  shown, ") is already loaded with options ", describe_options(p->options),
                  ", not ", describe_options(sorted_options),
                  ": unload it before loading it with other options");
      }
      return Impl::info(*p);
    }
  }

  // 1. Inspect without loading.
  ElfInspection elf = inspect_shared_object(shown, LOOM_PLUGIN_ENTRY_SYMBOL);
  LOOM_CHECK(elf.is_64bit_shared, "plugin-host", "plugin file '", shown,
             "' is not a shared library (expected an ELF shared object; found ", elf.problem, ")");
  LOOM_CHECK(elf.problem.empty(), "plugin-host", "plugin file '", shown,
             "' is damaged (expected a complete ELF shared object; found that ", elf.problem, ")");
  if (!elf.exports_symbol) {
    fail_with(ErrorCode::NotFound, "plugin-host", "plugin file '", shown,
              "' does not export the entry symbol '", LOOM_PLUGIN_ENTRY_SYMBOL,
              "' (expected a loom plugin built with the loom SDK; found ", elf.exported_symbols,
              " exported symbols, none of them the entry)");
  }

  // 2. Load and call the entry.
  auto record = std::make_unique<PluginRecord>();
  record->registrant.file = shown;
  LoomPluginEntryFn entry = nullptr;
  try {
    record->library.load(boost::dll::fs::path(shown),
                         boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    entry = record->library.get<LoomError*(const LoomHostApi*, const LoomPluginApi**)>(
        LOOM_PLUGIN_ENTRY_SYMBOL);
  } catch (const std::exception& e) {
    fail("plugin-host", "cannot load plugin file '", shown, "': ", e.what());
  }
  const LoomPluginApi* api = nullptr;
  if (LoomError* err = entry(host_api(), &api)) {
    fail_with(ErrorCode::VersionMismatch, "plugin-host", "plugin file '", shown,
              "' rejected this host (ABI ", LOOM_ABI_VERSION_MAJOR, ".", LOOM_ABI_VERSION_MINOR,
              "): ", take_error_message(err));
  }

  // 3. Check the plugin's table.
  LOOM_CHECK(api != nullptr, "plugin-host", "plugin file '", shown,
             "': the entry returned no plugin table and no error");
  LOOM_CHECK(api->struct_size != 0, "plugin-host", "plugin file '", shown,
             "': the plugin table has struct_size 0 (expected sizeof(LoomPluginApi) as built)");
  LOOM_CHECK(LOOM_HAS_FIELD(api, LoomPluginApi, abi_minor), "plugin-host", "plugin file '", shown,
             "': the plugin table is too small (", api->struct_size,
             " bytes) to hold its ABI version");
  if (api->abi_major != LOOM_ABI_VERSION_MAJOR) {
    fail_with(ErrorCode::VersionMismatch, "plugin-host", "plugin file '", shown,
              "' was built for loom ABI ", api->abi_major, ".", api->abi_minor,
              " but this host provides ABI ", LOOM_ABI_VERSION_MAJOR, ".", LOOM_ABI_VERSION_MINOR,
              " (the major version must match; rebuild the plugin against this SDK)");
  }
  if (api->abi_minor > LOOM_ABI_VERSION_MINOR) {
    fail_with(ErrorCode::VersionMismatch, "plugin-host", "plugin file '", shown,
              "' needs loom ABI ", api->abi_major, ".", api->abi_minor,
              " but this host provides only ", LOOM_ABI_VERSION_MAJOR, ".", LOOM_ABI_VERSION_MINOR,
              " (host minor version too old; upgrade loom)");
  }
  LOOM_CHECK(LOOM_HAS_FIELD(api, LoomPluginApi, shutdown) && api->initialize != nullptr &&
                 api->name != nullptr,
             "plugin-host", "plugin file '", shown,
             "': the plugin table lacks a name or initialize function");
  std::string name = api->name;
  LOOM_CHECK(valid_plugin_name(name), "plugin-host", "plugin file '", shown, "': invalid name '",
             name, "' (expected [a-z0-9_]+, at most 64 characters)");
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (PluginRecord* existing = impl_->find_by_name(name)) {
      fail_with(ErrorCode::AlreadyExists, "plugin-host", "plugin file '", shown,
                "': a plugin named '", name, "' is already loaded from '",
                existing->registrant.file, "'");
    }
    impl_->plugins.reserve(impl_->plugins.size() + 1);  // the push_back below cannot throw
  }
  record->api = api;
  record->registrant.name = name;
  record->version = api->version != nullptr ? api->version : "";
  record->abi_major = api->abi_major;
  record->abi_minor = api->abi_minor;
  record->options = sorted_options;

  // 4. Initialise; on failure undo whatever it registered. Only operation_mutex is
  // held: kernels of other plugins may list plugins meanwhile.
  std::vector<LoomKeyValue> kv;
  kv.reserve(options.size());
  for (const auto& [k, v] : options) kv.push_back({k.c_str(), v.c_str()});
  if (LoomError* err = api->initialize(record->context(), kv.data(), kv.size())) {
    std::string message = take_error_message(err);
    Impl::close(*record);
    Impl::undo_registrations(*record);
    if (record->live_objects.load(std::memory_order_acquire) != 0) {
      // Storages from its allocator outlive the failed init: keep the code mapped.
      std::lock_guard<std::mutex> lock(impl_->mutex);
      impl_->failed_but_mapped.push_back(std::move(record));
    }
    fail_with(ErrorCode::FailedPrecondition, "plugin-host", "plugin '", name, "' (", shown,
              ") failed to initialise: ", message);
  }
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->plugins.push_back(std::move(record));
  return Impl::info(*impl_->plugins.back());
}

LoadReport PluginHost::load_manifest(const DeploymentManifest& manifest) {
  LoadReport report;
  std::vector<std::string> dirs = plugin_search_dirs(manifest);
  for (const PluginRequest& request : manifest.plugins) {
    std::string label = request.name.empty() ? request.path : request.name;
    try {
      std::string file = resolve_plugin_file(request, dirs);
      PluginInfo info = load(file, request.options);
      report.loaded.push_back(info.name);
    } catch (const Error& e) {
      // A conflict with what is loaded (a name, other options) is the manifest's mistake,
      // not a missing library or device: it stops the load even for an optional entry.
      if (request.required || e.code() == ErrorCode::AlreadyExists) {
        fail("plugin-host", request.required ? "required plugin '" : "optional plugin '", label,
             "' from manifest ", manifest.source, " failed: ", e.what());
      }
      report.skipped.emplace_back(label, e.what());
    }
  }
  return report;
}

void PluginHost::unload(const std::string& name) {
  LOOM_CHECK(!in_read_section(), "plugin-host", "cannot unload plugin '", name,
             "' from inside an op call (its code may be running on this very stack)");
  std::lock_guard<std::mutex> operation(impl_->operation_mutex);
  PluginRecord* found = nullptr;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    found = impl_->find_by_name(name);
  }
  if (found == nullptr) {
    fail_with(ErrorCode::NotFound, "plugin-host", "cannot unload plugin '", name,
              "': no plugin of that name is loaded");
  }
  PluginRecord& plugin = *found;
  // Check, stop new allocations, then check again: a storage created between the first
  // check and the allocators' removal is caught by the second.
  auto refuse_if_alive = [&] {
    int64_t live = plugin.live_objects.load(std::memory_order_acquire);
    if (live != 0) {
      fail_with(ErrorCode::FailedPrecondition, "plugin-host", "cannot unload plugin '", name,
                "': ", live,
                " storage(s) allocated by its devices or tensor slot value(s) it set are still "
                "alive (release every tensor on its devices or holding its slot values first)");
    }
  };
  refuse_if_alive();
  Impl::remove_allocators(plugin);
  try {
    refuse_if_alive();
  } catch (const Error&) {
    Impl::restore_allocators(plugin);
    throw;
  }
  // From here on the plugin can register nothing new (a kernel of it still running
  // could try), and once its registrations are gone and readers have left, no call
  // can reach it (Note [Plugin lifetime]); only then may it shut down.
  Impl::close(plugin);
  Impl::undo_registrations(plugin);
  std::string shutdown_error;
  if (LOOM_HAS_FIELD(plugin.api, LoomPluginApi, shutdown) && plugin.api->shutdown != nullptr) {
    if (LoomError* err = plugin.api->shutdown()) shutdown_error = take_error_message(err);
  }
  std::unique_ptr<PluginRecord> record;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto it = std::find_if(impl_->plugins.begin(), impl_->plugins.end(),
                           [&](const auto& p) { return p.get() == &plugin; });
    record = std::move(*it);
    impl_->plugins.erase(it);
  }
  record.reset();  // closes the library
  LOOM_CHECK(shutdown_error.empty(), "plugin-host", "plugin '", name,
             "' was unloaded but its shutdown reported: ", shutdown_error);
}

std::vector<PluginInfo> PluginHost::plugins() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<PluginInfo> out;
  for (const auto& p : impl_->plugins) out.push_back(Impl::info(*p));
  return out;
}

bool PluginHost::is_loaded(const std::string& name) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->find_by_name(name) != nullptr;
}

}  // namespace loom::dispatch
