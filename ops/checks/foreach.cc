// The foreach family's argument checks (Note [Argument checks]): the fused optimizer
// updates' lists, hyperparameters and loss-scaling tensors (Note [Fused Adam] in
// ops/decompositions/foreach.cc), which every backend's kernel relies on.
#include <string>
#include <vector>

#include "argument_check.h"
#include "loom/core/device.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

// _fused_adam_ / _fused_adamw_(self[], grads[], exp_avgs[], exp_avg_sqs[],
// max_exp_avg_sqs[], state_steps[], lr, beta1, beta2, weight_decay, eps, amsgrad,
// maximize, grad_scale?, found_inf?)
void fused_adam_check(const ShapeArgs& args) {
  const std::vector<const TensorImpl*> params = args.tensors(0);
  if (params.empty()) args.fail("expected a non-empty tensor list for self, found an empty one");
  const bool amsgrad = args.boolean(11);
  const char* names[] = {"grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"};
  std::vector<std::vector<const TensorImpl*>> lists;
  for (size_t k = 0; k < 4; ++k) {
    lists.push_back(args.tensors(k + 1));
    const bool skipped = k == 3 && !amsgrad && lists.back().empty();
    if (!skipped && lists.back().size() != params.size()) {
      args.fail("expected ", names[k], " to have self's length ", params.size(), ", found ",
                lists.back().size());
    }
  }
  const std::vector<const TensorImpl*> steps = args.tensors(5);
  if (steps.size() != params.size()) {
    args.fail("expected state_steps to have self's length ", params.size(), ", found ",
              steps.size());
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const TensorImpl& p = *params[i];
    if (!is_floating_point(p.dtype())) {
      args.fail("expected floating-point parameters, found ", scalar_type_name(p.dtype()),
                " at index ", i);
    }
    for (size_t k = 0; k < 4; ++k) {
      if (lists[k].empty()) continue;
      const TensorImpl& t = *lists[k][i];
      if (t.dtype() != p.dtype() || !(t.device() == p.device()) ||
          !same_shape(t.sizes(), p.sizes())) {
        args.fail("expected ", names[k], "[", i, "] like self[", i, "] (",
                  shape_to_string(p.sizes()), " ", scalar_type_name(p.dtype()), " on ",
                  p.device().to_string(), "), found ", shape_to_string(t.sizes()), " ",
                  scalar_type_name(t.dtype()), " on ", t.device().to_string());
      }
    }
    const TensorImpl& step = *steps[i];
    if (step.numel() != 1 || step.dtype() == ScalarType::Bool ||
        !(step.device() == p.device() || step.device().type == kCPU)) {
      args.fail("expected state_steps[", i, "] to be a one-element number on self[", i,
                "]'s device or the cpu, found ", shape_to_string(step.sizes()), " ",
                scalar_type_name(step.dtype()), " on ", step.device().to_string());
    }
  }
  const double lr = args.real(6), beta1 = args.real(7), beta2 = args.real(8);
  const double weight_decay = args.real(9), eps = args.real(10);
  if (!(lr >= 0) || !(eps >= 0) || !(weight_decay >= 0)) {
    args.fail("expected lr, eps and weight_decay >= 0, found ", lr, ", ", eps, " and ",
              weight_decay);
  }
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1)) {
    args.fail("expected betas in [0, 1), found (", beta1, ", ", beta2, ")");
  }
  const char* state_names[] = {"grad_scale", "found_inf"};
  for (size_t k = 0; k < 2; ++k) {
    const TensorImpl* t = args.optional_tensor(13 + k);
    if (t == nullptr) continue;
    if (t->numel() != 1 || t->dtype() != ScalarType::Float32 ||
        !(t->device() == params[0]->device())) {
      args.fail("expected ", state_names[k], " to be a one-element float32 tensor on ",
                params[0]->device().to_string(), ", found ", shape_to_string(t->sizes()), " ",
                scalar_type_name(t->dtype()), " on ", t->device().to_string());
    }
  }
}

constexpr ArgumentCheckEntry kChecks[] = {
    {"loom::_fused_adam_", &fused_adam_check},
    {"loom::_fused_adamw_", &fused_adam_check},
};

}  // namespace

std::span<const ArgumentCheckEntry> foreach_argument_checks() {
  return kChecks;
}

}  // namespace loom::ops
