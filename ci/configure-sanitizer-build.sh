#!/usr/bin/env bash
# Configures build-asan/: everything built with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer, the libFuzzer targets among it, but the CPU plugin, which
# comes unsanitized from build/ (built here when missing; Note [The sanitizer build's CPU
# plugin]; LOOM_SANITIZE_CPU_KERNELS=1 sanitizes it too). ci/test-sanitizers.sh and
# ci/fuzz.sh share it (Note [One sanitizer build for the tests and the fuzzers]).
#   ci/configure-sanitizer-build.sh [CMAKE_ARGUMENT...]
#
# Note [One sanitizer build for the tests and the fuzzers]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# libFuzzer needs clang; the sanitized test suite needs only a sanitizer. Built by one
# clang build, the core, schema and dispatcher libraries are compiled once for both (the
# fuzzed three also carry coverage instrumentation, tests/fuzz/CMakeLists.txt), where a
# GCC sanitizer build and a clang fuzzer build compiled them twice; and clang compiles
# the sanitized tests about a third faster than GCC 12. clang links its sanitizer
# runtimes into executables only, so the plugins of this build leave the runtime's
# symbols to the executable that loads them (LOOM_PLUGIN_ALLOW_UNDEFINED).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

extra=(clang libclang-rt-14-dev)  # libFuzzer is only a Recommends of clang
# clang's OpenMP runtime, for the CPU plugin when it is built here
[[ "${LOOM_SANITIZE_CPU_KERNELS:-0}" == 1 ]] && extra+=(libomp-14-dev)
ci/install-deps.sh "${extra[@]}"
cpu_plugin=()
if [[ "${LOOM_SANITIZE_CPU_KERNELS:-0}" != 1 ]]; then
  if [[ ! -f build/lib/loom/plugins/libloom_plugin_cpu.so ]]; then
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
    cmake --build build --target cpu
  fi
  cpu_plugin=(-DLOOM_CPU_PLUGIN_PREBUILT="$PWD/build/lib/loom/plugins/libloom_plugin_cpu.so")
else
  cpu_plugin=(-DLOOM_CPU_PLUGIN_PREBUILT=)
fi
# -g1 (line tables only) is all a sanitizer report needs for file:line frames.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1 \
  -DLOOM_SANITIZE=ON -DLOOM_BUILD_FUZZERS=ON -DLOOM_BUILD_BENCHMARKS=OFF "${cpu_plugin[@]}" "$@"
