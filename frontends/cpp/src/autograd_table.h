// How the C++ frontend reaches the autograd plugin: its "loom.autograd" extension table
// (loom/autograd_api.h), found for each call inside a read section so that the plugin
// cannot unload while the call runs (Note [Lock-free dispatch and safe unload]).
#pragma once

#include "loom/autograd_api.h"
#include "loom/core/read_section.h"

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

}  // namespace loom::autograd::detail
