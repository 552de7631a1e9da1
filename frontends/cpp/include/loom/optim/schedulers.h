// Learning-rate schedulers, as torch.optim.lr_scheduler's: each sets the optimizer's
// learning rates from a closed form of the step count. Call step() once per epoch (or
// per batch for OneCycleLR and warmups counted in batches); construction applies step 0.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/optim/optimizer.h"

namespace loom::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  // Advances one step and sets every group's learning rate.
  void step();
  int64_t last_step() const { return last_step_; }
  // The learning rates set by the last step (one per group).
  std::vector<double> last_lr() const;

 protected:
  LRScheduler(Optimizer& optimizer, const char* name);
  // The learning rate of group g at step t (its initial rate is base).
  virtual double lr_at(int64_t t, double base) const = 0;
  // Sets the rates for step 0; the derived constructor calls it after its checks.
  void start();

  Optimizer& optimizer_;
  const char* name_;
  std::vector<double> base_lrs_;
  int64_t last_step_ = 0;
};

// lr = base * gamma^floor(t / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  double lr_at(int64_t t, double base) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = base * gamma^(number of milestones <= t); milestones increasing.
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  double lr_at(int64_t t, double base) const override;

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

// lr = eta_min + (base - eta_min) * (1 + cos(pi * t / t_max)) / 2.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min = 0.0);

 protected:
  double lr_at(int64_t t, double base) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

// lr = base * factor, the factor going linearly from start_factor to end_factor over
// total_iters steps, then staying (a linear warmup with the defaults 1/3 -> 1 over 5).
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3.0, double end_factor = 1.0,
           int64_t total_iters = 5);

 protected:
  double lr_at(int64_t t, double base) const override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

// The 1cycle policy (cosine annealing): from max_lr / div_factor up to max_lr over the
// first pct_start of total_steps, then down to max_lr / (div_factor * final_div_factor).
// Stepping past total_steps is an error, as PyTorch's.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, double pct_start = 0.3,
             double div_factor = 25.0, double final_div_factor = 1e4);

 protected:
  double lr_at(int64_t t, double base) const override;

 private:
  double max_lr_, initial_lr_, min_lr_;
  int64_t total_steps_;
  double warmup_end_;  // the step where the rate peaks
};

}  // namespace loom::optim
