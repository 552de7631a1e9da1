// The observers and fake quantization of loom/quantization.h: ranges recorded in float,
// turned into scales and zero points as PyTorch's observers choose them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/factories.h"
#include "loom/ops/generated/ops.h"
#include "loom/quantization.h"

namespace loom::quantization {
namespace {

constexpr const char* kWhat = "quantization";
constexpr double kEps = 1.1920928955078125e-07;  // float32's epsilon, PyTorch's floor

int64_t qmin_of(ScalarType t) {
  return t == ScalarType::QInt8 ? -128 : t == ScalarType::QUInt8 ? 0 : INT32_MIN;
}
int64_t qmax_of(ScalarType t) {
  return t == ScalarType::QInt8 ? 127 : t == ScalarType::QUInt8 ? 255 : INT32_MAX;
}

bool symmetric(QScheme s) {
  return s == QScheme::PerTensorSymmetric || s == QScheme::PerChannelSymmetric;
}

// One (scale, zero point) for [lo, hi] (widened to hold 0).
std::pair<double, int64_t> choose(double lo, double hi, ScalarType dtype, QScheme scheme,
                                  bool reduce_range) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  double qmin = static_cast<double>(qmin_of(dtype)), qmax = static_cast<double>(qmax_of(dtype));
  if (reduce_range) {
    qmin = dtype == ScalarType::QInt8 ? -64 : 0;
    qmax = dtype == ScalarType::QInt8 ? 63 : 127;
  }
  if (symmetric(scheme)) {
    const double amax = std::max(-lo, hi);
    const double scale = std::max(amax / ((qmax - qmin) / 2), kEps);
    const int64_t zp = dtype == ScalarType::QUInt8 ? (reduce_range ? 64 : 128) : 0;
    return {scale, zp};
  }
  const double scale = std::max((hi - lo) / (qmax - qmin), kEps);
  const double zp = std::clamp(qmin - std::nearbyint(lo / scale), qmin, qmax);
  return {scale, static_cast<int64_t>(zp)};
}

std::vector<double> as_vector(const Tensor& t) {
  Tensor d = t.to(ScalarType::Float64).contiguous();
  const double* p = d.data<double>();
  return std::vector<double>(p, p + d.numel());
}

}  // namespace

Tensor quantize(const Tensor& x, const QParams& q) {
  if (!q.per_channel) return quantize_per_tensor(x, q.scale, q.zero_point, q.dtype);
  return quantize_per_channel(x, q.scales, q.zero_points, q.axis, q.dtype);
}

Tensor fake_quantize(const Tensor& x, const QParams& q) {
  const int64_t lo = qmin_of(q.dtype), hi = qmax_of(q.dtype);
  if (!q.per_channel) return fake_quantize_per_tensor_affine(x, q.scale, q.zero_point, lo, hi);
  return fake_quantize_per_channel_affine(x, q.scales.to(ScalarType::Float32), q.zero_points,
                                          q.axis, lo, hi);
}

// --- ObserverImpl ---

ObserverImpl::ObserverImpl(std::string type_name, ScalarType dtype, QScheme scheme)
    : nn::Module(std::move(type_name)), dtype_(dtype), scheme_(scheme) {
  LOOM_CHECK(dtype == ScalarType::QUInt8 || dtype == ScalarType::QInt8, kWhat, this->type_name(),
             " observes for quint8 or qint8, found ", scalar_type_name(dtype));
}

Tensor ObserverImpl::forward(const Tensor& x) {
  LOOM_CHECK(is_floating_point(x.dtype()), kWhat, type_name(), " observes float tensors, found ",
             scalar_type_name(x.dtype()));
  {
    NoGradGuard no_grad;
    observe(x.detach().to(ScalarType::Float32));
  }
  observed_ = true;
  return x;
}

QParams ObserverImpl::from_range(double min, double max) const {
  LOOM_CHECK(observed_, kWhat, type_name(),
             " has observed nothing: run calibration data "
             "through the prepared model before convert");
  auto [scale, zp] = choose(min, max, dtype_, scheme_, reduce_range_);
  QParams q;
  q.dtype = dtype_;
  q.scale = scale;
  q.zero_point = zp;
  return q;
}

std::string ObserverImpl::extra_repr() const {
  return "dtype=" + std::string(scalar_type_name(dtype_));
}

// --- min/max ---

MinMaxObserverImpl::MinMaxObserverImpl(ScalarType dtype, QScheme scheme)
    : MinMaxObserverImpl("MinMaxObserver", dtype, scheme) {}

MinMaxObserverImpl::MinMaxObserverImpl(std::string type_name, ScalarType dtype, QScheme scheme)
    : ObserverImpl(std::move(type_name), dtype, scheme) {}

void MinMaxObserverImpl::observe(const Tensor& x) {
  if (x.numel() == 0) return;
  const double lo = x.min().item<double>(), hi = x.max().item<double>();
  min_ = first_ ? lo : std::min(min_, lo);
  max_ = first_ ? hi : std::max(max_, hi);
  first_ = false;
}

QParams MinMaxObserverImpl::calculate_qparams() const {
  return from_range(min_, max_);
}

MovingAverageMinMaxObserverImpl::MovingAverageMinMaxObserverImpl(double averaging_constant,
                                                                 ScalarType dtype, QScheme scheme)
    : MinMaxObserverImpl("MovingAverageMinMaxObserver", dtype, scheme),
      averaging_constant_(averaging_constant) {
  LOOM_CHECK(averaging_constant > 0 && averaging_constant <= 1, kWhat,
             "averaging_constant must be in (0, 1], found ", averaging_constant);
}

void MovingAverageMinMaxObserverImpl::observe(const Tensor& x) {
  if (x.numel() == 0) return;
  const double lo = x.min().item<double>(), hi = x.max().item<double>();
  if (first_) {
    min_ = lo;
    max_ = hi;
  } else {
    min_ += averaging_constant_ * (lo - min_);
    max_ += averaging_constant_ * (hi - max_);
  }
  first_ = false;
}

PerChannelMinMaxObserverImpl::PerChannelMinMaxObserverImpl(int64_t axis, ScalarType dtype,
                                                           QScheme scheme)
    : ObserverImpl("PerChannelMinMaxObserver", dtype, scheme), axis_(axis) {}

void PerChannelMinMaxObserverImpl::observe(const Tensor& x) {
  LOOM_CHECK(axis_ >= 0 && axis_ < x.dim(), kWhat, "PerChannelMinMaxObserver: axis ", axis_,
             " is out of range for a tensor of ", x.dim(), " dims");
  Tensor rows = x.transpose(0, axis_).reshape({x.size(axis_), -1});
  std::vector<double> lo = as_vector(rows.amin({1})), hi = as_vector(rows.amax({1}));
  if (min_.empty()) {
    min_ = lo;
    max_ = hi;
    return;
  }
  LOOM_CHECK(lo.size() == min_.size(), kWhat, "PerChannelMinMaxObserver saw ", min_.size(),
             " channels before and ", lo.size(), " now");
  for (size_t c = 0; c < lo.size(); ++c) {
    min_[c] = std::min(min_[c], lo[c]);
    max_[c] = std::max(max_[c], hi[c]);
  }
}

QParams PerChannelMinMaxObserverImpl::calculate_qparams() const {
  from_range(0, 0);  // refuses an observer that saw nothing
  const int64_t n = static_cast<int64_t>(min_.size());
  QParams q;
  q.dtype = dtype();
  q.per_channel = true;
  q.axis = axis_;
  q.scales = empty({n}, TensorOptions().dtype(ScalarType::Float64));
  q.zero_points = empty({n}, TensorOptions().dtype(ScalarType::Int64));
  for (int64_t c = 0; c < n; ++c) {
    auto [scale, zp] = choose(min_[c], max_[c], dtype(), qscheme(), reduce_range());
    q.scales.data<double>()[c] = scale;
    q.zero_points.data<int64_t>()[c] = zp;
  }
  return q;
}

// --- histograms ---

HistogramObserverImpl::HistogramObserverImpl(int64_t bins, ScalarType dtype, QScheme scheme)
    : HistogramObserverImpl("HistogramObserver", bins, dtype, scheme) {}

HistogramObserverImpl::HistogramObserverImpl(std::string type_name, int64_t bins, ScalarType dtype,
                                             QScheme scheme)
    : ObserverImpl(std::move(type_name), dtype, scheme) {
  LOOM_CHECK(bins >= 16, kWhat, "a histogram needs at least 16 bins, found ", bins);
  histogram_.assign(static_cast<size_t>(bins), 0.0);
}

void HistogramObserverImpl::observe(const Tensor& x) {
  if (x.numel() == 0) return;
  const double lo = x.min().item<double>(), hi = x.max().item<double>();
  const size_t bins = histogram_.size();
  double total = 0;
  for (double c : histogram_) total += c;
  if (total == 0) {
    min_ = lo;
    max_ = hi;
  } else if (lo < min_ || hi > max_) {
    // The range grows: move each old bin's count to the new bin of its centre.
    const double new_min = std::min(lo, min_), new_max = std::max(hi, max_);
    std::vector<double> moved(bins, 0.0);
    const double old_width = (max_ - min_) / static_cast<double>(bins);
    for (size_t b = 0; b < bins; ++b) {
      const double centre = min_ + (static_cast<double>(b) + 0.5) * old_width;
      const double at = (centre - new_min) / (new_max - new_min) * static_cast<double>(bins);
      moved[std::min(bins - 1, static_cast<size_t>(std::max(0.0, at)))] += histogram_[b];
    }
    histogram_ = std::move(moved);
    min_ = new_min;
    max_ = new_max;
  }
  if (max_ == min_) {
    histogram_[0] += static_cast<double>(x.numel());
    return;
  }
  Tensor counts = histc(x, static_cast<int64_t>(bins), min_, max_);
  std::vector<double> add = as_vector(counts);
  for (size_t b = 0; b < bins; ++b) histogram_[b] += add[b];
}

double HistogramObserverImpl::l2_error(int64_t begin, int64_t end) const {
  // The expected squared error of quantizing each bin's values (spread evenly over the
  // bin) to 256 levels over bins [begin, end]; values outside go to the nearest end level.
  const int64_t bins = static_cast<int64_t>(histogram_.size());
  const double width = (max_ - min_) / static_cast<double>(bins);
  const double levels = 256;
  const double level_width = width * static_cast<double>(end - begin + 1) / levels;
  if (level_width == 0) return 0;
  auto norm = [](double from, double to, double density) {
    return density * (to * to * to - from * from * from) / 3;
  };
  double total = 0;
  for (int64_t b = 0; b < bins; ++b) {
    if (histogram_[b] == 0) continue;
    const double density = histogram_[b] / width;
    const double src_begin = static_cast<double>(b - begin) * width;
    const double src_end = src_begin + width;
    const double first = std::clamp(std::floor(src_begin / level_width), 0.0, levels - 1);
    const double last = std::clamp(std::floor(src_end / level_width), 0.0, levels - 1);
    const double first_centre = (first + 0.5) * level_width;
    total += norm(src_begin - first_centre, level_width / 2, density);
    total += (last - first - 1) * norm(-level_width / 2, level_width / 2, density);
    const double last_centre = last * level_width + level_width / 2;
    total += norm(-level_width / 2, src_end - last_centre, density);
  }
  return total;
}

QParams HistogramObserverImpl::calculate_qparams() const {
  from_range(0, 0);
  const int64_t bins = static_cast<int64_t>(histogram_.size());
  if (max_ == min_) return from_range(min_, max_);
  std::vector<double> cumulative(histogram_.size());
  double running = 0;
  for (size_t b = 0; b < histogram_.size(); ++b) cumulative[b] = running += histogram_[b];
  const double total = running;
  // Shrink [start, end] from the side whose move drops fewer values, while the L2 error
  // keeps falling.
  const double step = 1e-5;
  double alpha = 0, beta = 1, best = std::numeric_limits<double>::infinity();
  int64_t start = 0, end = bins - 1;
  while (alpha < beta) {
    const double next_alpha = alpha + step, next_beta = beta - step;
    int64_t l = start, r = end;
    while (l < end && cumulative[l] < next_alpha * total) ++l;
    while (r > start && cumulative[r] > next_beta * total) --r;
    int64_t next_start = start, next_end = end;
    if (l - start > end - r) {
      next_start = l;
      alpha = next_alpha;
    } else {
      next_end = r;
      beta = next_beta;
    }
    if (next_start == start && next_end == end) continue;
    const double error = l2_error(next_start, next_end);
    if (error > best) break;
    best = error;
    start = next_start;
    end = next_end;
  }
  const double width = (max_ - min_) / static_cast<double>(bins);
  return from_range(min_ + width * static_cast<double>(start),
                    min_ + width * static_cast<double>(end + 1));
}

PercentileObserverImpl::PercentileObserverImpl(double percentile, int64_t bins, ScalarType dtype,
                                               QScheme scheme)
    : HistogramObserverImpl("PercentileObserver", bins, dtype, scheme), percentile_(percentile) {
  LOOM_CHECK(percentile > 50 && percentile <= 100, kWhat,
             "PercentileObserver: percentile must be in (50, 100], found ", percentile);
}

QParams PercentileObserverImpl::calculate_qparams() const {
  from_range(0, 0);
  const size_t bins = histogram_.size();
  double total = 0;
  for (double c : histogram_) total += c;
  const double low_count = total * (100 - percentile_) / 100,
               high_count = total * percentile_ / 100;
  size_t low = 0, high = bins - 1;
  double running = 0;
  for (size_t b = 0; b < bins; ++b) {
    running += histogram_[b];
    if (running <= low_count) low = b + 1;
    if (running >= high_count) {
      high = b;
      break;
    }
  }
  const double width = (max_ - min_) / static_cast<double>(bins);
  low = std::min(low, high);
  return from_range(min_ + width * static_cast<double>(low),
                    min_ + width * static_cast<double>(high + 1));
}

// --- fake quantization ---

FakeQuantizeImpl::FakeQuantizeImpl(std::shared_ptr<ObserverImpl> observer)
    : nn::Module("FakeQuantize"), observer_(std::move(observer)) {
  register_module("activation_post_process", observer_);
}

Tensor FakeQuantizeImpl::forward(const Tensor& x) {
  if (observe_) observer_->forward(x);
  if (!fake_quant_ || !observer_->has_observed()) return x;
  return fake_quantize(x, observer_->calculate_qparams());
}

}  // namespace loom::quantization
