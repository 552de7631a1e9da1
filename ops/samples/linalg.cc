// Samples of the linear algebra family: mm, bmm, addmm, baddbmm, dot (kernels) and
// matmul, linear, _addmm_activation (decompositions; Note [Op samples] in loom/ops/samples.h).
// Float32 products compare within 1e-4: oneDNN may block the sums differently per layout.
#include <limits>

#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

std::vector<OpSample> make() {
  return {
      blocked_sums("loom::mm", {T({2, 3}), T({3, 4})}),
      {"loom::mm", {T({3, 5}, kF64), T({5, 2}, kF64)}},
      {"loom::mm", {T({2, 3}, kI64, Fill::SmallInt), T({3, 2}, kI64, Fill::SmallInt)}},
      OpSample{"loom::mm", {T({4, 3}, kBF16), T({3, 4}, kBF16)}}.tol(3e-2),
      blocked_sums("loom::mm", {T({1, 3}), T({3, 1})}),
      OpSample{"loom::mm", {T({2, 0}), T({0, 3})}}.with_note("empty inner dim: zeros"),
      {"loom::mm", {T({0, 3}), T({3, 2})}},
      blocked_sums("loom::bmm", {T({2, 2, 3}), T({2, 3, 4})}),
      {"loom::bmm", {T({3, 2, 2}, kF64), T({3, 2, 5}, kF64)}},
      {"loom::bmm", {T({2, 2, 3}, kI32, Fill::SmallInt), T({2, 3, 2}, kI32, Fill::SmallInt)}},
      blocked_sums("loom::addmm", {T({2, 4}), T({2, 3}), T({3, 4})}),
      OpSample{"loom::addmm",
               {T({4}, kF64), T({2, 3}, kF64), T({3, 4}, kF64)},
               {{"beta", D(0.5)}, {"alpha", D(2.0)}}}
          .with_note("bias broadcast over rows"),
      blocked_sums("loom::addmm", {T({}), T({3, 2}), T({2, 2})}, {{"beta", I(0)}}),
      blocked_sums("loom::addmm", {T({2, 1}), T({2, 3}), T({3, 3})}, {{"alpha", D(-1.0)}}),
      {"loom::addmm", {T({2, 3}), T({2, 0}), T({0, 3})}, {{"beta", D(2.0)}}},
      blocked_sums("loom::_addmm_activation", {T({4}), T({2, 3}), T({3, 4})}),
      blocked_sums("loom::_addmm_activation", {T({2, 4}), T({2, 3}), T({3, 4})},
                   {{"beta", D(0.5)}, {"alpha", D(2.0)}, {"use_gelu", B(true)}}),
      {"loom::_addmm_activation", {T({3}, kF64), T({2, 2}, kF64), T({2, 3}, kF64)}},
      blocked_sums("loom::baddbmm", {T({2, 2, 4}), T({2, 2, 3}), T({2, 3, 4})}),
      OpSample{"loom::baddbmm",
               {T({4}, kF64), T({3, 2, 3}, kF64), T({3, 3, 4}, kF64)},
               {{"beta", D(2.0)}, {"alpha", D(0.5)}}},
      blocked_sums("loom::baddbmm", {T({2, 1}), T({2, 2, 3}), T({2, 3, 2})}, {{"beta", I(0)}}),
      {"loom::mv", {T({3, 4}), T({4})}},
      {"loom::mv", {T({2, 3}, kF64), T({3}, kF64)}},
      {"loom::mv", {T({0, 3}), T({3})}},
      {"loom::addmv", {T({3}), T({3, 4}), T({4})}},
      OpSample{"loom::addmv",
               {T({}, kF64), T({2, 3}, kF64), T({3}, kF64)},
               {{"beta", D(0.5)}, {"alpha", D(2.0)}}}
          .with_note("self broadcast"),
      {"loom::addmv", {T({1}), T({2, 3}), T({3})}, {{"beta", I(0)}}},
      blocked_sums("loom::dot", {T({5}), T({5})}),
      {"loom::dot", {T({4}, kF64), T({4}, kF64)}},
      {"loom::dot", {T({6}, kI64, Fill::SmallInt), T({6}, kI64, Fill::SmallInt)}},
      blocked_sums("loom::dot", {T({1}), T({1})}),
      {"loom::dot", {T({0}), T({0})}},
      blocked_sums("loom::matmul", {T({2, 3}), T({3, 4})}),
      blocked_sums("loom::matmul", {T({3}), T({3})}),
      blocked_sums("loom::matmul", {T({2, 3}), T({3})}),
      blocked_sums("loom::matmul", {T({3}), T({3, 2})}),
      OpSample{"loom::matmul", {T({2, 2, 3}), T({3, 4})}}.tol(1e-4).with_note(
          "batched times matrix: the matrix broadcasts"),
      blocked_sums("loom::matmul", {T({2, 1, 2, 3}), T({3, 3, 2})}),
      {"loom::matmul", {T({2, 3}, kF64), T({2, 3, 2}, kF64)}},
      blocked_sums("loom::linear", {T({2, 3}), T({4, 3}), T({4})}),
      blocked_sums("loom::linear", {T({2, 3}), T({4, 3})}),
      blocked_sums("loom::linear", {T({2, 2, 3}), T({5, 3})}, {{"bias", T({5})}}),
      {"loom::linear", {T({3}, kF64), T({2, 3}, kF64), T({}, kF64)}},
      {"loom::linalg_vector_norm", {T({2, 3})}},
      {"loom::linalg_vector_norm", {T({2, 3}, kF64), D(1.0), L({1}), B(true)}},
      {"loom::linalg_vector_norm", {T({3, 4}), D(std::numeric_limits<double>::infinity()), L({0})}},
      {"loom::linalg_vector_norm", {T({3, 4}), D(3.0)}, {{"dim", L({0, 1})}}},
      {"loom::linalg_vector_norm", {T({4}, kI64), I(0)}, {{"dtype", kF32}}},
      {"loom::cdist", {T({3, 4}), T({2, 4})}},
      {"loom::cdist", {T({2, 3, 2}, kF64), T({2, 4, 2}, kF64), D(1.0)}},
      {"loom::cdist", {T({2, 3}), T({5, 3}), D(0.0)}},
      {"loom::_cdist_forward", {T({3, 4}), T({2, 4}), D(2.0), none()}},
      {"loom::_cdist_forward", {T({2, 3, 2}, kF64), T({2, 4, 2}, kF64), D(1.0), I(1)}},
      {"loom::_pdist_forward", {T({4, 3})}},
      {"loom::_pdist_forward", {T({5, 2}, kF64), D(1.0)}},
      {"loom::_pdist_forward", {T({1, 3})}},
      OpSample{"loom::_pdist_forward", {T({4})}}.raises("expected a 2-D input"),
      {"loom::einsum", {S("ij,jk->ik"), TL({T({2, 3}), T({3, 4})})}},
      OpSample{"loom::einsum", {S("bij,bjk->bik"), TL({T({2, 2, 3}, kF64), T({2, 3, 4}, kF64)})}}
          .with_note("a batched matmul: one bmm"),
      {"loom::einsum", {S("ii->i"), TL({T({3, 3})})}},
      {"loom::einsum", {S("ij"), TL({T({2, 3}, kI64)})}},
      {"loom::einsum", {S("...ij,jk->...ik"), TL({T({2, 2, 3}), T({3, 2})})}},
      {"loom::einsum", {S("ij,jk,kl->il"), TL({T({2, 3}), T({3, 2}), T({2, 2})})}},
      {"loom::einsum", {S("i,j"), TL({T({3}), T({2})})}},
      // Large enough for blocked, threaded products.
      blocked_sums("loom::mm", {T({64, 96}), T({96, 80})}),
      // Error inputs (Note [Op samples]): each must raise.
      OpSample{"loom::mm", {T({2, 3}), T({4, 2})}}.raises("expected mat2 with 3 rows"),
      OpSample{"loom::matmul", {T({2, 3}), T({2, 3})}}.raises("expected mat2 with 3 rows"),
  };
}

}  // namespace

std::span<const OpSample> linalg_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
