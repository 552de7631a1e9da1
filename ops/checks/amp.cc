// The amp family's argument checks (Note [Argument checks]): the one-element float32 state
// tensors of loss scaling, on the gradients' device, which every backend's kernel reads.
#include <string>
#include <vector>

#include "argument_check.h"
#include "loom/core/device.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

// A one-element float32 tensor (found_inf, inv_scale, the scale) or an int32 one (the
// growth tracker).
void check_state(const ShapeArgs& args, const TensorImpl& t, const char* name, ScalarType dtype) {
  if (t.numel() != 1 || t.dtype() != dtype) {
    args.fail("expected ", name, " to be a one-element ", scalar_type_name(dtype),
              " tensor, found ", shape_to_string(t.sizes()), " ", scalar_type_name(t.dtype()));
  }
}

// _amp_foreach_non_finite_check_and_unscale_(self[], found_inf, inv_scale)
void unscale_check(const ShapeArgs& args) {
  const TensorImpl& found_inf = args.tensor(1);
  const TensorImpl& inv_scale = args.tensor(2);
  check_state(args, found_inf, "found_inf", ScalarType::Float32);
  check_state(args, inv_scale, "inv_scale", ScalarType::Float32);
  args.common_device({&found_inf, &inv_scale});
  const std::vector<const TensorImpl*> grads = args.tensors(0);
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!is_floating_point(grads[i]->dtype())) {
      args.fail("expected floating-point gradients, found ", scalar_type_name(grads[i]->dtype()),
                " at index ", i);
    }
    if (!(grads[i]->device() == found_inf.device())) {
      args.fail("expected every gradient on found_inf's device ", found_inf.device().to_string(),
                ", found ", grads[i]->device().to_string(), " at index ", i);
    }
  }
}

// _amp_update_scale_(self, growth_tracker, found_inf, growth, backoff, interval)
void update_scale_check(const ShapeArgs& args) {
  const TensorImpl& scale = args.tensor(0);
  const TensorImpl& tracker = args.tensor(1);
  const TensorImpl& found_inf = args.tensor(2);
  check_state(args, scale, "the scale", ScalarType::Float32);
  check_state(args, tracker, "growth_tracker", ScalarType::Int32);
  check_state(args, found_inf, "found_inf", ScalarType::Float32);
  args.common_device({&scale, &tracker, &found_inf});
  const double growth = args.real(3), backoff = args.real(4);
  if (!(growth > 1.0) || !(backoff > 0.0 && backoff < 1.0) || args.integer(5) < 1) {
    args.fail(
        "expected scale_growth_factor > 1, 0 < scale_backoff_factor < 1 and "
        "growth_interval >= 1, found ",
        growth, ", ", backoff, " and ", args.integer(5));
  }
}

constexpr ArgumentCheckEntry kChecks[] = {
    {"loom::_amp_foreach_non_finite_check_and_unscale_", &unscale_check},
    {"loom::_amp_update_scale_", &update_scale_check},
};

}  // namespace

std::span<const ArgumentCheckEntry> amp_argument_checks() {
  return kChecks;
}

}  // namespace loom::ops
