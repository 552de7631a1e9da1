// Structured ops: variant derivation, the core's functional / in-place kernels, Meta
// kernels, and the preparation of backend out= calls.
#include "structured_ops.h"

#include <optional>
#include <span>

#include "absl/container/inlined_vector.h"
#include "decompositions/decomposition.h"
#include "dispatcher_internal.h"
#include "loom/core/error.h"
#include "loom/core/tensor.h"
#include "loom/core/type_promotion.h"
#include "loom/dispatcher/abi_keys.h"
#include "loom/dispatcher/boxing.h"
#include "operator_entry.h"
#include "structured_schemas.h"

namespace loom::dispatch {

// Note [Structured ops]
// ~~~~~~~~~~~~~~~~~~~~~
// A structured op is declared once in ops.def in its functional form with an output rule
// (Promoted, PromotedFloat, Bool). From it the dispatcher defines three ops:
//   loom::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
//   loom::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
//   loom::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
// Backends implement only the out= variant. The functional and in-place variants get
// CompositeExplicit kernels from the core that compute the output's shape (broadcast)
// and dtype (type promotion, the rule), allocate it or check `self`, and call out=.
// Whenever an out= op reaches a backend key, however it was called, the dispatcher
// first checks `out` (shape, dtype castable, device) and brings every tensor input to
// out's shape (an expand view) and the compute dtype (a copy_), and gives the kernel an
// out of the result dtype (a temporary, copied back, when `out` has another dtype). So a
// backend kernel only ever sees tensors of one shape, one dtype (bool out for Bool
// rules) and one device, with arbitrary strides (0 on broadcast dims): it writes math,
// not bookkeeping. On the meta device the core's no-op kernels make every structured op
// run only its shape rule.

namespace {

using TensorList = absl::InlinedVector<Tensor, 6>;

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
  const bool true_division =
      info.rounding_mode >= 0 && args[info.rounding_mode].tag == LOOM_VALUE_NONE;
  if ((info.rule == OutputRule::PromotedFloat || true_division) &&
      !is_floating_point(meta.compute)) {
    meta.compute = ScalarType::Float32;
    meta.inputs_ready = false;
  }
  meta.result = info.rule == OutputRule::Bool ? ScalarType::Bool : meta.compute;
  return meta;
}

// Runs the family's out= kernel for the key this composite kernel was selected for, with
// args[0..n) followed by `out`. The composite already runs at that backend key (it is a
// CompositeExplicit kernel), so the out= table entry for the same key is the kernel a
// call from the top would reach; skipping the second dispatch is what keeps small ops
// cheap. Other keys (none today) go through the dispatcher.
void call_out(const StructuredInfo& info, const LoomKernelCall* call, std::span<const Tensor> outs,
              const OutputMeta* meta, LoomValue* ret) {
  absl::InlinedVector<LoomValue, 8> out_args(call->args, call->args + info.num_inputs_and_scalars);
  for (const Tensor& out : outs) out_args.push_back(box(out));
  DispatchKey key = key_from_abi(call->dispatch_key);
  const OperatorEntry& op = *info.out_op;
  if (is_backend_key(key)) {
    const KernelSlot* slot = op.table[runtime_index(key)].load(std::memory_order_acquire);
    call_structured_out(op, *op.structured, *slot, key, DispatchKeySet::for_backend(key),
                        out_args.data(), out_args.size(), ret, outs.size(), meta);
  } else {
    Dispatcher::instance().call(OperatorHandle(info.out_op), out_args.data(), out_args.size(), ret,
                                outs.size());
  }
}

Tensor call_out(const StructuredInfo& info, const LoomKernelCall* call, const Tensor& out,
                const OutputMeta* meta) {
  LoomValue ret[1];
  call_out(info, call, std::span<const Tensor>(&out, 1), meta, ret);
  return unbox_tensor(ret[0], info.out_op->name);
}

OutputMetas shaped_meta(const std::string& op, const StructuredInfo& info, const LoomValue* args) {
  OutputMetas metas;
  info.shape_rule(ShapeArgs(op, args, info.num_inputs_and_scalars), metas);
  LOOM_CHECK(metas.size() == static_cast<size_t>(info.num_outputs), "op-library", "shape rule of ",
             op, " gave ", metas.size(), " outputs, expected ", info.num_outputs);
  return metas;
}

// Shaped functional variant: allocate every output from the rule, call out=.
void shaped_functional(const OperatorEntry& e, const StructuredInfo& info,
                       const LoomKernelCall* call) {
  OutputMetas metas = shaped_meta(e.name, info, call->args);
  TensorList outs;
  for (const OutputMeta& m : metas) outs.push_back(empty(m.shape, m.result, m.device));
  LoomValue ret[8];
  call_out(info, call, std::span<const Tensor>(outs.data(), outs.size()), nullptr, ret);
  for (size_t i = 0; i < outs.size(); ++i) call->returns[i] = ret[i];
}

// Shaped in-place variant: compute into a temporary, then copy into self (kernels may
// read inputs after writing outputs, so self is never the kernel's out).
Tensor shaped_inplace(const OperatorEntry& e, const StructuredInfo& info,
                      const LoomKernelCall* call) {
  Tensor self = borrow(call->args[0]);
  OutputMetas metas = shaped_meta(e.name, info, call->args);
  const OutputMeta& m = metas[0];
  if (!same_shape(self.sizes(), m.shape)) {
    fail(e.name, "the result has shape ", shape_to_string(m.shape), " but self has shape ",
         shape_to_string(self.sizes()));
  }
  if (!can_cast(m.result, self.dtype())) {
    fail(e.name, "result type ", scalar_type_name(m.result), " can't be cast to self's dtype ",
         scalar_type_name(self.dtype()));
  }
  Tensor temp = call_out(info, call, empty(m.shape, m.result, m.device), nullptr);
  static const OperatorHandle copy = Dispatcher::instance().find_defined("loom::copy_");
  LoomValue copy_args[] = {box(self), box(temp), box(false)};
  LoomValue ret[1];
  Dispatcher::instance().call(copy, copy_args, 3, ret, 1);
  release_value(ret[0]);
  return self;
}

LoomError* functional_kernel(void* ctx, const LoomKernelCall* call) {
  const auto* e = static_cast<const OperatorEntry*>(ctx);
  try {
    const StructuredInfo& info = *e->structured;
    if (info.rule == OutputRule::Shaped) {
      shaped_functional(*e, info, call);
      return nullptr;
    }
    OutputMeta meta = compute_meta(e->name, info, call->args);
    Tensor out = empty(meta.shape, meta.result, meta.device);
    Tensor result = call_out(info, call, out, &meta);
    call->returns[0] = box(result);
    result.release();  // the return owns the reference
    return nullptr;
  } catch (const Error& err) {
    return make_host_error(static_cast<int32_t>(err.code()), err.what());
  }
}

LoomError* inplace_kernel(void* ctx, const LoomKernelCall* call) {
  const auto* e = static_cast<const OperatorEntry*>(ctx);
  try {
    const StructuredInfo& info = *e->structured;
    Tensor self = borrow(call->args[0]);
    Tensor result = info.rule == OutputRule::Shaped
                        ? shaped_inplace(*e, info, call)
                        : call_out(info, call, self, nullptr);  // out= checks shape and dtype
    call->returns[0] = box(result);
    result.release();
    return nullptr;
  } catch (const Error& err) {
    return make_host_error(static_cast<int32_t>(err.code()), err.what());
  }
}

// Meta tensors have no memory: the shape rule ran in call_structured_out already.
LoomError* meta_out_kernel(void* ctx, const LoomKernelCall* call) {
  const auto* e = static_cast<const OperatorEntry*>(ctx);
  size_t n = static_cast<size_t>(e->structured->num_outputs);
  for (size_t i = 0; i < n; ++i) {
    const LoomValue& out = call->args[call->num_args - n + i];
    reinterpret_cast<TensorImpl*>(out.u.tensor)->retain();
    call->returns[i] = out;
  }
  return nullptr;
}

LoomError* meta_returns_self(void*, const LoomKernelCall* call) {
  reinterpret_cast<TensorImpl*>(call->args[0].u.tensor)->retain();
  call->returns[0] = call->args[0];
  return nullptr;
}

OperatorEntry* define_variant(Dispatcher& d, const FunctionSchema& schema, StructuredInfo info) {
  OperatorHandle op = d.get_or_create(schema.name.qualified());
  op.entry()->structured = new StructuredInfo(std::move(info));  // lives as long as the op
  d.define(schema.to_string(), core_registrant()).release();
  return op.entry();
}

}  // namespace

void define_standard_ops(Dispatcher& d) {
  for (const OpDefinition& def : standard_ops()) {
    if (def.output == OutputRule::None) {
      OperatorHandle op;
      d.define(def.schema, core_registrant(), &op).release();
      const bool random_fill = def.tags.find("random") != std::string_view::npos &&
                               def.tags.find("inplace") != std::string_view::npos;
      if (op.name() == "loom::fill_.Scalar" || op.name() == "loom::copy_" || random_fill) {
        d.register_kernel(op, DispatchKey::Meta, {&meta_returns_self, nullptr}, core_registrant(),
                          "meta no-op")
            .release();
      }
      if (LoomKernelFn meta = find_meta_kernel(op.name())) {
        d.register_kernel(op, DispatchKey::Meta, {meta, nullptr}, core_registrant(), "meta kernel")
            .release();
      }
      if (has_tag(def.tags, "decomposition")) {
        LoomKernelFn kernel = find_decomposition(op.name());
        LOOM_CHECK(kernel != nullptr, "op-library", "op '", op.name(),
                   "' is tagged decomposition but has none in dispatcher/src/decompositions/");
        d.register_kernel(op, DispatchKey::CompositeImplicit, {kernel, nullptr}, core_registrant(),
                          "decomposition")
            .release();
      }
      continue;
    }
    FunctionSchema functional = parse_schema(def.schema);
    const bool shaped = def.output == OutputRule::Shaped;
    for (const Argument& r : functional.returns) {
      LOOM_CHECK(
          r.type.kind == SchemaType::Kind::Tensor && (shaped || functional.returns.size() == 1),
          "op-library", "structured op '", def.schema,
          "' must return one Tensor (or Tensors, for rule Shaped)");
    }
    StructuredInfo info{StructuredVariant::Out,
                        def.output,
                        functional.name.name,
                        nullptr,
                        {},
                        static_cast<int>(functional.arguments.size()),
                        static_cast<int>(functional.returns.size()),
                        nullptr};
    for (size_t i = 0; i < functional.arguments.size(); ++i) {
      const Argument& a = functional.arguments[i];
      if (a.type.kind == SchemaType::Kind::Tensor) {
        info.inputs.push_back(static_cast<int>(i));
        if (!shaped && (a.name == "condition" || a.name == "mask")) {
          info.mask_inputs |= uint64_t{1} << i;
        }
      }
      if (a.name == "rounding_mode") info.rounding_mode = static_cast<int>(i);
    }
    if (shaped) {
      info.shape_rule = find_shape_rule(functional.name.qualified());
      LOOM_CHECK(info.shape_rule != nullptr, "op-library", "Shaped op '",
                 functional.name.qualified(), "' has no rule in dispatcher/src/shape_rules/");
    } else {
      LOOM_CHECK(!info.inputs.empty(), "op-library", "structured op '", def.schema,
                 "' has no Tensor input");
    }
    OperatorEntry* out = define_variant(d, out_schema(functional), info);
    info.out_op = out;
    const_cast<StructuredInfo*>(out->structured)->out_op = out;
    d.register_kernel(OperatorHandle(out), DispatchKey::Meta, {&meta_out_kernel, out},
                      core_registrant(), "meta shape rule")
        .release();

    info.variant = StructuredVariant::Functional;
    OperatorEntry* f = define_variant(d, functional, info);
    d.register_kernel(OperatorHandle(f), DispatchKey::CompositeExplicit, {&functional_kernel, f},
                      core_registrant(), "structured functional")
        .release();

    if (has_inplace_variant(functional, def.output, def.tags)) {
      info.variant = StructuredVariant::Inplace;
      OperatorEntry* in = define_variant(d, inplace_schema(functional), info);
      d.register_kernel(OperatorHandle(in), DispatchKey::CompositeExplicit, {&inplace_kernel, in},
                        core_registrant(), "structured in-place")
          .release();
    }
  }
}

namespace {

// A caller's out for a pointwise op: on the inputs' device, of the result's shape, and
// of a dtype the result casts to.
void check_out(const std::string& op, const Tensor& out, const OutputMeta& meta) {
  if (!(out.device() == meta.device)) {
    fail(op, "expected out on ", meta.device.to_string(), " like the inputs, found ",
         out.device().to_string());
  }
  if (!same_shape(out.sizes(), meta.shape)) {
    fail(op, "out has shape ", shape_to_string(out.sizes()), " but the result has shape ",
         shape_to_string(meta.shape));
  }
  if (!can_cast(meta.result, out.dtype())) {
    fail(op, "result type ", scalar_type_name(meta.result), " can't be cast to the out dtype ",
         scalar_type_name(out.dtype()));
  }
}

// Checks a Shaped op's outputs against its rule and runs the kernel, through contiguous
// temporaries of the rule's dtype where a caller's out is strided or of another dtype.
void call_shaped_out(const OperatorEntry& e, const StructuredInfo& info, const KernelSlot& slot,
                     DispatchKey key, DispatchKeySet keys, const LoomValue* args, size_t num_args,
                     LoomValue* returns, size_t num_returns) {
  OutputMetas metas = shaped_meta(e.name, info, args);
  const size_t first_out = num_args - metas.size();
  absl::InlinedVector<LoomValue, 8> kernel_args(args, args + num_args);
  TensorList temps(metas.size());
  bool ready = true;
  for (size_t i = 0; i < metas.size(); ++i) {
    const OutputMeta& m = metas[i];
    Tensor out = borrow(args[first_out + i]);
    if (!(out.device() == m.device)) {
      fail(e.name, "expected output ", i, " on ", m.device.to_string(), " like the inputs, found ",
           out.device().to_string());
    }
    if (!same_shape(out.sizes(), m.shape)) {
      fail(e.name, "output ", i, " has shape ", shape_to_string(out.sizes()),
           " but the result has shape ", shape_to_string(m.shape));
    }
    if (!can_cast(m.result, out.dtype())) {
      fail(e.name, "result type ", scalar_type_name(m.result),
           " can't be cast to the dtype of output ", i, ", ", scalar_type_name(out.dtype()));
    }
    if (out.dtype() != m.result || !out.is_contiguous()) {
      temps[i] = empty(m.shape, m.result, m.device);
      kernel_args[first_out + i] = box(temps[i]);
      ready = false;
    }
  }
  const Signature* sig = e.signature.load(std::memory_order_acquire);
  invoke_kernel(e, sig, slot, key, keys, kernel_args.data(), num_args, returns, num_returns);
  if (ready) return;
  static const OperatorHandle copy = Dispatcher::instance().find_defined("loom::copy_");
  for (size_t i = 0; i < metas.size(); ++i) {
    if (!temps[i].defined()) continue;
    Tensor out = borrow(args[first_out + i]);
    LoomValue copy_args[] = {box(out), box(temps[i]), box(false)};
    LoomValue ret[1];
    Dispatcher::instance().call(copy, copy_args, 3, ret, 1);
    release_value(ret[0]);
    release_value(returns[i]);
    returns[i] = box(out);
    out.impl()->retain();
  }
}

}  // namespace

void call_structured_out(const OperatorEntry& e, const StructuredInfo& info, const KernelSlot& slot,
                         DispatchKey key, DispatchKeySet keys, const LoomValue* args,
                         size_t num_args, LoomValue* returns, size_t num_returns,
                         const OutputMeta* known_meta) {
  if (info.rule == OutputRule::Shaped) {
    call_shaped_out(e, info, slot, key, keys, args, num_args, returns, num_returns);
    return;
  }
  const std::string& op = e.name;
  Tensor out = borrow(args[num_args - 1]);
  // A known meta comes with an out the functional variant allocated from it: nothing to
  // check about that out.
  std::optional<OutputMeta> computed;
  if (known_meta == nullptr) {
    computed = compute_meta(op, info, args);
    check_out(op, out, *computed);
  }
  const OutputMeta& meta = known_meta != nullptr ? *known_meta : *computed;
  // Common case first: everything already matches the kernel contract.
  bool ready = out.dtype() == meta.result;
  for (size_t i = 0; ready && !meta.inputs_ready && i < info.inputs.size(); ++i) {
    const TensorImpl* t = impl_of(args[info.inputs[i]]);
    ready = t->dtype() == (is_mask(info, info.inputs[i]) ? ScalarType::Bool : meta.compute) &&
            t->device() == meta.device && same_shape(t->sizes(), meta.shape);
  }
  const Signature* sig = e.signature.load(std::memory_order_acquire);
  if (ready) {
    invoke_kernel(e, sig, slot, key, keys, args, num_args, returns, num_returns);
    return;
  }
  Dispatcher& d = Dispatcher::instance();
  static const OperatorHandle copy = d.find_defined("loom::copy_");  // a core op: immortal
  auto copy_into = [&](const Tensor& dst, const Tensor& src) {
    LoomValue copy_args[] = {box(dst), box(src), box(false)};
    LoomValue ret[1];
    d.call(copy, copy_args, 3, ret, 1);
    release_value(ret[0]);
  };
  // Bring the inputs to the kernel contract; `keep` holds the temporaries alive.
  TensorList keep;
  absl::InlinedVector<LoomValue, 8> kernel_args(args, args + num_args);
  for (int index : info.inputs) {
    Tensor t = borrow(args[index]);
    if (!(t.device() == meta.device)) {  // a 0-dim CPU tensor used with another device
      Tensor moved = empty(t.sizes(), t.dtype(), meta.device);
      copy_into(moved, t);
      t = moved;
    }
    if (!same_shape(t.sizes(), meta.shape)) {
      t = t.expand(meta.shape);
    }
    ScalarType target = is_mask(info, index) ? ScalarType::Bool : meta.compute;
    if (t.dtype() != target) {
      Tensor cast = empty(meta.shape, target, meta.device);
      copy_into(cast, t);
      t = cast;
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
  invoke_kernel(e, sig, slot, key, keys, kernel_args.data(), num_args, returns, num_returns);
  if (kernel_out.impl() != out.impl()) {
    release_value(returns[0]);
    copy_into(out, kernel_out);
    returns[0] = box(out);
    out.impl()->retain();
  }
}

}  // namespace loom::dispatch
