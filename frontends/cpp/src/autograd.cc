// The app-facing autograd API (loom/autograd.h) over the autograd plugin's table
// (autograd_table.h).
#include "loom/autograd.h"

#include <memory>
#include <sstream>

#include "autograd_table.h"
#include "loom/core/error.h"
#include "loom/devices.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/extensions.h"
#include "loom/dispatcher/local_dispatch_key_set.h"
#include "loom/factories.h"
#include "loom/operators.h"
#include "loom/ops/generated/ops.h"
#include "loom/tensor_io.h"

namespace loom {
namespace autograd::detail {

const LoomAutogradApi* find_table() {
  return static_cast<const LoomAutogradApi*>(
      dispatch::find_extension(LOOM_AUTOGRAD_EXTENSION_NAME));
}

void check(LoomError* err) {
  dispatch::check_table_error(err, "autograd");
}

void throw_not_loaded(const char* what) {
  fail_with(ErrorCode::FailedPrecondition, "autograd", what,
            ": the autograd plugin is not loaded (expected `plugins { name: \"autograd\" }` "
            "in the deployment manifest, found no table named '",
            LOOM_AUTOGRAD_EXTENSION_NAME, "')");
}

}  // namespace autograd::detail

namespace {

using autograd::detail::check;
using autograd::detail::with_table;

constexpr uint64_t kAutogradBit = DispatchKeySet(DispatchKey::Autograd).raw();

// The tensors' handles (undefined tensors: NULL), borrowed.
std::vector<LoomTensor*> handles_of(const std::vector<Tensor>& tensors) {
  std::vector<LoomTensor*> out;
  for (const Tensor& t : tensors) {
    out.push_back(t.defined() ? reinterpret_cast<LoomTensor*>(t.impl()) : nullptr);
  }
  return out;
}

}  // namespace

InferenceMode::InferenceMode(bool enabled) : saved_(dispatch::detail::tls_local_keys.excluded) {
  if (enabled) dispatch::detail::tls_local_keys.excluded |= kAutogradBit;
}

InferenceMode::~InferenceMode() {
  dispatch::detail::tls_local_keys.excluded = saved_;
}

namespace autograd {

void clear_grads(const std::vector<Tensor>& tensors, bool set_to_none) {
  for (const Tensor& t : tensors) {
    Tensor g = t.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      t.set_grad(Tensor());
    } else {
      NoGradGuard no_grad;
      loom::fill_(g, 0);
    }
  }
}

bool is_available() {
  ReadSection section;
  return detail::find_table() != nullptr;
}

bool is_enabled() {
  return (dispatch::detail::tls_local_keys.excluded & kAutogradBit) == 0 && is_available();
}

EnableGradGuard::EnableGradGuard() : saved_(dispatch::detail::tls_local_keys.excluded) {
  dispatch::detail::tls_local_keys.excluded &= ~kAutogradBit;
}

EnableGradGuard::~EnableGradGuard() {
  dispatch::detail::tls_local_keys.excluded = saved_;
}

void set_detect_anomaly(bool enabled) {
  with_table("set_detect_anomaly()", [&](const LoomAutogradApi& table) {
    check(table.set_anomaly_enabled(enabled ? 1 : 0));
  });
}

bool is_anomaly_enabled() {
  ReadSection section;
  const LoomAutogradApi* table = detail::find_table();
  return table != nullptr && table->is_anomaly_enabled() != 0;
}

DetectAnomalyGuard::DetectAnomalyGuard() : saved_(is_anomaly_enabled()) {
  set_detect_anomaly(true);
}

DetectAnomalyGuard::~DetectAnomalyGuard() {
  try {
    set_detect_anomaly(saved_);
  } catch (const Error&) {
    // The plugin was unloaded meanwhile: nothing to restore.
  }
}

namespace {

LoomBackwardArgs backward_args(std::vector<LoomTensor*>& tensors, std::vector<LoomTensor*>& grads,
                               std::vector<LoomTensor*>& inputs, bool retain_graph,
                               bool create_graph) {
  LoomBackwardArgs a{};
  a.struct_size = sizeof(a);
  a.tensors = tensors.data();
  a.num_tensors = tensors.size();
  a.grad_tensors = grads.data();
  a.num_grad_tensors = grads.size();
  a.inputs = inputs.data();
  a.num_inputs = inputs.size();
  a.retain_graph = retain_graph ? 1 : 0;
  a.create_graph = create_graph ? 1 : 0;
  return a;
}

}  // namespace

void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors,
              std::optional<bool> retain_graph, bool create_graph,
              const std::vector<Tensor>& inputs) {
  std::vector<LoomTensor*> t = handles_of(tensors), g = handles_of(grad_tensors),
                           in = handles_of(inputs);
  LoomBackwardArgs a = backward_args(t, g, in, retain_graph.value_or(create_graph), create_graph);
  with_table("backward()", [&](const LoomAutogradApi& table) { check(table.backward(&a)); });
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  std::vector<LoomTensor*> o = handles_of(outputs), in = handles_of(inputs),
                           g = handles_of(grad_outputs);
  std::vector<LoomTensor*> out(in.size(), nullptr);
  LoomBackwardArgs a = backward_args(o, g, in, retain_graph.value_or(create_graph), create_graph);
  a.allow_unused = allow_unused ? 1 : 0;
  a.out_grads = out.data();
  with_table("grad()", [&](const LoomAutogradApi& table) { check(table.grad_of(&a)); });
  std::vector<Tensor> result;
  for (LoomTensor* t : out) {
    result.push_back(t != nullptr ? Tensor::adopt(reinterpret_cast<TensorImpl*>(t)) : Tensor());
  }
  return result;
}

namespace {

// The C side of apply_function: runs the C++ backward, turning its errors into LoomError.
LoomError* run_function_backward(void* context, LoomTensor* const* grad_outputs, size_t num_outputs,
                                 LoomTensor** grad_inputs, size_t num_inputs) {
  return autograd::detail::callback_result("", [&] {
    const auto& backward = *static_cast<FunctionBackward*>(context);
    std::vector<Tensor> grads;
    for (size_t i = 0; i < num_outputs; ++i) {
      grads.push_back(grad_outputs[i] != nullptr
                          ? Tensor::borrow(reinterpret_cast<TensorImpl*>(grad_outputs[i]))
                          : Tensor());
    }
    std::vector<Tensor> result = backward(grads);
    LOOM_CHECK(result.size() == num_inputs, "autograd", "a function's backward returned ",
               result.size(), " gradients for ", num_inputs, " inputs");
    for (size_t i = 0; i < num_inputs; ++i) {
      grad_inputs[i] =
          result[i].defined() ? reinterpret_cast<LoomTensor*>(result[i].release()) : nullptr;
    }
  });
}

}  // namespace

std::vector<Tensor> apply_function(const std::string& name, const std::vector<Tensor>& inputs,
                                   const std::vector<Tensor>& outputs, FunctionBackward backward) {
  std::vector<LoomTensor*> in = handles_of(inputs), out = handles_of(outputs);
  auto* context = new FunctionBackward(std::move(backward));
  LoomFunctionArgs a{};
  a.struct_size = sizeof(a);
  a.name = name.c_str();
  a.inputs = in.data();
  a.num_inputs = in.size();
  a.outputs = out.data();
  a.num_outputs = out.size();
  a.backward = &run_function_backward;
  a.context = context;
  a.release = [](void* c) { delete static_cast<FunctionBackward*>(c); };
  with_table("apply_function()", [&](const LoomAutogradApi& table) {
    if (!LOOM_HAS_FIELD(&table, LoomAutogradApi, apply_function)) {
      a.release(context);
      fail("autograd",
           "apply_function: the loaded autograd plugin is older than this frontend "
           "and has no custom functions");
    }
    check(table.apply_function(&a));
  });
  return outputs;
}

std::vector<bool> reaches(const std::vector<Tensor>& roots, const std::vector<Tensor>& leaves) {
  std::vector<LoomTensor*> from = handles_of(roots), to = handles_of(leaves);
  std::vector<int32_t> reached(leaves.size(), 0);
  with_table("reaches()", [&](const LoomAutogradApi& table) {
    if (!LOOM_HAS_FIELD(&table, LoomAutogradApi, reaches)) {
      fail("autograd",
           "reaches: the loaded autograd plugin is older than this frontend and cannot walk "
           "a graph");
    }
    check(table.reaches(from.data(), from.size(), to.data(), to.size(), reached.data()));
  });
  return std::vector<bool>(reached.begin(), reached.end());
}

namespace {

struct SavedTensorsHookPair {
  PackHook pack;
  UnpackHook unpack;
};

LoomError* run_pack_hook(void* context, LoomTensor* tensor, void** packed) {
  return autograd::detail::callback_result("a saved-tensor hook: ", [&] {
    const auto& hooks = *static_cast<SavedTensorsHookPair*>(context);
    *packed = new std::any(hooks.pack(Tensor::borrow(reinterpret_cast<TensorImpl*>(tensor))));
  });
}

LoomError* run_unpack_hook(void* context, void* packed, LoomTensor** out) {
  return autograd::detail::callback_result("a saved-tensor hook: ", [&] {
    const auto& hooks = *static_cast<SavedTensorsHookPair*>(context);
    Tensor t = hooks.unpack(*static_cast<const std::any*>(packed));
    LOOM_CHECK(t.defined(), "autograd", "an unpack hook returned an undefined tensor");
    *out = reinterpret_cast<LoomTensor*>(t.release());
  });
}

}  // namespace

SavedTensorsHooks::SavedTensorsHooks(PackHook pack, UnpackHook unpack) {
  LOOM_CHECK(pack && unpack, "autograd",
             "saved-tensor hooks: expected a pack and an unpack function, found an empty one");
  LoomSavedTensorHooks h{};
  h.struct_size = sizeof(h);
  h.pack = &run_pack_hook;
  h.unpack = &run_unpack_hook;
  h.release_packed = [](void*, void* packed) { delete static_cast<std::any*>(packed); };
  std::unique_ptr<SavedTensorsHookPair> pair(
      new SavedTensorsHookPair{std::move(pack), std::move(unpack)});
  h.release = [](void* c) { delete static_cast<SavedTensorsHookPair*>(c); };
  with_table("saved-tensor hooks", [&](const LoomAutogradApi& table) {
    if (!LOOM_HAS_FIELD(&table, LoomAutogradApi, pop_saved_tensor_hooks)) {
      fail("autograd",
           "saved-tensor hooks: the loaded autograd plugin is older than this frontend and has "
           "none");
    }
    h.context = pair.release();  // the plugin's from the call on
    check(table.push_saved_tensor_hooks(&h));
  });
}

SavedTensorsHooks::~SavedTensorsHooks() {
  try {
    with_table("saved-tensor hooks",
               [&](const LoomAutogradApi& table) { check(table.pop_saved_tensor_hooks()); });
  } catch (const Error&) {
    // the plugin was unloaded under the guard: its hooks went with it
  }
}

namespace {
struct SavedOnCpu {
  Tensor host;
  Device device;
  bool pinned = false;
};
}  // namespace

SaveOnCpu::SaveOnCpu(bool pin_memory)
    : SavedTensorsHooks(
          [pin_memory](const Tensor& t) -> std::any {
            if (t.device().type == kCPU) return t;
            Tensor host = t.to("cpu");
            const std::string type = DeviceTypeRegistry::instance().name(t.device().type);
            const bool pinned = pin_memory && lends_pinned_memory(type);
            return SavedOnCpu{pinned ? host.pin_memory(type) : host, t.device(), pinned};
          },
          [](const std::any& packed) {
            if (const Tensor* kept = std::any_cast<Tensor>(&packed)) return *kept;
            const auto& saved = std::any_cast<const SavedOnCpu&>(packed);
            return saved.host.to(saved.device, /*non_blocking=*/saved.pinned);
          }) {}

std::vector<RecordedOp> recorded_ops() {
  std::vector<RecordedOp> ops;
  with_table("recorded_ops()", [&](const LoomAutogradApi& table) {
    check(table.visit_formulas(&ops, [](void* ctx, const char* op, int32_t differentiable) {
      static_cast<std::vector<RecordedOp>*>(ctx)->push_back({op, differentiable != 0});
    }));
  });
  return ops;
}

namespace {

// x as a fresh leaf that requires grad (the functional API differentiates at x).
Tensor leaf_of(const Tensor& x) {
  return x.detach().requires_grad_(true);
}

Tensor or_zeros(const Tensor& g, const Tensor& like) {
  return g.defined() ? g : zeros_like(like);
}

std::vector<int64_t> joined(IntList a, IntList b) {
  std::vector<int64_t> out(a.span().begin(), a.span().end());
  out.insert(out.end(), b.span().begin(), b.span().end());
  return out;
}

}  // namespace

std::pair<Tensor, Tensor> vjp(const Function& f, const Tensor& x, const Tensor& v,
                              bool create_graph) {
  EnableGradGuard enable;
  Tensor in = leaf_of(x);
  Tensor y = f(in);
  Tensor g = grad({y}, {in}, {v}, create_graph, create_graph, true)[0];
  return {create_graph ? y : y.detach(), or_zeros(g, x)};
}

std::pair<Tensor, Tensor> jvp(const Function& f, const Tensor& x, const Tensor& v,
                              bool create_graph) {
  EnableGradGuard enable;
  Tensor in = leaf_of(x);
  Tensor y = f(in);
  // J^T u is linear in u; differentiating it with respect to u along v gives J v.
  Tensor u = zeros_like(y).requires_grad_(true);
  Tensor jt_u = grad({y}, {in}, {u}, true, true, true)[0];
  if (!jt_u.defined() || !jt_u.requires_grad()) return {y.detach(), zeros_like(y)};
  Tensor jv = grad({jt_u}, {u}, {v}, create_graph, create_graph, true)[0];
  return {create_graph ? y : y.detach(), or_zeros(jv, y)};
}

std::vector<Tensor> jacobian(const MultiFunction& f, const std::vector<Tensor>& inputs,
                             bool create_graph) {
  EnableGradGuard enable;
  std::vector<Tensor> leaves;
  for (const Tensor& x : inputs) leaves.push_back(leaf_of(x));
  Tensor y = f(leaves);
  Tensor flat = y.reshape({-1});
  // An output independent of the inputs (no history) has a zero Jacobian.
  const int64_t rows = y.requires_grad() ? flat.numel() : 0;
  std::vector<std::vector<Tensor>> per_input(inputs.size());
  for (int64_t i = 0; i < rows; ++i) {
    Tensor basis = zeros({rows}, TensorOptions().dtype(y.dtype()).device(y.device()));
    {
      NoGradGuard no_grad;
      basis.select(0, i).fill_(1);
    }
    std::vector<Tensor> g =
        grad({y}, leaves, {basis.view(y.sizes())}, true, create_graph, /*allow_unused=*/true);
    for (size_t k = 0; k < inputs.size(); ++k) per_input[k].push_back(or_zeros(g[k], inputs[k]));
  }
  std::vector<Tensor> out;
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::vector<int64_t> shape = joined(y.sizes(), inputs[k].sizes());
    out.push_back(
        rows == 0
            ? zeros(shape, TensorOptions().dtype(inputs[k].dtype()).device(inputs[k].device()))
            : stack(per_input[k]).reshape(shape));
  }
  return out;
}

Tensor jacobian(const Function& f, const Tensor& x, bool create_graph) {
  return jacobian([&](const std::vector<Tensor>& in) { return f(in[0]); }, std::vector<Tensor>{x},
                  create_graph)[0];
}

Tensor hessian(const Function& f, const Tensor& x) {
  return jacobian(
      [&](const Tensor& in) {
        Tensor y = f(in);
        LOOM_CHECK(y.numel() == 1, "autograd",
                   "hessian() needs a function with one output "
                   "element, found ",
                   y.numel());
        Tensor g = grad({y}, {in}, {}, true, true, true)[0];
        return g.defined() ? g : zeros_like(in);
      },
      x);
}

std::pair<Tensor, Tensor> hvp(const Function& f, const Tensor& x, const Tensor& v) {
  EnableGradGuard enable;
  Tensor in = leaf_of(x);
  Tensor y = f(in);
  LOOM_CHECK(y.numel() == 1, "autograd", "hvp() needs a function with one output element, found ",
             y.numel());
  Tensor g = grad({y}, {in}, {}, true, true, true)[0];
  if (!g.defined() || !g.requires_grad()) return {y.detach(), zeros_like(x)};
  Tensor hv = grad({g}, {in}, {v}, false, false, true)[0];
  return {y.detach(), or_zeros(hv, x)};
}

namespace {

// The numeric Jacobian of f's output with respect to input k, by central differences:
// column j is (f(x + eps e_j) - f(x - eps e_j)) / 2 eps.
Tensor numeric_jacobian(const MultiFunction& f, std::vector<Tensor> inputs, size_t k, double eps,
                        int64_t out_numel) {
  NoGradGuard no_grad;
  Tensor x = inputs[k].detach().clone();
  inputs[k] = x;
  Tensor flat = x.view({-1});
  const int64_t n = flat.numel();
  Tensor jac = zeros({out_numel, n}, TensorOptions().dtype(ScalarType::Float64));
  for (int64_t j = 0; j < n; ++j) {
    Tensor element = flat.select(0, j);
    const double original = element.item<double>();
    // Copies: an output may be a view of the perturbed input.
    element.fill_(original + eps);
    Tensor plus = f(inputs).to(ScalarType::Float64).reshape({-1}).clone();
    element.fill_(original - eps);
    Tensor minus = f(inputs).to(ScalarType::Float64).reshape({-1}).clone();
    element.fill_(original);
    jac.select(1, j).copy_((plus - minus) / (2 * eps));
  }
  return jac;
}

bool report(const GradcheckOptions& options, const std::string& message) {
  if (options.raise_exception) fail("gradcheck", message);
  return false;
}

bool check(const MultiFunction& f, const std::vector<Tensor>& inputs,
           const GradcheckOptions& options, const char* what) {
  std::vector<Tensor> leaves;
  std::vector<size_t> checked;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].requires_grad()) checked.push_back(k);
    leaves.push_back(inputs[k].requires_grad() ? leaf_of(inputs[k]) : inputs[k]);
  }
  LOOM_CHECK(!checked.empty(), "gradcheck", "no input requires grad");
  Tensor y;
  {
    EnableGradGuard enable;
    y = f(leaves);
  }
  const int64_t out_numel = y.numel();
  for (size_t k : checked) {
    if (out_numel == 0 || inputs[k].numel() == 0) continue;  // an empty Jacobian
    Tensor numeric = numeric_jacobian(f, leaves, k, options.eps, out_numel);
    std::vector<Tensor> leaves_k = leaves;
    Tensor analytic = jacobian(
                          [&](const std::vector<Tensor>& in) {
                            std::vector<Tensor> all = leaves_k;
                            all[k] = in[0];
                            return f(all);
                          },
                          std::vector<Tensor>{leaves[k]})[0]
                          .to(ScalarType::Float64)
                          .reshape({out_numel, -1});
    NoGradGuard no_grad;
    Tensor difference = (analytic - numeric).abs();
    Tensor tolerance = numeric.abs() * options.rtol + options.atol;
    Tensor excess = difference - tolerance;
    // A NaN anywhere compares false and is reported.
    if (excess.numel() == 0 || excess.amax().item<double>() <= 0) continue;
    const int64_t worst = excess.reshape({-1}).argmax().item<int64_t>();
    const int64_t cols = numeric.size(1);
    std::ostringstream m;
    m.precision(10);
    m << what << " mismatch for input " << k << ": the worst element is output " << worst / cols
      << ", input element " << worst % cols << ": analytic "
      << analytic.reshape({-1}).select(0, worst).item<double>() << ", numeric "
      << numeric.reshape({-1}).select(0, worst).item<double>() << " (atol " << options.atol
      << ", rtol " << options.rtol << ")";
    return report(options, m.str());
  }
  return true;
}

}  // namespace

bool gradcheck(const MultiFunction& f, const std::vector<Tensor>& inputs,
               const GradcheckOptions& options) {
  return check(f, inputs, options, "Jacobian");
}

bool gradgradcheck(const MultiFunction& f, const std::vector<Tensor>& inputs,
                   const GradcheckOptions& options) {
  // Fixed random output gradients v: the function checked is x -> v^T J_f(x), whose own
  // Jacobian backward computes through the formulas' derivatives (create_graph).
  Tensor probe;
  {
    EnableGradGuard enable;
    std::vector<Tensor> leaves;
    for (const Tensor& x : inputs) leaves.push_back(x.requires_grad() ? leaf_of(x) : x);
    probe = f(leaves);
  }
  if (!probe.requires_grad()) return true;  // f does not depend on its inputs
  Tensor v = ones_like(probe.detach());
  {
    NoGradGuard no_grad;
    Tensor flat = v.view({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) flat.select(0, i).fill_(0.5 + 0.37 * (i % 5));
  }
  std::vector<bool> wanted;
  for (const Tensor& x : inputs) wanted.push_back(x.requires_grad());
  MultiFunction first_derivative = [&](const std::vector<Tensor>& given) {
    EnableGradGuard enable;
    // The numeric pass perturbs plain copies: make every wanted input a leaf again.
    std::vector<Tensor> in, differentiable;
    for (size_t i = 0; i < given.size(); ++i) {
      in.push_back(wanted[i] && !given[i].requires_grad() ? leaf_of(given[i]) : given[i]);
      if (wanted[i]) differentiable.push_back(in.back());
    }
    Tensor y = f(in);
    std::vector<Tensor> g(differentiable.size());
    if (y.requires_grad()) g = grad({y}, differentiable, {v}, true, true, true);
    std::vector<Tensor> flat;
    for (size_t i = 0; i < g.size(); ++i) {
      flat.push_back(or_zeros(g[i], differentiable[i]).reshape({-1}));
    }
    return cat(flat);
  };
  return check(first_derivative, inputs, options, "second derivative");
}

}  // namespace autograd
}  // namespace loom
