// How the C++ frontend reaches the autograd plugin: its "loom.autograd" extension table
// (loom/autograd_api.h), found for each call inside a read section so that the plugin
// cannot unload while the call runs (Note [Lock-free dispatch and safe unload]).
#pragma once

#include <string>

#include "loom/autograd_api.h"
#include "loom/core/error.h"
#include "loom/core/read_section.h"
#include "loom/dispatcher/dispatcher.h"

namespace loom::autograd::detail {

// The table, or nullptr when the plugin is not loaded. Call inside a ReadSection.
const LoomAutogradApi* find_table();

// Rethrows a table error as loom::Error("[autograd] ..."); messages from the plugin
// already name the entry point that failed.
void check(LoomError* err);

[[noreturn]] void throw_not_loaded(const char* what);

// Runs fn(table) with the plugin kept loaded; throws "[autograd] what: the autograd
// plugin is not loaded ..." when it is not.
template <typename F>
decltype(auto) with_table(const char* what, F&& fn) {
  ReadSection section;
  const LoomAutogradApi* table = find_table();
  if (table == nullptr) [[unlikely]]
    throw_not_loaded(what);
  return fn(*table);
}

// The result of a C callback the plugin calls back into the frontend with (a hook, a
// function's backward): NULL when `body` returns, else the error it threw as a LoomError; a
// loom::Error keeps its code and message, another exception becomes "[autograd] <prefix>..."
// (the plugin's callers take no exceptions across the C boundary).
template <typename F>
LoomError* callback_result(const char* prefix, F&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const Error& e) {
    return dispatch::make_host_error(static_cast<int32_t>(e.code()), e.what());
  } catch (const std::exception& e) {
    return dispatch::make_host_error(LOOM_STATUS_INTERNAL,
                                     std::string("[autograd] ") + prefix + e.what());
  } catch (...) {
    return dispatch::make_host_error(
        LOOM_STATUS_INTERNAL, std::string("[autograd] ") + prefix + "a non-standard exception");
  }
}

}  // namespace loom::autograd::detail
