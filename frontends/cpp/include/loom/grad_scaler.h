// Dynamic loss scaling for float16 training, as torch.amp.GradScaler:
//
//   amp::GradScaler scaler;
//   {
//     autocast::Guard amp("cuda", ScalarType::Float16);
//     loss = criterion(model(x), y);
//   }
//   scaler.scale(loss).backward();   // gradients of loss * scale: no float16 underflow
//   scaler.step(optimizer);          // unscales; skips the step when a gradient is inf/NaN
//   scaler.update();                 // backs the scale off after a skip, grows it after
//                                    // growth_interval clean steps
//
// The unscale is one op over all gradients (loom::_amp_foreach_non_finite_check_and_unscale_)
// and the update another (loom::_amp_update_scale_), their state in tensors on the loss's
// device (Note [Loss scaling ops] in ops/decompositions/amp.cc); step() reads found_inf once.
// bfloat16 has float32's range and needs no scaler.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "loom/optim/optimizer.h"

namespace loom::amp {

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;  // false: every call passes through (scale() returns the loss)
};

class GradScaler {
 public:
  // Refuses options PyTorch would not work with: init_scale not positive and finite,
  // growth_factor <= 1, backoff_factor outside (0, 1), growth_interval < 1.
  explicit GradScaler(GradScalerOptions options = {});

  // loss * scale (the scale lives on the loss's device from the first call).
  Tensor scale(const Tensor& loss);
  // Divides the optimizer's gradients by the scale in place and records whether any is inf
  // or NaN; at most once per optimizer between update()s, and before its step(). Float16
  // gradients are refused (keep float32 parameters; autocast computes in float16).
  void unscale_(optim::Optimizer& optimizer);
  // unscale_ (unless done) and the optimizer's step, skipped when a gradient was inf or
  // NaN; returns whether it stepped. Once per optimizer between update()s.
  bool step(optim::Optimizer& optimizer);
  // The scale for the next iteration from this one's found infs (refused when no
  // optimizer was unscaled since the last update).
  void update();

  double get_scale() const;  // init_scale before the first scale()
  bool is_enabled() const { return options_.enabled; }
  const GradScalerOptions& options() const { return options_; }

  // For checkpoints: "scale", "growth_factor", "backoff_factor", "growth_interval",
  // "growth_tracker". load_state_dict checks every entry before changing anything.
  std::map<std::string, double> state_dict() const;
  void load_state_dict(const std::map<std::string, double>& state);

 private:
  struct Step {
    bool unscaled = false;
    bool stepped = false;
    Tensor found_inf;
  };
  GradScalerOptions options_;
  Tensor scale_;           // float32 [1], once scale() ran
  Tensor growth_tracker_;  // int32 [1]
  std::map<const optim::Optimizer*, Step> steps_;
};

}  // namespace loom::amp
