// Samples of the scan family: cumsum, cumprod, cummax, cummin (Note [Op samples] in
// loom/ops/samples.h). cummax and cummin get small integers too, so equal values meet.
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

std::vector<OpSample> make() {
  std::vector<OpSample> s;
  for (const char* op : {"loom::cumsum", "loom::cumprod"}) {
    s.push_back({op, {T({3, 4}), I(1)}});
    s.push_back({op, {T({2, 3, 4}, kF64), I(0)}});
    s.push_back({op, {T({3, 4}), I(-1)}, {{"dtype", kF64}}});
    s.push_back({op, {T({2, 3}, kI64, Fill::SmallInt), I(1)}});
    s.push_back({op, {T({5}, kI32, Fill::SmallInt), I(0)}});
    s.push_back({op, {T({}), I(0)}});
    s.push_back({op, {T({0, 3}), I(0)}});
    s.push_back({op, {T({4}, kBool, Fill::Bool), I(0)}});
    s.push_back(OpSample{op, {T({2, 3}, kBF16, Fill::Unit), I(1)}}.tol(2e-2));
  }
  for (const char* op : {"loom::cummax", "loom::cummin"}) {
    s.push_back({op, {T({3, 4}), I(1)}});
    s.push_back({op, {T({2, 3, 4}, kF64), I(0)}});
    s.push_back({op, {T({4, 5}, kF32, Fill::SmallInt), I(-1)}});
    s.push_back({op, {T({2, 6}, kI64, Fill::SmallInt), I(1)}});
    s.push_back({op, {T({}), I(0)}});
    s.push_back({op, {T({0, 3}), I(0)}});
    s.push_back({op, {T({5}, kBool, Fill::Bool), I(0)}});
    s.push_back({op, {T({2, 3}, kBF16), I(1)}});
  }
  return s;
}

}  // namespace

std::span<const OpSample> scan_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
