// Decompositions of the recurrent cells: one LSTM or GRU time step from two linear maps
// and the gates, in PyTorch's gate order (LSTM: input, forget, cell, output; GRU: reset,
// update, new).
#include <tuple>
#include <vector>

#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

// input [N, I] or [I] with hidden state [N, H] or [H]; w_ih [G*H, I], w_hh [G*H, H].
void check_cell(const char* op, const Tensor& input, const Tensor& hidden, const Tensor& w_ih,
                const Tensor& w_hh, int64_t gates) {
  if (input.dim() != 1 && input.dim() != 2) {
    fail(op, "expected a 1-D or 2-D input, found ", input.dim(), " dims");
  }
  if (hidden.dim() != input.dim()) {
    fail(op, "expected a hidden state with the input's ", input.dim(), " dims, found ",
         hidden.dim());
  }
  const int64_t h = hidden.sizes()[hidden.dim() - 1];
  if (w_ih.dim() != 2 || w_ih.sizes()[0] != gates * h ||
      w_ih.sizes()[1] != input.sizes()[input.dim() - 1]) {
    fail(op, "expected w_ih of shape [", gates * h, ", ", input.sizes()[input.dim() - 1],
         "], found ", shape_to_string(w_ih.sizes()));
  }
  if (w_hh.dim() != 2 || w_hh.sizes()[0] != gates * h || w_hh.sizes()[1] != h) {
    fail(op, "expected w_hh of shape [", gates * h, ", ", h, "], found ",
         shape_to_string(w_hh.sizes()));
  }
  if (input.dim() == 2 && input.sizes()[0] != hidden.sizes()[0]) {
    fail(op, "expected the hidden state's batch ", hidden.sizes()[0], " to match the input's, ",
         input.sizes()[0]);
  }
}

std::tuple<Tensor, Tensor> lstm_cell(const Tensor& input, const std::vector<Tensor>& hx,
                                     const Tensor& w_ih, const Tensor& w_hh,
                                     const std::optional<Tensor>& b_ih,
                                     const std::optional<Tensor>& b_hh) {
  constexpr const char* op = "loom::lstm_cell";
  if (hx.size() != 2) fail(op, "expected hx = [h, c], found ", hx.size(), " tensors");
  check_cell(op, input, hx[0], w_ih, w_hh, 4);
  if (!same_shape(hx[1].sizes(), hx[0].sizes())) {
    fail(op, "expected c of h's shape ", shape_to_string(hx[0].sizes()), ", found ",
         shape_to_string(hx[1].sizes()));
  }
  Tensor gates = loom::add(loom::linear(input, w_ih, b_ih), loom::linear(hx[0], w_hh, b_hh));
  std::vector<Tensor> g = loom::chunk(gates, 4, -1);
  Tensor c = loom::add(loom::mul(loom::sigmoid(g[1]), hx[1]),
                       loom::mul(loom::sigmoid(g[0]), loom::tanh(g[2])));
  Tensor h = loom::mul(loom::sigmoid(g[3]), loom::tanh(c));
  return {h, c};
}

Tensor gru_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
  check_cell("loom::gru_cell", input, hx, w_ih, w_hh, 3);
  std::vector<Tensor> gi = loom::chunk(loom::linear(input, w_ih, b_ih), 3, -1);
  std::vector<Tensor> gh = loom::chunk(loom::linear(hx, w_hh, b_hh), 3, -1);
  Tensor reset = loom::sigmoid(loom::add(gi[0], gh[0]));
  Tensor update = loom::sigmoid(loom::add(gi[1], gh[1]));
  Tensor candidate = loom::tanh(loom::add(gi[2], loom::mul(reset, gh[2])));
  // (1 - z) * n + z * h, written n + z * (h - n)
  return loom::add(candidate, loom::mul(update, loom::sub(hx, candidate)));
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::lstm_cell", decomposition<&lstm_cell>()},
    {"loom::gru_cell", decomposition<&gru_cell>()},
};

}  // namespace

std::span<const DecompositionEntry> rnn_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
