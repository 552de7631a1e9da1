// Named extension tables: how a plugin offers a C table of functions to apps and other
// plugins (the profiler's control table, for one) without anyone linking it.
#pragma once

#include <string>

#include "loom/dispatcher/dispatcher.h"

namespace loom::dispatch {

// Publishes `table` as `name` ([a-z0-9_.]+); throws loom::Error("[extensions] ...") on a
// bad name or when the name is taken.
void publish_extension(const std::string& name, const void* table, const Registrant* owner);
// The table published as `name`, or nullptr. Valid until its owner unloads.
const void* find_extension(const std::string& name);
// Removes every table `owner` published (plugin unload).
void remove_extensions_of(const Registrant* owner);

}  // namespace loom::dispatch
