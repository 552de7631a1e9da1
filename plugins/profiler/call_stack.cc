// Call stacks through libunwind: unw_step walks the frames, unw_get_proc_name names each
// from the ELF symbol tables (static functions included), abi::__cxa_demangle makes the
// C++ names readable.
#include "call_stack.h"

#define UNW_LOCAL_ONLY
#include <cxxabi.h>
#include <libunwind.h>

#include <cstdio>
#include <cstdlib>

namespace loom::profiler {

std::string capture_call_stack(int skip) {
  constexpr int kMaxFrames = 32;
  unw_context_t context;
  unw_cursor_t cursor;
  if (unw_getcontext(&context) != 0 || unw_init_local(&cursor, &context) != 0) return "";
  std::string out;
  int frame = 0;
  while (unw_step(&cursor) > 0 && frame < kMaxFrames + skip) {
    if (frame++ < skip) continue;
    char name[512];
    unw_word_t offset = 0;
    if (unw_get_proc_name(&cursor, name, sizeof(name), &offset) != 0) {
      unw_word_t ip = 0;
      unw_get_reg(&cursor, UNW_REG_IP, &ip);
      std::snprintf(name, sizeof(name), "0x%lx", static_cast<unsigned long>(ip));
      out += name;
      out += '\n';
      continue;
    }
    int status = 0;
    char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    out += status == 0 && demangled != nullptr ? demangled : name;
    std::free(demangled);
    char suffix[32];
    std::snprintf(suffix, sizeof(suffix), "+0x%lx\n", static_cast<unsigned long>(offset));
    out += suffix;
  }
  return out;
}

}  // namespace loom::profiler
