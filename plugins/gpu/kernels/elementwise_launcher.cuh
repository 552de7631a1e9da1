// The one generic elementwise launcher behind every pointwise GPU kernel: out[i] =
// f(in0[i], in1[i], ...) over a StridedSpace. Contiguous operands aligned for 16-byte
// loads take the vectorised kernel (each thread loads whole vectors); binary and ternary
// ops whose inner dim is dense or broadcast for every operand take vectors along it (Note
// [Broadcast inner vectors]); anything else the strided kernel, which unrolls
// kElementwisePerThread elements a thread and computes each operand's offset with 32-bit
// index math and precomputed divisors when every offset fits (Note [Division by invariant
// integers]).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../runtime/gpu_runtime.h"
#include "device_types.h"
#include "index_math.h"
#include "launch.h"

namespace loom::gpu {

template <typename T, int N>
struct alignas(sizeof(T) * N) Vector {
  T v[N];
};

// The inputs of an elementwise launch: input k is read at p[k] + offset, or is value[k]
// when bit k of by_value is set (a host scalar: Note [Host scalars by value]). The test
// is the same for every thread of a launch, so it costs no divergence.
template <typename In, int NIn>
struct InputPointers {
  const In* p[NIn > 0 ? NIn : 1];
  In value[NIn > 0 ? NIn : 1] = {};
  uint32_t by_value = 0;

  template <typename Index>
  __device__ __forceinline__ In load(int k, Index offset) const {
    return (by_value >> k) & 1u ? value[k] : p[k][offset];
  }
};

// One operand of a hand-written kernel, read at p[offset] or given by value (a host
// scalar, as above): `operand[offset]` reads either.
template <typename T>
struct Operand {
  const T* p = nullptr;
  T value = {};
  bool by_value = false;

  template <typename Index>
  __device__ __forceinline__ T operator[](Index offset) const {
    return by_value ? value : p[offset];
  }
};

// Input k of a launch: its pointer, or the element the host read when scalars give it.
template <typename T>
Operand<T> operand(const void* data, const HostScalars& scalars, int k) {
  Operand<T> o;
  o.p = static_cast<const T*>(data);
  if (scalars.given(k)) {
    std::memcpy(static_cast<void*>(&o.value), scalars.bytes[k], sizeof(T));
    o.by_value = true;
  }
  return o;
}

// The inputs of an elementwise launch from their pointers and the host scalars among them.
template <typename In, int NIn>
InputPointers<In, NIn> input_pointers(const void* const (&data)[NIn], const HostScalars& scalars) {
  InputPointers<In, NIn> in;
  for (int k = 0; k < NIn; ++k) {
    const Operand<In> o = operand<In>(data[k], scalars, k);
    in.p[k] = o.p;
    in.value[k] = o.value;
    if (o.by_value) in.by_value |= 1u << k;
  }
  return in;
}

template <typename Out, typename In>
constexpr int vector_elements() {
  constexpr int bytes = sizeof(Out) > sizeof(In) ? sizeof(Out) : sizeof(In);
  return 16 / bytes > 8 ? 8 : 16 / bytes;
}

template <int NIn, typename F, typename In>
__device__ __forceinline__ auto apply(const F& f, const In (&x)[NIn > 0 ? NIn : 1]) {
  if constexpr (NIn == 0) {
    return f();
  } else if constexpr (NIn == 1) {
    return f(x[0]);
  } else if constexpr (NIn == 2) {
    return f(x[0], x[1]);
  } else {
    return f(x[0], x[1], x[2]);
  }
}

// f over each lane of the inputs' loaded vectors.
template <int NIn, typename Out, typename In, int V, typename F>
__device__ __forceinline__ Vector<Out, V> apply_lanes(
    const F& f, const Vector<In, V> (&loaded)[NIn > 0 ? NIn : 1]) {
  Vector<Out, V> result;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    In x[NIn > 0 ? NIn : 1];
#pragma unroll
    for (int k = 0; k < NIn; ++k) x[k] = loaded[k].v[j];
    result.v[j] = apply<NIn>(f, x);
  }
  return result;
}

template <int NIn, typename Out, typename In, typename F>
__global__ void vectorized_kernel(int64_t n, Out* out, InputPointers<In, NIn> in, F f) {
  constexpr int V = vector_elements<Out, In>();
  const int64_t vectors = n / V;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t v = first; v < vectors; v += step) {
    Vector<In, V> loaded[NIn > 0 ? NIn : 1];
#pragma unroll
    for (int k = 0; k < NIn; ++k) {
      if ((in.by_value >> k) & 1u) {
#pragma unroll
        for (int j = 0; j < V; ++j) loaded[k].v[j] = in.value[k];
      } else {
        loaded[k] = reinterpret_cast<const Vector<In, V>*>(in.p[k])[v];
      }
    }
    const Vector<Out, V> result = apply_lanes<NIn, Out>(f, loaded);
    reinterpret_cast<Vector<Out, V>*>(out)[v] = result;
  }
  const int64_t tail = vectors * V + first;  // fewer than V elements remain
  if (tail < n) {
    In x[NIn > 0 ? NIn : 1];
#pragma unroll
    for (int k = 0; k < NIn; ++k) x[k] = in.load(k, tail);
    out[tail] = apply<NIn>(f, x);
  }
}

// Note [Broadcast inner vectors] in index_math.h: `vectors` groups of V elements along the
// inner dim; bit k of `dense`: input k moves along it (else it is broadcast along it).
template <int V, int NIn, typename Out, typename In, typename F>
__global__ void inner_vector_kernel(uint32_t vectors, Out* out, InputPointers<In, NIn> in,
                                    OffsetCalculator<NIn + 1> calc, uint32_t dense, F f) {
  const uint32_t step = gridDim.x * blockDim.x;
  for (uint32_t v = blockIdx.x * blockDim.x + threadIdx.x; v < vectors; v += step) {
    int32_t o[NIn + 1];
    calc.offsets(v * V, o);
    Vector<In, V> loaded[NIn > 0 ? NIn : 1];
#pragma unroll
    for (int k = 0; k < NIn; ++k) {
      if ((dense >> k) & 1u) {
        loaded[k] = *reinterpret_cast<const Vector<In, V>*>(in.p[k] + o[k + 1]);
      } else {
        const In x = in.load(k, o[k + 1]);
#pragma unroll
        for (int j = 0; j < V; ++j) loaded[k].v[j] = x;
      }
    }
    const Vector<Out, V> result = apply_lanes<NIn, Out>(f, loaded);
    *reinterpret_cast<Vector<Out, V>*>(out + o[0]) = result;
  }
}

// Any strides: kElementwisePerThread elements a thread. Offsets is an OffsetCalculator
// (32-bit, Note [Division by invariant integers]) or the StridedSpace itself (64-bit).
template <int NIn, typename Out, typename In, typename F, typename Index, typename Offsets>
__global__ void strided_kernel(Index n, Out* out, InputPointers<In, NIn> in, Offsets space, F f) {
  const Index per_block = static_cast<Index>(blockDim.x) * kElementwisePerThread;
  for (Index base = static_cast<Index>(blockIdx.x) * per_block; base < n;
       base += static_cast<Index>(gridDim.x) * per_block) {
#pragma unroll
    for (int j = 0; j < kElementwisePerThread; ++j) {
      const Index i = base + j * static_cast<Index>(blockDim.x) + threadIdx.x;
      if (i < n) {
        std::conditional_t<std::is_same_v<Index, int64_t>, int64_t, int32_t> offsets[NIn + 1];
        if constexpr (std::is_same_v<Index, int64_t>) {
          space.offsets(i, offsets);
        } else {
          space.offsets(static_cast<uint32_t>(i), offsets);
        }
        In x[NIn > 0 ? NIn : 1];
#pragma unroll
        for (int k = 0; k < NIn; ++k) x[k] = in.load(k, offsets[k + 1]);
        out[offsets[0]] = apply<NIn>(f, x);
      }
    }
  }
}

// What a launcher returns for a dtype its kernel does not take.
inline constexpr const char* kUnsupportedDtype = "the dtype is not supported by this kernel";

// nullptr after a good launch, else the runtime's message.
inline const char* last_launch_error() {
  const gpuError_t err = gpuGetLastError();
  return err == gpuSuccess ? nullptr : gpuGetErrorString(err);
}

// Queues kernel(n, args...) with one thread an element (a grid-stride loop inside), for
// the kernels that gather through a StridedSpace by hand; nothing for n == 0.
template <typename... KernelArgs, typename... Args>
const char* launch_grid_stride(void (*kernel)(int64_t, KernelArgs...), int64_t n,
                               gpuStream_t stream, Args... args) {
  if (n == 0) return nullptr;
  const Launch l = plan_elementwise(n, 1);
  launch_kernel(kernel, l.grid, l.block, 0, stream, n, static_cast<KernelArgs>(args)...);
  return last_launch_error();
}

// The operands' addresses (null for a host scalar, whose pointer is never read) and
// element sizes, out first: what the vector widths are planned from.
template <int N>
struct OperandLayout {
  const void* pointers[N];
  int sizes[N];
};
template <typename Out, typename In, int NIn>
OperandLayout<NIn + 1> operand_layout(const Out* out, const InputPointers<In, NIn>& in) {
  OperandLayout<NIn + 1> layout;
  layout.pointers[0] = out;
  layout.sizes[0] = sizeof(Out);
  for (int k = 0; k < NIn; ++k) {
    layout.pointers[k + 1] = (in.by_value >> k) & 1u ? nullptr : in.p[k];
    layout.sizes[k + 1] = sizeof(In);
  }
  return layout;
}

// Queues out = f(in...) on `stream`. Returns nullptr, or the runtime's error message.
template <int NIn, typename Out, typename In, typename F>
const char* launch_elementwise(const StridedSpace<NIn + 1>& space, Out* out,
                               InputPointers<In, NIn> in, F f, gpuStream_t stream) {
  const int64_t n = space.numel();
  if (n == 0) return nullptr;
  const OperandLayout<NIn + 1> layout = operand_layout(out, in);
  const bool vectorized = space.contiguous() && vector_width(layout.pointers, layout.sizes,
                                                             NIn + 1) >= vector_elements<Out, In>();
  if (vectorized) {
    const Launch l = plan_elementwise(n, vector_elements<Out, In>());
    launch_kernel(vectorized_kernel<NIn, Out, In, F>, l.grid, l.block, 0, stream, n, out, in, f);
  } else if (fits_int32(space)) {
    const OffsetCalculator<NIn + 1> calc = offset_calculator(space);
    if constexpr (NIn >=
                  2) {  // binary and ternary ops: broadcasts (Note [Broadcast inner vectors])
      constexpr int V = vector_elements<Out, In>();
      uint32_t dense = 0;
      for (int k = 0; k < NIn; ++k) {
        if (layout.pointers[k + 1] != nullptr && space.strides[k + 1][0] == 1) dense |= 1u << k;
      }
      if (inner_vector_width(space, layout.pointers, layout.sizes) >= V) {
        const Launch l = plan_elementwise(n, V);
        launch_kernel(inner_vector_kernel<V, NIn, Out, In, F>, l.grid, l.block, 0, stream,
                      static_cast<uint32_t>(n / V), out, in, calc, dense, f);
        return last_launch_error();
      }
    }
    const Launch l = plan_elementwise(n);
    launch_kernel(strided_kernel<NIn, Out, In, F, int32_t, OffsetCalculator<NIn + 1>>, l.grid,
                  l.block, 0, stream, static_cast<int32_t>(n), out, in, calc, f);
  } else {
    const Launch l = plan_elementwise(n);
    launch_kernel(strided_kernel<NIn, Out, In, F, int64_t, StridedSpace<NIn + 1>>, l.grid, l.block,
                  0, stream, n, out, in, space, f);
  }
  return last_launch_error();
}

}  // namespace loom::gpu
