// The part of CUDA C++ that loom's kernels use, for the host compiler (Note [The GPU
// emulator]): the qualifiers, the built-in indices, __syncthreads, warp shuffles, atomics
// and the launch. A launch runs every block of the grid, one after another, each block's
// threads as fibers that switch only at barriers (block_scheduler.cc).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// Static shared memory: one variable for every thread of the block. Blocks run one at a
// time, under one lock for every launch, so a function-local static is exactly that.
#define __shared__ static

struct dim3 {
  unsigned int x = 1, y = 1, z = 1;
  constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1)  // NOLINT
      : x(x_), y(y_), z(z_) {}
};
struct uint3 {
  unsigned int x = 0, y = 0, z = 0;
};

namespace loom::gpu::emu {

// What a running thread sees of its launch (the built-in variables).
struct ThreadView {
  uint3 thread_idx;
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
};

// The thread the scheduler runs now on this host thread.
extern thread_local const ThreadView* g_thread;

void sync_block();                // __syncthreads()
unsigned char* dynamic_shared();  // the launch's dynamic shared memory
enum class Shuffle { Down, Xor };
// The warp shuffle on bytes: every live lane of the warp offers `mine`, and `out` gets
// the value of the lane that `kind` and `operand` name within segments of `width` lanes
// (its own value where that lane is outside its segment or has exited).
void shuffle_bytes(const void* mine, void* out, size_t bytes, Shuffle kind, int operand, int width);

template <typename T>
T shuffle(T value, Shuffle kind, int operand, int width) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 16,
                "a warp shuffle moves at most 16 bytes of a trivially copyable type");
  T out;
  shuffle_bytes(&value, &out, sizeof(T), kind, operand, width);
  return out;
}

struct LaunchConfig {
  dim3 grid, block;
  size_t shared_bytes;
  unsigned int warp_size = 32;  // 64: a kernel written for AMD's wavefronts
};

// AMD's v_mfma_f32_16x16x16 (f16, bf16_1k) over the calling 64-lane wavefront, in the
// instruction's lane layout (Note [MFMA fragments] in kernels/gemm_math.h): each lane
// gives its four elements of A and of B (as floats, which hold 16-bit values exactly) and
// adds the sums over k to its four accumulator elements. Every lane of the wavefront must
// reach it; a kernel of 32-lane warps may not use it.
void matrix_core_product_16x16x16(const float a[4], const float b[4], float c[4]);

// Runs the grid: `thread_body` once for every thread (what each thread reads of g_thread is
// its own). Any error (a bad configuration, a barrier that not every thread reaches) is
// what the next gpuGetLastError returns.
void run_grid(const LaunchConfig& config, void (*thread_body)(void* closure), void* closure);

// kernel<<<config>>>(args...) (launch_kernel in runtime/gpu_runtime.h): the arguments are
// converted to the kernel's parameter types once, as a launch copies them, and every
// thread calls the kernel with its own copies of those.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), const LaunchConfig& config, Args&&... args) {
  static_assert(sizeof...(Args) == sizeof...(Params), "a launch passes every parameter");
  struct Closure {
    void (*kernel)(Params...);
    std::tuple<Params...> params;
  } closure{kernel, {static_cast<Params>(std::forward<Args>(args))...}};
  run_grid(
      config,
      [](void* c) {
        auto* self = static_cast<Closure*>(c);
        std::apply(self->kernel, self->params);
      },
      &closure);
}

// Every atomic below is whole: fibers switch only at barriers.
template <typename T>
T atomic_add(T* address, T value) {
  const T old = *address;
  *address = old + value;
  return old;
}

}  // namespace loom::gpu::emu

#define threadIdx (::loom::gpu::emu::g_thread->thread_idx)
#define blockIdx (::loom::gpu::emu::g_thread->block_idx)
#define blockDim (::loom::gpu::emu::g_thread->block_dim)
#define gridDim (::loom::gpu::emu::g_thread->grid_dim)

inline void __syncthreads() {
  ::loom::gpu::emu::sync_block();
}
inline void __threadfence() {}
inline void __threadfence_system() {}

template <typename T>
T __shfl_down_sync(unsigned int /*mask: every lane*/, T value, unsigned int delta, int width = 32) {
  return ::loom::gpu::emu::shuffle(value, ::loom::gpu::emu::Shuffle::Down, static_cast<int>(delta),
                                   width);
}
template <typename T>
T __shfl_xor_sync(unsigned int /*mask: every lane*/, T value, int lane_mask, int width = 32) {
  return ::loom::gpu::emu::shuffle(value, ::loom::gpu::emu::Shuffle::Xor, lane_mask, width);
}

// CUDA declares these in the global namespace.
using std::isfinite;
using std::isinf;
using std::isnan;

inline unsigned int __umulhi(unsigned int a, unsigned int b) {
  return static_cast<unsigned int>((static_cast<uint64_t>(a) * b) >> 32);
}
inline float rsqrtf(float x) {
  return 1.0f / std::sqrt(x);
}
inline double rsqrt(double x) {
  return 1.0 / std::sqrt(x);
}

inline unsigned int atomicCAS(unsigned int* address, unsigned int compare, unsigned int value) {
  const unsigned int old = *address;
  if (old == compare) *address = value;
  return old;
}
inline unsigned long long atomicCAS(unsigned long long* address, unsigned long long compare,
                                    unsigned long long value) {
  const unsigned long long old = *address;
  if (old == compare) *address = value;
  return old;
}
inline float atomicAdd(float* address, float value) {
  return ::loom::gpu::emu::atomic_add(address, value);
}
inline double atomicAdd(double* address, double value) {
  return ::loom::gpu::emu::atomic_add(address, value);
}
inline int atomicAdd(int* address, int value) {
  return static_cast<int>(::loom::gpu::emu::atomic_add(reinterpret_cast<unsigned int*>(address),
                                                       static_cast<unsigned int>(value)));
}
inline unsigned int atomicAdd(unsigned int* address, unsigned int value) {
  return ::loom::gpu::emu::atomic_add(address, value);
}
inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
  return ::loom::gpu::emu::atomic_add(address, value);
}
