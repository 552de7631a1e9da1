// The typed op API for plugins: one function per standard op variant, generated from the
// op library's ops.def (loom/sdk/generated/ops.hpp), over sdk::Tensor:
//   sdk::Tensor y = sdk::op::mul(grad, other);   // or grad * other
//   sdk::Tensor s = sdk::op::sum_to_size(y, self.sizes());
// Each call goes through the host table from the top (LoomHostApi::call_op), like an
// app's: the thread's key guards apply and every backend is reached. Results are owned.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "loom/plugin.h"
#include "loom/sdk/error.hpp"
#include "loom/sdk/host.hpp"
#include "loom/sdk/kernel.hpp"
#include "loom/sdk/tensor.hpp"

namespace loom::sdk {

// A borrowed int[] argument: {1, 2}, a std::vector or a span (tensor sizes).
class IntList {
 public:
  IntList(std::initializer_list<int64_t> v) : data_(v.begin(), v.size()) {}
  IntList(const std::vector<int64_t>& v) : data_(v) {}
  IntList(std::span<const int64_t> v) : data_(v) {}
  std::span<const int64_t> span() const { return data_; }

 private:
  std::span<const int64_t> data_;
};

namespace detail {

// An operator looked up by name on first use (operators live as long as the process).
class OpHandle {
 public:
  explicit OpHandle(const char* name) : name_(name) {}
  const LoomOperator* get() {
    if (op_ == nullptr) {
      const LoomOperator* found = nullptr;
      check(host().find_op(name_, &found));
      if (found == nullptr) {
        throw Error(std::string("[sdk] operator '") + name_ + "' is not defined",
                    LOOM_STATUS_NOT_FOUND);
      }
      op_ = found;
    }
    return op_;
  }

 private:
  const char* name_;
  const LoomOperator* op_ = nullptr;
};

// Memory that boxed list arguments point into for the duration of one call.
struct ArgBuffer {
  std::vector<std::vector<LoomTensor*>> tensor_lists;
};

inline LoomValue value_of(LoomValueTag tag) {
  LoomValue v{};
  v.tag = tag;
  return v;
}
inline LoomValue box_arg(ArgBuffer&, const Tensor& t) {
  if (!t.defined()) throw Error("[sdk] an undefined tensor was passed to an op");
  LoomValue v = value_of(LOOM_VALUE_TENSOR);
  v.u.tensor = t.get();
  return v;
}
inline LoomValue box_arg(ArgBuffer&, int64_t i) {
  LoomValue v = value_of(LOOM_VALUE_INT);
  v.u.i = i;
  return v;
}
inline LoomValue box_arg(ArgBuffer&, double d) {
  LoomValue v = value_of(LOOM_VALUE_DOUBLE);
  v.u.d = d;
  return v;
}
inline LoomValue box_arg(ArgBuffer&, bool b) {
  LoomValue v = value_of(LOOM_VALUE_BOOL);
  v.u.i = b;
  return v;
}
inline LoomValue box_arg(ArgBuffer&, const Scalar& s) {
  LoomValue v = value_of(s.tag);
  if (s.tag == LOOM_VALUE_DOUBLE) {
    v.u.d = s.d;
  } else {
    v.u.i = s.i;
  }
  return v;
}
inline LoomValue box_arg(ArgBuffer&, std::string_view s) {
  // Schema strings are short literals or arguments passed on: NUL-terminated.
  LoomValue v = value_of(LOOM_VALUE_STRING);
  v.u.str = s.data();
  v.length = static_cast<uint32_t>(s.size());
  return v;
}
inline LoomValue box_arg(ArgBuffer&, LoomDType d) {
  LoomValue v = value_of(LOOM_VALUE_DTYPE);
  v.u.i = d;
  return v;
}
inline LoomValue box_arg(ArgBuffer&, LoomDevice d) {
  LoomValue v = value_of(LOOM_VALUE_DEVICE);
  v.u.device = d;
  return v;
}
inline LoomValue box_arg(ArgBuffer&, IntList l) {
  LoomValue v = value_of(LOOM_VALUE_INT_LIST);
  v.u.ints = l.span().data();
  v.length = static_cast<uint32_t>(l.span().size());
  return v;
}
inline LoomValue box_arg(ArgBuffer&, std::span<const double> l) {
  LoomValue v = value_of(LOOM_VALUE_DOUBLE_LIST);
  v.u.doubles = l.data();
  v.length = static_cast<uint32_t>(l.size());
  return v;
}
// A Tensor[] (or Tensor?[], None elements as null handles) kept in `b` for the call.
template <typename List, typename Handle>
LoomValue box_list(ArgBuffer& b, const List& list, Handle handle_of) {
  std::vector<LoomTensor*>& handles = b.tensor_lists.emplace_back();
  for (const auto& t : list) handles.push_back(handle_of(t));
  LoomValue v = value_of(LOOM_VALUE_TENSOR_LIST);
  v.u.tensors = handles.data();
  v.length = static_cast<uint32_t>(handles.size());
  return v;
}
inline LoomValue box_arg(ArgBuffer& b, const std::vector<Tensor>& list) {
  return box_list(b, list, [](const Tensor& t) { return t.get(); });
}
inline LoomValue box_arg(ArgBuffer& b, const std::vector<std::optional<Tensor>>& list) {
  return box_list(b, list, [](const std::optional<Tensor>& t) {
    return t && t->defined() ? t->get() : nullptr;
  });
}
inline LoomValue box_arg(ArgBuffer& b, const std::optional<Tensor>& t) {
  return t && t->defined() ? box_arg(b, *t) : value_of(LOOM_VALUE_NONE);
}
template <typename T>
LoomValue box_arg(ArgBuffer& b, const std::optional<T>& v) {
  return v ? box_arg(b, *v) : value_of(LOOM_VALUE_NONE);
}

// A returned Tensor[]: each element carries a reference, the array is the caller's.
template <>
struct RetFrom<std::vector<Tensor>> {
  static std::vector<Tensor> from(LoomValue& v) {
    if (v.tag != LOOM_VALUE_TENSOR_LIST) throw Error("[sdk] expected a tensor list return");
    std::vector<Tensor> out;
    out.reserve(v.length);
    for (uint32_t i = 0; i < v.length; ++i) out.push_back(Tensor::adopt(v.u.tensors[i]));
    v.length = 0;  // the elements are ours now; value_release frees only the array
    host().value_release(&v);
    v.tag = LOOM_VALUE_NONE;
    return out;
  }
};

template <typename R>
struct OpCall {
  static R run(OpHandle& op, const LoomValue* args, size_t n) {
    LoomValue out[1] = {};
    check(host().call_op(op.get(), args, n, out, 1));
    ReturnsGuard guard{out, 1};
    return RetFrom<R>::from(out[0]);
  }
};
template <>
struct OpCall<void> {
  static void run(OpHandle& op, const LoomValue* args, size_t n) {
    check(host().call_op(op.get(), args, n, nullptr, 0));
  }
};
template <typename... Ts>
struct OpCall<std::tuple<Ts...>> {
  static std::tuple<Ts...> run(OpHandle& op, const LoomValue* args, size_t n) {
    LoomValue out[sizeof...(Ts)] = {};
    check(host().call_op(op.get(), args, n, out, sizeof...(Ts)));
    ReturnsGuard guard{out, sizeof...(Ts)};
    return unpack(out, std::index_sequence_for<Ts...>{});
  }
  template <size_t... I>
  static std::tuple<Ts...> unpack(LoomValue* out, std::index_sequence<I...>) {
    return std::tuple<Ts...>(RetFrom<Ts>::from(out[I])...);
  }
};

template <typename R>
R call_op(OpHandle& op, const LoomValue* args, size_t n) {
  return OpCall<R>::run(op, args, n);
}

}  // namespace detail
}  // namespace loom::sdk

#include "loom/sdk/generated/ops.hpp"

namespace loom::sdk {

// Scalars from C++ numbers, for the operators below.
inline Scalar scalar(double d) {
  Scalar s;
  s.tag = LOOM_VALUE_DOUBLE;
  s.d = d;
  return s;
}

// A tensor of `sizes` filled with `value`, like t's dtype and device by default.
inline Tensor full(IntList sizes, double value, LoomDType dtype, LoomDevice device) {
  Tensor t = empty(sizes.span(), dtype, device);
  op::fill_(t, scalar(value));
  return t;
}
inline Tensor full_like(const Tensor& t, double value) {
  return full(t.sizes(), value, t.dtype(), t.device());
}
inline Tensor zeros_like(const Tensor& t) {
  return full_like(t, 0.0);
}
inline Tensor ones_like(const Tensor& t) {
  return full_like(t, 1.0);
}

// Sums `t` down to `sizes`, which t's shape must broadcast from (the gradient of a
// broadcast): leading dims are summed away, dims of size 1 in `sizes` summed with keepdim.
inline Tensor sum_to(const Tensor& t, std::span<const int64_t> sizes) {
  const int64_t lead = t.dim() - static_cast<int64_t>(sizes.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d < lead || (sizes[d - lead] == 1 && t.size(d) != 1)) dims.push_back(d);
  }
  if (dims.empty()) return lead == 0 ? t : op::view(t, sizes);
  Tensor summed = op::sum(t, std::optional<IntList>(dims), /*keepdim=*/true);
  return op::view(summed, sizes);
}

inline Tensor operator+(const Tensor& a, const Tensor& b) {
  return op::add(a, b);
}
inline Tensor operator-(const Tensor& a, const Tensor& b) {
  return op::sub(a, b);
}
inline Tensor operator*(const Tensor& a, const Tensor& b) {
  return op::mul(a, b);
}
inline Tensor operator/(const Tensor& a, const Tensor& b) {
  return op::div(a, b);
}
inline Tensor operator-(const Tensor& a) {
  return op::neg(a);
}
inline Tensor operator*(const Tensor& a, double b) {
  return op::mul(a, full(std::span<const int64_t>(), b, a.dtype(), a.device()));
}
inline Tensor operator*(double a, const Tensor& b) {
  return b * a;
}
inline Tensor operator/(const Tensor& a, double b) {
  return a * (1.0 / b);
}
inline Tensor operator+(const Tensor& a, double b) {
  return op::add(a, full(std::span<const int64_t>(), b, a.dtype(), a.device()));
}
inline Tensor operator-(const Tensor& a, double b) {
  return a + (-b);
}
inline Tensor operator-(double a, const Tensor& b) {
  return op::neg(b) + a;
}

}  // namespace loom::sdk
