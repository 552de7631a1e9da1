// Compile-time boxing: loom::sdk::boxed<&fn> turns a typed C++ function such as
//   Tensor add(const Tensor& a, const Tensor& b, Scalar alpha)
// into the ABI's LoomKernelFn, unpacking arguments, packing returns and catching every
// exception at the edge. A kernel that needs to redispatch, or the state its plugin
// registered it with (Registrar::impl<&fn>(op, key, &state): no globals needed), takes a
// `const DispatchContext&` as its first parameter.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/plugin.h"
#include "loom/sdk/error.hpp"
#include "loom/sdk/host.hpp"
#include "loom/sdk/tensor.hpp"

namespace loom::sdk {

// A boxed Scalar argument (int, float or bool); C++ numbers convert to it.
struct Scalar {
  Scalar() = default;
  Scalar(double value) : tag(LOOM_VALUE_DOUBLE), d(value) {}
  Scalar(int value) : i(value) {}
  Scalar(int64_t value) : i(value) {}
  Scalar(bool value) : tag(LOOM_VALUE_BOOL), i(value) {}
  LoomValueTag tag = LOOM_VALUE_INT;
  int64_t i = 0;
  double d = 0.0;
  bool is_floating_point() const { return tag == LOOM_VALUE_DOUBLE; }
  bool is_bool() const { return tag == LOOM_VALUE_BOOL; }
  double to_double() const { return tag == LOOM_VALUE_DOUBLE ? d : static_cast<double>(i); }
  int64_t to_int() const { return tag == LOOM_VALUE_DOUBLE ? static_cast<int64_t>(d) : i; }
};

// What a kernel knows about its call: the op, and how to call the next kernel.
class DispatchContext {
 public:
  explicit DispatchContext(const LoomKernelCall* call, void* state = nullptr)
      : call_(call), state_(state) {}
  // The pointer given at registration, as T (the plugin's own state).
  template <typename T>
  T& state() const {
    if (state_ == nullptr) throw Error("[sdk] this kernel was registered without a state pointer");
    return *static_cast<T*>(state_);
  }
  const LoomOperator* op() const { return call_->op; }
  const char* op_name() const { return host().op_name(call_->op); }
  uint32_t dispatch_key() const { return call_->dispatch_key; }
  uint64_t key_set() const { return call_->key_set; }
  const LoomKernelCall& call() const { return *call_; }
  // The stream to queue the kernel's work on (NULL: the device's default stream, or a
  // host older than ABI 1.2).
  void* stream() const {
    return LOOM_HAS_FIELD(call_, LoomKernelCall, stream) ? call_->stream : nullptr;
  }
  // For boxed kernels (fallbacks): calls the next kernel in line with the same
  // arguments, writing straight into this call's returns.
  void redispatch() const {
    check(host().redispatch(call_->op, call_->key_set, call_->args, call_->num_args, call_->returns,
                            call_->num_returns));
  }
  // For typed kernels: calls the next kernel with the same arguments and returns its
  // result as R (void, Tensor, int64_t, double, bool or a std::tuple of them), owning it.
  template <typename R>
  R redispatch_as() const;

 private:
  const LoomKernelCall* call_;
  void* state_;
};

namespace detail {

template <typename T>
struct ArgCast;

[[noreturn]] inline void wrong_tag(const LoomValue& v, const char* expected) {
  throw Error(std::string("[sdk] kernel argument expected ") + expected + ", got value tag " +
              std::to_string(v.tag));
}

template <>
struct ArgCast<Tensor> {
  static Tensor from(const LoomValue& v) {
    if (v.tag != LOOM_VALUE_TENSOR) wrong_tag(v, "Tensor");
    return Tensor::borrow(v.u.tensor);
  }
};
template <>
struct ArgCast<int64_t> {
  static int64_t from(const LoomValue& v) {
    if (v.tag != LOOM_VALUE_INT && v.tag != LOOM_VALUE_BOOL) wrong_tag(v, "int");
    return v.u.i;
  }
};
template <>
struct ArgCast<double> {
  static double from(const LoomValue& v) {
    if (v.tag == LOOM_VALUE_DOUBLE) return v.u.d;
    if (v.tag == LOOM_VALUE_INT) return static_cast<double>(v.u.i);
    wrong_tag(v, "float");
  }
};
template <>
struct ArgCast<bool> {
  static bool from(const LoomValue& v) {
    if (v.tag != LOOM_VALUE_BOOL) wrong_tag(v, "bool");
    return v.u.i != 0;
  }
};
template <>
struct ArgCast<Scalar> {
  static Scalar from(const LoomValue& v) {
    Scalar s;
    s.tag = static_cast<LoomValueTag>(v.tag);
    if (v.tag == LOOM_VALUE_DOUBLE) {
      s.d = v.u.d;
    } else if (v.tag == LOOM_VALUE_INT || v.tag == LOOM_VALUE_BOOL) {
      s.i = v.u.i;
    } else {
      wrong_tag(v, "Scalar");
    }
    return s;
  }
};
template <>
struct ArgCast<std::string_view> {
  static std::string_view from(const LoomValue& v) {
    if (v.tag != LOOM_VALUE_STRING) wrong_tag(v, "str");
    return {v.u.str, v.length};
  }
};
template <>
struct ArgCast<LoomDType> {
  static LoomDType from(const LoomValue& v) {
    if (v.tag != LOOM_VALUE_DTYPE) wrong_tag(v, "ScalarType");
    return static_cast<LoomDType>(v.u.i);
  }
};
template <>
struct ArgCast<LoomDevice> {
  static LoomDevice from(const LoomValue& v) {
    if (v.tag != LOOM_VALUE_DEVICE) wrong_tag(v, "Device");
    return v.u.device;
  }
};
template <>
struct ArgCast<std::span<const int64_t>> {
  static std::span<const int64_t> from(const LoomValue& v) {
    if (v.tag != LOOM_VALUE_INT_LIST) wrong_tag(v, "int[]");
    return {v.u.ints, v.length};
  }
};
template <>
struct ArgCast<std::span<const double>> {
  static std::span<const double> from(const LoomValue& v) {
    if (v.tag != LOOM_VALUE_DOUBLE_LIST) wrong_tag(v, "float[]");
    return {v.u.doubles, v.length};
  }
};
template <>
struct ArgCast<std::vector<Tensor>> {
  static std::vector<Tensor> from(const LoomValue& v) {
    if (v.tag != LOOM_VALUE_TENSOR_LIST) wrong_tag(v, "Tensor[]");
    std::vector<Tensor> out;
    out.reserve(v.length);
    for (uint32_t i = 0; i < v.length; ++i) out.push_back(Tensor::borrow(v.u.tensors[i]));
    return out;
  }
};
template <typename T>
struct ArgCast<std::optional<T>> {
  static std::optional<T> from(const LoomValue& v) {
    if (v.tag == LOOM_VALUE_NONE) return std::nullopt;
    return ArgCast<T>::from(v);
  }
};

template <typename T>
struct RetCast;
template <>
struct RetCast<Tensor> {
  static void to(LoomValue& out, Tensor&& t) {
    if (!t.defined()) throw Error("[sdk] kernel returned an undefined tensor");
    out.u.tensor = t.release_to_host();
    out.tag = LOOM_VALUE_TENSOR;
  }
};
template <>
struct RetCast<int64_t> {
  static void to(LoomValue& out, int64_t v) {
    out.u.i = v;
    out.tag = LOOM_VALUE_INT;
  }
};
template <>
struct RetCast<double> {
  static void to(LoomValue& out, double v) {
    out.u.d = v;
    out.tag = LOOM_VALUE_DOUBLE;
  }
};
template <>
struct RetCast<bool> {
  static void to(LoomValue& out, bool v) {
    out.u.i = v;
    out.tag = LOOM_VALUE_BOOL;
  }
};
template <>
struct RetCast<std::vector<Tensor>> {
  static void to(LoomValue& out, std::vector<Tensor>&& list) {
    auto** items =
        static_cast<LoomTensor**>(host().list_allocate(list.size() * sizeof(LoomTensor*)));
    if (items == nullptr) throw Error("[sdk] out of memory returning a tensor list");
    for (size_t i = 0; i < list.size(); ++i) items[i] = list[i].release_to_host();
    out.u.tensors = items;
    out.length = static_cast<uint32_t>(list.size());
    out.tag = LOOM_VALUE_TENSOR_LIST;
  }
};

template <typename R>
struct ReturnCount : std::integral_constant<size_t, 1> {};
template <>
struct ReturnCount<void> : std::integral_constant<size_t, 0> {};
template <typename... Ts>
struct ReturnCount<std::tuple<Ts...>> : std::integral_constant<size_t, sizeof...(Ts)> {};

template <typename R>
void write_returns(LoomValue* out, R&& value) {
  RetCast<std::decay_t<R>>::to(out[0], std::forward<R>(value));
}
template <typename... Ts, size_t... I>
void write_tuple(LoomValue* out, std::tuple<Ts...>&& values, std::index_sequence<I...>) {
  (RetCast<std::decay_t<Ts>>::to(out[I], std::move(std::get<I>(values))), ...);
}
template <typename... Ts>
void write_returns(LoomValue* out, std::tuple<Ts...>&& values) {
  write_tuple(out, std::move(values), std::index_sequence_for<Ts...>{});
}

template <typename F>
struct FunctionTraits;
template <typename R, typename... A>
struct FunctionTraits<R (*)(A...)> {
  using Return = R;
  using Args = std::tuple<std::decay_t<A>...>;
  static constexpr size_t arity = sizeof...(A);
};

template <typename Args>
struct TakesContext : std::false_type {};
template <typename... Rest>
struct TakesContext<std::tuple<DispatchContext, Rest...>> : std::true_type {};

template <auto Fn, size_t Offset, size_t... I>
decltype(auto) invoke_unboxed(void* state, const LoomKernelCall* call, std::index_sequence<I...>) {
  using Args = typename FunctionTraits<decltype(Fn)>::Args;
  if constexpr (Offset == 1) {
    DispatchContext context(call, state);
    return Fn(context, ArgCast<std::tuple_element_t<I + 1, Args>>::from(call->args[I])...);
  } else {
    return Fn(ArgCast<std::tuple_element_t<I, Args>>::from(call->args[I])...);
  }
}

}  // namespace detail

namespace detail {

template <typename T>
struct RetFrom {
  static T from(LoomValue& v) { return ArgCast<T>::from(v); }
};
template <>
struct RetFrom<Tensor> {
  static Tensor from(LoomValue& v) {
    if (v.tag != LOOM_VALUE_TENSOR) throw Error("[sdk] redispatch returned no tensor");
    v.tag = LOOM_VALUE_NONE;
    return Tensor::adopt(v.u.tensor);
  }
};

// Releases whatever the values still own when a conversion throws half-way.
struct ReturnsGuard {
  LoomValue* values;
  size_t count;
  ~ReturnsGuard() {
    for (size_t i = 0; i < count; ++i) {
      if (values[i].tag != LOOM_VALUE_NONE) host().value_release(&values[i]);
    }
  }
};

template <typename R>
struct TypedRedispatch {
  static R run(const LoomKernelCall& call) {
    LoomValue out[1] = {};
    check(host().redispatch(call.op, call.key_set, call.args, call.num_args, out, 1));
    ReturnsGuard guard{out, 1};
    return RetFrom<R>::from(out[0]);
  }
};
template <>
struct TypedRedispatch<void> {
  static void run(const LoomKernelCall& call) {
    check(host().redispatch(call.op, call.key_set, call.args, call.num_args, nullptr, 0));
  }
};
template <typename... Ts>
struct TypedRedispatch<std::tuple<Ts...>> {
  static std::tuple<Ts...> run(const LoomKernelCall& call) {
    LoomValue out[sizeof...(Ts)] = {};
    check(host().redispatch(call.op, call.key_set, call.args, call.num_args, out, sizeof...(Ts)));
    ReturnsGuard guard{out, sizeof...(Ts)};
    return unpack(out, std::index_sequence_for<Ts...>{});
  }
  template <size_t... I>
  static std::tuple<Ts...> unpack(LoomValue* out, std::index_sequence<I...>) {
    return std::tuple<Ts...>(RetFrom<Ts>::from(out[I])...);
  }
};

}  // namespace detail

template <typename R>
R DispatchContext::redispatch_as() const {
  return detail::TypedRedispatch<R>::run(*call_);
}

namespace detail {

// The number of arguments and returns of a schema in PyTorch's grammar:
// "ns::name.overload(Tensor self, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)" has 3
// and 1. The `*` of keyword-only arguments is not an argument; brackets, parentheses and
// quoted defaults nest.
struct SchemaArity {
  size_t arguments = 0, returns = 0;
};
inline size_t count_items(std::string_view list) {
  size_t items = 0, depth = 0, start = 0;
  bool quoted = false;
  auto finish = [&](size_t end) {
    std::string_view item = list.substr(start, end - start);
    const size_t first = item.find_first_not_of(' ');
    if (first == std::string_view::npos) return;
    const size_t last = item.find_last_not_of(' ');
    if (item.substr(first, last - first + 1) != "*") ++items;
  };
  for (size_t i = 0; i < list.size(); ++i) {
    const char c = list[i];
    if (c == '"' || c == '\'') quoted = !quoted;
    if (quoted) continue;
    if (c == '(' || c == '[') ++depth;
    if ((c == ')' || c == ']') && depth > 0) --depth;
    if (c == ',' && depth == 0) {
      finish(i);
      start = i + 1;
    }
  }
  finish(list.size());
  return items;
}
inline SchemaArity schema_arity(std::string_view schema) {
  SchemaArity arity;
  const size_t open = schema.find('(');
  size_t depth = 0, close = std::string_view::npos;
  for (size_t i = open; open != std::string_view::npos && i < schema.size(); ++i) {
    if (schema[i] == '(') ++depth;
    if (schema[i] == ')' && --depth == 0) {
      close = i;
      break;
    }
  }
  if (close == std::string_view::npos) return arity;
  arity.arguments = count_items(schema.substr(open + 1, close - open - 1));
  std::string_view rest = schema.substr(close + 1);
  const size_t arrow = rest.find("->");
  if (arrow == std::string_view::npos) return arity;
  rest = rest.substr(arrow + 2);
  rest.remove_prefix(std::min(rest.find_first_not_of(' '), rest.size()));
  if (!rest.empty() && rest.front() == '(') {
    const size_t end = rest.rfind(')');
    arity.returns = count_items(rest.substr(1, end == std::string_view::npos ? 0 : end - 1));
  } else {
    arity.returns = rest.empty() ? 0 : 1;
  }
  return arity;
}

}  // namespace detail

// Checks that the typed function Fn fits op's schema: as many arguments (after an optional
// leading DispatchContext) and returns. Registrar::impl<Fn> runs it when registering, so
// a mismatch fails the plugin's initialisation instead of the op's first call.
template <auto Fn>
void check_arity(const LoomOperator* op) {
  using Traits = detail::FunctionTraits<decltype(Fn)>;
  constexpr size_t offset = detail::TakesContext<typename Traits::Args>::value ? 1 : 0;
  constexpr size_t num_args = Traits::arity - offset;
  constexpr size_t num_returns = detail::ReturnCount<typename Traits::Return>::value;
  const detail::SchemaArity schema = detail::schema_arity(host().op_schema(op));
  if (schema.arguments != num_args || schema.returns != num_returns) {
    throw Error(std::string("[sdk] kernel for '") + host().op_name(op) + "' takes " +
                    std::to_string(num_args) + " arguments and " + std::to_string(num_returns) +
                    " returns but the schema has " + std::to_string(schema.arguments) + " and " +
                    std::to_string(schema.returns) + ": " + host().op_schema(op),
                LOOM_STATUS_INVALID_ARGUMENT);
  }
}

// The boxed kernel for a typed function Fn (a function pointer constant).
template <auto Fn>
LoomError* boxed(void* state, const LoomKernelCall* call) noexcept {
  return catch_all([&] {
    using Traits = detail::FunctionTraits<decltype(Fn)>;
    constexpr size_t offset = detail::TakesContext<typename Traits::Args>::value ? 1 : 0;
    constexpr size_t num_args = Traits::arity - offset;
    constexpr size_t num_returns = detail::ReturnCount<typename Traits::Return>::value;
    if (call->num_args != num_args || call->num_returns != num_returns) [[unlikely]] {
      throw Error(std::string("[sdk] kernel for '") + host().op_name(call->op) + "' takes " +
                  std::to_string(num_args) + " arguments and " + std::to_string(num_returns) +
                  " returns but the schema has " + std::to_string(call->num_args) + " and " +
                  std::to_string(call->num_returns));
    }
    auto indices = std::make_index_sequence<num_args>{};
    if constexpr (num_returns == 0) {
      detail::invoke_unboxed<Fn, offset>(state, call, indices);
    } else {
      detail::write_returns(call->returns,
                            detail::invoke_unboxed<Fn, offset>(state, call, indices));
    }
  });
}

}  // namespace loom::sdk
