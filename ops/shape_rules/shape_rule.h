// Shape rules of the Shaped structured ops (Note [Shape rules]): how the dispatcher learns
// each output's shape, dtype and device from the boxed arguments of a call, and the
// argument reader the rules are written with.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "loom/core/device.h"
#include "loom/core/error.h"
#include "loom/core/memory_format.h"
#include "loom/core/scalar.h"
#include "loom/core/scalar_type.h"
#include "loom/core/tensor_impl.h"
#include "loom/plugin.h"

namespace loom::ops {

// Note [Shape rules]
// ~~~~~~~~~~~~~~~~~~
// A Shaped op (rule `Shaped` in ops.def) is structured like a pointwise op, but its
// outputs are not the broadcast of its inputs: a reduction drops dims, mm multiplies
// shapes, cat concatenates. Each such op names a shape rule here, keyed by its
// functional name. The rule validates the arguments (dims in range, shapes that fit,
// dtypes the op accepts, one device) and returns every output's shape and dtype. From
// that the dispatcher allocates the outputs of the functional variant, checks the
// outputs of the out= variant, and runs the op on the meta device without a kernel. The
// backend's out= kernel receives the inputs unchanged (any strides, their own dtypes)
// and outputs of the rule's dtype, dense in the rule's memory format (row-major unless
// the rule asks for channels last, as conv2d's do: Note [Memory formats]), so it writes
// only the computation; a caller's `out` that is not dense in that format or of another
// dtype is served through a temporary copied back after the kernel.

// The output a structured op computes.
struct OutputMeta {
  DimVector shape;
  ScalarType compute;  // pointwise: dtype the inputs are brought to
  ScalarType result;   // dtype the kernel writes
  Device device;
  // Pointwise: every input already has `shape`, `compute` and `device`.
  bool inputs_ready = false;
  // The layout the output is allocated in (Shaped rules only).
  MemoryFormat memory_format = MemoryFormat::Contiguous;
};
using OutputMetas = absl::InlinedVector<OutputMeta, 2>;

// Typed, checked access to a call's boxed arguments, for shape rules.
class ShapeArgs {
 public:
  ShapeArgs(std::string_view op, const LoomValue* args, size_t num_args)
      : op_(op), args_(args), num_args_(num_args) {}

  // The op's base name for messages ("sum").
  std::string_view op() const { return op_; }
  size_t size() const { return num_args_; }
  bool is_none(size_t i) const { return at(i).tag == LOOM_VALUE_NONE; }

  const TensorImpl& tensor(size_t i) const;
  const TensorImpl* optional_tensor(size_t i) const;  // nullptr for None
  std::vector<const TensorImpl*> tensors(size_t i) const;
  // A `Tensor?[]` argument: nullptr for each None element.
  std::vector<const TensorImpl*> optional_tensors(size_t i) const;
  int64_t integer(size_t i) const;
  std::optional<int64_t> optional_integer(size_t i) const;
  double real(size_t i) const;
  std::optional<double> optional_real(size_t i) const;
  bool boolean(size_t i) const;
  Scalar scalar(size_t i) const;
  std::span<const int64_t> ints(size_t i) const;
  // An `int[]?` argument: nullopt for None.
  std::optional<std::span<const int64_t>> optional_ints(size_t i) const;
  std::optional<ScalarType> optional_dtype(size_t i) const;
  std::string_view str(size_t i) const;

  // Throws "[op] detail...".
  template <typename... Args>
  [[noreturn]] void fail(const Args&... detail) const {
    ::loom::fail(std::string(op_), detail...);
  }
  // Wraps a possibly negative dim into [0, ndim); errors name the op. A 0-dim tensor
  // accepts dims -1 and 0, as in PyTorch.
  int64_t wrap_dim(int64_t dim, int64_t ndim) const;
  // The device shared by the given tensors (0-dim CPU tensors go with any device).
  Device common_device(std::initializer_list<const TensorImpl*> tensors) const;

 private:
  const LoomValue& at(size_t i) const;
  std::string_view op_;
  const LoomValue* args_;
  size_t num_args_;
};

using ShapeRule = void (*)(const ShapeArgs& args, OutputMetas& outputs);

struct ShapeRuleEntry {
  std::string_view op;  // qualified functional name: "loom::sum.dim_IntList"
  ShapeRule rule;
};

// The rules of each op family, defined in shape_rules/<family>.cc (families without
// Shaped ops have no file); the build finds the families (shape_rule_families.inc,
// Note [Op families as data]).
#define LOOM_FAMILY(family) std::span<const ShapeRuleEntry> family##_shape_rules();
#include "shape_rule_families.inc"
#undef LOOM_FAMILY

// The rule of `op`, or nullptr.
ShapeRule find_shape_rule(std::string_view op);

// Helpers shared by the rules.
// `dims` wrapped and checked for repeats; empty (or None) means every dim.
std::vector<bool> reduced_dim_mask(const ShapeArgs& args, std::span<const int64_t> dims,
                                   int64_t ndim);
// The shape left after reducing the masked dims (kept as 1 when keepdim).
DimVector reduced_shape(IntArrayRef sizes, const std::vector<bool>& mask, bool keepdim);
OutputMeta output(DimVector shape, ScalarType dtype, Device device);
// Makes every output channels last when `self` is a 4-D tensor that suggests channels
// last (PyTorch's pooling and empty_like results follow a channels-last input).
void follow_channels_last(const TensorImpl& self, OutputMetas& out);
// The sizes of `t` as a DimVector.
DimVector sizes_of(const TensorImpl& t);
// A tensor's size along `dim`, treating a 0-dim tensor as one element.
int64_t size_at(const TensorImpl& t, int64_t dim);
// sum and prod accumulate integers and bool in int64 unless a dtype is given (and so do
// the scans).
ScalarType accumulating_dtype(const TensorImpl& self, std::optional<ScalarType> dtype);

// Convolution and pooling: `int[2]` arguments and floating inputs.
struct Pair {
  int64_t h, w;
};
// An `int[2]` argument: one value is used for both dims.
Pair pair(const ShapeArgs& args, size_t i, const char* name);
Pair positive_pair(const ShapeArgs& args, size_t i, const char* name);
Pair nonnegative_pair(const ShapeArgs& args, size_t i, const char* name);
void require_floating(const ShapeArgs& args, const TensorImpl& t, const char* name);

}  // namespace loom::ops
