// Decompositions: ops of the standard library that the core computes from other ops
// (CompositeImplicit kernels), written as typed C++ functions over the generated op API.
// Note [Decompositions] in registry.cc says when an op is a decomposition.
#pragma once

#include <functional>

#include <cstdlib>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>

#include "loom/core/error.h"
#include "loom/core/int_list.h"
#include "loom/core/scalar.h"
#include "loom/dispatcher/boxing.h"
#include "loom/ops/generated/ops.h"
#include "loom/ops/tensor.h"
#include "loom/plugin.h"

namespace loom::ops {

using dispatch::box;

// Unboxes one argument of a decomposition.
template <typename T>
struct DecompArg;
template <>
struct DecompArg<Tensor> {
  static Tensor from(const LoomValue& v) {
    return Tensor::borrow(reinterpret_cast<TensorImpl*>(const_cast<LoomTensor*>(v.u.tensor)));
  }
};
template <>
struct DecompArg<int64_t> {
  static int64_t from(const LoomValue& v) { return v.u.i; }
};
template <>
struct DecompArg<bool> {
  static bool from(const LoomValue& v) { return v.u.i != 0; }
};
template <>
struct DecompArg<double> {
  static double from(const LoomValue& v) {
    return v.tag == LOOM_VALUE_INT ? static_cast<double>(v.u.i) : v.u.d;
  }
};
template <>
struct DecompArg<Scalar> {
  static Scalar from(const LoomValue& v) {
    if (v.tag == LOOM_VALUE_DOUBLE) return Scalar(v.u.d);
    if (v.tag == LOOM_VALUE_BOOL) return Scalar(v.u.i != 0);
    return Scalar(v.u.i);
  }
};
template <>
struct DecompArg<ScalarType> {
  static ScalarType from(const LoomValue& v) { return static_cast<ScalarType>(v.u.i); }
};
template <>
struct DecompArg<std::string_view> {
  static std::string_view from(const LoomValue& v) { return {v.u.str, v.length}; }
};
template <>
struct DecompArg<IntList> {
  static IntList from(const LoomValue& v) {
    if (v.tag == LOOM_VALUE_INT) return IntList(std::span<const int64_t>(&v.u.i, 1));
    return IntList(std::span<const int64_t>(v.u.ints, v.length));
  }
};
template <>
struct DecompArg<std::vector<Tensor>> {
  static std::vector<Tensor> from(const LoomValue& v) {
    std::vector<Tensor> out;
    for (uint32_t i = 0; i < v.length; ++i) {
      out.push_back(Tensor::borrow(reinterpret_cast<TensorImpl*>(v.u.tensors[i])));
    }
    return out;
  }
};
template <>
struct DecompArg<std::span<const double>> {
  static std::span<const double> from(const LoomValue& v) { return {v.u.doubles, v.length}; }
};
template <>
struct DecompArg<OptionalIntList> {
  static OptionalIntList from(const LoomValue& v) {
    if (v.tag == LOOM_VALUE_NONE) return std::nullopt;
    return DecompArg<IntList>::from(v);
  }
};
template <>
struct DecompArg<Device> {
  static Device from(const LoomValue& v) { return Device{v.u.device.type, v.u.device.index}; }
};
template <>
struct DecompArg<std::vector<std::optional<Tensor>>> {
  static std::vector<std::optional<Tensor>> from(const LoomValue& v) {
    std::vector<std::optional<Tensor>> out;
    for (uint32_t i = 0; i < v.length; ++i) {
      if (v.u.tensors[i] == nullptr) {
        out.emplace_back(std::nullopt);
      } else {
        out.emplace_back(Tensor::borrow(reinterpret_cast<TensorImpl*>(v.u.tensors[i])));
      }
    }
    return out;
  }
};
template <>
struct DecompArg<std::vector<bool>> {  // bool[N]
  static std::vector<bool> from(const LoomValue& v) {
    return std::vector<bool>(v.u.bools, v.u.bools + v.length);
  }
};
template <typename T>
struct DecompArg<std::optional<T>> {
  static std::optional<T> from(const LoomValue& v) {
    if (v.tag == LOOM_VALUE_NONE) return std::nullopt;
    return DecompArg<T>::from(v);
  }
};

inline void box_return(LoomValue& out, Tensor&& t) {
  if (!t.defined()) {  // a gradient output_mask did not ask for
    out = dispatch::none();
    return;
  }
  out = box(t);
  t.release();  // the return owns the reference
}
inline void box_return(LoomValue& out, const Tensor& t) {
  out = box(t);
  t.impl()->retain();
}
inline void box_return(LoomValue& out, int64_t v) {
  out = box(v);
}
inline void box_return(LoomValue& out, bool v) {
  out = box(v);
}
inline void box_return(LoomValue& out, const Scalar& v) {
  out = box(v);
}
// A `Tensor[]` return: an array from malloc (the receiver frees it), one reference each.
inline void box_return(LoomValue& out, std::vector<Tensor>&& list) {
  auto** items =
      static_cast<LoomTensor**>(std::malloc(list.empty() ? 1 : list.size() * sizeof(LoomTensor*)));
  LOOM_CHECK(items != nullptr, "loom", "out of memory returning a tensor list");
  for (size_t i = 0; i < list.size(); ++i)
    items[i] = reinterpret_cast<LoomTensor*>(list[i].release());
  out.tag = LOOM_VALUE_TENSOR_LIST;
  out.length = static_cast<uint32_t>(list.size());
  out.u.tensors = items;
}
template <typename... Ts, size_t... I>
void box_returns(LoomValue* out, std::tuple<Ts...>&& values, std::index_sequence<I...>) {
  (box_return(out[I], std::move(std::get<I>(values))), ...);
}

// The host error a failing decomposition returns.
LoomError* decomposition_error(int32_t code, const char* message);

template <auto Fn>
struct Decomposition;
template <typename R, typename... A, R (*Fn)(A...)>
struct Decomposition<Fn> {
  static LoomError* kernel(void*, const LoomKernelCall* call) {
    try {
      run(call, std::index_sequence_for<A...>{});
      return nullptr;
    } catch (const Error& e) {
      return decomposition_error(static_cast<int32_t>(e.code()), e.what());
    }
  }
  template <size_t... I>
  static void run(const LoomKernelCall* call, std::index_sequence<I...>) {
    if constexpr (std::is_void_v<R>) {
      Fn(DecompArg<std::decay_t<A>>::from(call->args[I])...);
      return;
    } else {
      run_returning(call, Fn(DecompArg<std::decay_t<A>>::from(call->args[I])...));
    }
  }
  template <typename Result>
  static void run_returning(const LoomKernelCall* call, Result&& result) {
    if constexpr (requires { std::tuple_size<Result>::value; }) {
      box_returns(call->returns, std::move(result),
                  std::make_index_sequence<std::tuple_size_v<Result>>{});
    } else {
      box_return(call->returns[0], std::move(result));
    }
  }
};

struct DecompositionEntry {
  std::string_view op;  // qualified name: "loom::mean.dim"
  LoomKernelFn kernel;
};

template <auto Fn>
constexpr LoomKernelFn decomposition() {
  return &Decomposition<Fn>::kernel;
}

// The decompositions of each op family (decompositions/<family>.cc; families without
// decompositions have no file).
#define LOOM_FAMILY(family) std::span<const DecompositionEntry> family##_decompositions();
#include "decomposition_families.inc"
#undef LOOM_FAMILY

// The decomposition of `op` (qualified name), or nullptr.
LoomKernelFn find_decomposition(std::string_view op);

// Helpers shared by decompositions.
// A 0-dim float64 CPU tensor flagged as a wrapped number (promotes like a C++ scalar).
Tensor wrapped_number(double value);
// A new tensor of zeros.
Tensor zeros_of(const std::vector<int64_t>& sizes, ScalarType dtype, Device device);
// The three gradients of a backward op with an output_mask, those it did not ask for
// (undefined) as empty [0] tensors like `like`: PyTorch leaves them undefined, but a loom
// op returns a tensor for each Tensor of its schema.
std::tuple<Tensor, Tensor, Tensor> masked_gradients(Tensor a, Tensor b, Tensor c,
                                                    const Tensor& like);
// A 1-D int64 tensor of `values` on `device` (indices computed on the host).
Tensor int64_tensor(const std::vector<int64_t>& values, Device device);
// A new tensor of `sizes` for a memory_format argument (Note [Memory format codes]):
// preserve_format or None takes `like`'s layout (row-major without `like`),
// contiguous_format is row-major, channels_last NHWC (4 dims); any other code fails
// naming `op`.
Tensor empty_in_format(const char* op, IntArrayRef sizes, std::optional<int64_t> memory_format,
                       const Tensor* like, ScalarType dtype, Device device);
// A [rows, cols] matrix built on the host by `fill` (row-major float64, zeroed first),
// then in `dtype` on `device`: pooling's and the DFT's coefficients.
Tensor host_matrix(int64_t rows, int64_t cols, const std::function<void(double*)>& fill,
                   ScalarType dtype, Device device);
// t with matrix m [rows, t.size(dim)] applied along dim (which then has `rows` elements).
Tensor apply_along(const Tensor& t, int64_t dim, const Tensor& m);
// `t` in `dtype` (itself when it already is).
Tensor cast(const Tensor& t, ScalarType dtype);

// The value of a one-element tensor on any device, read on the host as a double (exact for
// integers up to 2^53; used for sizes that data decides, as in bincount and histc).
double host_value(const Tensor& t);
// How many elements of `self` each output element of a reduction over `dim` combines.
int64_t reduced_count(const Tensor& self, const OptionalIntList& dim, std::string_view op);
// A per-channel [C] tensor viewed as [1, C, 1, ...] to broadcast against an input of
// `ndim` dims whose channels are dim 1.
Tensor channel_view(const Tensor& t, int64_t ndim);

}  // namespace loom::ops
