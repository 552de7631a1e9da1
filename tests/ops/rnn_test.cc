// The recurrent cells through the typed API, against the cell formulas PyTorch documents
// (nn.LSTMCell, nn.GRUCell), with weights chosen so the gates are the biases.
#include <vector>

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Rnn : public OpsTest {};

TEST_F(Rnn, LstmCell) {
  // Zero weights: gates = b_ih + b_hh = [1, 2, 3, 4] (input, forget, cell, output).
  Tensor input = make({1}, {1, 1});
  std::vector<Tensor> hx = {make({0}, {1, 1}), make({0.5}, {1, 1})};
  auto [h, c] = lstm_cell(input, hx, loom::zeros({4, 1}), loom::zeros({4, 1}), loom::zeros({4}),
                          make({1, 2, 3, 4}, {4}));
  // c = sigmoid(2) * 0.5 + sigmoid(1) * tanh(3); h = sigmoid(4) * tanh(c)
  expect_close(values(c), {1.167841852878192}, 1e-6);
  expect_close(values(h), {0.8087660232155287}, 1e-6);
  expect_error(
      [&] {
        lstm_cell(input, {hx[0]}, loom::zeros({4, 1}), loom::zeros({4, 1}));
      },
      "loom::lstm_cell", "expected hx = [h, c], found 1 tensors");
  expect_error(
      [&] {
        lstm_cell(input, hx, loom::zeros({3, 1}), loom::zeros({4, 1}));
      },
      "loom::lstm_cell", "expected w_ih of shape [4, 1], found [3, 1]");
}

TEST_F(Rnn, GruCell) {
  // Zero weights: reset = sigmoid(1 + 0.5), update = sigmoid(2 + 0.5),
  // new = tanh(3 + reset * 0.5); h = (1 - update) * new + update * 0.25
  Tensor h = gru_cell(make({1}, {1}), make({0.25}, {1}), loom::zeros({3, 1}), loom::zeros({3, 1}),
                      make({1, 2, 3}, {3}), make({0.5, 0.5, 0.5}, {3}));
  expect_close(values(h), {0.30672778236415194}, 1e-6);
  expect_error(
      [&] {
        gru_cell(make({1}, {1}), make({0.25}, {1, 1}), loom::zeros({3, 1}), loom::zeros({3, 1}));
      },
      "loom::gru_cell", "expected a hidden state with the input's 1 dims, found 2");
}

}  // namespace
}  // namespace loom::testing
