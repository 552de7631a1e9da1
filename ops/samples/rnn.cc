// Samples of the rnn family: lstm_cell and gru_cell, batched and unbatched, with and
// without biases (Note [Op samples] in loom/ops/samples.h).
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

std::vector<OpSample> make() {
  // input 3, hidden 2: LSTM weights [8, 3] and [8, 2]; GRU [6, 3] and [6, 2].
  return {
      {"loom::lstm_cell",
       {T({4, 3}), TL({T({4, 2}), T({4, 2})}), T({8, 3}), T({8, 2}), T({8}), T({8})}},
      {"loom::lstm_cell",
       {T({3}, kF64), TL({T({2}, kF64), T({2}, kF64)}), T({8, 3}, kF64), T({8, 2}, kF64)}},
      {"loom::gru_cell", {T({4, 3}), T({4, 2}), T({6, 3}), T({6, 2}), T({6}), T({6})}},
      {"loom::gru_cell", {T({3}, kF64), T({2}, kF64), T({6, 3}, kF64), T({6, 2}, kF64)}},
  };
}

}  // namespace

std::span<const OpSample> rnn_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
