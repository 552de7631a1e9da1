// The `loom` CLI's subcommands. Each prints to stdout and returns the exit status.
#pragma once

#include <string>

namespace loom::cli {

int list_plugins();
int list_ops(const std::string& namespace_filter);
// The standard ops as a markdown table (Note [The op table]).
int ops_table();
int show_dispatch(const std::string& op_name);
int run_smoke();

}  // namespace loom::cli
