// Structured ops: variant derivation, the op library's functional / in-place kernels,
// Meta kernels, and the Structured-key kernel that prepares backend out= calls.
#include "structured_ops.h"

#include "scalar_arguments.h"

#include <bit>
#include <optional>
#include <span>

#include "absl/container/inlined_vector.h"
#include "loom/core/device_runtime.h"
#include "loom/core/error.h"
#include "loom/core/type_promotion.h"
#include "loom/core/warning.h"
#include "loom/dispatcher/abi_keys.h"
#include "loom/dispatcher/boxing.h"
#include "loom/ops/generated/ops.h"
#include "loom/ops/structured_schemas.h"

namespace loom::ops {

// Note [Structured ops]
// ~~~~~~~~~~~~~~~~~~~~~
// A structured op is declared once in ops.def in its functional form with an output rule
// (Promoted, PromotedFloat, Bool, Shaped). From it the op library defines three ops:
//   loom::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
//   loom::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
//   loom::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
// Backends implement only the out= variant. The functional and in-place variants get
// CompositeExplicit kernels from the op library that compute the output's shape
// (broadcast) and dtype (type promotion, the rule), allocate it or check `self`, and call
// out=. The out= variant gets a kernel on the Structured key (Note [The Structured key]),
// so however it is called it first checks `out` (shape, dtype castable, device), brings
// every tensor input to out's shape (an expand view) and the compute dtype (a copy_),
// and gives the backend an out of the result dtype (a temporary, copied back, when `out`
// has another dtype), then redispatches to the backend. So a backend kernel only ever
// sees tensors of one shape, one dtype (bool out for Bool rules) and one device, with
// arbitrary strides (0 on broadcast dims): it writes math, not bookkeeping. The
// functional and in-place kernels run that preparation directly, with the output meta
// they already computed, which keeps small ops cheap. On the meta device no-op kernels
// make every structured op run only its shape rule.

using dispatch::box;
using dispatch::Dispatcher;
using dispatch::OperatorHandle;
using dispatch::Registrant;
using dispatch::release_value;

namespace {

using TensorList = absl::InlinedVector<Tensor, 6>;

// What the op library's kernels of one variant need; the kernels' context. Lives as long
// as the process (the ops are never undefined).
struct StructuredInfo {
  OutputRule rule;
  std::string name;                          // the variant's qualified name, for messages
  OperatorHandle out_op;                     // the out= variant of the family
  const StructuredInfo* out_info = nullptr;  // its info
  std::vector<int> inputs;                   // indices of the Tensor inputs (out= excluded)
  int num_inputs_and_scalars = 0;            // arguments of the functional variant
  int num_outputs = 1;                       // out= arguments (the last ones of the out= variant)
  ShapeRule shape_rule = nullptr;            // rule Shaped only
  uint64_t mask_inputs = 0;        // bit i: argument i is a bool mask (Note [Masks and modes])
  int rounding_mode = -1;          // index of a `str? rounding_mode` argument, or -1
  int dtype_arg = -1;              // rule Shaped: index of a `ScalarType? dtype`, or -1
  uint64_t promoting_scalars = 0;  // bit i: Scalar argument i takes part in promotion
  // Scalar arguments (index, name), checked against the compute dtype (Note [Scalars that
  // overflow]); `alpha` among them also gets PyTorch's alpha rules.
  std::vector<std::pair<int, std::string>> scalar_args;
  uint64_t scalar_bits = 0;  // bit i: argument i is in scalar_args (the fast check's view)
  int alpha_arg = -1;
  enum class BoolInputs : uint8_t {
    Allowed,
    NoNegation,
    NoSubtraction
  } bool_inputs = BoolInputs::Allowed;
};

const TensorImpl* impl_of(const LoomValue& v) {
  return reinterpret_cast<const TensorImpl*>(v.u.tensor);
}

Tensor borrow(const LoomValue& v) {
  return Tensor::borrow(reinterpret_cast<TensorImpl*>(const_cast<LoomTensor*>(v.u.tensor)));
}

// Note [Masks and modes]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Two pointwise shapes need more than "promote every tensor": a tensor argument named
// `condition` or `mask` (where, masked_fill) must be bool, broadcasts with the others and
// takes no part in type promotion; and `div.Tensor_mode`'s result is a true (floating)
// division when its `rounding_mode` is None but keeps integer dtypes when it is "trunc"
// or "floor". Both are read off the schema when the op is defined, so ops.def stays
// declarative and kernels still see one compute dtype (bool for masks).

bool is_mask(const StructuredInfo& info, int index) {
  return (info.mask_inputs >> index) & 1u;
}

// Inputs of one shape, dtype and device, none a mask, a wrapped number or quantized:
// nothing to broadcast, promote or move (the common case, checked first).
bool uniform_inputs(const StructuredInfo& info, const LoomValue* args) {
  if (info.inputs.empty()) return false;
  const TensorImpl* first = impl_of(args[info.inputs[0]]);
  if (info.mask_inputs != 0 || first->is_wrapped_number() || is_quantized(first->dtype())) {
    return false;
  }
  for (size_t k = 1; k < info.inputs.size(); ++k) {
    const TensorImpl* t = impl_of(args[info.inputs[k]]);
    if (t->dtype() != first->dtype() || t->is_wrapped_number() ||
        !same_shape(t->sizes(), first->sizes()) || !(t->device() == first->device())) {
      return false;
    }
  }
  return true;
}

// Note [Host scalars by value]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `x * 2.0` with x on a GPU: PyTorch hands the 2.0 to the GPU kernel as an argument, not
// as memory on the device. A backend whose device interface sets
// LOOM_DEVICE_TAKES_HOST_SCALARS gets the same: its pointwise out= kernels receive such an
// input as the 0-dim CPU tensor it is (cast to the compute dtype on the host, never
// expanded) and read its one element into the launch. Otherwise the element is copied to
// the device (a staged copy, or a wait where the plugin cannot release the source at
// once) and expanded like any other input. Only 0-dim CPU tensors mix with device tensors
// (the device rule in compute_meta), so nothing else changes.
bool takes_host_scalars(Device device) {
  const DeviceRuntime* runtime = find_device_runtime(device.type);
  return runtime != nullptr && runtime->takes_host_scalars();
}

// One element of a 0-dim CPU tensor, converted to `target` on the host without a kernel
// (so no CPU plugin is needed to use C++ numbers with a device); float16 and bfloat16,
// which need the CPU plugin's conversions, go through copy_.
template <typename T>
double element_as_double(const Tensor& t) {
  return static_cast<double>(*t.data<T>());
}
Tensor cast_host_scalar(const Tensor& t, ScalarType target) {
  auto simple = [](ScalarType s) {
    return s == ScalarType::Bool || s == ScalarType::Int64 || s == ScalarType::Int32 ||
           s == ScalarType::Float64 || s == ScalarType::Float32;
  };
  Tensor out = empty(t.sizes(), target, t.device());
  if (!simple(t.dtype()) || !simple(target)) {
    loom::copy_(out, t);
    return out;
  }
  double d = 0;
  int64_t i = 0;
  switch (t.dtype()) {
    case ScalarType::Bool:
      i = *t.data<bool>() ? 1 : 0;
      d = static_cast<double>(i);
      break;
    case ScalarType::Int32:
      i = *t.data<int32_t>();
      d = static_cast<double>(i);
      break;
    case ScalarType::Int64:
      i = *t.data<int64_t>();
      d = static_cast<double>(i);
      break;
    case ScalarType::Float32:
      d = element_as_double<float>(t);
      i = static_cast<int64_t>(d);
      break;
    default:
      d = element_as_double<double>(t);
      i = static_cast<int64_t>(d);
      break;
  }
  const bool floating_source = t.dtype() == ScalarType::Float32 || t.dtype() == ScalarType::Float64;
  switch (target) {
    case ScalarType::Bool:
      *out.data<bool>() = floating_source ? d != 0.0 : i != 0;
      break;
    case ScalarType::Int32:
      *out.data<int32_t>() = static_cast<int32_t>(i);
      break;
    case ScalarType::Int64:
      *out.data<int64_t>() = i;
      break;
    case ScalarType::Float32:
      *out.data<float>() = static_cast<float>(d);
      break;
    default:
      *out.data<double>() = d;
      break;
  }
  return out;
}

// PyTorch refuses `-` on bool in the op's meta function, before any backend: negation and
// subtraction have no bool meaning, and the message points at the logical op meant. Here
// too, so every backend gives the hint (a kernel's dtype claim would refuse it with a
// plainer message first). Subtraction is refused when any operand is bool, whatever
// the promoted dtype (`sub(bool, int64)`), as PyTorch's sub_check does.
void refuse_bool_arithmetic(const std::string& op, const StructuredInfo& info,
                            const LoomValue* args, ScalarType compute) {
  using BoolInputs = StructuredInfo::BoolInputs;
  if (info.bool_inputs == BoolInputs::NoNegation && compute == ScalarType::Bool) {
    fail(op, "negation on a bool tensor is not supported; use logical_not");
  }
  if (info.bool_inputs != BoolInputs::NoSubtraction) return;
  int bools = 0;
  for (int index : info.inputs) bools += impl_of(args[index])->dtype() == ScalarType::Bool;
  if (bools == static_cast<int>(info.inputs.size())) {
    fail(op, "subtraction of two bool tensors is not supported; use logical_xor instead");
  }
  if (bools > 0) {
    fail(op,
         "subtraction with a bool tensor is not supported; to invert a mask use "
         "logical_not instead");
  }
}

// The Scalar arguments must fit the compute dtype; alpha also follows PyTorch's
// alpha_check: no floating alpha for integral results, no bool alpha but for bool ones.
void check_scalar_arguments_slowly(const std::string& op, const StructuredInfo& info,
                                   const LoomValue* args, ScalarType compute) {
  if (info.alpha_arg >= 0) {
    const LoomValue& alpha = args[info.alpha_arg];
    if (alpha.tag == LOOM_VALUE_DOUBLE && !is_floating_point(compute)) {
      fail(op,
           "for integral input tensors, argument alpha must not be a floating point number, "
           "found ",
           alpha.u.d);
    }
    if (alpha.tag == LOOM_VALUE_BOOL && compute != ScalarType::Bool) {
      fail(op, "a bool alpha is only supported for bool results, found a ",
           scalar_type_name(compute), " result");
    }
  }
  for (const auto& [index, name] : info.scalar_args) {
    check_scalar_fits(op, name, args[index], compute);
  }
}

// The common case first (alpha=1 on the small-op path): small integers pass every check
// for every dtype but bool.
inline void check_scalar_arguments(const std::string& op, const StructuredInfo& info,
                                   const LoomValue* args, ScalarType compute) {
  bool small_integers = compute != ScalarType::Bool;
  for (uint64_t bits = info.scalar_bits; bits != 0; bits &= bits - 1) {
    const LoomValue& v = args[std::countr_zero(bits)];
    small_integers &= v.tag == LOOM_VALUE_INT && static_cast<uint64_t>(v.u.i) + 127 <= 254;
  }
  if (!small_integers) check_scalar_arguments_slowly(op, info, args, compute);
}

OutputMeta compute_meta(const std::string& op, const StructuredInfo& info, const LoomValue* args) {
  OutputMeta meta;
  LOOM_CHECK(!info.inputs.empty(), "op-library", op, " is pointwise but has no tensor input");
  const TensorImpl* first = impl_of(args[info.inputs[0]]);
  if (uniform_inputs(info, args)) {
    meta.shape.assign(first->sizes().begin(), first->sizes().end());
    meta.device = first->device();
    meta.compute = first->dtype();
    meta.inputs_ready = true;
  } else {
    absl::InlinedVector<PromotionOperand, 4> operands;
    // The device: that of the first input that is not a 0-dim CPU tensor (those may go
    // with tensors on any device, as in PyTorch), else CPU.
    std::optional<Device> device;
    meta.shape.assign(first->sizes().begin(), first->sizes().end());
    for (int index : info.inputs) {
      const TensorImpl* t = impl_of(args[index]);
      if (t != first) meta.shape = broadcast_shapes(meta.shape, t->sizes(), op);
      if (!(t->dim() == 0 && t->device().type == kCPU)) {
        if (!device) {
          device = t->device();
        } else if (!(t->device() == *device)) {
          fail(op, "expected all tensors on one device, found ", device->to_string(), " and ",
               t->device().to_string());
        }
      }
      if (is_mask(info, index)) {
        if (t->dtype() != ScalarType::Bool) {
          fail(op, "expected a bool mask, found ", scalar_type_name(t->dtype()));
        }
        continue;
      }
      PromotionOperand::Tier tier = t->is_wrapped_number() ? PromotionOperand::Tier::Scalar
                                    : t->dim() == 0        ? PromotionOperand::Tier::ZeroDim
                                                           : PromotionOperand::Tier::Dimensioned;
      operands.push_back({t->dtype(), tier});
    }
    meta.device = device.value_or(Device{kCPU, -1});
    meta.compute = result_type(operands, op);
  }
  if (info.promoting_scalars != 0 && !is_floating_point(meta.compute)) [[unlikely]] {
    // Tag "scalars_promote": a float bound makes an integer clamp compute in float32. Only
    // the category can rise (a floating input stays as it is, as in PyTorch's clamp).
    absl::InlinedVector<PromotionOperand, 3> operands{
        {meta.compute, PromotionOperand::Tier::Dimensioned}};
    for (uint64_t bits = info.promoting_scalars; bits != 0; bits &= bits - 1) {
      const LoomValue& v = args[std::countr_zero(bits)];
      if (v.tag == LOOM_VALUE_NONE) continue;
      const ScalarType kind = v.tag == LOOM_VALUE_DOUBLE ? ScalarType::Float64
                              : v.tag == LOOM_VALUE_BOOL ? ScalarType::Bool
                                                         : ScalarType::Int64;
      operands.push_back({kind, PromotionOperand::Tier::Scalar});
    }
    const ScalarType promoted = result_type(operands, op);
    if (promoted != meta.compute) {
      meta.compute = promoted;
      meta.inputs_ready = false;
    }
  }
  const bool true_division =
      info.rounding_mode >= 0 && args[info.rounding_mode].tag == LOOM_VALUE_NONE;
  if ((info.rule == OutputRule::PromotedFloat || true_division) &&
      !is_floating_point(meta.compute)) {
    meta.compute = ScalarType::Float32;
    meta.inputs_ready = false;
  }
  if (info.bool_inputs != StructuredInfo::BoolInputs::Allowed) [[unlikely]] {
    refuse_bool_arithmetic(op, info, args, meta.compute);
  }
  check_scalar_arguments(op, info, args, meta.compute);
  meta.result = info.rule == OutputRule::Bool ? ScalarType::Bool : meta.compute;
  return meta;
}

OutputMetas shaped_meta(const StructuredInfo& info, const LoomValue* args) {
  OutputMetas metas;
  info.shape_rule(ShapeArgs(info.name, args, info.num_inputs_and_scalars), metas);
  LOOM_CHECK(metas.size() == static_cast<size_t>(info.num_outputs), "op-library", "shape rule of ",
             info.name, " gave ", metas.size(), " outputs, expected ", info.num_outputs);
  return metas;
}

// Note [Resizing outs]
// ~~~~~~~~~~~~~~~~~~~~~
// A caller's out= tensor of the wrong shape is resized to the result's shape, as PyTorch
// does: silently when it has no elements (`torch.add(a, b, out=torch.empty(0))` is the
// idiom for "fill this in"), and with a warning (Note [Warnings]) when it has elements,
// which PyTorch deprecates and warns about too. The tensor keeps its storage when it is
// large enough; the dtype and device must still fit. In-place variants never resize:
// `a.add_(b)` with a result larger than `a` is an error, as in PyTorch.
enum class Resize { Never, OutArgument };

void resize_out(const std::string& op, const Tensor& out, IntArrayRef shape) {
  if (out.numel() != 0) {
    warn(op, "an out= tensor with elements was resized from shape ", shape_to_string(out.sizes()),
         " to the result's shape ", shape_to_string(shape),
         "; resizing outs that have elements is deprecated (as in PyTorch): pass an out with "
         "0 elements or of the result's shape");
  }
  out.impl()->resize_contiguous(shape);
}

// A caller's out for a pointwise op: on the inputs' device, of the result's shape (or
// resized to it, Note [Resizing outs]), and of a dtype the result casts to.
void check_out(const std::string& op, const Tensor& out, const OutputMeta& meta, Resize resize) {
  if (!(out.device() == meta.device)) {
    fail(op, "expected out on ", meta.device.to_string(), " like the inputs, found ",
         out.device().to_string());
  }
  if (!can_cast(meta.result, out.dtype())) {
    fail(op, "result type ", scalar_type_name(meta.result), " can't be cast to the out dtype ",
         scalar_type_name(out.dtype()));
  }
  if (!same_shape(out.sizes(), meta.shape) && resize == Resize::OutArgument) {
    resize_out(op, out, meta.shape);
  }
  if (!same_shape(out.sizes(), meta.shape)) {
    fail(op, "out has shape ", shape_to_string(out.sizes()), " but the result has shape ",
         shape_to_string(meta.shape));
  }
}

// Returns `out` as the call's return `i` in place of what the kernel returned.
void return_caller_out(LoomValue* returns, size_t i, const Tensor& out) {
  release_value(returns[i]);
  returns[i] = box(out);
  out.impl()->retain();
}

// Note [dtype= casts the input first]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `sum(x, dtype=int64)` is `sum(x.to(int64))` in PyTorch, for every op with a
// `ScalarType? dtype` argument (sum, prod, cumsum, cumprod, softmax, log_softmax, and
// mean through sum): sum(f32 [0.6, 0.6], dtype=int64) is 0, not round(1.2). So when
// `dtype` is given and differs from self's, the op library converts self before the
// backend kernel runs, and every backend gets it right without a mixed-dtype loop.
// Returns the converted self, or an undefined tensor when self is used as is.
Tensor input_in_requested_dtype(const StructuredInfo& info, const LoomValue* args) {
  if (info.dtype_arg < 0 || args[info.dtype_arg].tag != LOOM_VALUE_DTYPE) return {};
  const auto requested = static_cast<ScalarType>(args[info.dtype_arg].u.i);
  const TensorImpl* self = impl_of(args[0]);
  if (self->dtype() == requested) return {};
  Tensor converted = empty(self->sizes(), requested, self->device());
  loom::copy_(converted, borrow(args[0]));
  return converted;
}

// A new output of a Shaped op, dense in its rule's memory format.
Tensor empty_output(const OutputMeta& m) {
  if (m.memory_format == MemoryFormat::Contiguous) return empty(m.shape, m.result, m.device);
  return empty_strided(m.shape, strides_for(m.shape, m.memory_format), m.result, m.device);
}

// Checks a Shaped op's outputs against its rule and runs the backend kernel, through
// contiguous temporaries of the rule's dtype where a caller's out is strided or of
// another dtype.
void run_shaped_out(const StructuredInfo& info, DispatchKeySet keys, const LoomValue* call_args,
                    size_t num_args, LoomValue* returns, size_t num_returns, Resize resize) {
  const Tensor converted = input_in_requested_dtype(info, call_args);
  absl::InlinedVector<LoomValue, 8> converted_args;
  const LoomValue* args = call_args;
  if (converted.defined()) {
    converted_args.assign(call_args, call_args + num_args);
    converted_args[0] = box(converted);
    args = converted_args.data();
  }
  OutputMetas metas = shaped_meta(info, args);
  check_scalar_arguments(info.name, info, args, metas[0].result);
  const size_t first_out = num_args - metas.size();
  absl::InlinedVector<LoomValue, 8> kernel_args(args, args + num_args);
  TensorList temps(metas.size());
  bool ready = true;
  for (size_t i = 0; i < metas.size(); ++i) {
    const OutputMeta& m = metas[i];
    Tensor out = borrow(args[first_out + i]);
    if (!(out.device() == m.device)) {
      fail(info.name, "expected output ", i, " on ", m.device.to_string(),
           " like the inputs, found ", out.device().to_string());
    }
    if (!can_cast(m.result, out.dtype())) {
      fail(info.name, "result type ", scalar_type_name(m.result),
           " can't be cast to the dtype of output ", i, ", ", scalar_type_name(out.dtype()));
    }
    if (!same_shape(out.sizes(), m.shape) && resize == Resize::OutArgument) {
      resize_out(info.name, out, m.shape);
    }
    if (!same_shape(out.sizes(), m.shape)) {
      fail(info.name, "output ", i, " has shape ", shape_to_string(out.sizes()),
           " but the result has shape ", shape_to_string(m.shape));
    }
    if (out.dtype() != m.result || !out.is_contiguous(m.memory_format)) {
      temps[i] = empty_output(m);
      kernel_args[first_out + i] = box(temps[i]);
      ready = false;
    }
  }
  Dispatcher::instance().redispatch_checked_arguments(info.out_op, keys, kernel_args.data(),
                                                      num_args, returns, num_returns);
  if (ready) return;
  for (size_t i = 0; i < metas.size(); ++i) {
    if (!temps[i].defined()) continue;
    Tensor out = borrow(args[first_out + i]);
    loom::copy_(out, temps[i]);
    return_caller_out(returns, i, out);
  }
}

// Prepares a call of the out= variant `info` (Note [Structured ops]) and runs the backend
// kernel through `keys`. A known meta comes with an out the functional variant allocated
// from it: nothing to check about that out. `resize` says whether the out is the caller's
// out= argument, which may be resized, or an in-place variant's self, which may not.
void run_out(const StructuredInfo& info, DispatchKeySet keys, const LoomValue* args,
             size_t num_args, LoomValue* returns, size_t num_returns, const OutputMeta* known_meta,
             Resize resize) {
  if (info.rule == OutputRule::Shaped) {
    run_shaped_out(info, keys, args, num_args, returns, num_returns, resize);
    return;
  }
  Tensor out = borrow(args[num_args - 1]);
  std::optional<OutputMeta> computed;
  if (known_meta == nullptr) {
    computed = compute_meta(info.name, info, args);
    check_out(info.name, out, *computed, resize);
  }
  const OutputMeta& meta = known_meta != nullptr ? *known_meta : *computed;
  // Common case first: everything already matches the kernel contract.
  bool ready = out.dtype() == meta.result;
  for (size_t i = 0; ready && !meta.inputs_ready && i < info.inputs.size(); ++i) {
    const TensorImpl* t = impl_of(args[info.inputs[i]]);
    ready = t->dtype() == (is_mask(info, info.inputs[i]) ? ScalarType::Bool : meta.compute) &&
            t->device() == meta.device && same_shape(t->sizes(), meta.shape);
  }
  Dispatcher& d = Dispatcher::instance();
  if (ready) {
    d.redispatch_checked_arguments(info.out_op, keys, args, num_args, returns, num_returns);
    return;
  }
  // Bring the inputs to the kernel contract; `keep` holds the temporaries alive.
  TensorList keep;
  absl::InlinedVector<LoomValue, 8> kernel_args(args, args + num_args);
  std::optional<bool> by_value;  // whether meta.device's kernels take host scalars
  for (int index : info.inputs) {
    Tensor t = borrow(args[index]);
    if (!(t.device() == meta.device)) {  // a 0-dim CPU tensor used with another device
      // Cast on the host first (`x + 2` with x float32 on a device): the device's copy_
      // then moves an element of the compute dtype, and a backend with one dtype needs no
      // dtype conversion in its copies.
      ScalarType target = is_mask(info, index) ? ScalarType::Bool : meta.compute;
      if (t.dtype() != target) t = cast_host_scalar(t, target);
      if (!by_value) by_value = takes_host_scalars(meta.device);
      if (*by_value) {  // Note [Host scalars by value]
        if (t.impl() != impl_of(args[index])) {
          kernel_args[index] = box(t);
          keep.push_back(std::move(t));
        }
        continue;
      }
      Tensor moved = empty(t.sizes(), t.dtype(), meta.device);
      loom::copy_(moved, t);
      t = moved;
    }
    // Cast before expanding: `x * 0.9` converts one element, not x.numel() of them.
    ScalarType target = is_mask(info, index) ? ScalarType::Bool : meta.compute;
    if (t.dtype() != target) {
      Tensor cast = empty(t.sizes(), target, meta.device);
      loom::copy_(cast, t);
      t = cast;
    }
    if (!same_shape(t.sizes(), meta.shape)) {
      t = t.TensorBase::expand(meta.shape);  // below the functionality keys: no op call
    }
    if (t.impl() != impl_of(args[index])) {
      kernel_args[index] = box(t);
      keep.push_back(std::move(t));
    }
  }
  Tensor kernel_out = out;
  if (out.dtype() != meta.result) {
    kernel_out = empty(meta.shape, meta.result, meta.device);
    kernel_args[num_args - 1] = box(kernel_out);
  }
  d.redispatch_checked_arguments(info.out_op, keys, kernel_args.data(), num_args, returns,
                                 num_returns);
  if (kernel_out.impl() != out.impl()) {
    loom::copy_(out, kernel_out);
    return_caller_out(returns, 0, out);
  }
}

// Runs the family's out= variant from a functional or in-place kernel with the call's
// arguments followed by `outs`. The composite runs at a backend key (it is a
// CompositeExplicit kernel): it prepares the out= call itself, with the meta it already
// has, and redispatches to that backend below the Structured key.
void call_out(const StructuredInfo& info, const LoomKernelCall* call, std::span<const Tensor> outs,
              const OutputMeta* meta, LoomValue* ret) {
  absl::InlinedVector<LoomValue, 8> out_args(call->args, call->args + info.num_inputs_and_scalars);
  for (const Tensor& out : outs) out_args.push_back(box(out));
  DispatchKeySet keys = DispatchKeySet::for_backend(dispatch::key_from_abi(call->dispatch_key));
  run_out(*info.out_info, keys, out_args.data(), out_args.size(), ret, outs.size(), meta,
          Resize::Never);
}

Tensor call_out(const StructuredInfo& info, const LoomKernelCall* call, const Tensor& out,
                const OutputMeta* meta) {
  LoomValue ret[1];
  call_out(info, call, std::span<const Tensor>(&out, 1), meta, ret);
  return dispatch::unbox_tensor(ret[0], info.out_info->name);
}

// Shaped functional variant: allocate every output from the rule, call out=.
void shaped_functional(const StructuredInfo& info, const LoomKernelCall* call) {
  OutputMetas metas = shaped_meta(info, call->args);
  TensorList outs;
  for (const OutputMeta& m : metas) outs.push_back(empty_output(m));
  LoomValue ret[8];
  call_out(info, call, std::span<const Tensor>(outs.data(), outs.size()), nullptr, ret);
  for (size_t i = 0; i < outs.size(); ++i) call->returns[i] = ret[i];
}

// Shaped in-place variant: compute into a temporary, then copy into self (kernels may
// read inputs after writing outputs, so self is never the kernel's out).
Tensor shaped_inplace(const StructuredInfo& info, const LoomKernelCall* call) {
  Tensor self = borrow(call->args[0]);
  OutputMetas metas = shaped_meta(info, call->args);
  const OutputMeta& m = metas[0];
  if (!same_shape(self.sizes(), m.shape)) {
    fail(info.name, "the result has shape ", shape_to_string(m.shape), " but self has shape ",
         shape_to_string(self.sizes()));
  }
  if (!can_cast(m.result, self.dtype())) {
    fail(info.name, "result type ", scalar_type_name(m.result), " can't be cast to self's dtype ",
         scalar_type_name(self.dtype()));
  }
  Tensor temp = call_out(info, call, empty_output(m), nullptr);
  loom::copy_(self, temp);
  return self;
}

LoomError* host_error(const Error& err) {
  return dispatch::make_host_error(static_cast<int32_t>(err.code()), err.what());
}

// A new result of a pointwise op, in its inputs' layout (Note [Layouts of new results] in
// loom/core/memory_format.h): row-major when they all are, checked first.
Tensor new_pointwise_result(const StructuredInfo& info, const LoomValue* args,
                            const OutputMeta& meta) {
  bool row_major_inputs = true;
  for (int index : info.inputs) row_major_inputs &= impl_of(args[index])->is_contiguous();
  if (row_major_inputs) return empty(meta.shape, meta.result, meta.device);
  absl::InlinedVector<const TensorImpl*, 4> inputs;
  for (int index : info.inputs) inputs.push_back(impl_of(args[index]));
  const DimVector strides = strides_following(meta.shape, inputs);
  if (strides.empty()) return empty(meta.shape, meta.result, meta.device);
  return empty_strided(meta.shape, strides, meta.result, meta.device);
}

LoomError* functional_kernel(void* ctx, const LoomKernelCall* call) {
  const auto& info = *static_cast<const StructuredInfo*>(ctx);
  try {
    if (info.rule == OutputRule::Shaped) {
      shaped_functional(info, call);
      return nullptr;
    }
    OutputMeta meta = compute_meta(info.name, info, call->args);
    Tensor out = new_pointwise_result(info, call->args, meta);
    Tensor result = call_out(info, call, out, &meta);
    call->returns[0] = box(result);
    result.release();  // the return owns the reference
    return nullptr;
  } catch (const Error& err) {
    return host_error(err);
  }
}

LoomError* inplace_kernel(void* ctx, const LoomKernelCall* call) {
  const auto& info = *static_cast<const StructuredInfo*>(ctx);
  try {
    Tensor self = borrow(call->args[0]);
    Tensor result = info.rule == OutputRule::Shaped
                        ? shaped_inplace(info, call)
                        : call_out(info, call, self, nullptr);  // out= checks shape and dtype
    call->returns[0] = box(result);
    result.release();
    return nullptr;
  } catch (const Error& err) {
    return host_error(err);
  }
}

// The out= variant's kernel on the Structured key: prepares the call for any backend.
LoomError* structured_out_kernel(void* ctx, const LoomKernelCall* call) {
  const auto& info = *static_cast<const StructuredInfo*>(ctx);
  try {
    run_out(info, DispatchKeySet(call->key_set), call->args, call->num_args, call->returns,
            call->num_returns, nullptr, Resize::OutArgument);
    return nullptr;
  } catch (const Error& err) {
    return host_error(err);
  }
}

// Meta tensors have no memory: the shape rule ran on the Structured key already.
LoomError* meta_out_kernel(void* ctx, const LoomKernelCall* call) {
  const auto& info = *static_cast<const StructuredInfo*>(ctx);
  size_t n = static_cast<size_t>(info.num_outputs);
  for (size_t i = 0; i < n; ++i) {
    const LoomValue& out = call->args[call->num_args - n + i];
    reinterpret_cast<TensorImpl*>(out.u.tensor)->retain();
    call->returns[i] = out;
  }
  return nullptr;
}

// Defines one variant of a structured op with `info` (named after it) as its kernels'
// context, which lives as long as the process.
StructuredInfo* define_variant(const dispatch::FunctionSchema& schema, const StructuredInfo& info,
                               const Registrant* owner, OperatorHandle* op) {
  Dispatcher::instance().define(schema.to_string(), owner, op).release();
  auto* kept = new StructuredInfo(info);
  kept->name = op->name();
  return kept;
}

void register_kernel(OperatorHandle op, DispatchKey key, LoomKernelFn kernel,
                     const StructuredInfo* info, const Registrant* owner, const char* debug) {
  Dispatcher::instance()
      .register_kernel(op, key, {kernel, const_cast<StructuredInfo*>(info)}, owner, debug)
      .release();
}

}  // namespace

void define_structured_op(const OpDefinition& def, const Registrant* owner) {
  dispatch::FunctionSchema functional = dispatch::parse_schema(def.schema);
  const bool shaped = def.output == OutputRule::Shaped;
  for (const dispatch::Argument& r : functional.returns) {
    LOOM_CHECK(r.type.kind == dispatch::SchemaType::Kind::Tensor &&
                   (shaped || functional.returns.size() == 1),
               "op-library", "structured op '", def.schema,
               "' must return one Tensor (or Tensors, for rule Shaped)");
  }
  StructuredInfo info;
  info.rule = def.output;
  info.num_inputs_and_scalars = static_cast<int>(functional.arguments.size());
  info.num_outputs = static_cast<int>(functional.returns.size());
  for (size_t i = 0; i < functional.arguments.size(); ++i) {
    const dispatch::Argument& a = functional.arguments[i];
    if (a.type.kind == dispatch::SchemaType::Kind::Tensor) {
      info.inputs.push_back(static_cast<int>(i));
      if (!shaped && (a.name == "condition" || a.name == "mask")) {
        info.mask_inputs |= uint64_t{1} << i;
      }
    }
    if (a.name == "rounding_mode") info.rounding_mode = static_cast<int>(i);
    if (shaped && a.name == "dtype" && i > 0) info.dtype_arg = static_cast<int>(i);
    const dispatch::SchemaType* type = &a.type;
    if (type->is_optional()) type = type->elem.get();
    if (type->kind == dispatch::SchemaType::Kind::Scalar) {
      if (has_tag(def.tags, "scalars_promote")) info.promoting_scalars |= uint64_t{1} << i;
      info.scalar_args.emplace_back(static_cast<int>(i), a.name);
      info.scalar_bits |= uint64_t{1} << i;
      if (a.name == "alpha" && !shaped) info.alpha_arg = static_cast<int>(i);
    }
  }
  if (functional.name.ns == "loom" && functional.name.name == "neg") {
    info.bool_inputs = StructuredInfo::BoolInputs::NoNegation;
  } else if (functional.name.ns == "loom" && functional.name.name == "sub") {
    info.bool_inputs = StructuredInfo::BoolInputs::NoSubtraction;
  }
  if (shaped) {
    info.shape_rule = find_shape_rule(functional.name.qualified());
    LOOM_CHECK(info.shape_rule != nullptr, "op-library", "Shaped op '", functional.name.qualified(),
               "' has no rule in ops/shape_rules/");
  } else {
    LOOM_CHECK(!info.inputs.empty(), "op-library", "structured op '", def.schema,
               "' has no Tensor input");
  }
  // The out= variant first: the others' kernels call it.
  OperatorHandle out_op;
  StructuredInfo* out = define_variant(out_schema(functional), info, owner, &out_op);
  out->out_op = out_op;
  out->out_info = out;
  register_kernel(out_op, DispatchKey::Structured, &structured_out_kernel, out, owner,
                  "structured out=");
  register_kernel(out_op, DispatchKey::Meta, &meta_out_kernel, out, owner, "meta shape rule");
  info.out_op = out_op;
  info.out_info = out;

  OperatorHandle functional_op;
  const StructuredInfo* f = define_variant(functional, info, owner, &functional_op);
  register_kernel(functional_op, DispatchKey::CompositeExplicit, &functional_kernel, f, owner,
                  "structured functional");

  if (has_inplace_variant(functional, def.output, def.tags)) {
    OperatorHandle inplace_op;
    const StructuredInfo* in = define_variant(inplace_schema(functional), info, owner, &inplace_op);
    register_kernel(inplace_op, DispatchKey::CompositeExplicit, &inplace_kernel, in, owner,
                    "structured in-place");
  }
}

}  // namespace loom::ops
