// ELF inspection of plugin files: headers, then the .dynsym table and its string table.
#include "elf_inspection.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace loom::dispatch {

ElfInspection inspect_shared_object(const std::string& path, const std::string& symbol) {
  ElfInspection result;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    result.problem = "the file cannot be read";
    return result;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  result.readable = true;
  auto fits = [&](size_t offset, size_t size) {
    return offset <= bytes.size() && size <= bytes.size() - offset;
  };
  if (!fits(0, EI_NIDENT) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) {
    result.problem = "no ELF header";
    return result;
  }
  result.is_elf = true;
  if (bytes[EI_CLASS] != ELFCLASS64 || !fits(0, sizeof(Elf64_Ehdr))) {
    result.problem = "not a 64-bit ELF file";
    return result;
  }
  Elf64_Ehdr header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  if (header.e_type != ET_DYN) {
    result.problem =
        "an ELF file that is not a shared object (e_type " + std::to_string(header.e_type) + ")";
    return result;
  }
  result.is_64bit_shared = true;
  if (header.e_shentsize != sizeof(Elf64_Shdr) ||
      !fits(header.e_shoff, size_t{header.e_shnum} * sizeof(Elf64_Shdr))) {
    result.problem = "its section headers are missing or truncated";
    return result;
  }
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  std::memcpy(sections.data(), bytes.data() + header.e_shoff, sections.size() * sizeof(Elf64_Shdr));
  for (const Elf64_Shdr& section : sections) {
    if (section.sh_type != SHT_DYNSYM || section.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strings = sections[section.sh_link];
    if (!fits(section.sh_offset, section.sh_size) || !fits(strings.sh_offset, strings.sh_size)) {
      result.problem = "its dynamic symbol table is truncated";
      return result;
    }
    size_t count = section.sh_size / sizeof(Elf64_Sym);
    for (size_t i = 0; i < count; ++i) {
      Elf64_Sym sym;
      std::memcpy(&sym, bytes.data() + section.sh_offset + i * sizeof(Elf64_Sym), sizeof(sym));
      if (sym.st_shndx == SHN_UNDEF || sym.st_name >= strings.sh_size) continue;
      ++result.exported_symbols;
      const char* name = bytes.data() + strings.sh_offset + sym.st_name;
      size_t max_len = strings.sh_size - sym.st_name;
      if (strnlen(name, max_len) == symbol.size() &&
          std::memcmp(name, symbol.data(), symbol.size()) == 0) {
        result.exports_symbol = true;
      }
    }
  }
  return result;
}

}  // namespace loom::dispatch
