// Run-time choice of the instruction set the CPU plugin's hot loops run in: AVX-512,
// AVX2+FMA or the x86-64 baseline, picked once at plugin init.
//
// Note [ISA dispatch]
// ~~~~~~~~~~~~~~~~~~~
// The plugin is compiled for the baseline x86-64 (SSE2) so it loads on any x86-64 CPU.
// The loops that matter (the contiguous and scalar-broadcast loops of the pointwise
// kernels, elementwise_loop.h) are also compiled twice more inside the same translation
// units, as function templates with GCC target attributes (run_with_isa below): the
// loop body is an always_inline template, so each clone is auto-vectorized for its
// instruction set. Keeping them in the same TUs (no per-ISA copies of the kernel files)
// keeps the plugin's build time down. Only the element types whose loops vectorize
// with plain code get clones (kIsaCloned: bool, integers, float32, float64); float16
// and bfloat16 convert through float in software and stay on the baseline loop.
//
// The level is chosen at init: the best the CPU supports (__builtin_cpu_supports, which
// also checks that the OS saves the vector registers), or LOOM_CPU_ISA=avx512|avx2|generic
// to force one (init fails with "[cpu] LOOM_CPU_ISA ..." for another value or for a
// level the CPU lacks). The plugin attribute "isa" reports it.
//
// Results do not depend on the level: the plugin is compiled with -ffp-contract=off (no
// fused multiply-adds the baseline loop would not do), the vector instructions GCC
// emits for +, -, *, /, sqrt, min/max and conversions round exactly like the scalar
// ones, and calls to libm (exp, sin, ...) are the same calls in every clone.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "loom/sdk/plugin.hpp"

namespace loom::cpu {

enum class Isa : int { Generic = 0, Avx2 = 1, Avx512 = 2 };

namespace detail {
inline std::atomic<Isa> g_isa{Isa::Generic};
}  // namespace detail

// The level chosen at init.
inline Isa active_isa() {
  return detail::g_isa.load(std::memory_order_relaxed);
}

// "generic", "avx2", "avx512"
const char* isa_name(Isa isa);

// Detects the CPU's best level, applies LOOM_CPU_ISA and sets the plugin attribute "isa";
// throws sdk::Error("[cpu] LOOM_CPU_ISA ...") for an unknown or unsupported value.
void configure_isa(sdk::Registrar& r);

// Whether loops over these element types get AVX2 / AVX-512 clones.
template <typename T>
inline constexpr bool kIsaClonedType = std::is_arithmetic_v<T>;  // not Half / BFloat16
template <typename... T>
inline constexpr bool kIsaCloned = (kIsaClonedType<T> && ...);

namespace detail {

// Clones of Loop::run(f, args...) compiled for each level (Loop::run is always_inline).
template <typename Loop, typename F, typename... Args>
[[gnu::target(
    "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,prefer-vector-width=512")]] [[gnu::noinline]] void
run_avx512(const F& f, Args... args) {
  Loop::run(f, args...);
}

template <typename Loop, typename F, typename... Args>
[[gnu::target("avx2,fma")]] [[gnu::noinline]] void run_avx2(const F& f, Args... args) {
  Loop::run(f, args...);
}

}  // namespace detail

// Runs Loop::run(f, args...) in the active level's clone (when `Cloned`), else the
// baseline code.
template <typename Loop, bool Cloned, typename F, typename... Args>
inline void run_with_isa(const F& f, Args... args) {
  if constexpr (Cloned) {
    switch (active_isa()) {
      case Isa::Avx512:
        detail::run_avx512<Loop>(f, args...);
        return;
      case Isa::Avx2:
        detail::run_avx2<Loop>(f, args...);
        return;
      case Isa::Generic:
        break;
    }
  }
  Loop::run(f, args...);
}

}  // namespace loom::cpu
