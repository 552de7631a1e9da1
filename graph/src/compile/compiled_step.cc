// An optimizer's step compiled (compiler::CompiledStep in loom/compile.h): the gradients
// are the call's tensors, the learning rates its guarded numbers.
#include <algorithm>

#include "compile_internal.h"
#include "loom/autograd.h"
#include "loom/compile.h"
#include "loom/core/error.h"

namespace loom::compiler {

CompiledStep::CompiledStep(optim::Optimizer& optimizer, CompileOptions options)
    : optimizer_(&optimizer) {
  LOOM_CHECK(optimizer.capturable(), std::string(detail::kComponent),
             "this optimizer's step counts steps on the host, so a replay would repeat the "
             "numbers of the step it captured; expected a capturable optimizer (SGD, or Adam "
             "and AdamW constructed with AdamOptions().capturable(true)), found one that is not");
  std::vector<std::pair<std::string, Tensor>> state;
  const std::vector<Tensor> params = optimizer.parameters();
  for (size_t i = 0; i < params.size(); ++i) state.emplace_back(str_cat("param_", i), params[i]);
  impl_ =
      std::make_shared<CompiledFunction>(std::move(options), "optimizer_step", std::move(state));
}

void CompiledStep::operator()() {
  std::vector<Tensor> grads;
  std::vector<bool> has_grad;
  for (const Tensor& p : optimizer_->parameters()) {
    Tensor g = p.grad();
    has_grad.push_back(g.defined());
    if (g.defined()) grads.push_back(std::move(g));
  }
  // state the step makes lazily (moment buffers, step counts) must exist before a capture:
  // made by it, they would be made again at every replay
  std::pair<std::vector<bool>, uint64_t> key{has_grad, optimizer_->generation()};
  if (std::find(prepared_.begin(), prepared_.end(), key) == prepared_.end()) {
    optimizer_->step();
    prepared_.push_back(std::move(key));
    return;
  }
  std::vector<double> numbers;
  for (size_t g = 0; g < optimizer_->num_param_groups(); ++g) numbers.push_back(optimizer_->lr(g));
  for (bool b : has_grad) numbers.push_back(b ? 1 : 0);
  NoGradGuard no_grad;
  impl_->run(
      grads, numbers,
      [this] {
        optimizer_->step();
        return std::vector<Tensor>{};
      },
      optimizer_->generation());
}

}  // namespace loom::compiler
