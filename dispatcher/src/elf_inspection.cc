// ELF inspection of plugin files: headers, then the .dynsym table and its string table.
#include "elf_inspection.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <vector>

namespace loom::dispatch {

namespace {

// Reads `size` bytes at `offset`; false when the file is shorter.
bool read_at(std::ifstream& in, uint64_t offset, void* out, size_t size, uint64_t file_size) {
  if (offset > file_size || size > file_size - offset) return false;
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(static_cast<char*>(out), static_cast<std::streamsize>(size));
  return static_cast<bool>(in);
}

}  // namespace

// Reads only the ELF header, the section headers and the dynamic symbol and string
// tables: plugin files can be hundreds of MB (debug information).
ElfInspection inspect_shared_object(const std::string& path, const std::string& symbol) {
  ElfInspection result;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    result.problem = "the file cannot be read";
    return result;
  }
  uint64_t file_size = static_cast<uint64_t>(in.tellg());
  result.readable = true;
  unsigned char ident[EI_NIDENT];
  if (!read_at(in, 0, ident, sizeof(ident), file_size) ||
      std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    result.problem = "no ELF header";
    return result;
  }
  result.is_elf = true;
  Elf64_Ehdr header;
  if (ident[EI_CLASS] != ELFCLASS64 || !read_at(in, 0, &header, sizeof(header), file_size)) {
    result.problem = "not a 64-bit ELF file";
    return result;
  }
  if (header.e_type != ET_DYN) {
    result.problem =
        "an ELF file that is not a shared object (e_type " + std::to_string(header.e_type) + ")";
    return result;
  }
  result.is_64bit_shared = true;
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  if (header.e_shentsize != sizeof(Elf64_Shdr) ||
      !read_at(in, header.e_shoff, sections.data(), sections.size() * sizeof(Elf64_Shdr),
               file_size)) {
    result.problem = "its section headers are missing or truncated";
    return result;
  }
  for (const Elf64_Shdr& section : sections) {
    if (section.sh_type != SHT_DYNSYM || section.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strings_header = sections[section.sh_link];
    std::vector<Elf64_Sym> symbols(section.sh_size / sizeof(Elf64_Sym));
    std::vector<char> strings(strings_header.sh_size);
    if (!read_at(in, section.sh_offset, symbols.data(), symbols.size() * sizeof(Elf64_Sym),
                 file_size) ||
        !read_at(in, strings_header.sh_offset, strings.data(), strings.size(), file_size)) {
      result.problem = "its dynamic symbol table is truncated";
      return result;
    }
    for (const Elf64_Sym& sym : symbols) {
      if (sym.st_shndx == SHN_UNDEF || sym.st_name >= strings.size()) continue;
      ++result.exported_symbols;
      const char* name = strings.data() + sym.st_name;
      size_t max_len = strings.size() - sym.st_name;
      if (strnlen(name, max_len) == symbol.size() &&
          std::memcmp(name, symbol.data(), symbol.size()) == 0) {
        result.exports_symbol = true;
      }
    }
  }
  return result;
}

}  // namespace loom::dispatch
