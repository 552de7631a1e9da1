// Samples of the random family: uniform_, normal_, bernoulli_, bernoulli, random_,
// randperm, dropout, multinomial (Note [Op samples] in loom/ops/samples.h). All are marked random:
// the sweep seeds the generator before each run, and values are a function of the
// logical position (Note [Random stream layout] in loom/sdk/philox.hpp), so layouts and
// variants must agree exactly.
#include <cmath>

#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

OpSample rnd(std::string op, std::vector<SampleArg> args, SampleKwargs kwargs = {}) {
  return OpSample{std::move(op), std::move(args), std::move(kwargs)}.random();
}

std::vector<OpSample> make() {
  const TensorSpec z23 = T({2, 3}, kF32, Fill::Zeros);
  const TensorSpec big = T({100, 100}, kF32, Fill::Zeros);
  return {
      rnd("loom::uniform_", {z23}),
      rnd("loom::uniform_", {T({3, 4}, kF64, Fill::Zeros), D(-2.0), D(3.0)}),
      rnd("loom::uniform_", {T({}, kF32, Fill::Zeros)}, {{"from", D(1.0)}, {"to", D(2.0)}}),
      rnd("loom::uniform_", {T({2, 5}, kBF16, Fill::Zeros)}),
      rnd("loom::normal_", {z23}),
      rnd("loom::normal_", {T({3, 4}, kF64, Fill::Zeros), D(1.0), D(0.5)}),
      rnd("loom::normal_", {T({}, kF32, Fill::Zeros)}, {{"std", D(2.0)}}),
      rnd("loom::normal_", {T({5, 2}, kF16, Fill::Zeros)}, {{"mean", D(-1.0)}}),
      rnd("loom::bernoulli_.float", {z23}),
      rnd("loom::bernoulli_.float", {T({3, 4}, kF64, Fill::Zeros), D(0.2)}),
      rnd("loom::bernoulli_.float", {T({4}, kI64, Fill::Zeros)}, {{"p", D(0.7)}}),
      rnd("loom::bernoulli_.float", {T({}, kBool, Fill::Zeros)}),
      rnd("loom::bernoulli", {T({2, 3}, kF32, Fill::Unit)}),
      rnd("loom::bernoulli", {T({3, 4}, kF64, Fill::Unit)}),
      rnd("loom::bernoulli", {T({}, kF32, Fill::Unit)}),
      rnd("loom::bernoulli", {T({2, 3}, kBF16, Fill::Unit)}),
      rnd("loom::random_.from", {T({2, 3}, kI64, Fill::Zeros), I(-5), I(5)}),
      rnd("loom::random_.from", {T({3, 4}, kF32, Fill::Zeros), I(0), I(10)}),
      rnd("loom::random_.from", {T({}, kI32, Fill::Zeros), I(1)}, {{"to", I(100)}}),
      rnd("loom::random_.from", {T({6}, kU8, Fill::Zeros), I(0), none()}),
      rnd("loom::randperm.out", {I(6)}, {{"out", T({6}, kI64, Fill::Zeros)}}),
      rnd("loom::randperm.out", {I(1)}, {{"out", T({1}, kI32, Fill::Zeros)}}),
      rnd("loom::randperm.out", {I(10)}, {{"out", T({10}, kF32, Fill::Zeros)}}),
      rnd("loom::dropout", {T({2, 3}), D(0.5), B(true)}),
      rnd("loom::dropout", {T({3, 4}, kF64), D(0.2), B(true)}),
      rnd("loom::dropout", {T({2, 3}), D(0.5), B(false)}),
      rnd("loom::dropout", {T({}), D(0.0), B(true)}),
      rnd("loom::dropout", {T({4}), D(1.0), B(true)}),
      rnd("loom::multinomial", {T({2, 5}, kF32, Fill::Positive), I(3)}),
      rnd("loom::multinomial", {T({6}, kF64, Fill::Unit), I(10), B(true)}),
      rnd("loom::multinomial", {T({3, 4}, kF32, Fill::Positive), I(4), B(false)}),
      // 10,000 values each, checked as distributions by `loom conform`.
      rnd("loom::uniform_", {big}).distributed(0.5, std::sqrt(1.0 / 12), 0, 1),
      rnd("loom::uniform_", {T({100, 100}, kF64, Fill::Zeros), D(-2.0), D(3.0)})
          .distributed(0.5, 5 / std::sqrt(12.0), -2, 3),
      rnd("loom::normal_", {big}, {{"mean", D(1.0)}, {"std", D(2.0)}})
          .distributed(1, 2, -INFINITY, INFINITY),
      rnd("loom::bernoulli_.float", {big, D(0.3)}).distributed(0.3, std::sqrt(0.21), 0, 1),
      rnd("loom::random_.from", {T({100, 100}, kI64, Fill::Zeros), I(-5), I(5)})
          .distributed(-0.5, std::sqrt(99.0 / 12), -5, 4),
      rnd("loom::randperm.out", {I(10000)}, {{"out", T({10000}, kI64, Fill::Zeros)}})
          .distributed(4999.5, std::sqrt((1e8 - 1) / 12), 0, 9999),
      // Error inputs (Note [Op samples]), refused by the op library for every backend
      // (Note [Argument checks]).
      OpSample{"loom::uniform_", {z23, D(2.0), D(1.0)}}.raises("expected from <= to"),
      OpSample{"loom::uniform_", {T({2}, kF16, Fill::Zeros), D(0.0), D(1e6)}}.raises(
          "expected bounds within the finite range of float16"),
      OpSample{"loom::normal_", {z23, D(0.0), D(-1.0)}}.raises("expected std >= 0, found std=-1"),
      OpSample{"loom::normal_", {z23, D(INFINITY), D(1.0)}}.raises(
          "expected a finite mean and std"),
      OpSample{"loom::bernoulli_.float", {z23, D(1.5)}}.raises("expected p in [0, 1], found p=1.5"),
      OpSample{"loom::dropout", {T({2, 3}), D(-0.5), B(true)}}.raises(
          "expected p in [0, 1], found p=-0.5"),
      OpSample{"loom::native_dropout", {T({50, 200}), D(0.25), B(true)}}.random(),
      {"loom::native_dropout", {T({2, 3}), D(0.5), B(false)}},
      OpSample{"loom::native_dropout", {T({4}), D(1.5), none()}}.raises(
          "expected a probability p in [0, 1]"),
      OpSample{"loom::rand", {L({100, 100})}, {{"device", SampleDevice{}}}}.random().distributed(
          0.5, 0.2887, 0, 1),
      OpSample{"loom::randn", {L({100, 100})}, {{"dtype", kF64}, {"device", SampleDevice{}}}}
          .random()
          .distributed(0, 1, -10, 10),
      OpSample{"loom::randperm", {I(10)}, {{"device", SampleDevice{}}}}.random(),
      OpSample{"loom::rand", {L({2, -1})}}.raises("expected non-negative sizes"),
  };
}

}  // namespace

std::span<const OpSample> random_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
