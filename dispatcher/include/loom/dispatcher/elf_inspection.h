// Reading a plugin file's ELF headers and dynamic symbol table without loading it, so
// a wrong file never runs its constructors (Note [Plugin loading sequence]).
#pragma once

#include <cstddef>
#include <string>

namespace loom::dispatch {

struct ElfInspection {
  bool readable = false;
  bool is_elf = false;           // ELF magic present
  bool is_64bit_shared = false;  // ELFCLASS64, ET_DYN, for this machine
  bool exports_symbol = false;   // the symbol is defined in .dynsym
  size_t exported_symbols = 0;   // defined dynamic symbols
  std::string problem;           // what was wrong, for messages
};

// Looks for a defined, exported `symbol` in the dynamic symbol table (.dynsym), which
// stripped libraries keep.
ElfInspection inspect_shared_object(const std::string& path, const std::string& symbol);

}  // namespace loom::dispatch
