// Decompositions of the random ops: multinomial, native_dropout and the random factories
// rand, randn and randperm (all drawing from the Philox stream through uniform_,
// normal_, bernoulli_ and randperm.out, so a manual_seed repeats them).
#include <cmath>
#include <vector>

#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

// Note [multinomial]
// ~~~~~~~~~~~~~~~~~~
// Each row of self holds non-negative weights of its categories (not necessarily
// summing to 1). With replacement, a sample is the category whose interval of the
// normalised cumulative weights holds a uniform draw u: the number of cumulative weights
// <= u (searchsorted, right side), so a zero-weight category is never drawn. Without
// replacement, each category gets the key w / E with E an exponential draw (-log(1 - u));
// the num_samples largest keys are a draw without replacement in proportion to the
// weights (the exponential race PyTorch also uses), and zero-weight categories come
// last. The weights are checked on the host first, with PyTorch's messages.
Tensor multinomial(const Tensor& self, int64_t num_samples, bool replacement) {
  const char* op = "loom::multinomial";
  if (self.dim() != 1 && self.dim() != 2) {
    fail(op, "prob_dist must be 1 or 2 dim, found ", self.dim(), " dims");
  }
  if (!is_floating_point(self.dtype())) {
    fail(op, "multinomial only supports floating-point dtypes for input, got: ",
         scalar_type_name(self.dtype()));
  }
  const int64_t categories = self.size(-1);
  if (categories == 0) fail(op, "expected at least one category, found none");
  if (num_samples <= 0) fail(op, "cannot sample n_sample <= 0 samples, found ", num_samples);
  if (!replacement && num_samples > categories) {
    fail(op, "cannot sample n_sample > prob_dist.size(-1) samples without replacement (",
         num_samples, " > ", categories, ")");
  }
  const Tensor rows = self.dim() == 1 ? self.unsqueeze(0) : self;
  const int64_t row_count = rows.size(0);
  if (self.device().type != kMeta) {
    const Tensor host =
        loom::to(rows, Device{kCPU, -1}, ScalarType::Float64, false, true).contiguous();
    const double* w = host.data<double>();
    for (int64_t r = 0; r < row_count; ++r) {
      double total = 0;
      for (int64_t c = 0; c < categories; ++c) {
        const double v = w[r * categories + c];
        if (!std::isfinite(v) || v < 0) {
          fail(op, "probability tensor contains either `inf`, `nan` or element < 0");
        }
        total += v;
      }
      if (total <= 0) fail(op, "invalid multinomial distribution (sum of probabilities <= 0)");
    }
  }
  Tensor u = empty(std::vector<int64_t>{row_count, replacement ? num_samples : categories},
                   ScalarType::Float64, self.device());
  loom::uniform_(u, 0.0, 1.0);
  Tensor weights = cast(rows, ScalarType::Float64);
  Tensor samples;
  if (replacement) {
    Tensor cumulative = loom::cumsum(weights, 1);
    cumulative = loom::div(cumulative, cumulative.narrow(1, categories - 1, 1));
    samples = loom::searchsorted(cumulative, u, false, true);
    samples = loom::clamp_max(samples, Scalar(categories - 1));
  } else {
    const Tensor exponential = loom::neg(loom::log(loom::sub(wrapped_scalar(Scalar(1.0)), u)));
    samples = std::get<1>(loom::topk(loom::div(weights, exponential), num_samples, 1));
  }
  return self.dim() == 1 ? samples.squeeze(0) : samples;
}

// dropout with its mask: in training (train true or None, as PyTorch) each element is
// kept with probability 1 - p and scaled by 1 / (1 - p); the mask says which were kept.
std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p,
                                          std::optional<bool> train) {
  const char* op = "loom::native_dropout";
  if (!(p >= 0 && p <= 1)) fail(op, "expected a probability p in [0, 1], found ", p);
  if (!is_floating_point(input.dtype())) {
    fail(op, "expected a floating-point input, found ", scalar_type_name(input.dtype()));
  }
  if (train.has_value() && !*train) {
    Tensor mask = empty(input.sizes(), ScalarType::Bool, input.device());
    loom::fill_(mask, true);
    return {loom::clone(input), mask};
  }
  Tensor draws = empty(input.sizes(), input.dtype(), input.device());
  loom::bernoulli_(draws, 1 - p);
  Tensor mask = draws.to(ScalarType::Bool);
  Tensor out = p == 1 ? loom::mul(input, 0.0) : loom::mul(loom::mul(input, draws), 1 / (1 - p));
  return {out, mask};
}

void check_factory(const char* op, std::optional<int64_t> layout, std::optional<bool> pin_memory) {
  if (layout && *layout != 7) {
    fail(op, "expected layout None or torch.strided (7), found ", *layout,
         " (loom has dense tensors only)");
  }
  if (pin_memory && *pin_memory) fail(op, "pin_memory=True is not supported here");
}

Tensor new_of(const char* op, const IntList& size, std::optional<ScalarType> dtype,
              std::optional<Device> device) {
  for (int64_t s : size.span()) {
    if (s < 0) fail(op, "expected non-negative sizes, found ", shape_to_string(size.span()));
  }
  ScalarType type = dtype.value_or(ScalarType::Float32);
  if (!is_floating_point(type)) {
    fail(op, "expected a floating-point dtype, found ", scalar_type_name(type));
  }
  return empty(size.span(), type, device.value_or(Device{}));
}

Tensor rand(const IntList& size, std::optional<ScalarType> dtype, std::optional<int64_t> layout,
            std::optional<Device> device, std::optional<bool> pin_memory) {
  check_factory("loom::rand", layout, pin_memory);
  return loom::uniform_(new_of("loom::rand", size, dtype, device), 0.0, 1.0);
}

Tensor randn(const IntList& size, std::optional<ScalarType> dtype, std::optional<int64_t> layout,
             std::optional<Device> device, std::optional<bool> pin_memory) {
  check_factory("loom::randn", layout, pin_memory);
  return loom::normal_(new_of("loom::randn", size, dtype, device), 0.0, 1.0);
}

Tensor randperm(int64_t n, std::optional<ScalarType> dtype, std::optional<int64_t> layout,
                std::optional<Device> device, std::optional<bool> pin_memory) {
  check_factory("loom::randperm", layout, pin_memory);
  int64_t size = n < 0 ? 0 : n;  // a negative n is reported by randperm.out
  Tensor out =
      empty(IntArrayRef(&size, 1), dtype.value_or(ScalarType::Int64), device.value_or(Device{}));
  return loom::randperm_out(out, n);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::multinomial", decomposition<&multinomial>()},
    {"loom::native_dropout", decomposition<&native_dropout>()},
    {"loom::rand", decomposition<&rand>()},
    {"loom::randn", decomposition<&randn>()},
    {"loom::randperm", decomposition<&randperm>()},
};

}  // namespace

std::span<const DecompositionEntry> random_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
