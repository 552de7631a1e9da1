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

// Throws an error a table entry returned (and destroys it) as
// loom::Error("[component] ..."): a message that already starts with "[component] " keeps
// its text; another gets "what: " in front when `what` is given. Nothing for NULL.
void check_table_error(LoomError* err, const std::string& component, const char* what = nullptr);

}  // namespace loom::dispatch
