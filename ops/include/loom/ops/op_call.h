// What the generated typed op functions (loom/ops/generated/ops.h) are made of: cached op
// handles, boxing of C++ arguments, and unboxing of results.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "loom/core/int_list.h"
#include "loom/core/scalar.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/ops/standard_library.h"
#include "loom/ops/tensor.h"

namespace loom::detail {

// The op's handle, looked up once (a function-local static in each generated function).
// The typed API needs the standard library, so the first lookup registers it.
class OpRef {
 public:
  explicit OpRef(const char* name)
      : handle_(
            (ops::load_standard_library(), dispatch::Dispatcher::instance().find_defined(name))) {}
  dispatch::OperatorHandle handle() const { return handle_; }

 private:
  dispatch::OperatorHandle handle_;
};

// Storage that boxed arguments point into (tensor lists) for the duration of a call.
struct ArgBuffer {
  absl::InlinedVector<std::vector<LoomTensor*>, 1> tensor_lists;
};

inline LoomValue box_arg(ArgBuffer&, const Tensor& t) {
  LOOM_CHECK(t.defined(), "loom", "an undefined tensor was passed to an op");
  return dispatch::box(t);
}
inline LoomValue box_arg(ArgBuffer& b, const std::optional<Tensor>& t) {
  return t && t->defined() ? box_arg(b, *t) : dispatch::none();
}
inline LoomValue box_arg(ArgBuffer&, int64_t v) {
  return dispatch::box(v);
}
inline LoomValue box_arg(ArgBuffer&, double v) {
  return dispatch::box(v);
}
inline LoomValue box_arg(ArgBuffer&, bool v) {
  return dispatch::box(v);
}
inline LoomValue box_arg(ArgBuffer&, const Scalar& v) {
  return dispatch::box(v);
}
inline LoomValue box_arg(ArgBuffer&, const std::string& v) {
  return dispatch::box(v);
}
inline LoomValue box_arg(ArgBuffer&, ScalarType v) {
  return dispatch::box(v);
}
inline LoomValue box_arg(ArgBuffer&, Device v) {
  return dispatch::box(v);
}
inline LoomValue box_arg(ArgBuffer&, const IntList& v) {
  return dispatch::box(v.span());
}
inline LoomValue box_arg(ArgBuffer&, const OptionalIntList& v) {
  return v ? dispatch::box(v->span()) : dispatch::none();
}
// A `float[]` argument; the vector outlives the call.
inline LoomValue box_arg(ArgBuffer&, const std::vector<double>& list) {
  LoomValue v{LOOM_VALUE_DOUBLE_LIST, static_cast<uint32_t>(list.size()), {}};
  v.u.doubles = list.data();
  return v;
}
template <typename T>
LoomValue box_arg(ArgBuffer& b, const std::optional<T>& v) {
  return v ? box_arg(b, *v) : dispatch::none();
}
inline LoomValue box_arg(ArgBuffer& b, const std::vector<Tensor>& list) {
  std::vector<LoomTensor*>& handles = b.tensor_lists.emplace_back();
  for (const Tensor& t : list) handles.push_back(reinterpret_cast<LoomTensor*>(t.impl()));
  LoomValue v{LOOM_VALUE_TENSOR_LIST, static_cast<uint32_t>(handles.size()), {}};
  v.u.tensors = handles.data();
  return v;
}

// A `Tensor?[]` argument: None elements travel as null handles.
inline LoomValue box_arg(ArgBuffer& b, const std::vector<std::optional<Tensor>>& list) {
  std::vector<LoomTensor*>& handles = b.tensor_lists.emplace_back();
  for (const std::optional<Tensor>& t : list) {
    handles.push_back(t && t->defined() ? reinterpret_cast<LoomTensor*>(t->impl()) : nullptr);
  }
  LoomValue v{LOOM_VALUE_TENSOR_LIST, static_cast<uint32_t>(handles.size()), {}};
  v.u.tensors = handles.data();
  return v;
}

template <typename R>
struct Unbox;
template <>
struct Unbox<Tensor> {
  static Tensor take(LoomValue& v, const std::string& op) { return dispatch::unbox_tensor(v, op); }
};
// A returned `Tensor[]`: each element carries one reference, the array is the caller's.
template <>
struct Unbox<std::vector<Tensor>> {
  static std::vector<Tensor> take(LoomValue& v, const std::string& op) {
    LOOM_CHECK(v.tag == LOOM_VALUE_TENSOR_LIST, op, "expected a tensor list return");
    std::vector<Tensor> out;
    out.reserve(v.length);
    for (uint32_t i = 0; i < v.length; ++i) {
      out.push_back(Tensor::adopt(reinterpret_cast<TensorImpl*>(v.u.tensors[i])));
    }
    std::free(const_cast<LoomTensor**>(v.u.tensors));
    v.tag = LOOM_VALUE_NONE;
    return out;
  }
};
template <>
struct Unbox<int64_t> {
  static int64_t take(LoomValue& v, const std::string&) { return v.u.i; }
};
template <>
struct Unbox<double> {
  static double take(LoomValue& v, const std::string&) { return v.u.d; }
};
template <>
struct Unbox<bool> {
  static bool take(LoomValue& v, const std::string&) { return v.u.i != 0; }
};

template <typename R>
struct Caller {
  static R call(const OpRef& op, const LoomValue* args, size_t n) {
    LoomValue ret[1];
    dispatch::Dispatcher::instance().call(op.handle(), args, n, ret, 1);
    return Unbox<R>::take(ret[0], op.handle().name());
  }
};
template <>
struct Caller<void> {
  static void call(const OpRef& op, const LoomValue* args, size_t n) {
    dispatch::Dispatcher::instance().call(op.handle(), args, n, nullptr, 0);
  }
};
template <typename... Ts>
struct Caller<std::tuple<Ts...>> {
  static std::tuple<Ts...> call(const OpRef& op, const LoomValue* args, size_t n) {
    LoomValue ret[sizeof...(Ts)];
    dispatch::Dispatcher::instance().call(op.handle(), args, n, ret, sizeof...(Ts));
    return take_all(op, ret, std::index_sequence_for<Ts...>{});
  }
  template <size_t... I>
  static std::tuple<Ts...> take_all(const OpRef& op, LoomValue* ret, std::index_sequence<I...>) {
    return std::tuple<Ts...>(Unbox<Ts>::take(ret[I], op.handle().name())...);
  }
};

template <typename R>
R call(const OpRef& op, const LoomValue* args, size_t n) {
  return Caller<R>::call(op, args, n);
}

}  // namespace loom::detail
