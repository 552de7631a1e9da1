// Autograd for apps: grad mode guards, backward and grad over several tensors, the
// functional API (vjp, jvp, jacobian, hessian, hvp) and gradcheck. The gradients
// themselves come from the autograd plugin (plugins/autograd), reached through its
// "loom.autograd" table (loom/autograd_api.h); Tensor's own methods (requires_grad_(),
// backward(), grad(), ...) are declared in loom/ops/tensor.h and defined here, in the
// C++ frontend, on the same table.
#pragma once

#include <any>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/dispatcher/local_dispatch_key_set.h"
#include "loom/ops/tensor.h"

namespace loom {

// No graph is recorded while alive (the Autograd key is excluded on this thread), as
// torch::NoGradGuard. Works whether or not the autograd plugin is loaded.
class NoGradGuard {
 public:
  NoGradGuard() : guard_(DispatchKeySet(DispatchKey::Autograd)) {}

 private:
  dispatch::ExcludeDispatchKeyGuard guard_;
};

// Inference mode: as NoGradGuard (tensors made inside never record history).
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;

 private:
  uint64_t saved_;
};

namespace autograd {

// Whether ops record a graph on this thread (grad mode: no NoGradGuard or InferenceMode
// in effect) and the autograd plugin is loaded.
bool is_enabled();
// Whether the autograd plugin is loaded.
bool is_available();
// Clears the gradients of `tensors` (those that have one): undefined (set_to_none, as
// PyTorch's zero_grad default) or zero-filled in place.
void clear_grads(const std::vector<Tensor>& tensors, bool set_to_none = true);

// An op whose Autograd kernel is the plugin's: with a backward formula, or with outputs
// marked not differentiable (their gradient is an error, as PyTorch's "not implemented").
struct RecordedOp {
  std::string op;  // "loom::mul.Tensor"
  bool differentiable;
};
// The ops the loaded autograd plugin records, in its registration order.
std::vector<RecordedOp> recorded_ops();

// Turns grad mode back on inside a NoGradGuard (the functional API uses it).
class EnableGradGuard {
 public:
  EnableGradGuard();
  ~EnableGradGuard();
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  uint64_t saved_;
};

// Anomaly detection: backward checks every gradient and fails naming the node (and so
// the forward op) whose backward produced NaN or Inf.
void set_detect_anomaly(bool enabled);
bool is_anomaly_enabled();
class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard();
  ~DetectAnomalyGuard();

 private:
  bool saved_;
};

// Backward from several tensors at once (torch::autograd::backward).
void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const std::vector<Tensor>& inputs = {});

// The gradients of `outputs` with respect to `inputs` (torch::autograd::grad); nothing
// is accumulated into .grad. An input not used by the outputs gives an undefined tensor
// with allow_unused, an error otherwise.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {},
                         std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                         bool allow_unused = false);

// A custom function's backward: the gradients of its outputs (undefined where none
// flowed) -> one gradient per input (undefined for none).
using FunctionBackward = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
// Gives `outputs`, computed from `inputs` without recording (under NoGradGuard), one
// backward node that runs `backward`, as torch.autograd.Function does; returns them. The
// outputs must be new tensors; `name` names the node ("CompiledFunctionBackward").
std::vector<Tensor> apply_function(const std::string& name, const std::vector<Tensor>& inputs,
                                   const std::vector<Tensor>& outputs, FunctionBackward backward);

// Which of `leaves` a backward from `roots` could accumulate a gradient into: the walk
// over the roots' graphs (grad_fn and its next functions) that DDP's search for unused
// parameters makes. A leaf reaches itself; a tensor that does not require grad, nothing.
std::vector<bool> reaches(const std::vector<Tensor>& roots, const std::vector<Tensor>& leaves);

// Saved-tensor hooks, as torch.autograd.graph.saved_tensors_hooks: while the guard lives,
// each tensor that an op recorded on this thread saves for backward goes to `pack`, and
// only what pack returns is kept; backward gets the tensor back from `unpack`, which must
// give one of the same shape and dtype. The hooks run with recording off; guards nest
// (the innermost applies) and must be destroyed in reverse order, on the thread that made
// them. A packed tensor is not checked for in-place writes after it was saved.
using PackHook = std::function<std::any(const Tensor&)>;
using UnpackHook = std::function<Tensor(const std::any&)>;
class SavedTensorsHooks {
 public:
  SavedTensorsHooks(PackHook pack, UnpackHook unpack);
  ~SavedTensorsHooks();
  SavedTensorsHooks(const SavedTensorsHooks&) = delete;
  SavedTensorsHooks& operator=(const SavedTensorsHooks&) = delete;
};

// As torch.autograd.graph.save_on_cpu: saved tensors of another device move to host
// memory (pinned when asked and the device type lends it) and back in backward; cpu
// tensors are kept as they are.
class SaveOnCpu : public SavedTensorsHooks {
 public:
  explicit SaveOnCpu(bool pin_memory = false);
};

using Function = std::function<Tensor(const Tensor&)>;
using MultiFunction = std::function<Tensor(const std::vector<Tensor>&)>;

// (f(x), v^T J): the vector-Jacobian product.
std::pair<Tensor, Tensor> vjp(const Function& f, const Tensor& x, const Tensor& v,
                              bool create_graph = false);
// (f(x), J v): the Jacobian-vector product, computed as a double vjp.
std::pair<Tensor, Tensor> jvp(const Function& f, const Tensor& x, const Tensor& v,
                              bool create_graph = false);
// The Jacobian of f at x, of shape f(x).sizes() + x.sizes().
Tensor jacobian(const Function& f, const Tensor& x, bool create_graph = false);
// One Jacobian per input, each of shape f(inputs).sizes() + inputs[i].sizes().
std::vector<Tensor> jacobian(const MultiFunction& f, const std::vector<Tensor>& inputs,
                             bool create_graph = false);
// The Hessian of a scalar function, of shape x.sizes() + x.sizes().
Tensor hessian(const Function& f, const Tensor& x);
// (f(x), H v) for a scalar function.
std::pair<Tensor, Tensor> hvp(const Function& f, const Tensor& x, const Tensor& v);

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  // Throw loom::Error("[gradcheck] ...") on a mismatch (otherwise return false).
  bool raise_exception = true;
};

// Compares the analytic Jacobian of f (from backward) with central differences, for
// every input that requires grad (they should be float64). On a mismatch the report
// names the input, and the worst element with its analytic and numeric values.
bool gradcheck(const MultiFunction& f, const std::vector<Tensor>& inputs,
               const GradcheckOptions& options = {});
// The same for the gradients of f: checks backward's own derivative (create_graph).
bool gradgradcheck(const MultiFunction& f, const std::vector<Tensor>& inputs,
                   const GradcheckOptions& options = {});

}  // namespace autograd
}  // namespace loom
