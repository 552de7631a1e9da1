// The learning-rate schedulers' closed forms.
#include "loom/optim/schedulers.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "loom/core/error.h"

namespace loom::optim {

LRScheduler::LRScheduler(Optimizer& optimizer, const char* name)
    : optimizer_(optimizer), name_(name) {
  for (size_t g = 0; g < optimizer.num_param_groups(); ++g) base_lrs_.push_back(optimizer.lr(g));
}

void LRScheduler::start() {
  for (size_t g = 0; g < base_lrs_.size(); ++g) optimizer_.set_lr(lr_at(0, base_lrs_[g]), g);
}

void LRScheduler::step() {
  ++last_step_;
  for (size_t g = 0; g < base_lrs_.size(); ++g) {
    optimizer_.set_lr(lr_at(last_step_, base_lrs_[g]), g);
  }
}

std::vector<double> LRScheduler::last_lr() const {
  std::vector<double> out;
  for (size_t g = 0; g < base_lrs_.size(); ++g) out.push_back(optimizer_.lr(g));
  return out;
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer, "optim::StepLR"), step_size_(step_size), gamma_(gamma) {
  LOOM_CHECK(step_size > 0, name_, "expected step_size > 0, found ", step_size);
  start();
}

double StepLR::lr_at(int64_t t, double base) const {
  return base * std::pow(gamma_, static_cast<double>(t / step_size_));
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer, "optim::MultiStepLR"),
      milestones_(std::move(milestones)),
      gamma_(gamma) {
  LOOM_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), name_,
             "expected increasing milestones");
  start();
}

double MultiStepLR::lr_at(int64_t t, double base) const {
  const auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), t) - milestones_.begin();
  return base * std::pow(gamma_, static_cast<double>(passed));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min)
    : LRScheduler(optimizer, "optim::CosineAnnealingLR"), t_max_(t_max), eta_min_(eta_min) {
  LOOM_CHECK(t_max > 0, name_, "expected t_max > 0, found ", t_max);
  start();
}

double CosineAnnealingLR::lr_at(int64_t t, double base) const {
  const double phase = std::numbers::pi * static_cast<double>(t) / static_cast<double>(t_max_);
  return eta_min_ + (base - eta_min_) * (1.0 + std::cos(phase)) / 2.0;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   int64_t total_iters)
    : LRScheduler(optimizer, "optim::LinearLR"),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  LOOM_CHECK(start_factor > 0 && start_factor <= 1 && end_factor >= 0 && end_factor <= 1, name_,
             "expected start_factor in (0, 1] and end_factor in [0, 1], found ", start_factor,
             " and ", end_factor);
  LOOM_CHECK(total_iters > 0, name_, "expected total_iters > 0, found ", total_iters);
  start();
}

double LinearLR::lr_at(int64_t t, double base) const {
  const double done =
      static_cast<double>(std::min(t, total_iters_)) / static_cast<double>(total_iters_);
  return base * (start_factor_ + (end_factor_ - start_factor_) * done);
}

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, double pct_start,
                       double div_factor, double final_div_factor)
    : LRScheduler(optimizer, "optim::OneCycleLR"),
      max_lr_(max_lr),
      initial_lr_(max_lr / div_factor),
      min_lr_(max_lr / div_factor / final_div_factor),
      total_steps_(total_steps),
      warmup_end_(pct_start * static_cast<double>(total_steps) - 1.0) {
  LOOM_CHECK(max_lr > 0 && div_factor > 0 && final_div_factor > 0, name_,
             "expected positive max_lr, div_factor and final_div_factor");
  LOOM_CHECK(total_steps > 1, name_, "expected total_steps > 1, found ", total_steps);
  LOOM_CHECK(pct_start > 0 && pct_start < 1, name_, "expected pct_start in (0, 1), found ",
             pct_start);
  start();
}

double OneCycleLR::lr_at(int64_t t, double base) const {
  LOOM_CHECK(t < total_steps_, name_, "stepped ", t + 1, " times, but total_steps is ",
             total_steps_);
  auto anneal = [](double from, double to, double pct) {
    return to + (from - to) / 2.0 * (1.0 + std::cos(std::numbers::pi * pct));
  };
  const double step = static_cast<double>(t);
  if (step <= warmup_end_ && warmup_end_ > 0)
    return anneal(initial_lr_, max_lr_, step / warmup_end_);
  const double end = static_cast<double>(total_steps_ - 1);
  const double from = std::max(warmup_end_, 0.0);
  return anneal(max_lr_, min_lr_, (step - from) / std::max(end - from, 1.0));
}

}  // namespace loom::optim
