// The decomposition table and the helpers decompositions share.
#include "absl/container/flat_hash_map.h"
#include "decomposition.h"
#include "loom/core/memory_format.h"
#include "loom/dispatcher/dispatcher.h"

namespace loom::ops {

// Note [Decompositions]
// ~~~~~~~~~~~~~~~~~~~~~
// An op is a decomposition (tag "decomposition" in ops.def, a CompositeImplicit kernel
// here) when a backend would gain nothing from a kernel of its own: `mean` is `sum` then a
// division, `argmax` is `max.dim`'s indices, `std` is `sqrt(var)`. Backends implement the
// pieces and get the whole; one that can do better registers its own kernel for the key,
// which takes precedence (docs/architecture.md §3). Decompositions call the typed op API, so they
// dispatch like an app's call (autograd, profiling and the meta device see the pieces).

LoomError* decomposition_error(int32_t code, const char* message) {
  return dispatch::make_host_error(code, message);
}

LoomKernelFn find_decomposition(std::string_view op) {
  static const auto* table = [] {
    auto* map = new absl::flat_hash_map<std::string_view, LoomKernelFn>();
    for (auto family : {
#define LOOM_FAMILY(family) family##_decompositions(),
#include "decomposition_families.inc"
#undef LOOM_FAMILY
         }) {
      for (const DecompositionEntry& e : family) map->emplace(e.op, e.kernel);
    }
    return map;
  }();
  auto it = table->find(op);
  return it == table->end() ? nullptr : it->second;
}

Tensor wrapped_number(double value) {
  return wrapped_scalar(Scalar(value));
}

std::tuple<Tensor, Tensor, Tensor> masked_gradients(Tensor a, Tensor b, Tensor c,
                                                    const Tensor& like) {
  for (Tensor* t : {&a, &b, &c}) {
    if (!t->defined()) *t = zeros_of({0}, like.dtype(), like.device());
  }
  return {a, b, c};
}

Tensor int64_tensor(const std::vector<int64_t>& values, Device device) {
  Tensor t = empty(std::vector<int64_t>{static_cast<int64_t>(values.size())}, ScalarType::Int64,
                   Device{kCPU, -1});
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return device.type == kCPU ? t : loom::to(t, device);
}

Tensor zeros_of(const std::vector<int64_t>& sizes, ScalarType dtype, Device device) {
  Tensor t = empty(sizes, dtype, device);
  loom::fill_(t, Scalar(0));
  return t;
}

Tensor empty_in_format(const char* op, IntArrayRef sizes, std::optional<int64_t> memory_format,
                       const Tensor* like, ScalarType dtype, Device device) {
  namespace code = memory_format_code;
  const int64_t format = memory_format.value_or(code::kPreserve);
  if (format == code::kPreserve && like != nullptr) {
    const DimVector strides = preserved_strides(*like->impl());
    if (!strides.empty()) return empty_strided(sizes, strides, dtype, device);
  }
  if (format == code::kPreserve || format == code::kContiguous) return empty(sizes, dtype, device);
  if (format == code::kChannelsLast && sizes.size() == 4) {
    return empty_strided(sizes, strides_for(sizes, MemoryFormat::ChannelsLast), dtype, device);
  }
  if (format == code::kChannelsLast) {
    fail(op, "expected a 4-D tensor for torch.channels_last, found ", sizes.size(), " dims");
  }
  const std::string_view name = memory_format_code_name(format);
  fail(op,
       "expected memory_format None, torch.contiguous_format (1), torch.channels_last (2) or "
       "torch.preserve_format (4), found ",
       format, name.empty() ? "" : " (torch.", name, name.empty() ? "" : ")");
}

Tensor host_matrix(int64_t rows, int64_t cols, const std::function<void(double*)>& fill,
                   ScalarType dtype, Device device) {
  Tensor a = empty(std::vector<int64_t>{rows, cols}, ScalarType::Float64, Device{kCPU, -1});
  double* p = a.data<double>();
  std::fill(p, p + rows * cols, 0.0);
  fill(p);
  return loom::to(loom::to(a, dtype), device);
}

Tensor apply_along(const Tensor& t, int64_t dim, const Tensor& m) {
  return loom::transpose(loom::matmul(loom::transpose(t, dim, -1), m.t()), dim, -1);
}

Tensor cast(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = empty(t.sizes(), dtype, t.device());
  loom::copy_(out, t);
  return out;
}

double host_value(const Tensor& t) {
  LOOM_CHECK(t.numel() == 1, "op-library", "expected a one-element tensor, found ", t.numel(),
             " elements");
  LOOM_CHECK(t.device().type != kMeta, "op-library",
             "the result's size depends on tensor values, which a meta tensor does not have "
             "(expected a tensor with data)");
  Tensor host = loom::to(t, Device{kCPU, -1}, ScalarType::Float64, false, true);
  return *host.data<double>();
}

int64_t reduced_count(const Tensor& self, const OptionalIntList& dim, std::string_view op) {
  if (!dim || dim->size() == 0) return self.numel();
  int64_t count = 1;
  for (int64_t d : dim->span()) {
    count *= self.dim() == 0 ? 1 : self.sizes()[wrap_dim(d, self.dim(), op)];
  }
  return count;
}

Tensor channel_view(const Tensor& t, int64_t ndim) {
  DimVector shape(static_cast<size_t>(ndim), 1);
  shape[1] = t.numel();
  return loom::contiguous(t).view(shape);
}

}  // namespace loom::ops
