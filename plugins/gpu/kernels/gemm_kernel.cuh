// loom's tiled GEMM kernels (Note [Tiled GEMM] in gemm_math.h; float16 and bfloat16 on
// the matrix units, Note [Tensor-core GEMM]: CUDA's tensor cores and AMD's matrix cores)
// over any operands: a batch of [m, n] = [m, k] @ [k, n] products whose elements an
// `Operands` object reads through cursors (Note [GEMM operand cursors]) and whose results
// it stores, so strided matrices (linalg.cu) and the implicit matrices of a convolution
// (conv.cu, Note [Implicit-GEMM convolution]) share one kernel. Included by those two
// translation units only.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

// LOOM_GPU_WMMA: CUDA's tensor cores (sm_70 on). LOOM_GPU_MFMA: AMD's matrix cores, on the
// devices that have them (device_has_mfma). The emulator has both (Note [The GPU emulator]).
#if defined(LOOM_GPU_EMULATED)
#include "../emulator/emulated_wmma.h"
#define LOOM_GPU_WMMA 1
#define LOOM_GPU_MFMA 1
#elif defined(__CUDACC__) && !defined(__HIPCC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#define LOOM_GPU_WMMA 1
#define LOOM_GPU_MFMA 0
#elif defined(__HIPCC__)
#define LOOM_GPU_WMMA 0
#define LOOM_GPU_MFMA 1
#else
#define LOOM_GPU_WMMA 0
#define LOOM_GPU_MFMA 0
#endif

#include "device_types.h"
#include "elementwise_launcher.cuh"
#include "gemm_math.h"

namespace loom::gpu {

// Operands that can give 16-byte runs (Note [Vector operand loads]): kGivesARuns says
// that `a_runs` tells whether A's rows are read in runs along k and a_run(z, row, kk)
// points at a run's first element; kGivesBRuns, `b_runs` and b_run(z, kk, col) likewise
// for B's rows along n.
template <typename Operands, typename = void>
struct GivesARuns : std::false_type {};
template <typename Operands>
struct GivesARuns<Operands, std::void_t<decltype(Operands::kGivesARuns)>>
    : std::bool_constant<Operands::kGivesARuns> {};
template <typename Operands, typename = void>
struct GivesBRuns : std::false_type {};
template <typename Operands>
struct GivesBRuns<Operands, std::void_t<decltype(Operands::kGivesBRuns)>>
    : std::bool_constant<Operands::kGivesBRuns> {};

// Operands (Note [GEMM operand cursors]): a_row(z, row) and b_col(z, col) give cursors
// for in-range rows and columns, a(cursor, kk) and b(cursor, kk) read OpMath<T> elements
// for in-range kk, and store(z, row, col, acc) stores each output with its sum.
template <typename Tile, typename T, typename Operands>
__global__ void __launch_bounds__(Tile::kThreads, Tile::kMinBlocksPerSm)
    tiled_gemm_kernel(Operands ops, GemmDims d, int64_t row_tiles) {
  using A = OpMath<T>;
  using Four = Vector<A, 4>;
  constexpr int kRowsPerThread = Tile::kRowsPerThread, kColsPerThread = Tile::kColsPerThread;
  __shared__ __align__(32) A a_slice[2][Tile::kDepth * Tile::kAStride];
  __shared__ __align__(32) A b_slice[2][Tile::kDepth * Tile::kBStride];
  const int t = threadIdx.x;
  // float32 operands in 16-byte runs: each thread stages one run of A and one of B a step
  constexpr bool kFloatRuns = std::is_same_v<T, float> && Tile::kALoads == 4 && Tile::kBLoads == 4;
  constexpr bool kARuns = kFloatRuns && GivesARuns<Operands>::value;
  constexpr bool kBRuns = kFloatRuns && GivesBRuns<Operands>::value;
  bool a_in_runs = false, b_in_runs = false;
  if constexpr (kARuns) a_in_runs = ops.a_runs;
  if constexpr (kBRuns) b_in_runs = ops.b_runs;
  // the k of this thread's A loads and the column of its B loads, the same at every step
  const int a_k = gemm_a_slot<Tile>(t, 0).col;
  const int b_column = gemm_b_slot<Tile>(t, 0).col;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * Tile::kCols;
  for (int64_t z = blockIdx.z; z < d.batch; z += gridDim.z) {
    for (int64_t tile = blockIdx.y; tile < row_tiles; tile += gridDim.y) {
      const int64_t row0 = tile * Tile::kRows;
      decltype(ops.a_row(z, row0)) a_rows[Tile::kALoads];
      bool a_inside[Tile::kALoads];
      LOOM_GPU_UNROLL
      for (int i = 0; i < Tile::kALoads; ++i) {
        const int64_t r = row0 + gemm_a_slot<Tile>(t, i).row;
        a_inside[i] = r < d.m;
        a_rows[i] = ops.a_row(z, a_inside[i] ? r : row0);
      }
      const bool b_inside = col0 + b_column < d.n;
      const auto b_cursor = ops.b_col(z, b_inside ? col0 + b_column : col0);
      // this thread's elements of the next slices: one at a time through the cursors, or
      // one 16-byte run of each operand (Note [Vector operand loads])
      A a_next[Tile::kALoads], b_next[Tile::kBLoads];
      auto fetch = [&](int64_t k0) {  // this thread's elements of the slices at k0
        if constexpr (kARuns) {
          if (a_in_runs) {
            const TileSlot run = gemm_a_run<Tile>(t);
            const int64_t r = row0 + run.row, ka = k0 + run.col;
            const T* first = ops.a_run(z, r < d.m ? r : row0, ka < d.k ? ka : 0);
            if (r < d.m && ka + 4 <= d.k) {
              const Four v = *reinterpret_cast<const Four*>(first);
              LOOM_GPU_UNROLL
              for (int e = 0; e < 4; ++e) a_next[e] = v.v[e];
            } else {
              LOOM_GPU_UNROLL
              for (int e = 0; e < 4; ++e) a_next[e] = r < d.m && ka + e < d.k ? first[e] : A(0);
            }
          }
        }
        if constexpr (kBRuns) {
          if (b_in_runs) {
            const TileSlot run = gemm_b_run<Tile>(t);
            const int64_t kb = k0 + run.row, c = col0 + run.col;
            const T* first = ops.b_run(z, kb < d.k ? kb : 0, c < d.n ? c : col0);
            if (kb < d.k && c + 4 <= d.n) {
              const Four v = *reinterpret_cast<const Four*>(first);
              LOOM_GPU_UNROLL
              for (int e = 0; e < 4; ++e) b_next[e] = v.v[e];
            } else {
              LOOM_GPU_UNROLL
              for (int e = 0; e < 4; ++e) b_next[e] = kb < d.k && c + e < d.n ? first[e] : A(0);
            }
          }
        }
        if (!a_in_runs) {
          LOOM_GPU_UNROLL
          for (int i = 0; i < Tile::kALoads; ++i) {
            const int64_t kk = k0 + a_k;
            a_next[i] = a_inside[i] && kk < d.k ? ops.a(a_rows[i], kk) : A(0);
          }
        }
        if (!b_in_runs) {
          LOOM_GPU_UNROLL
          for (int i = 0; i < Tile::kBLoads; ++i) {
            const int64_t kk = k0 + gemm_b_slot<Tile>(t, i).row;
            b_next[i] = b_inside && kk < d.k ? ops.b(b_cursor, kk) : A(0);
          }
        }
      };
      auto stage = [&](int s) {  // the registers into shared-memory stage s
        if (a_in_runs) {         // four k rows of the k-major A slice
          const TileSlot run = gemm_a_run<Tile>(t);
          LOOM_GPU_UNROLL
          for (int e = 0; e < 4; ++e)
            a_slice[s][gemm_a_shared<Tile>(run.row, run.col + e)] = a_next[e];
        } else {
          LOOM_GPU_UNROLL
          for (int i = 0; i < Tile::kALoads; ++i) {
            const TileSlot sa = gemm_a_slot<Tile>(t, i);
            a_slice[s][gemm_a_shared<Tile>(sa.row, sa.col)] = a_next[i];
          }
        }
        if (b_in_runs) {  // one 16-byte store
          const TileSlot run = gemm_b_run<Tile>(t);
          Four v;
          LOOM_GPU_UNROLL
          for (int e = 0; e < 4; ++e) v.v[e] = b_next[e];
          *reinterpret_cast<Four*>(&b_slice[s][gemm_b_shared<Tile>(run.row, run.col)]) = v;
        } else {
          LOOM_GPU_UNROLL
          for (int i = 0; i < Tile::kBLoads; ++i) {
            const TileSlot sb = gemm_b_slot<Tile>(t, i);
            b_slice[s][gemm_b_shared<Tile>(sb.row, sb.col)] = b_next[i];
          }
        }
      };
      A acc[kRowsPerThread][kColsPerThread] = {};
      fetch(0);
      stage(0);
      __syncthreads();
      int s = 0;
      for (int64_t k0 = 0; k0 < d.k; k0 += Tile::kDepth) {
        const bool more = k0 + Tile::kDepth < d.k;
        if (more) fetch(k0 + Tile::kDepth);  // in flight while the block multiplies
        LOOM_GPU_UNROLL
        for (int kk = 0; kk < Tile::kDepth; ++kk) {
          A a_frag[kRowsPerThread], b_frag[kColsPerThread];
          LOOM_GPU_UNROLL
          for (int g = 0; g < kRowsPerThread; g += 4) {
            const Four v = *reinterpret_cast<const Four*>(
                &a_slice[s][gemm_a_shared<Tile>(gemm_output_row<Tile>(t, g), kk)]);
            LOOM_GPU_UNROLL
            for (int e = 0; e < 4; ++e) a_frag[g + e] = v.v[e];
          }
          LOOM_GPU_UNROLL
          for (int g = 0; g < kColsPerThread; g += 4) {
            const Four v = *reinterpret_cast<const Four*>(
                &b_slice[s][gemm_b_shared<Tile>(kk, gemm_output_col<Tile>(t, g))]);
            LOOM_GPU_UNROLL
            for (int e = 0; e < 4; ++e) b_frag[g + e] = v.v[e];
          }
          LOOM_GPU_UNROLL
          for (int i = 0; i < kRowsPerThread; ++i) {
            LOOM_GPU_UNROLL
            for (int j = 0; j < kColsPerThread; ++j) acc[i][j] += a_frag[i] * b_frag[j];
          }
        }
        if (more) stage(s ^ 1);  // stage s ^ 1 was last read before the previous barrier
        __syncthreads();
        s ^= 1;
      }
      LOOM_GPU_UNROLL
      for (int i = 0; i < kRowsPerThread; ++i) {
        const int64_t r = row0 + gemm_output_row<Tile>(t, i);
        if (r >= d.m) continue;
        LOOM_GPU_UNROLL
        for (int j = 0; j < kColsPerThread; ++j) {
          const int64_t col = col0 + gemm_output_col<Tile>(t, j);
          if (col < d.n) ops.store(z, r, col, acc[i][j]);
        }
      }
    }
  }
}

#if LOOM_GPU_WMMA
template <typename T>
struct WmmaElement;
template <>
struct WmmaElement<Half> {
  using type = __half;
  static __device__ __forceinline__ __half from(float v) { return __float2half_rn(v); }
};
template <>
struct WmmaElement<BFloat16> {
  using type = __nv_bfloat16;
  static __device__ __forceinline__ __nv_bfloat16 from(float v) { return __float2bfloat16_rn(v); }
};

// A MatrixCore (Note [Tensor-core GEMM]) on CUDA's WMMA fragments.
template <typename T>
struct WmmaCore {
  using Tiling = TensorTiling<32>;
  using Element = typename WmmaElement<T>::type;
  using AFragment =
      nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, Element, nvcuda::wmma::row_major>;
  using BFragment =
      nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, Element, nvcuda::wmma::row_major>;
  using Accumulator = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>;
  static __device__ __forceinline__ Element from(float v) { return WmmaElement<T>::from(v); }
  static __device__ __forceinline__ void zero(Accumulator& c) {
    nvcuda::wmma::fill_fragment(c, 0.0f);
  }
  // the 16 x 16 fragments at p, row-major, `ld` elements a row
  static __device__ __forceinline__ void load_a(AFragment& f, const Element* p, int ld) {
    nvcuda::wmma::load_matrix_sync(f, p, ld);
  }
  static __device__ __forceinline__ void load_b(BFragment& f, const Element* p, int ld) {
    nvcuda::wmma::load_matrix_sync(f, p, ld);
  }
  static __device__ __forceinline__ void mma(Accumulator& c, const AFragment& a,
                                             const BFragment& b) {
    nvcuda::wmma::mma_sync(c, a, b, c);
  }
  static __device__ __forceinline__ void store(float* p, const Accumulator& c, int ld) {
    nvcuda::wmma::store_matrix_sync(p, c, ld, nvcuda::wmma::mem_row_major);
  }
};
#endif

#if LOOM_GPU_MFMA
// The device passes for the architectures arch_has_mfma names compile the instructions.
#if defined(__HIP_DEVICE_COMPILE__) && \
    (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__))
#define LOOM_GPU_MFMA_INSTRUCTIONS 1
typedef _Float16 MfmaHalf4 __attribute__((ext_vector_type(4)));
typedef short MfmaShort4 __attribute__((ext_vector_type(4)));
typedef float MfmaFloat4 __attribute__((ext_vector_type(4)));
#else
#define LOOM_GPU_MFMA_INSTRUCTIONS 0
#endif

// A MatrixCore (Note [Tensor-core GEMM]) on AMD's 16 x 16 x 16 MFMA instructions: each
// lane holds its four elements of a fragment (Note [MFMA fragments]). Launched only where
// device_has_mfma(); other device passes (gfx1030) compile a trap in its place.
template <typename T>
struct MfmaCore {
  static_assert(std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, "16-bit elements");
  using Tiling = TensorTiling<kMfmaWaveSize>;
  using Element = T;
  struct AFragment {
    uint16_t bits[4];
  };
  using BFragment = AFragment;
  struct Accumulator {
    float v[4];
  };
  static __device__ __forceinline__ Element from(float v) { return T(v); }
  static __device__ __forceinline__ int lane() { return threadIdx.x % kMfmaWaveSize; }
  static __device__ __forceinline__ void zero(Accumulator& c) {
    LOOM_GPU_UNROLL
    for (int e = 0; e < 4; ++e) c.v[e] = 0.0f;
  }
  // A lane's four A elements are neighbours along k: one 8-byte read (the slice's rows
  // and the fragments' k offsets keep it aligned; GpuGemmMath checks).
  static __device__ __forceinline__ void load_a(AFragment& f, const Element* p, int ld) {
    const TileSlot s = mfma_a_element(lane(), 0);
    const Vector<uint16_t, 4> run =
        *reinterpret_cast<const Vector<uint16_t, 4>*>(&p[s.row * ld + s.col]);
    LOOM_GPU_UNROLL
    for (int e = 0; e < 4; ++e) f.bits[e] = run.v[e];
  }
  static __device__ __forceinline__ void load_b(BFragment& f, const Element* p, int ld) {
    LOOM_GPU_UNROLL
    for (int e = 0; e < 4; ++e) {
      const TileSlot s = mfma_b_element(lane(), e);
      f.bits[e] = p[s.row * ld + s.col].x;
    }
  }
  static __device__ __forceinline__ void mma(Accumulator& c, const AFragment& a,
                                             const BFragment& b) {
#if LOOM_GPU_MFMA_INSTRUCTIONS
    MfmaFloat4 acc;
    __builtin_memcpy(&acc, c.v, sizeof(acc));
    if constexpr (std::is_same_v<T, Half>) {
      MfmaHalf4 va, vb;
      __builtin_memcpy(&va, a.bits, sizeof(va));
      __builtin_memcpy(&vb, b.bits, sizeof(vb));
      acc = __builtin_amdgcn_mfma_f32_16x16x16f16(va, vb, acc, 0, 0, 0);
    } else {
      MfmaShort4 va, vb;
      __builtin_memcpy(&va, a.bits, sizeof(va));
      __builtin_memcpy(&vb, b.bits, sizeof(vb));
      acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(va, vb, acc, 0, 0, 0);
    }
    __builtin_memcpy(c.v, &acc, sizeof(acc));
#elif defined(LOOM_GPU_EMULATED)
    float fa[4], fb[4];
    for (int e = 0; e < 4; ++e) {
      T ea, eb;
      ea.x = a.bits[e];
      eb.x = b.bits[e];
      fa[e] = static_cast<float>(ea);
      fb[e] = static_cast<float>(eb);
    }
    emu::matrix_core_product_16x16x16(fa, fb, c.v);
#else
    (void)c, (void)a, (void)b;
    __builtin_trap();  // a device without matrix cores never launches this kernel
#endif
  }
  static __device__ __forceinline__ void store(float* p, const Accumulator& c, int ld) {
    LOOM_GPU_UNROLL
    for (int e = 0; e < 4; ++e) {
      const TileSlot s = mfma_accumulator_element(lane(), e);
      p[s.row * ld + s.col] = c.v[e];
    }
  }
};

#if defined(__HIPCC__)
// Whether the current device has MFMA matrix cores (arch_has_mfma), asked once per
// device; devices numbered past kDevices keep the SIMT tiles.
inline bool device_has_mfma() {
  constexpr int kDevices = 64;
  static std::atomic<int> known[kDevices];  // 0: not asked yet, 1: none, 2: MFMA
  int device = 0;
  if (gpuGetDevice(&device) != gpuSuccess || device < 0 || device >= kDevices) return false;
  int state = known[device].load(std::memory_order_relaxed);
  if (state == 0) {
    gpuDeviceProp_t prop;
    const bool mfma =
        gpuGetDeviceProperties(&prop, device) == gpuSuccess && arch_has_mfma(prop.gcnArchName);
    state = mfma ? 2 : 1;
    known[device].store(state, std::memory_order_relaxed);
  }
  return state == 2;
}
#endif
#endif

#if LOOM_GPU_WMMA || LOOM_GPU_MFMA
// Note [Tensor-core GEMM] in gemm_math.h: float16 and bfloat16 on a MatrixCore's
// fragments, two shared-memory stages.
template <typename Core, typename T, typename Operands>
__global__ void __launch_bounds__(Core::Tiling::kThreads)
    tensor_core_gemm_kernel(Operands ops, GemmDims d, int64_t row_tiles) {
  using Tiling = typename Core::Tiling;
  using W = typename Core::Element;
  using Run = Vector<W, kTensorVector>;
  // an element of T as the matrix units' type: the same 16-bit format, bits copied
  static_assert(sizeof(W) == sizeof(T), "the matrix units' elements are T's 16-bit formats");
  auto bits_of = [](const T& v) {
    W w;
    memcpy(&w, &v, sizeof(W));
    return w;
  };
  const W zero = Core::from(0.0f);
  constexpr int kLoads = Tiling::kLoads;
  constexpr bool kARuns = GivesARuns<Operands>::value, kBRuns = GivesBRuns<Operands>::value;
  bool a_in_runs = false, b_in_runs = false;  // Note [Vector operand loads]
  if constexpr (kARuns) a_in_runs = ops.a_runs;
  if constexpr (kBRuns) b_in_runs = ops.b_runs;
  __shared__ __align__(32) W a_tile[2][kTensorTile * kTensorAStride];
  __shared__ __align__(32) W b_tile[2][kTensorTileK * kTensorBStride];
  __shared__ __align__(32) float c_tile[kTensorTile * kTensorCStride];
  const int t = threadIdx.x;
  const TileSlot origin = tensor_warp_origin(t / Tiling::kWarpSize);
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kTensorTile;
  for (int64_t z = blockIdx.z; z < d.batch; z += gridDim.z) {
    for (int64_t tile = blockIdx.y; tile < row_tiles; tile += gridDim.y) {
      const int64_t row0 = tile * kTensorTile;
      // cursors (Note [GEMM operand cursors]): this thread's one B column is kept; its A
      // rows are cheap to address and would cost as many live cursors, so each fetch
      // takes them
      const int b_column = tensor_b_slot<Tiling>(t, 0).col;
      const bool b_inside = col0 + b_column < d.n;
      const auto b_cursor = ops.b_col(z, b_inside ? col0 + b_column : col0);
      // this thread's elements of the next slices, in runs (Note [Vector operand loads]) or
      // one at a time (element i in run i / kTensorVector)
      Run a_next[Tiling::kRuns], b_next[Tiling::kRuns];
      auto fetch = [&](int64_t k0) {  // the slices at k0, into registers
        if constexpr (kARuns) {
          if (a_in_runs) {
            LOOM_GPU_UNROLL
            for (int i = 0; i < Tiling::kRuns; ++i) {
              const TileSlot run = tensor_a_run<Tiling>(t, i);
              const int64_t r = row0 + run.row, ka = k0 + run.col;
              const auto* first = ops.a_run(z, r < d.m ? r : row0, ka < d.k ? ka : 0);
              if (r < d.m && ka + kTensorVector <= d.k) {
                a_next[i] = *reinterpret_cast<const Run*>(first);
              } else {
                LOOM_GPU_UNROLL
                for (int e = 0; e < kTensorVector; ++e) {
                  a_next[i].v[e] = r < d.m && ka + e < d.k ? bits_of(first[e]) : zero;
                }
              }
            }
          }
        }
        if constexpr (kBRuns) {
          if (b_in_runs) {
            LOOM_GPU_UNROLL
            for (int i = 0; i < Tiling::kRuns; ++i) {
              const TileSlot run = tensor_b_run<Tiling>(t, i);
              const int64_t kb = k0 + run.row, c = col0 + run.col;
              const auto* first = ops.b_run(z, kb < d.k ? kb : 0, c < d.n ? c : col0);
              if (kb < d.k && c + kTensorVector <= d.n) {
                b_next[i] = *reinterpret_cast<const Run*>(first);
              } else {
                LOOM_GPU_UNROLL
                for (int e = 0; e < kTensorVector; ++e) {
                  b_next[i].v[e] = kb < d.k && c + e < d.n ? bits_of(first[e]) : zero;
                }
              }
            }
          }
        }
        LOOM_GPU_UNROLL
        for (int i = 0; i < kLoads; ++i) {
          if (!a_in_runs) {
            const TileSlot sa = tensor_a_slot<Tiling>(t, i);
            const int64_t r = row0 + sa.row, ka = k0 + sa.col;
            a_next[i / kTensorVector].v[i % kTensorVector] = Core::from(
                r < d.m && ka < d.k ? static_cast<float>(ops.a(ops.a_row(z, r), ka)) : 0.0f);
          }
          if (!b_in_runs) {
            const int64_t kb = k0 + tensor_b_slot<Tiling>(t, i).row;
            b_next[i / kTensorVector].v[i % kTensorVector] =
                Core::from(b_inside && kb < d.k ? static_cast<float>(ops.b(b_cursor, kb)) : 0.0f);
          }
        }
      };
      auto stage = [&](int s) {  // the registers into shared-memory stage s
        LOOM_GPU_UNROLL
        for (int i = 0; i < Tiling::kRuns; ++i) {
          if (a_in_runs) {
            const TileSlot run = tensor_a_run<Tiling>(t, i);
            *reinterpret_cast<Run*>(&a_tile[s][run.row * kTensorAStride + run.col]) = a_next[i];
          }
          if (b_in_runs) {
            const TileSlot run = tensor_b_run<Tiling>(t, i);
            *reinterpret_cast<Run*>(&b_tile[s][run.row * kTensorBStride + run.col]) = b_next[i];
          }
        }
        LOOM_GPU_UNROLL
        for (int i = 0; i < kLoads; ++i) {
          if (!a_in_runs) {
            const TileSlot sa = tensor_a_slot<Tiling>(t, i);
            a_tile[s][sa.row * kTensorAStride + sa.col] =
                a_next[i / kTensorVector].v[i % kTensorVector];
          }
          if (!b_in_runs) {
            const TileSlot sb = tensor_b_slot<Tiling>(t, i);
            b_tile[s][sb.row * kTensorBStride + sb.col] =
                b_next[i / kTensorVector].v[i % kTensorVector];
          }
        }
      };
      typename Core::Accumulator acc[2][2];
      LOOM_GPU_UNROLL
      for (int i = 0; i < 2; ++i) {
        LOOM_GPU_UNROLL
        for (int j = 0; j < 2; ++j) Core::zero(acc[i][j]);
      }
      fetch(0);
      stage(0);
      __syncthreads();
      int s = 0;
      for (int64_t k0 = 0; k0 < d.k; k0 += kTensorTileK) {
        const bool more = k0 + kTensorTileK < d.k;
        if (more) fetch(k0 + kTensorTileK);  // in flight while the fragments multiply
        LOOM_GPU_UNROLL
        for (int kk = 0; kk < kTensorTileK; kk += 16) {
          typename Core::AFragment fa[2];
          typename Core::BFragment fb[2];
          LOOM_GPU_UNROLL
          for (int i = 0; i < 2; ++i) {
            Core::load_a(fa[i], &a_tile[s][(origin.row + i * 16) * kTensorAStride + kk],
                         kTensorAStride);
            Core::load_b(fb[i], &b_tile[s][kk * kTensorBStride + origin.col + i * 16],
                         kTensorBStride);
          }
          LOOM_GPU_UNROLL
          for (int i = 0; i < 2; ++i) {
            LOOM_GPU_UNROLL
            for (int j = 0; j < 2; ++j) Core::mma(acc[i][j], fa[i], fb[j]);
          }
        }
        if (more) stage(s ^ 1);  // stage s ^ 1 was last read before the previous barrier
        __syncthreads();
        s ^= 1;
      }
      LOOM_GPU_UNROLL
      for (int i = 0; i < 2; ++i) {
        LOOM_GPU_UNROLL
        for (int j = 0; j < 2; ++j) {
          Core::store(&c_tile[(origin.row + i * 16) * kTensorCStride + origin.col + j * 16],
                      acc[i][j], kTensorCStride);
        }
      }
      __syncthreads();
      for (int e = t; e < kTensorTile * kTensorTile; e += Tiling::kThreads) {
        const int r = e / kTensorTile, c = e % kTensorTile;
        if (row0 + r < d.m && col0 + c < d.n) {
          ops.store(z, row0 + r, col0 + c, c_tile[r * kTensorCStride + c]);
        }
      }
      __syncthreads();  // c_tile and stage 0 are written again by the next tile
    }
  }
}

// Which matrix units take a 16-bit product: WMMA on CUDA, MFMA where the device has it.
// The emulator takes MFMA, or what LOOM_GPU_EMULATOR_MATRIX_UNITS names: "wmma", "mfma",
// or "none" (the SIMT tiles, as on gfx1030); any other value is UnknownSetting, which the
// caller refuses.
enum class MatrixUnits { None, Wmma, Mfma, UnknownSetting };
inline MatrixUnits matrix_units() {
#if defined(LOOM_GPU_EMULATED)
  static const MatrixUnits chosen = [] {
    const char* v = std::getenv("LOOM_GPU_EMULATOR_MATRIX_UNITS");
    if (v == nullptr || std::strcmp(v, "mfma") == 0) return MatrixUnits::Mfma;
    if (std::strcmp(v, "wmma") == 0) return MatrixUnits::Wmma;
    return std::strcmp(v, "none") == 0 ? MatrixUnits::None : MatrixUnits::UnknownSetting;
  }();
  return chosen;
#elif LOOM_GPU_WMMA
  return MatrixUnits::Wmma;
#else
  return device_has_mfma() ? MatrixUnits::Mfma : MatrixUnits::None;
#endif
}
#endif

// Launches the kernels over d on `stream`: the matrix-core kernel for float16 and bfloat16
// where the device has matrix units, else the large or small SIMT tile (Note [Tiled
// GEMM]; kMayTakeLarge false: the small one, for rare operands not worth another
// instantiation); an error message, or null.
template <typename T, bool kMayTakeLarge = true, typename Operands>
const char* launch_tiled_gemm(const Operands& ops, const GemmDims& d, gpuStream_t stream) {
  if (d.m == 0 || d.n == 0 || d.batch == 0) return nullptr;
  constexpr bool kFloat = std::is_same_v<OpMath<T>, float>;
#if LOOM_GPU_WMMA || LOOM_GPU_MFMA
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    const MatrixUnits units = matrix_units();
#if defined(LOOM_GPU_EMULATED)
    if (units == MatrixUnits::UnknownSetting) {
      static const std::string message = std::string("LOOM_GPU_EMULATOR_MATRIX_UNITS is '") +
                                         std::getenv("LOOM_GPU_EMULATOR_MATRIX_UNITS") +
                                         "', which names no matrix units of the emulator "
                                         "(expected mfma, wmma or none)";
      return message.c_str();
    }
#endif
    const GemmLaunch tensor = plan_gemm(d.m, d.n, d.batch, kTensorTile);
    const dim3 grid(tensor.grid_x, tensor.grid_y, tensor.grid_z);
    if (tensor.grid_x == 0) return "the product has more columns than one launch covers";
#if LOOM_GPU_WMMA
    if (units == MatrixUnits::Wmma) {
      using Core = WmmaCore<T>;
      launch_kernel(tensor_core_gemm_kernel<Core, T, Operands>, grid, Core::Tiling::kThreads, 0,
                    stream, ops, d, tensor.row_tiles);
      return last_launch_error();
    }
#endif
#if LOOM_GPU_MFMA
    if (units == MatrixUnits::Mfma) {
      using Core = MfmaCore<T>;
      launch_kernel<kMfmaWaveSize>(tensor_core_gemm_kernel<Core, T, Operands>, grid,
                                   Core::Tiling::kThreads, 0, stream, ops, d, tensor.row_tiles);
      return last_launch_error();
    }
#endif
  }
#endif
  const bool large = kMayTakeLarge && takes_large_gemm_tile(d, kFloat);
  const GemmLaunch l =
      plan_gemm(d.m, d.n, d.batch, large ? LargeGemmTile::kRows : SmallGemmTile::kRows);
  if (l.grid_x == 0) return "the product has more columns than one launch covers";
  const dim3 grid(l.grid_x, l.grid_y, l.grid_z);
  if constexpr (kFloat && kMayTakeLarge) {  // float64 never takes the large tile
    if (large) {
      launch_kernel(tiled_gemm_kernel<LargeGemmTile, T, Operands>, grid, LargeGemmTile::kThreads, 0,
                    stream, ops, d, l.row_tiles);
      return last_launch_error();
    }
  }
  using Small =
      std::conditional_t<std::is_same_v<OpMath<T>, double>, SmallFloat64GemmTile, SmallGemmTile>;
  launch_kernel(tiled_gemm_kernel<Small, T, Operands>, grid, Small::kThreads, 0, stream, ops, d,
                l.row_tiles);
  return last_launch_error();
}

}  // namespace loom::gpu
