// loom::amp::GradScaler (loom/grad_scaler.h) over the amp ops.
#include "loom/grad_scaler.h"

#include <cmath>

#include "loom/factories.h"
#include "loom/ops/generated/ops.h"

namespace loom::amp {
namespace {

constexpr const char* kWhat = "amp::GradScaler";

void check_options(const GradScalerOptions& o) {
  LOOM_CHECK(o.init_scale > 0 && std::isfinite(o.init_scale), kWhat,
             "expected a positive finite init_scale, found ", o.init_scale);
  LOOM_CHECK(o.growth_factor > 1.0, kWhat, "expected growth_factor > 1, found ", o.growth_factor);
  LOOM_CHECK(o.backoff_factor > 0.0 && o.backoff_factor < 1.0, kWhat,
             "expected 0 < backoff_factor < 1, found ", o.backoff_factor);
  LOOM_CHECK(o.growth_interval >= 1, kWhat, "expected growth_interval >= 1, found ",
             o.growth_interval);
}

TensorOptions on(Device device, ScalarType dtype) {
  return TensorOptions().dtype(dtype).device(device);
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options) : options_(options) {
  check_options(options_);
}

Tensor GradScaler::scale(const Tensor& loss) {
  if (!options_.enabled) return loss;
  LOOM_CHECK(loss.defined(), kWhat, "scale(): expected a defined loss");
  if (!scale_.defined()) {
    scale_ = full({1}, options_.init_scale, on(loss.device(), ScalarType::Float32));
    growth_tracker_ = zeros({1}, on(loss.device(), ScalarType::Int32));
  } else if (!(scale_.device() == loss.device())) {
    scale_ = scale_.to(loss.device());
    growth_tracker_ = growth_tracker_.to(loss.device());
  }
  return loss * scale_.reshape({});
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!options_.enabled) return;
  Step& s = steps_[&optimizer];
  LOOM_CHECK(!s.unscaled, kWhat,
             "unscale_() has already been called on this optimizer since the last update()");
  LOOM_CHECK(!s.stepped, kWhat, "unscale_() is being called after step()");
  LOOM_CHECK(scale_.defined(), kWhat,
             "unscale_(): no loss was scaled yet (call scale(loss) before backward)");
  std::vector<Tensor> grads;
  for (const Tensor& p : optimizer.parameters()) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    LOOM_CHECK(g.dtype() != ScalarType::Float16, kWhat,
               "attempting to unscale float16 gradients (keep the parameters in float32; "
               "autocast runs the ops in float16)");
    grads.push_back(g);
  }
  const Tensor inv = reciprocal(scale_.to(ScalarType::Float64)).to(ScalarType::Float32);
  s.found_inf = zeros({1}, on(scale_.device(), ScalarType::Float32));
  if (!grads.empty()) _amp_foreach_non_finite_check_and_unscale_(grads, s.found_inf, inv);
  s.unscaled = true;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  Step& s = steps_[&optimizer];
  LOOM_CHECK(!s.stepped, kWhat, "step() has already been called since the last update()");
  if (!s.unscaled) unscale_(optimizer);
  const bool clean = s.found_inf.item<float>() == 0.0f;
  if (clean) optimizer.step();
  s.stepped = true;
  return clean;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  Tensor found;
  for (const auto& [optimizer, s] : steps_) {
    if (!s.found_inf.defined()) continue;
    found = found.defined() ? found + s.found_inf : s.found_inf.clone();
  }
  LOOM_CHECK(found.defined(), kWhat,
             "update(): no inf checks were recorded since the last update() (call step() or "
             "unscale_() first)");
  _amp_update_scale_(scale_, growth_tracker_, found, options_.growth_factor,
                     options_.backoff_factor, options_.growth_interval);
  steps_.clear();
}

double GradScaler::get_scale() const {
  if (!options_.enabled) return 1.0;
  return scale_.defined() ? scale_.item<double>() : options_.init_scale;
}

std::map<std::string, double> GradScaler::state_dict() const {
  return {{"scale", get_scale()},
          {"growth_factor", options_.growth_factor},
          {"backoff_factor", options_.backoff_factor},
          {"growth_interval", static_cast<double>(options_.growth_interval)},
          {"growth_tracker", growth_tracker_.defined() ? growth_tracker_.item<double>() : 0.0}};
}

void GradScaler::load_state_dict(const std::map<std::string, double>& state) {
  auto get = [&](const char* key) {
    auto it = state.find(key);
    LOOM_CHECK(it != state.end(), kWhat, "load_state_dict: the state has no '", key,
               "' (expected scale, growth_factor, backoff_factor, growth_interval, "
               "growth_tracker)");
    return it->second;
  };
  GradScalerOptions o = options_;
  o.init_scale = get("scale");
  o.growth_factor = get("growth_factor");
  o.backoff_factor = get("backoff_factor");
  const double interval = get("growth_interval"), tracker = get("growth_tracker");
  LOOM_CHECK(interval == std::floor(interval) && tracker == std::floor(tracker) && tracker >= 0 &&
                 tracker < interval,
             kWhat,
             "load_state_dict: expected a whole growth_interval and a growth_tracker in [0, ",
             interval, "), found ", interval, " and ", tracker);
  o.growth_interval = static_cast<int64_t>(interval);
  check_options(o);
  const Device device = scale_.defined() ? scale_.device() : Device{kCPU, -1};
  options_ = o;
  scale_ = full({1}, o.init_scale, on(device, ScalarType::Float32));
  growth_tracker_ = full({1}, tracker, on(device, ScalarType::Int32));
  steps_.clear();
}

}  // namespace loom::amp
