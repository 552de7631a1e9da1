// Samples of the normalization family: native_layer_norm, layer_norm, batch_norm,
// group_norm (Note [Op samples] in loom/ops/samples.h). Running variances are positive.
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

std::vector<OpSample> make() {
  std::vector<OpSample> s = {
      {"loom::native_layer_norm", {T({2, 3, 4}), L({4}), T({4}), T({4}), D(1e-5)}},
      {"loom::native_layer_norm", {T({2, 3, 4}, kF64), L({3, 4}), none(), none(), D(1e-5)}},
      {"loom::native_layer_norm", {T({3, 5}), L({5}), T({5}), none(), D(1e-3)}},
      OpSample{"loom::native_layer_norm",
               {T({2, 8}, kBF16), L({8}), none(), T({8}, kBF16), D(1e-5)}}
          .tol(3e-2),
      {"loom::layer_norm", {T({2, 3, 4}), L({4})}},
      {"loom::layer_norm", {T({2, 3, 4}, kF64), L({3, 4}), T({3, 4}, kF64), T({3, 4}, kF64)}},
      {"loom::layer_norm", {T({3, 5}), L({5})}, {{"weight", T({5})}, {"eps", D(1e-3)}}},
      {"loom::batch_norm",
       {T({2, 3, 4}), T({3}), T({3}), T({3}), T({3}, kF32, Fill::Positive), B(false), D(0.1),
        D(1e-5)}},
      OpSample{"loom::batch_norm",
               {T({4, 3}, kF64), T({3}, kF64), T({3}, kF64), T({3}, kF64),
                T({3}, kF64, Fill::Positive), B(true), D(0.1), D(1e-5)}}
          .with_note("training: batch statistics, running stats updated in place"),
      {"loom::batch_norm",
       {T({2, 3, 2, 2}), none(), none(), none(), none(), B(true), D(0.1), D(1e-5)}},
      {"loom::batch_norm",
       {T({2, 2, 3}), none(), T({2}), T({2}), T({2}, kF32, Fill::Positive), B(false), D(0.1),
        D(1e-3)}},
      {"loom::group_norm", {T({2, 4, 3}), I(2)}},
      {"loom::group_norm", {T({2, 4, 3}, kF64), I(2), T({4}, kF64), T({4}, kF64)}},
      {"loom::group_norm", {T({1, 6, 2, 2}), I(3)}, {{"weight", T({6})}, {"eps", D(1e-3)}}},
      {"loom::group_norm", {T({3, 4}), I(4), none(), T({4})}},
      {"loom::instance_norm",
       {T({2, 3, 4}), T({3}), T({3}), none(), none(), B(true), D(0.1), D(1e-5)}},
      {"loom::instance_norm",
       {T({2, 2, 3, 3}, kF64), none(), none(), T({2}, kF64), T({2}, kF64, Fill::Positive), B(true),
        D(0.1), D(1e-5)}},
      OpSample{"loom::instance_norm",
               {T({1, 2, 5}), none(), none(), T({2}), T({2}, kF32, Fill::Positive), B(false),
                D(0.1), D(1e-5)}}
          .with_note("running stats normalize (eval)"),
      {"loom::_native_batch_norm_legit_no_training",
       {T({2, 3, 4}), T({3}), T({3}), T({3}), T({3}, kF32, Fill::Positive), D(0.1), D(1e-5)}},
      {"loom::_native_batch_norm_legit",
       {T({4, 3, 2}), T({3}), T({3}), T({3}), T({3}, kF32, Fill::Positive), B(true), D(0.1),
        D(1e-5)}},
      {"loom::_native_batch_norm_legit",
       {T({2, 3}, kF64), none(), none(), T({3}, kF64), T({3}, kF64, Fill::Positive), B(false),
        D(0.1), D(1e-5)}},
      {"loom::_native_batch_norm_legit.no_stats",
       {T({4, 2, 3}), T({2}), T({2}), B(true), D(0.1), D(1e-5)}},
      {"loom::native_group_norm", {T({2, 4, 3}), T({4}), T({4}), I(2), I(4), I(3), I(2), D(1e-5)}},
      {"loom::native_group_norm",
       {T({3, 6, 2, 2}, kF64), none(), none(), I(3), I(6), I(4), I(3), D(1e-5)}},
      OpSample{"loom::native_group_norm",
               {T({2, 4, 3}), none(), none(), I(2), I(5), I(3), I(2), D(1e-5)}}
          .raises("expected an input of N=2, C=5"),
      // mean and rstd shaped as native_layer_norm returns them.
      {"loom::native_layer_norm_backward",
       {T({2, 3, 4}), T({2, 3, 4}), L({4}), T({2, 3, 1}), T({2, 3, 1}, kF32, Fill::Positive),
        T({4}), T({4}), BL({true, true, true})}},
      {"loom::native_layer_norm_backward",
       {T({3, 4}, kF64), T({3, 4}, kF64), L({3, 4}), T({1, 1}, kF64),
        T({1, 1}, kF64, Fill::Positive), none(), none(), BL({true, false, false})}},
      // mean and rstd shaped as native_group_norm returns them ([N, group]).
      {"loom::native_group_norm_backward",
       {T({2, 4, 3}), T({2, 4, 3}), T({2, 2}), T({2, 2}, kF32, Fill::Positive), T({4}), I(2), I(4),
        I(3), I(2), BL({true, true, true})}},
      {"loom::native_group_norm_backward",
       {T({3, 6, 2, 2}, kF64), T({3, 6, 2, 2}, kF64), T({3, 3}, kF64),
        T({3, 3}, kF64, Fill::Positive), none(), I(3), I(6), I(4), I(3), BL({true, false, true})}},
  };
  return s;
}

}  // namespace

std::span<const OpSample> normalization_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
