// Detecting the CPU's vector instruction sets and applying LOOM_CPU_ISA
// (Note [ISA dispatch] in isa.h).
#include "isa.h"

#include <cstdlib>
#include <string>
#include <string_view>

namespace loom::cpu {

namespace {

// The best level this CPU (and OS) runs.
Isa detect_isa() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return Isa::Avx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::Avx2;
#endif
  return Isa::Generic;
}

std::string supported_list(Isa best) {
  std::string s;
  for (int level = static_cast<int>(best); level >= 0; --level) {
    s += s.empty() ? "" : ", ";
    s += isa_name(static_cast<Isa>(level));
  }
  return s;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx512:
      return "avx512";
    case Isa::Avx2:
      return "avx2";
    case Isa::Generic:
      break;
  }
  return "generic";
}

void configure_isa(sdk::Registrar& r) {
  const Isa best = detect_isa();
  Isa chosen = best;
  const char* raw = std::getenv("LOOM_CPU_ISA");
  if (raw != nullptr && *raw != '\0') {
    const std::string_view requested(raw);
    bool known = false;
    for (Isa level : {Isa::Generic, Isa::Avx2, Isa::Avx512}) {
      if (requested == isa_name(level)) {
        known = true;
        chosen = level;
      }
    }
    if (!known) {
      throw sdk::Error("[cpu] LOOM_CPU_ISA must be one of avx512, avx2, generic, found '" +
                       std::string(requested) + "'");
    }
    if (static_cast<int>(chosen) > static_cast<int>(best)) {
      throw sdk::Error("[cpu] LOOM_CPU_ISA=" + std::string(requested) +
                           " is not supported by this CPU (it supports " + supported_list(best) +
                           ")",
                       LOOM_STATUS_UNIMPLEMENTED);
    }
  }
  detail::g_isa.store(chosen, std::memory_order_relaxed);
  r.attribute("isa", isa_name(chosen));
}

}  // namespace loom::cpu
