// ShapeArgs (typed access to boxed arguments for shape rules), the rule registry and the
// helpers shared by the rule families.
#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "loom/core/tensor_base.h"
#include "loom/core/type_promotion.h"
#include "shape_rule.h"

namespace loom::ops {

const LoomValue& ShapeArgs::at(size_t i) const {
  if (i >= num_args_) fail("expected at least ", i + 1, " arguments, found ", num_args_);
  return args_[i];
}

const TensorImpl& ShapeArgs::tensor(size_t i) const {
  const LoomValue& v = at(i);
  if (v.tag != LOOM_VALUE_TENSOR || v.u.tensor == nullptr) {
    fail("argument ", i, " must be a tensor, found value tag ", v.tag);
  }
  return *reinterpret_cast<const TensorImpl*>(v.u.tensor);
}

const TensorImpl* ShapeArgs::optional_tensor(size_t i) const {
  return is_none(i) ? nullptr : &tensor(i);
}

std::vector<const TensorImpl*> ShapeArgs::tensors(size_t i) const {
  const LoomValue& v = at(i);
  if (v.tag != LOOM_VALUE_TENSOR_LIST) fail("argument ", i, " must be a tensor list");
  std::vector<const TensorImpl*> out;
  out.reserve(v.length);
  for (uint32_t k = 0; k < v.length; ++k) {
    if (v.u.tensors[k] == nullptr) fail("tensor ", k, " of the list is undefined");
    out.push_back(reinterpret_cast<const TensorImpl*>(v.u.tensors[k]));
  }
  return out;
}

std::vector<const TensorImpl*> ShapeArgs::optional_tensors(size_t i) const {
  const LoomValue& v = at(i);
  if (v.tag != LOOM_VALUE_TENSOR_LIST) fail("argument ", i, " must be a tensor list");
  std::vector<const TensorImpl*> out;
  out.reserve(v.length);
  for (uint32_t k = 0; k < v.length; ++k) {
    out.push_back(reinterpret_cast<const TensorImpl*>(v.u.tensors[k]));
  }
  return out;
}

int64_t ShapeArgs::integer(size_t i) const {
  const LoomValue& v = at(i);
  if (v.tag != LOOM_VALUE_INT && v.tag != LOOM_VALUE_BOOL) fail("argument ", i, " must be an int");
  return v.u.i;
}

std::optional<int64_t> ShapeArgs::optional_integer(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return integer(i);
}

double ShapeArgs::real(size_t i) const {
  const LoomValue& v = at(i);
  if (v.tag == LOOM_VALUE_DOUBLE) return v.u.d;
  if (v.tag == LOOM_VALUE_INT) return static_cast<double>(v.u.i);
  fail("argument ", i, " must be a float");
}

std::optional<double> ShapeArgs::optional_real(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return real(i);
}

bool ShapeArgs::boolean(size_t i) const {
  const LoomValue& v = at(i);
  if (v.tag != LOOM_VALUE_BOOL) fail("argument ", i, " must be a bool");
  return v.u.i != 0;
}

Scalar ShapeArgs::scalar(size_t i) const {
  const LoomValue& v = at(i);
  if (v.tag == LOOM_VALUE_DOUBLE) return Scalar(v.u.d);
  if (v.tag == LOOM_VALUE_INT) return Scalar(v.u.i);
  if (v.tag == LOOM_VALUE_BOOL) return Scalar(v.u.i != 0);
  fail("argument ", i, " must be a number");
}

std::span<const int64_t> ShapeArgs::ints(size_t i) const {
  const LoomValue& v = at(i);
  if (v.tag == LOOM_VALUE_INT) return {&v.u.i, 1};  // `int[1]` accepts one int
  if (v.tag != LOOM_VALUE_INT_LIST) fail("argument ", i, " must be an int list");
  return {v.u.ints, v.length};
}

std::optional<std::span<const int64_t>> ShapeArgs::optional_ints(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return ints(i);
}

std::optional<ScalarType> ShapeArgs::optional_dtype(size_t i) const {
  if (is_none(i)) return std::nullopt;
  const LoomValue& v = at(i);
  if (v.tag != LOOM_VALUE_DTYPE) fail("argument ", i, " must be a dtype");
  return static_cast<ScalarType>(v.u.i);
}

std::string_view ShapeArgs::str(size_t i) const {
  const LoomValue& v = at(i);
  if (v.tag != LOOM_VALUE_STRING) fail("argument ", i, " must be a string");
  return {v.u.str, v.length};
}

int64_t ShapeArgs::wrap_dim(int64_t dim, int64_t ndim) const {
  return ::loom::wrap_dim(dim, std::max<int64_t>(ndim, 1), op_);
}

Device ShapeArgs::common_device(std::initializer_list<const TensorImpl*> tensors) const {
  std::optional<Device> device;
  for (const TensorImpl* t : tensors) {
    if (t == nullptr || (t->dim() == 0 && t->device().type == kCPU)) continue;
    if (!device) {
      device = t->device();
    } else if (!(t->device() == *device)) {
      fail("expected all tensors on one device, found ", device->to_string(), " and ",
           t->device().to_string());
    }
  }
  if (device) return *device;
  for (const TensorImpl* t : tensors) {
    if (t != nullptr) return t->device();
  }
  return Device{kCPU, -1};
}

ShapeRule find_shape_rule(std::string_view op) {
  static const auto* rules = [] {
    auto* map = new absl::flat_hash_map<std::string_view, ShapeRule>();
    for (auto family : {
#define LOOM_FAMILY(family) family##_shape_rules(),
#include "shape_rule_families.inc"
#undef LOOM_FAMILY
         }) {
      for (const ShapeRuleEntry& e : family) map->emplace(e.op, e.rule);
    }
    return map;
  }();
  auto it = rules->find(op);
  return it == rules->end() ? nullptr : it->second;
}

std::vector<bool> reduced_dim_mask(const ShapeArgs& args, std::span<const int64_t> dims,
                                   int64_t ndim) {
  std::vector<bool> mask(static_cast<size_t>(ndim), dims.empty());
  for (int64_t d : dims) {
    int64_t w = args.wrap_dim(d, ndim);
    if (ndim == 0) continue;
    if (mask[w]) args.fail("dim ", w, " appears more than once in the list of dims");
    mask[w] = true;
  }
  return mask;
}

DimVector reduced_shape(IntArrayRef sizes, const std::vector<bool>& mask, bool keepdim) {
  DimVector out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!mask[i]) {
      out.push_back(sizes[i]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

OutputMeta output(DimVector shape, ScalarType dtype, Device device) {
  return OutputMeta{std::move(shape), dtype, dtype, device};
}

void follow_channels_last(const TensorImpl& self, OutputMetas& out) {
  if (self.dim() == 4 && suggest_memory_format(self) == MemoryFormat::ChannelsLast) {
    for (OutputMeta& m : out) m.memory_format = MemoryFormat::ChannelsLast;
  }
}

DimVector sizes_of(const TensorImpl& t) {
  return DimVector(t.sizes().begin(), t.sizes().end());
}

int64_t size_at(const TensorImpl& t, int64_t dim) {
  return t.dim() == 0 ? 1 : t.sizes()[dim];
}

ScalarType accumulating_dtype(const TensorImpl& self, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  return is_integral(self.dtype(), /*include_bool=*/true) ? ScalarType::Int64 : self.dtype();
}

Pair pair(const ShapeArgs& args, size_t i, const char* name) {
  std::span<const int64_t> v = args.ints(i);
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() != 2) args.fail("expected ", name, " to have 1 or 2 values, found ", v.size());
  return {v[0], v[1]};
}

Pair positive_pair(const ShapeArgs& args, size_t i, const char* name) {
  Pair p = pair(args, i, name);
  if (p.h <= 0 || p.w <= 0) {
    args.fail("expected positive ", name, ", found [", p.h, ", ", p.w, "]");
  }
  return p;
}

Pair nonnegative_pair(const ShapeArgs& args, size_t i, const char* name) {
  Pair p = pair(args, i, name);
  if (p.h < 0 || p.w < 0) {
    args.fail("expected non-negative ", name, ", found [", p.h, ", ", p.w, "]");
  }
  return p;
}

void require_floating(const ShapeArgs& args, const TensorImpl& t, const char* name) {
  if (!is_floating_point(t.dtype())) {
    args.fail("expected ", name, " of a floating point dtype, found ", scalar_type_name(t.dtype()));
  }
}

}  // namespace loom::ops
