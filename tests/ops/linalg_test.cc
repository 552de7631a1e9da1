// Matrix products (mm, bmm, addmm, baddbmm, dot) and the matmul / linear decompositions
// through the typed API, against float64 references computed here: dtypes,
// transposed / sliced / expanded inputs, broadcasting, zero-size operands, the meta device
// and errors.
#include <cmath>
#include "loom/random.h"

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Linalg : public OpsTest {};

// Row-major [batch, n, p] = a [batch, n, k] @ b [batch, k, p] in float64.
Values reference_bmm(const Values& a, const Values& b, int64_t batch, int64_t n, int64_t k,
                     int64_t p) {
  Values out(static_cast<size_t>(batch * n * p), 0.0);
  for (int64_t z = 0; z < batch; ++z)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < p; ++j) {
        double s = 0;
        for (int64_t c = 0; c < k; ++c) s += a[(z * n + i) * k + c] * b[(z * k + c) * p + j];
        out[(z * n + i) * p + j] = s;
      }
  return out;
}

double tolerance(ScalarType t) {
  switch (t) {
    case ScalarType::Float64:
      return 1e-12;
    case ScalarType::Float32:
      return 1e-5;
    default:
      return 3e-2;
  }
}

TEST_F(Linalg, MmMatchesReferenceInEveryFloatDtype) {
  manual_seed(1);
  for (ScalarType t :
       {ScalarType::Float32, ScalarType::Float64, ScalarType::Float16, ScalarType::BFloat16}) {
    Tensor a = random({5, 7}, t), b = random({7, 3}, t);
    Tensor c = mm(a, b);
    EXPECT_EQ(c.dtype(), t);
    EXPECT_EQ(shape(c), (Shape{5, 3}));
    expect_close(values(c), reference_bmm(values(a), values(b), 1, 5, 7, 3), tolerance(t));
  }
}

TEST_F(Linalg, MmOfTransposedSlicedAndExpandedInputs) {
  manual_seed(2);
  Tensor a = random({6, 4}), b = random({5, 6});
  Values ref = reference_bmm(values(a.t()), values(b.t()), 1, 4, 6, 5);
  expect_close(values(mm(a.t(), b.t())), ref);  // column-major both
  expect_close(values(mm(a.t().contiguous(), b.t())), ref);
  Tensor wide = random({6, 10});
  Tensor sliced = wide.slice(1, 0, 10, 2);  // column stride 2
  expect_close(values(mm(sliced.t(), b.t())),
               reference_bmm(values(sliced.t()), values(b.t()), 1, 5, 6, 5));
  Tensor row = random({1, 6}).expand({4, 6});  // row stride 0
  expect_close(values(mm(row, b.t())), reference_bmm(values(row), values(b.t()), 1, 4, 6, 5));
  // bfloat16 (Note [bfloat16 products on oneDNN]): transposed operands read as they are,
  // a sliced one staged, batched and scaled with an added term, as float32 computes them
  Tensor ha = a.to(ScalarType::BFloat16), hb = b.to(ScalarType::BFloat16);
  Values href = reference_bmm(values(ha.t()), values(hb.t()), 1, 4, 6, 5);
  expect_close(values(mm(ha.t(), hb.t())), href, 2e-2);
  Tensor hs = sliced.to(ScalarType::BFloat16);
  expect_close(values(mm(hs.t(), hb.t())),
               reference_bmm(values(hs.t()), values(hb.t()), 1, 5, 6, 5), 2e-2);
  Tensor x = random({3, 4, 6}, ScalarType::BFloat16), y = random({3, 6, 5}, ScalarType::BFloat16);
  Tensor base = random({3, 4, 5}, ScalarType::BFloat16);
  Values want = reference_bmm(values(x), values(y), 3, 4, 6, 5);
  Values bv = values(base);
  for (size_t i = 0; i < want.size(); ++i) want[i] = 0.5 * bv[i] + 2.0 * want[i];
  expect_close(values(baddbmm(base, x, y, 0.5, 2.0)), want, 3e-2);
  // a float64 strided product takes the loop
  Tensor d = random({6, 4}, ScalarType::Float64);
  expect_close(values(mm(d.t(), d)), reference_bmm(values(d.t()), values(d), 1, 4, 6, 4), 1e-12);
}

TEST_F(Linalg, IntegerMmIsExact) {
  Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3}, ScalarType::Int64);
  Tensor b = make({7, 8, 9, 10, 11, 12}, {3, 2}, ScalarType::Int64);
  EXPECT_EQ(values(mm(a, b)), (Values{58, 64, 139, 154}));
  Tensor a32 = make({1, 2, 3, 4, 5, 6}, {2, 3}, ScalarType::Int32);
  EXPECT_EQ(values(mm(a32.t().contiguous().t(), a32.t())), (Values{14, 32, 32, 77}));
}

TEST_F(Linalg, BmmWithStridedBatches) {
  manual_seed(3);
  Tensor a = random({3, 4, 5}), b = random({3, 5, 2});
  expect_close(values(bmm(a, b)), reference_bmm(values(a), values(b), 3, 4, 5, 2));
  Tensor at = random({3, 5, 4}).transpose(1, 2);
  expect_close(values(bmm(at, b)), reference_bmm(values(at), values(b), 3, 4, 5, 2));
  Tensor bp = random({5, 3, 2}).permute({1, 0, 2});  // batch not outermost
  expect_close(values(bmm(a, bp)), reference_bmm(values(a), values(bp), 3, 4, 5, 2));
  Tensor bx = random({1, 5, 2}).expand({3, 5, 2});  // batch stride 0
  expect_close(values(bmm(a, bx)), reference_bmm(values(a), values(bx), 3, 4, 5, 2));
  Tensor h = random({2, 3, 4}, ScalarType::BFloat16), g = random({2, 4, 3}, ScalarType::BFloat16);
  expect_close(values(bmm(h, g)), reference_bmm(values(h), values(g), 2, 3, 4, 3), 3e-2);
}

TEST_F(Linalg, AddmmBroadcastsSelfAndScales) {
  manual_seed(4);
  for (ScalarType t : {ScalarType::Float32, ScalarType::Float64, ScalarType::Float16}) {
    Tensor m1 = random({4, 3}, t), m2 = random({3, 5}, t);
    Values prod = reference_bmm(values(m1), values(m2), 1, 4, 3, 5);
    for (const Shape& self_shape : {Shape{5}, Shape{4, 1}, Shape{1, 5}, Shape{4, 5}, Shape{}}) {
      Tensor self = random(self_shape, t);
      Values s = values(self.expand({4, 5}));
      Values ref(prod.size());
      for (size_t i = 0; i < ref.size(); ++i) ref[i] = 0.5 * s[i] + 2 * prod[i];
      expect_close(values(addmm(self, m1, m2, 0.5, 2)), ref, tolerance(t));
    }
    // beta = 0 ignores self, NaN included
    Tensor nan_self = make({NAN}, {1}, t);
    Values ref = prod;
    for (double& x : ref) x *= 3;
    expect_close(values(addmm(nan_self, m1, m2, 0, 3)), ref, tolerance(t));
  }
}

TEST_F(Linalg, BaddbmmAndIntegerAddmm) {
  manual_seed(5);
  Tensor b1 = random({2, 3, 4}), b2 = random({2, 4, 2}), self = random({3, 1});
  Values prod = reference_bmm(values(b1), values(b2), 2, 3, 4, 2);
  Values s = values(self.expand({2, 3, 2}));
  Values ref(prod.size());
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = s[i] - prod[i];
  expect_close(values(baddbmm(self, b1, b2, 1, -1)), ref);
  Tensor i1 = make({1, 2, 3, 4}, {2, 2}, ScalarType::Int32);
  EXPECT_EQ(values(addmm(make({10}, {1}, ScalarType::Int32), i1, i1, 2, 1)),
            (Values{27, 30, 35, 42}));
}

TEST_F(Linalg, Dot) {
  Tensor a = make({1, 2, 3}, {3}), b = make({4, 5, 6, 7, 8, 9}, {2, 3});
  EXPECT_EQ(values(dot(a, b.select(0, 1))), (Values{50}));
  EXPECT_EQ(dot(a, a).dim(), 0);
  EXPECT_EQ(values(dot(make({1, 2}, {2}, ScalarType::Int64), make({3, 4}, {2}, ScalarType::Int64))),
            (Values{11}));
  EXPECT_EQ(values(dot(empty({0}), empty({0}))), (Values{0}));
}

TEST_F(Linalg, ZeroSizeProducts) {
  EXPECT_EQ(shape(mm(empty({0, 3}), empty({3, 4}))), (Shape{0, 4}));
  EXPECT_EQ(values(mm(empty({2, 0}), empty({0, 2}))), (Values{0, 0, 0, 0}));
  Tensor self = make({1, 2}, {2});
  EXPECT_EQ(values(addmm(self, empty({2, 0}), empty({0, 2}), 3)), (Values{3, 6, 3, 6}));
  EXPECT_EQ(shape(bmm(empty({0, 2, 3}), empty({0, 3, 4}))), (Shape{0, 2, 4}));
}

TEST_F(Linalg, ZeroInnerDimAndWrappingIntegers) {
  // a 0-size inner dim gives zeros (plus the bias), as in PyTorch
  Tensor x = make({}, {2, 3, 0});
  EXPECT_EQ(values(matmul(x, make({}, {0, 4}))), Values(24, 0.0));
  EXPECT_EQ(shape(matmul(x, make({}, {0}))), (Shape{2, 3}));
  Tensor out = linear(x, make({}, {4, 0}), make({1, 2, 3, 4}, {4}));
  EXPECT_EQ(shape(out), (Shape{2, 3, 4}));
  EXPECT_EQ(values(out.select(0, 1).select(0, 2)), (Values{1, 2, 3, 4}));
  // int64 products wrap modulo 2^64
  Tensor big = empty({1, 1}, TensorOptions().dtype(ScalarType::Int64));
  *static_cast<int64_t*>(big.data_ptr()) = int64_t{1} << 62;
  Tensor four = empty({1, 1}, TensorOptions().dtype(ScalarType::Int64));
  *static_cast<int64_t*>(four.data_ptr()) = 4;
  EXPECT_EQ(mm(big, four).item<int64_t>(), 0);
  EXPECT_EQ(dot(big.view({1}), four.view({1})).item<int64_t>(), 0);
}

TEST_F(Linalg, MatmulFollowsTheDimRules) {
  manual_seed(6);
  Tensor v = random({4}), m = random({4, 4}), w = random({3, 4});
  EXPECT_EQ(matmul(v, v).dim(), 0);
  expect_close(values(matmul(v, v)), reference_bmm(values(v), values(v), 1, 1, 4, 1));
  EXPECT_EQ(shape(matmul(m, v)), (Shape{4}));
  expect_close(values(matmul(m, v)), reference_bmm(values(m), values(v), 1, 4, 4, 1));
  EXPECT_EQ(shape(matmul(v, w.t())), (Shape{3}));
  expect_close(values(matmul(v, w.t())), reference_bmm(values(v), values(w.t()), 1, 1, 4, 3));
  // N-D @ 2-D folds the batch into rows; N-D @ 1-D drops the last dim
  Tensor x = random({2, 3, 4});
  EXPECT_EQ(shape(matmul(x, w.t())), (Shape{2, 3, 3}));
  expect_close(values(matmul(x, w.t())), reference_bmm(values(x), values(w.t()), 1, 6, 4, 3));
  EXPECT_EQ(shape(matmul(x, v)), (Shape{2, 3}));
  // 1-D @ N-D and broadcast batch dims
  Tensor y = random({2, 4, 5});
  EXPECT_EQ(shape(matmul(v, y)), (Shape{2, 5}));
  Values vy = values(matmul(v, y));
  Values y0 = values(y.select(0, 1));
  expect_close({vy[5], vy[9]}, {reference_bmm(values(v), y0, 1, 1, 4, 5)[0],
                                reference_bmm(values(v), y0, 1, 1, 4, 5)[4]});
  Tensor p = random({3, 1, 2, 4}), q = random({5, 4, 2});
  Tensor r = matmul(p, q);
  ASSERT_EQ(shape(r), (Shape{3, 5, 2, 2}));
  Values pe = values(p.expand({3, 5, 2, 4})), qe = values(q.expand({3, 5, 4, 2}));
  expect_close(values(r), reference_bmm(pe, qe, 15, 2, 4, 2));
}

TEST_F(Linalg, Linear) {
  manual_seed(7);
  Tensor x = random({2, 3, 4}), w = random({5, 4}), b = random({5});
  Values ref = reference_bmm(values(x), values(w.t()), 1, 6, 4, 5);
  Values bias = values(b);
  for (size_t i = 0; i < ref.size(); ++i) ref[i] += bias[i % 5];
  expect_close(values(linear(x, w, b)), ref);
  Tensor x2 = x.select(0, 0);
  Values ref2(ref.begin(), ref.begin() + 15);
  expect_close(values(linear(x2, w, b)), ref2);
  expect_close(values(linear(x2, w)), reference_bmm(values(x2), values(w.t()), 1, 3, 4, 5));
}

TEST_F(Linalg, MetaDevice) {
  TensorOptions meta = TensorOptions().device(Device{kMeta, -1});
  EXPECT_EQ(shape(mm(empty({2, 3}, meta), empty({3, 7}, meta))), (Shape{2, 7}));
  EXPECT_EQ(shape(bmm(empty({4, 2, 3}, meta), empty({4, 3, 7}, meta))), (Shape{4, 2, 7}));
  EXPECT_EQ(shape(addmm(empty({7}, meta), empty({2, 3}, meta), empty({3, 7}, meta))),
            (Shape{2, 7}));
  EXPECT_EQ(shape(matmul(empty({5, 1, 2, 3}, meta), empty({4, 3, 6}, meta))), (Shape{5, 4, 2, 6}));
}

TEST_F(Linalg, Errors) {
  Tensor a = empty({2, 3}), b = empty({4, 5});
  expect_error([&] { mm(a, b); }, "loom::mm",
               "expected mat2 with 3 rows (self is [2, 3]), found [4, 5]");
  expect_error([&] { mm(empty({3}), a); }, "loom::mm", "expected self to have 2 dims, found 1");
  expect_error(
      [&] {
        mm(a, empty({3, 2}, TensorOptions().dtype(ScalarType::Float64)));
      },
      "loom::mm", "expected mat2 to have the dtype of self (float32), found float64");
  expect_error(
      [&] {
        mm(make({1}, {1, 1}, ScalarType::Bool), make({1}, {1, 1}, ScalarType::Bool));
      },
      "loom::mm", "expected a numeric dtype, found bool");
  expect_error(
      [&] {
        bmm(empty({2, 2, 3}), empty({3, 3, 2}));
      },
      "loom::bmm", "expected mat2 with batch size 2");
  expect_error(
      [&] {
        addmm(empty({3}), a, empty({3, 2}));
      },
      "loom::addmm", "expected self to broadcast to the product's shape [2, 2], found [3]");
  expect_error([&] { dot(empty({2}), empty({3})); }, "loom::dot",
               "expected tensors of the same length, found 2 and 3");
  expect_error([&] { matmul(empty({}), a); }, "loom::matmul",
               "expected both arguments to have at least 1 dim, found 0 and 2");
  expect_error(
      [&] {
        matmul(empty({2, 2, 3}), empty({3, 3, 2}));
      },
      "loom::matmul", "expected batch dims that broadcast");
  expect_error(
      [&] {
        matmul(empty({2, 2, 3}), empty({4, 2}));
      },
      "loom::matmul", "expected other with 3 rows");
}

TEST_F(Linalg, MvAndAddmv) {
  Tensor a = make({1, 2, 3, 4}, {2, 2});
  Tensor v = make({1, 1}, {2});
  // torch.mv(torch.tensor([[1., 2], [3, 4]]), torch.tensor([1., 1])) -> [3., 7.]
  EXPECT_EQ(values(mv(a, v)), (Values{3, 7}));
  // torch.addmv(torch.tensor([1., 1]), a, v, beta=2, alpha=3) -> [11., 23.]
  EXPECT_EQ(values(addmv(make({1, 1}, {2}), a, v, 2, 3)), (Values{11, 23}));
  // beta=0 ignores self, NaN included: torch.addmv(torch.tensor([nan]), a, v, beta=0)
  EXPECT_EQ(values(addmv(make({NAN}, {1}), a, v, 0)), (Values{3, 7}));
  expect_error(
      [&] {
        mv(a, make({1, 1, 1}, {3}));
      },
      "loom::mv", "size mismatch: the matrix is [2, 2] and the vector [3] (expected 2 elements)");
  expect_error([&] { mv(v, v); }, "loom::mv", "expected a 2-D matrix and a 1-D vector");
}

TEST_F(Linalg, VectorNormAndCdist) {
  Tensor v = make({3, -4}, {2});
  // torch.linalg.vector_norm(torch.tensor([3., -4]), ord) for ord 2, 1, inf, 0, 3
  EXPECT_EQ(values(linalg_vector_norm(v)), (Values{5}));
  EXPECT_EQ(values(linalg_vector_norm(v, 1)), (Values{7}));
  EXPECT_EQ(values(linalg_vector_norm(v, INFINITY)), (Values{4}));
  EXPECT_EQ(values(linalg_vector_norm(v, 0)), (Values{2}));
  expect_close(values(linalg_vector_norm(v, 3)), {4.497941445275415});
  expect_error([&] { linalg_vector_norm(make({1}, {1}, ScalarType::Int64)); },
               "loom::linalg_vector_norm", "expected a floating point input or dtype");
  // torch.cdist(torch.tensor([[0., 0], [1, 1]]), torch.tensor([[1., 0], [3, 4]]))
  Tensor d = cdist(make({0, 0, 1, 1}, {2, 2}), make({1, 0, 3, 4}, {2, 2}));
  expect_close(values(d), {1, 5, 1, std::sqrt(13.0)});
  expect_error(
      [&] {
        cdist(loom::zeros({2, 3}), loom::zeros({2, 4}));
      },
      "loom::cdist", "same number of columns");
}

TEST_F(Linalg, Einsum) {
  Tensor a = make({1, 2, 3, 4}, {2, 2});
  Tensor b = make({5, 6, 7, 8}, {2, 2});
  // torch.einsum("ij,jk->ik", a, b) -> [[19, 22], [43, 50]]; implicit output too
  EXPECT_EQ(values(einsum("ij,jk->ik", {a, b})), (Values{19, 22, 43, 50}));
  EXPECT_EQ(values(einsum("ij,jk", {a, b})), (Values{19, 22, 43, 50}));
  // diagonal, trace, transpose, outer product
  EXPECT_EQ(values(einsum("ii->i", {a})), (Values{1, 4}));
  EXPECT_EQ(values(einsum("ii", {a})), (Values{5}));
  EXPECT_EQ(values(einsum("ij->ji", {a})), (Values{1, 3, 2, 4}));
  EXPECT_EQ(values(einsum("i,j->ij", {make({1, 2}, {2}), make({3, 4}, {2})})),
            (Values{3, 4, 6, 8}));
  // batched matmul equals bmm; a broadcast ellipsis; three operands
  Tensor x = make({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  EXPECT_EQ(values(einsum("bij,bjk->bik", {x, x})), values(bmm(x, x)));
  EXPECT_EQ(values(einsum("...ij,jk->...ik", {x, b})), values(matmul(x, b)));
  EXPECT_EQ(values(einsum("ij,jk,kl->il", {a, b, a})), values(mm(mm(a, b), a)));
  // Promotion: int64 with float32 gives float32.
  EXPECT_EQ(einsum("i,i->", {make({1, 2}, {2}, ScalarType::Int64), make({0.5, 0.25}, {2})}).dtype(),
            ScalarType::Float32);
  expect_error([&] { einsum("ij,jk->ik", {a}); }, "loom::einsum",
               "expected 2 operands for 'ij,jk->ik', found 1 tensors");
  expect_error(
      [&] {
        einsum("ij,jk->ik", {a, loom::zeros({3, 2})});
      },
      "loom::einsum", "operands do not broadcast: subscript j has sizes 2 and 3");
  expect_error([&] { einsum("ij->ik", {a}); }, "loom::einsum",
               "output subscript k does not appear in any operand");
  expect_error([&] { einsum("i1", {a}); }, "loom::einsum", "found '1'");
}

}  // namespace
}  // namespace loom::testing
