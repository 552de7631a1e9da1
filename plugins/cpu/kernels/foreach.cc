// Foreach kernels: one pointwise op over whole lists of tensors (Note [Foreach ops] in
// ops/decompositions/foreach.cc). Where the lists allow (Note [One pass over lists]) a
// single parallel_for covers every element of every tensor, with the per-tensor kernels'
// own element formulas, so the bits equal the per-tensor loop's; elsewhere the kernel runs
// that loop through the per-tensor ops.
//
// Note [One pass over lists]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// An optimizer step is a handful of pointwise ops over every parameter. Per tensor, each
// op costs a dispatch and, for small tensors, runs alone on one thread; over a list, the
// elements of all tensors are one index range [0, total) cut into grain-sized pieces, and
// a piece that crosses tensors walks them in turn (prefix sums of the numels say where
// each starts). The pass applies when every tensor is a contiguous CPU tensor of self[0]'s
// floating dtype, element i of every list has self[i]'s shape, and the writes cannot show
// the loop's order: written tensors disjoint from each other, and each input either
// disjoint from every written tensor or the very tensor written at its own position.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../elementwise_loop.h"
#include "../kernels.h"
#include "../pointwise_formulas.h"
#include "../scalar_types.h"
#include "loom/sdk/ops.hpp"

namespace loom::cpu {
namespace {

using sdk::Scalar;
using sdk::Tensor;
using TensorList = std::vector<Tensor>;
namespace op = sdk::op;

// The lists of one call: not empty, all of self's length (the op library's messages).
void check_lists(const char* op, const TensorList& self,
                 std::initializer_list<std::pair<const char*, size_t>> others) {
  if (self.empty()) {
    throw sdk::Error(std::string("[") + op +
                     "] expected a non-empty tensor list for self, found an empty one");
  }
  for (const auto& [name, size] : others) {
    if (size != self.size()) {
      throw sdk::Error(std::string("[") + op + "] expected " + name + " to have self's length " +
                       std::to_string(self.size()) + ", found " + std::to_string(size));
    }
  }
}

bool same_sizes(const Tensor& a, const Tensor& b) {
  return std::ranges::equal(a.sizes(), b.sizes());
}

// Note [One pass over lists]: whether `written` (may be empty: a functional op) and
// `inputs` can run as one pass.
bool one_pass_applies(const TensorList& self, const TensorList* written,
                      std::initializer_list<const TensorList*> inputs) {
  const LoomDType dtype = self[0].dtype();
  if (!sdk::dtypes::floating.contains(dtype)) return false;
  auto plain = [&](const Tensor& t, const Tensor& like) {
    return t.device().type == LOOM_DEVICE_CPU && t.dtype() == dtype && t.is_contiguous() &&
           same_sizes(t, like);
  };
  for (size_t i = 0; i < self.size(); ++i) {
    if (!plain(self[i], self[i])) return false;
    for (const TensorList* list : inputs) {
      if (!plain((*list)[i], self[i])) return false;
    }
  }
  if (written == nullptr) return true;
  // Byte ranges of the written tensors, sorted: disjoint from each other, and inputs meet
  // them only as the same tensor at the same position.
  struct Range {
    const char* begin;
    const char* end;
    size_t index;
  };
  const size_t item = sdk::element_size(dtype);
  auto range_of = [&](const Tensor& t, size_t i) {
    const char* p = t.data<const char>();
    return Range{p, p + t.numel() * static_cast<int64_t>(item), i};
  };
  std::vector<Range> writes;
  for (size_t i = 0; i < written->size(); ++i) {
    if ((*written)[i].numel() > 0) writes.push_back(range_of((*written)[i], i));
  }
  std::ranges::sort(writes, {}, &Range::begin);
  for (size_t k = 1; k < writes.size(); ++k) {
    if (writes[k].begin < writes[k - 1].end) return false;
  }
  for (const TensorList* list : inputs) {
    for (size_t i = 0; i < list->size(); ++i) {
      if ((*list)[i].numel() == 0) continue;
      const Range r = range_of((*list)[i], i);
      auto after = std::ranges::upper_bound(writes, r.begin, {}, &Range::begin);
      // The write that starts at or before r, and those that start inside it.
      for (auto it = after == writes.begin() ? after : after - 1;
           it != writes.end() && it->begin < r.end; ++it) {
        if (it->end <= r.begin) continue;
        if (!(it->index == i && it->begin == r.begin && it->end == r.end)) return false;
      }
    }
  }
  return true;
}

// out[i][k] = make(i)(in[i][k]...) for every tensor i of the lists, in one parallel_for
// over the elements of all of them (Note [One pass over lists]).
template <typename T, typename Make, typename... Lists>
void map_lists(const TensorList& out, const Make& make, const Lists&... in) {
  std::vector<int64_t> starts(out.size() + 1, 0);
  for (size_t i = 0; i < out.size(); ++i) starts[i + 1] = starts[i] + out[i].numel();
  parallel_for(0, starts.back(), kGrainSize, [&](int64_t begin, int64_t end) {
    size_t i = static_cast<size_t>(std::ranges::upper_bound(starts, begin) - starts.begin()) - 1;
    for (; begin < end; ++i) {
      const int64_t offset = begin - starts[i];
      const int64_t count = std::min(end, starts[i + 1]) - begin;
      if (count <= 0) continue;
      detail::contiguous_loop<T>(make(i), count, out[i].template data<T>() + offset,
                                 (in[i].template data<const T>() + offset)...);
      begin += count;
    }
  });
}

// The functional ops' results: empty tensors like self's.
TensorList empty_like_all(const TensorList& self) {
  TensorList out;
  out.reserve(self.size());
  for (const Tensor& t : self) out.push_back(sdk::empty(t.sizes(), t.dtype(), t.device()));
  return out;
}

// A Scalar argument as the per-tensor op gets it when it is a C++ number (a wrapped
// 0-dim tensor cast to the tensor's dtype, Note [Foreach ops]): for the loop, a 0-dim
// CPU tensor of the number's own dtype; for the one pass, the value cast as copy_ casts.
Tensor number_tensor(const Scalar& s) {
  const LoomDType dtype = s.is_floating_point() ? LOOM_DTYPE_FLOAT64
                          : s.is_bool()         ? LOOM_DTYPE_BOOL
                                                : LOOM_DTYPE_INT64;
  Tensor t = sdk::empty(std::span<const int64_t>(), dtype, LoomDevice{LOOM_DEVICE_CPU, -1});
  op::fill_(t, s);
  return t;
}
template <typename T>
T number_as(const Scalar& s) {
  if (s.is_floating_point()) return static_cast<T>(s.d);
  if (s.is_bool()) return static_cast<T>(s.i != 0);
  return static_cast<T>(s.i);
}

// --- the ops ---

// out[i] = f(self[i], other[i]) into new tensors, where f = make_element_fn(T{}) for the
// lists' element type T: the one pass, or the loop of the per-tensor op
// `per_tensor(self[i], other[i])`.
template <typename PerTensor, typename MakeElementFn>
TensorList list_map(const char* name, const TensorList& self, const TensorList& other,
                    const PerTensor& per_tensor, const MakeElementFn& make_element_fn) {
  check_lists(name, self, {{"other", other.size()}});
  if (!one_pass_applies(self, nullptr, {&other})) {
    TensorList out;
    for (size_t i = 0; i < self.size(); ++i) out.push_back(per_tensor(self[i], other[i]));
    return out;
  }
  TensorList out = empty_like_all(self);
  dispatch_floating_types(self[0].dtype(), name, [&]<typename T>(T) {
    map_lists<T>(
        out, [f = make_element_fn(T{})](size_t) { return f; }, self, other);
  });
  return out;
}

// x + alpha y in the acc type, as add's kernel computes it.
auto add_element(const Scalar& alpha) {
  return [&alpha]<typename T>(T) {
    using A = acc_type<T>;
    const A a = static_cast<A>(alpha.to_double());
    return [a](T x, T y) -> T { return T(A(x) + a * A(y)); };
  };
}

// x y in the acc type, as mul's kernel computes it.
constexpr auto mul_element = []<typename T>(T) {
  return [](T x, T y) -> T { return T(acc_type<T>(x) * acc_type<T>(y)); };
};

TensorList foreach_add_list(const TensorList& self, const TensorList& other, Scalar alpha) {
  return list_map(
      "loom::_foreach_add.List", self, other,
      [&](const Tensor& a, const Tensor& b) { return op::add(a, b, alpha); }, add_element(alpha));
}

TensorList foreach_mul_list(const TensorList& self, const TensorList& other) {
  return list_map(
      "loom::_foreach_mul.List", self, other,
      [](const Tensor& a, const Tensor& b) { return op::mul(a, b); }, mul_element);
}

// self[i] = combine(self[i], scalar) in the acc type over every tensor: the one pass, or
// the loop of the per-tensor op `per_tensor(t, number)`.
template <typename PerTensor, typename Combine>
void scalar_update(const char* name, const TensorList& self, const Scalar& scalar,
                   const PerTensor& per_tensor, const Combine& combine) {
  check_lists(name, self, {});
  if (!one_pass_applies(self, &self, {})) {
    const Tensor number = number_tensor(scalar);
    for (const Tensor& t : self) per_tensor(t, number);
    return;
  }
  dispatch_floating_types(self[0].dtype(), name, [&]<typename T>(T) {
    using A = acc_type<T>;
    const T y = number_as<T>(scalar);
    map_lists<T>(
        self, [&](size_t) { return [y, combine](T x) -> T { return T(combine(A(x), A(y))); }; },
        self);
  });
}

// self[i] = f_i(self[i], other[i]) over every tensor, where f_i = make_element_fn(T{}, i)
// for the lists' element type T: the one pass, or the loop of the per-tensor op
// `per_tensor(self[i], other[i], i)`.
template <typename PerTensor, typename MakeElementFn>
void list_update_each(const char* name, const TensorList& self, const char* other_name,
                      const TensorList& other, const PerTensor& per_tensor,
                      const MakeElementFn& make_element_fn) {
  check_lists(name, self, {{other_name, other.size()}});
  if (!one_pass_applies(self, &self, {&other})) {
    for (size_t i = 0; i < self.size(); ++i) per_tensor(self[i], other[i], i);
    return;
  }
  dispatch_floating_types(self[0].dtype(), name, [&]<typename T>(T) {
    map_lists<T>(
        self, [&](size_t i) { return make_element_fn(T{}, i); }, self, other);
  });
}

// The same with one f = make_element_fn(T{}) and per_tensor(self[i], other[i]) for all i.
template <typename PerTensor, typename MakeElementFn>
void list_update(const char* name, const TensorList& self, const char* other_name,
                 const TensorList& other, const PerTensor& per_tensor,
                 const MakeElementFn& make_element_fn) {
  list_update_each(
      name, self, other_name, other,
      [&](const Tensor& t, const Tensor& o, size_t) { per_tensor(t, o); },
      [&]<typename T>(T, size_t) { return make_element_fn(T{}); });
}

void foreach_add_scalar_(const TensorList& self, Scalar scalar) {
  scalar_update(
      "loom::_foreach_add_.Scalar", self, scalar,
      [](const Tensor& t, const Tensor& number) { op::add_(t, number); },
      [](auto x, auto y) { return x + y; });
}

void foreach_add_list_(const TensorList& self, const TensorList& other, Scalar alpha) {
  list_update(
      "loom::_foreach_add_.List", self, "other", other,
      [&](const Tensor& t, const Tensor& o) { op::add_(t, o, alpha); }, add_element(alpha));
}

void foreach_mul_scalar_(const TensorList& self, Scalar scalar) {
  scalar_update(
      "loom::_foreach_mul_.Scalar", self, scalar,
      [](const Tensor& t, const Tensor& number) { op::mul_(t, number); },
      [](auto x, auto y) { return x * y; });
}

// self[i] = combine(self[i], scalars[i]) in the acc type (the scalar cast to the
// tensor's dtype, as the per-tensor op's wrapped number is): the one pass, or the loop of
// the per-tensor op `per_tensor(t, number)`.
template <typename PerTensor, typename Combine>
void scalar_list_update(const char* name, const TensorList& self, std::span<const double> scalars,
                        const PerTensor& per_tensor, const Combine& combine) {
  check_lists(name, self, {{"scalars", scalars.size()}});
  if (!one_pass_applies(self, &self, {})) {
    for (size_t i = 0; i < self.size(); ++i) per_tensor(self[i], number_tensor(scalars[i]));
    return;
  }
  dispatch_floating_types(self[0].dtype(), name, [&]<typename T>(T) {
    using A = acc_type<T>;
    map_lists<T>(
        self,
        [&](size_t i) {
          const T y = static_cast<T>(scalars[i]);
          return [y, combine](T x) -> T { return T(combine(A(x), A(y))); };
        },
        self);
  });
}

void foreach_mul_scalar_list_(const TensorList& self, std::span<const double> scalars) {
  scalar_list_update(
      "loom::_foreach_mul_.ScalarList", self, scalars,
      [](const Tensor& t, const Tensor& number) { op::mul_(t, number); },
      [](auto x, auto y) { return x * y; });
}

void foreach_div_scalar_list_(const TensorList& self, std::span<const double> scalars) {
  scalar_list_update(
      "loom::_foreach_div_.ScalarList", self, scalars,
      [](const Tensor& t, const Tensor& number) { op::div_(t, number); },
      [](auto x, auto y) { return x / y; });
}

void foreach_mul_list_(const TensorList& self, const TensorList& other) {
  list_update(
      "loom::_foreach_mul_.List", self, "other", other,
      [](const Tensor& t, const Tensor& o) { op::mul_(t, o); }, mul_element);
}

void foreach_maximum_list_(const TensorList& self, const TensorList& other) {
  list_update(
      "loom::_foreach_maximum_.List", self, "other", other,
      [](const Tensor& t, const Tensor& o) { op::maximum_(t, o); },
      []<typename T>(T) {
        return [](T x, T y) -> T { return extremum_value<true, acc_type<T>>(x, y); };
      });
}

// out[i] = f(self[i]) over every tensor, where f = make_element_fn(T{}): into new tensors
// (out_of_place) or self itself; the one pass, or the loop of the per-tensor op.
template <typename PerTensor, typename MakeElementFn>
TensorList unary_lists(const char* name, const TensorList& self, bool out_of_place,
                       const PerTensor& per_tensor, const MakeElementFn& make_element_fn) {
  check_lists(name, self, {});
  TensorList out;
  if (!one_pass_applies(self, out_of_place ? nullptr : &self, {})) {
    for (const Tensor& t : self) out.push_back(per_tensor(t));
    return out_of_place ? out : TensorList{};
  }
  out = out_of_place ? empty_like_all(self) : self;
  dispatch_floating_types(self[0].dtype(), name, [&]<typename T>(T) {
    map_lists<T>(
        out, [f = make_element_fn(T{})](size_t) { return f; }, self);
  });
  return out_of_place ? out : TensorList{};
}

TensorList foreach_clamp_min_scalar(const TensorList& self, Scalar scalar) {
  const char* name = "loom::_foreach_clamp_min.Scalar";
  auto per_tensor = [&](const Tensor& t) { return op::clamp_min(t, scalar); };
  // A NaN bound (every element NaN) takes clamp_min's own kernel.
  if (std::isnan(scalar.to_double())) {
    check_lists(name, self, {});
    TensorList out;
    for (const Tensor& t : self) out.push_back(per_tensor(t));
    return out;
  }
  return unary_lists(name, self, true, per_tensor, [&]<typename T>(T) {
    using A = acc_type<T>;
    const A lo = static_cast<A>(scalar.to_double());
    return [lo](T x) -> T { return T(A(x) < lo ? lo : A(x)); };
  });
}

TensorList foreach_sqrt(const TensorList& self) {
  return unary_lists(
      "loom::_foreach_sqrt", self, true, [](const Tensor& t) { return op::sqrt(t); },
      []<typename T>(T) { return [](T x) -> T { return T(std::sqrt(acc_type<T>(x))); }; });
}

void foreach_rsqrt_(const TensorList& self) {
  unary_lists(
      "loom::_foreach_rsqrt_", self, false, [](const Tensor& t) { return op::rsqrt_(t); },
      []<typename T>(T) {
        using A = acc_type<T>;
        return [](T x) -> T { return T(A(1) / std::sqrt(A(x))); };
      });
}

void foreach_lerp_scalar_(const TensorList& self, const TensorList& tensors1, Scalar weight) {
  list_update(
      "loom::_foreach_lerp_.Scalar", self, "tensors1", tensors1,
      [&](const Tensor& t, const Tensor& end) { op::lerp_(t, end, weight); },
      [&]<typename T>(T) {
        using A = acc_type<T>;
        const A w = static_cast<A>(weight.to_double());
        return [w](T a, T b) -> T { return T(lerp_value<A>(A(a), A(b), w)); };
      });
}

void foreach_lerp_scalar_list_(const TensorList& self, const TensorList& tensors1,
                               std::span<const double> weight) {
  const char* name = "loom::_foreach_lerp_.ScalarList";
  check_lists(name, self, {{"tensors1", tensors1.size()}, {"weight", weight.size()}});
  list_update_each(
      name, self, "tensors1", tensors1,
      [&](const Tensor& t, const Tensor& end, size_t i) { op::lerp_(t, end, Scalar(weight[i])); },
      [&]<typename T>(T, size_t i) {
        using A = acc_type<T>;
        const A w = static_cast<A>(weight[i]);
        return [w](T a, T b) -> T { return T(lerp_value<A>(A(a), A(b), w)); };
      });
}

// self + value * t1 * t2 into `out` (self itself, or new tensors).
void addcmul_lists(const char* name, const TensorList& out, const TensorList& self,
                   const TensorList& tensor1, const TensorList& tensor2, Scalar value) {
  dispatch_floating_types(self[0].dtype(), name, [&]<typename T>(T) {
    using A = acc_type<T>;
    const A v = static_cast<A>(value.to_double());
    map_lists<T>(
        out, [v](size_t) { return [v](T x, T a, T b) -> T { return T(A(x) + v * A(a) * A(b)); }; },
        self, tensor1, tensor2);
  });
}

TensorList foreach_addcmul_scalar(const TensorList& self, const TensorList& tensor1,
                                  const TensorList& tensor2, Scalar value) {
  const char* name = "loom::_foreach_addcmul.Scalar";
  check_lists(name, self, {{"tensor1", tensor1.size()}, {"tensor2", tensor2.size()}});
  if (!one_pass_applies(self, nullptr, {&tensor1, &tensor2})) {
    TensorList out;
    for (size_t i = 0; i < self.size(); ++i) {
      out.push_back(op::addcmul(self[i], tensor1[i], tensor2[i], value));
    }
    return out;
  }
  TensorList out = empty_like_all(self);
  addcmul_lists(name, out, self, tensor1, tensor2, value);
  return out;
}

void foreach_addcmul_scalar_(const TensorList& self, const TensorList& tensor1,
                             const TensorList& tensor2, Scalar value) {
  const char* name = "loom::_foreach_addcmul_.Scalar";
  check_lists(name, self, {{"tensor1", tensor1.size()}, {"tensor2", tensor2.size()}});
  if (!one_pass_applies(self, &self, {&tensor1, &tensor2})) {
    for (size_t i = 0; i < self.size(); ++i) op::addcmul_(self[i], tensor1[i], tensor2[i], value);
    return;
  }
  addcmul_lists(name, self, self, tensor1, tensor2, value);
}

// self += value(i) * t1 / t2 for the per-tensor values `value_of(i)`.
template <typename ValueOf>
void addcdiv_lists(const char* name, const TensorList& self, const TensorList& tensor1,
                   const TensorList& tensor2, const ValueOf& value_of) {
  if (!one_pass_applies(self, &self, {&tensor1, &tensor2})) {
    for (size_t i = 0; i < self.size(); ++i) {
      op::addcdiv_(self[i], tensor1[i], tensor2[i], value_of(i));
    }
    return;
  }
  dispatch_floating_types(self[0].dtype(), name, [&]<typename T>(T) {
    using A = acc_type<T>;
    map_lists<T>(
        self,
        [&](size_t i) {
          const A v = static_cast<A>(value_of(i).to_double());
          return [v](T x, T a, T b) -> T { return T(A(x) + v * A(a) / A(b)); };
        },
        self, tensor1, tensor2);
  });
}

void foreach_addcdiv_scalar_(const TensorList& self, const TensorList& tensor1,
                             const TensorList& tensor2, Scalar value) {
  const char* name = "loom::_foreach_addcdiv_.Scalar";
  check_lists(name, self, {{"tensor1", tensor1.size()}, {"tensor2", tensor2.size()}});
  addcdiv_lists(name, self, tensor1, tensor2, [&](size_t) { return value; });
}

void foreach_addcdiv_scalar_list_(const TensorList& self, const TensorList& tensor1,
                                  const TensorList& tensor2, std::span<const double> scalars) {
  const char* name = "loom::_foreach_addcdiv_.ScalarList";
  check_lists(
      name, self,
      {{"tensor1", tensor1.size()}, {"tensor2", tensor2.size()}, {"scalars", scalars.size()}});
  addcdiv_lists(name, self, tensor1, tensor2, [&](size_t i) { return Scalar(scalars[i]); });
}

}  // namespace

void register_foreach_kernels(sdk::Registrar& r) {
  r.impl<&foreach_add_list>("loom::_foreach_add.List", LOOM_KEY_CPU);
  r.impl<&foreach_add_scalar_>("loom::_foreach_add_.Scalar", LOOM_KEY_CPU);
  r.impl<&foreach_add_list_>("loom::_foreach_add_.List", LOOM_KEY_CPU);
  r.impl<&foreach_mul_list>("loom::_foreach_mul.List", LOOM_KEY_CPU);
  r.impl<&foreach_mul_scalar_>("loom::_foreach_mul_.Scalar", LOOM_KEY_CPU);
  r.impl<&foreach_mul_scalar_list_>("loom::_foreach_mul_.ScalarList", LOOM_KEY_CPU);
  r.impl<&foreach_mul_list_>("loom::_foreach_mul_.List", LOOM_KEY_CPU);
  r.impl<&foreach_div_scalar_list_>("loom::_foreach_div_.ScalarList", LOOM_KEY_CPU);
  r.impl<&foreach_maximum_list_>("loom::_foreach_maximum_.List", LOOM_KEY_CPU);
  r.impl<&foreach_clamp_min_scalar>("loom::_foreach_clamp_min.Scalar", LOOM_KEY_CPU);
  r.impl<&foreach_sqrt>("loom::_foreach_sqrt", LOOM_KEY_CPU);
  r.impl<&foreach_rsqrt_>("loom::_foreach_rsqrt_", LOOM_KEY_CPU);
  r.impl<&foreach_lerp_scalar_>("loom::_foreach_lerp_.Scalar", LOOM_KEY_CPU);
  r.impl<&foreach_lerp_scalar_list_>("loom::_foreach_lerp_.ScalarList", LOOM_KEY_CPU);
  r.impl<&foreach_addcmul_scalar>("loom::_foreach_addcmul.Scalar", LOOM_KEY_CPU);
  r.impl<&foreach_addcmul_scalar_>("loom::_foreach_addcmul_.Scalar", LOOM_KEY_CPU);
  r.impl<&foreach_addcdiv_scalar_>("loom::_foreach_addcdiv_.Scalar", LOOM_KEY_CPU);
  r.impl<&foreach_addcdiv_scalar_list_>("loom::_foreach_addcdiv_.ScalarList", LOOM_KEY_CPU);
}

}  // namespace loom::cpu
