// FunctionRef<R(Args...)>: a non-owning reference to a callable, for passing lambdas to
// the plugin's non-template loop drivers (parallel_for's region, for_each_run) without
// instantiating them per lambda. The callable must outlive the reference.
#pragma once

#include <type_traits>
#include <utility>

namespace loom::cpu {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(const F& f)  // NOLINT: converts implicitly, like a function pointer
      : object_(&f), call_([](const void* o, Args... args) -> R {
          return (*static_cast<const F*>(o))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  const void* object_;
  R (*call_)(const void*, Args...);
};

}  // namespace loom::cpu
