// Samples of the amp family (Note [Loss scaling ops]): unscaling gradients of each floating
// dtype, with and without infs and NaNs, and the scale's update after a clean and an
// overflowing step; and their refusals.
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

constexpr const char* kUnscale = "loom::_amp_foreach_non_finite_check_and_unscale_";
constexpr const char* kUpdate = "loom::_amp_update_scale_";

std::vector<OpSample> make() {
  const TensorSpec clean = T({1}, kF32, Fill::Zeros);
  const TensorSpec inv_scale = T({1}, kF32, Fill::Unit);
  return {
      {kUnscale, {TL({T({2, 3}), T({4}), T({})}), clean, inv_scale}},
      OpSample{kUnscale, {TL({T({3, 2}, kF32, Fill::Special), T({5})}), clean, inv_scale}}
          .with_note("infs and NaNs set found_inf"),
      {kUnscale, {TL({T({2, 2}, kF64), T({3}, kBF16), T({2}, kF16)}), clean, inv_scale}},
      {kUnscale, {TL({T({0, 3}), T({129, 257})}), T({1}, kF32, Fill::Bool), inv_scale}},
      OpSample{kUnscale, {TL({T({2})}), T({2}, kF32, Fill::Zeros), inv_scale}}.raises(
          "expected found_inf to be a one-element float32 tensor, found [2] float32"),
      OpSample{kUnscale, {TL({T({2})}), clean, T({1}, kF64, Fill::Unit)}}.raises(
          "expected inv_scale to be a one-element float32 tensor, found [1] float64"),
      OpSample{kUnscale, {TL({T({2}), T({2}, kI64)}), clean, inv_scale}}.raises(
          "expected floating-point gradients, found int64 at index 1"),
      OpSample{kUpdate,
               {T({1}, kF32, Fill::Positive), Idx({1}, 3, kI32), clean, D(2.0), D(0.5), I(3)}}
          .with_note("a clean step: the tracker counts, at 3 the scale doubles"),
      OpSample{kUpdate,
               {T({1}, kF32, Fill::Positive), Idx({1}, 2, kI32), T({1}, kF32, Fill::Positive),
                D(2.0), D(0.5), I(2000)}}
          .with_note("an overflowing step: the scale halves, the tracker restarts"),
      OpSample{kUpdate,
               {T({}, kF32, Fill::Positive), Idx({}, 1, kI32), clean, D(4.0), D(0.25), I(1)}},
      OpSample{kUpdate,
               {T({1}, kF32, Fill::Positive), Idx({1}, 3, kI64), clean, D(2.0), D(0.5), I(3)}}
          .raises("expected growth_tracker to be a one-element int32 tensor, found [1] int64"),
      OpSample{kUpdate,
               {T({1}, kF32, Fill::Positive), Idx({1}, 3, kI32), clean, D(0.5), D(0.5), I(3)}}
          .raises("expected scale_growth_factor > 1, 0 < scale_backoff_factor < 1 and "
                  "growth_interval >= 1, found 0.5, 0.5 and 3"),
  };
}

}  // namespace

std::span<const OpSample> amp_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
