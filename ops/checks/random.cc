// The random family's argument checks (Note [Argument checks]): the parameters of the
// distributions and of dropout, which every backend's kernels would otherwise repeat.
#include <cmath>

#include "argument_check.h"
#include "loom/core/scalar.h"
#include "loom/core/scalar_type.h"

namespace loom::ops {
namespace {

void check_probability(const ShapeArgs& args, double p) {
  if (!(p >= 0.0 && p <= 1.0)) args.fail("expected p in [0, 1], found p=", p);
}

// uniform_(self, from, to): PyTorch's checks, and a width that stays finite (the draws
// are from + (to - from) * u).
void uniform_check(const ShapeArgs& args) {
  const double from = args.real(1), to = args.real(2);
  if (!(from <= to)) args.fail("expected from <= to, found from=", from, " to=", to);
  const ScalarType dtype = args.tensor(0).dtype();
  const auto within = [dtype](double bound) {
    return std::isfinite(bound) && fits_without_overflow(Scalar(bound), dtype);
  };
  if (is_floating_point(dtype) && !(within(from) && within(to))) {
    args.fail("expected bounds within the finite range of ", scalar_type_name(dtype),
              ", found from=", from, " to=", to);
  }
  if (!std::isfinite(to - from)) {
    args.fail("the range to - from of ", from, " and ", to, " overflows (expected a finite width)");
  }
}

// normal_(self, mean, std).
void normal_check(const ShapeArgs& args) {
  const double mean = args.real(1), std = args.real(2);
  if (!(std >= 0.0)) args.fail("expected std >= 0, found std=", std);
  if (!std::isfinite(mean) || !std::isfinite(std)) {
    args.fail("expected a finite mean and std, found mean=", mean, " std=", std);
  }
}

// bernoulli_.float(self, p).
void bernoulli_float_check(const ShapeArgs& args) {
  check_probability(args, args.real(1));
}

// dropout(input, p, train).
void dropout_check(const ShapeArgs& args) {
  check_probability(args, args.real(1));
}

constexpr ArgumentCheckEntry kChecks[] = {
    {"loom::uniform_", &uniform_check},
    {"loom::normal_", &normal_check},
    {"loom::bernoulli_.float", &bernoulli_float_check},
    {"loom::dropout", &dropout_check},
};

}  // namespace

std::span<const ArgumentCheckEntry> random_argument_checks() {
  return kChecks;
}

}  // namespace loom::ops
