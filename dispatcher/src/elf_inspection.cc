// ELF inspection of plugin files: headers, then the .dynsym table and its string table.
#include "loom/dispatcher/elf_inspection.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <vector>

namespace loom::dispatch {

namespace {

// Whether `size` bytes at `offset` lie within a file of `file_size` bytes (no overflow).
bool fits(uint64_t offset, uint64_t size, uint64_t file_size) {
  return offset <= file_size && size <= file_size - offset;
}

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
  // Note [Sizes read from a plugin file]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // Every offset and size below comes from the file and is checked against the file's
  // size before anything is allocated for it, so a damaged or hostile file gets a
  // message, never a huge allocation.
  if (header.e_shentsize != sizeof(Elf64_Shdr)) {
    result.problem = "its section header entries are " + std::to_string(header.e_shentsize) +
                     " bytes, expected " + std::to_string(sizeof(Elf64_Shdr));
    return result;
  }
  const uint64_t table_bytes = uint64_t{header.e_shnum} * sizeof(Elf64_Shdr);
  if (!fits(header.e_shoff, table_bytes, file_size)) {
    result.problem = "its section header table is truncated (" + std::to_string(header.e_shnum) +
                     " entries at offset " + std::to_string(header.e_shoff) +
                     " but the file has only " + std::to_string(file_size) + " bytes)";
    return result;
  }
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  if (!read_at(in, header.e_shoff, sections.data(), table_bytes, file_size)) {
    result.problem = "its section header table cannot be read";
    return result;
  }
  for (const Elf64_Shdr& section : sections) {
    if (section.sh_type != SHT_DYNSYM || section.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strings_header = sections[section.sh_link];
    if (!fits(section.sh_offset, section.sh_size, file_size) ||
        !fits(strings_header.sh_offset, strings_header.sh_size, file_size)) {
      result.problem = "its dynamic symbol table is truncated (.dynsym claims " +
                       std::to_string(section.sh_size) + " bytes at offset " +
                       std::to_string(section.sh_offset) + " and its strings " +
                       std::to_string(strings_header.sh_size) + " bytes at offset " +
                       std::to_string(strings_header.sh_offset) + ", but the file has only " +
                       std::to_string(file_size) + " bytes)";
      return result;
    }
    std::vector<Elf64_Sym> symbols(section.sh_size / sizeof(Elf64_Sym));
    std::vector<char> strings(strings_header.sh_size);
    if (!read_at(in, section.sh_offset, symbols.data(), symbols.size() * sizeof(Elf64_Sym),
                 file_size) ||
        !read_at(in, strings_header.sh_offset, strings.data(), strings.size(), file_size)) {
      result.problem = "its dynamic symbol table cannot be read";
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
