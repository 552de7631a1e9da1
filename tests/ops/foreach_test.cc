// The foreach ops (Note [Foreach ops]): each equals the loop of its per-tensor op bit for
// bit, on the CPU plugin's one pass over the lists (Note [One pass over lists]) and on its
// loop (non-contiguous, aliased, mixed lists); the lists' errors.
#include <cmath>
#include <cstring>

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Foreach : public OpsTest {};

using List = std::vector<Tensor>;

// Shapes with a tensor above the parallel grain, a 0-dim one and an empty one.
const std::vector<Shape> kShapes = {{300, 257}, {7}, {}, {0, 3}, {33, 5}};

List random_list(ScalarType dtype, double low = -1.0) {
  List out;
  for (const Shape& s : kShapes) {
    Tensor t = random(s, ScalarType::Float64);
    if (low > 0) t = loom::abs(t) + low;
    out.push_back(t.to(dtype));
  }
  return out;
}

List clones(const List& list) {
  List out;
  for (const Tensor& t : list) out.push_back(loom::clone(t));
  return out;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || shape(a) != shape(b)) return false;
  if (a.numel() == 0) return true;  // an empty tensor's data pointer may be null
  Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.numel() * element_size(x.dtype())) == 0;
}

void expect_same_bits(const List& actual, const List& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_TRUE(same_bits(actual[i], expected[i])) << "tensor " << i;
  }
}

const ScalarType kDtypes[] = {ScalarType::Float32, ScalarType::Float64, ScalarType::BFloat16,
                              ScalarType::Float16};

TEST_F(Foreach, InPlaceOpsEqualTheirPerTensorLoopBitForBit) {
  for (ScalarType dtype : kDtypes) {
    SCOPED_TRACE(scalar_type_name(dtype));
    const List a = random_list(dtype), b = random_list(dtype), c = random_list(dtype, 0.5);
    std::vector<double> scalars = {0.3, -2.0, 7.0, 1.5, -0.01};

    List x = clones(a), y = clones(a);
    _foreach_add_(x, 0.1);
    for (Tensor& t : y) t += 0.1;
    expect_same_bits(x, y);

    _foreach_add_(x, b, -0.7);
    for (size_t i = 0; i < y.size(); ++i) add_(y[i], b[i], -0.7);
    expect_same_bits(x, y);

    _foreach_mul_(x, 0.999);
    for (Tensor& t : y) t *= 0.999;
    expect_same_bits(x, y);

    _foreach_mul_(x, scalars);
    for (size_t i = 0; i < y.size(); ++i) y[i] *= scalars[i];
    expect_same_bits(x, y);

    _foreach_mul_(x, c);
    for (size_t i = 0; i < y.size(); ++i) y[i] *= c[i];
    expect_same_bits(x, y);

    _foreach_div_(x, scalars);
    for (size_t i = 0; i < y.size(); ++i) y[i] /= scalars[i];
    expect_same_bits(x, y);

    _foreach_lerp_(x, b, 0.1);
    for (size_t i = 0; i < y.size(); ++i) lerp_(y[i], b[i], 0.1);
    expect_same_bits(x, y);

    const std::vector<double> weights = {0.05, 0.5, 0.9, 1.0, -0.2};
    _foreach_lerp_(x, b, weights);
    for (size_t i = 0; i < y.size(); ++i) lerp_(y[i], b[i], weights[i]);
    expect_same_bits(x, y);

    _foreach_addcmul_(x, b, b, 0.001);
    for (size_t i = 0; i < y.size(); ++i) addcmul_(y[i], b[i], b[i], 0.001);
    expect_same_bits(x, y);

    _foreach_addcdiv_(x, b, c, -0.5);
    for (size_t i = 0; i < y.size(); ++i) addcdiv_(y[i], b[i], c[i], -0.5);
    expect_same_bits(x, y);

    _foreach_addcdiv_(x, b, c, scalars);
    for (size_t i = 0; i < y.size(); ++i) addcdiv_(y[i], b[i], c[i], scalars[i]);
    expect_same_bits(x, y);

    _foreach_maximum_(x, b);
    for (size_t i = 0; i < y.size(); ++i) maximum_(y[i], b[i]);
    expect_same_bits(x, y);

    List p = clones(c), q = clones(c);
    _foreach_rsqrt_(p);
    for (Tensor& t : q) rsqrt_(t);
    expect_same_bits(p, q);
  }
}

TEST_F(Foreach, FunctionalOpsEqualTheirPerTensorLoopBitForBit) {
  for (ScalarType dtype : kDtypes) {
    SCOPED_TRACE(scalar_type_name(dtype));
    const List a = random_list(dtype), b = random_list(dtype), c = random_list(dtype, 0.5);
    List sum = _foreach_add(a, b, 0.25), roots = _foreach_sqrt(c);
    List products = _foreach_addcmul(a, b, c, -1.0), squares = _foreach_mul(a, a);
    List floors = _foreach_clamp_min(a, 0.2), norms = _foreach_norm(a);
    List max_norms = _foreach_norm(a, INFINITY);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_TRUE(same_bits(squares[i], mul(a[i], a[i]))) << i;
      EXPECT_TRUE(same_bits(floors[i], clamp_min(a[i], 0.2))) << i;
      EXPECT_TRUE(same_bits(norms[i], linalg_vector_norm(a[i]))) << i;
      EXPECT_TRUE(same_bits(max_norms[i], linalg_vector_norm(a[i], INFINITY))) << i;
      EXPECT_TRUE(same_bits(sum[i], add(a[i], b[i], 0.25))) << i;
      EXPECT_TRUE(same_bits(roots[i], loom::sqrt(c[i]))) << i;
      EXPECT_TRUE(same_bits(products[i], addcmul(a[i], b[i], c[i], -1.0))) << i;
    }
  }
}

// Lists the one pass may not take run as the loop: the results still equal the loop's.
TEST_F(Foreach, ListsTheOnePassCannotTakeRunAsTheLoop) {
  const List a = random_list(ScalarType::Float32), b = random_list(ScalarType::Float32);
  // Non-contiguous tensors, and an input of another dtype (promoted as the per-tensor op).
  List x = {a[0].t(), a[4].t()}, y = {a[0].t().clone(), a[4].t().clone()};
  List other = {b[0].t().to(ScalarType::Float64), b[4].t()};
  _foreach_add_(x, other, 2.0);
  for (size_t i = 0; i < y.size(); ++i) add_(y[i], other[i], 2.0);
  expect_same_bits(x, y);
  // The same tensor twice in self: updated twice, as by the loop.
  Tensor t = make({1, 2}, {2});
  _foreach_mul_(List{t, t}, 3.0);
  EXPECT_EQ(values(t), (Values{9, 18}));
  // An input that is another position's output: read after that position's write.
  Tensor u = make({1, 2}, {2}), v = make({10, 20}, {2});
  _foreach_add_(List{u, v}, List{v, u});
  EXPECT_EQ(values(u), (Values{11, 22}));
  EXPECT_EQ(values(v), (Values{21, 42}));
  // An input that is its own position's output (v * v) takes the one pass.
  Tensor w = make({1, 2, 3}, {3});
  _foreach_addcmul_(List{w}, List{w}, List{w}, 1.0);
  EXPECT_EQ(values(w), (Values{2, 6, 12}));
  // Integer lists run the per-tensor ops.
  Tensor n = make({1, 2}, {2}, ScalarType::Int64);
  _foreach_add_(List{n}, 3);
  EXPECT_EQ(values(n), (Values{4, 5}));
}

TEST_F(Foreach, BadListsAreRefused) {
  const List a = random_list(ScalarType::Float32);
  expect_error([&] { _foreach_add_(List{}, 1.0); }, "loom::_foreach_add_.Scalar",
               "expected a non-empty tensor list for self, found an empty one");
  expect_error([&] { _foreach_add_(a, List{a[0]}); }, "loom::_foreach_add_.List",
               "expected other to have self's length 5, found 1");
  expect_error(
      [&] {
        _foreach_div_(a, std::vector<double>{1.0, 2.0});
      },
      "loom::_foreach_div_.ScalarList", "expected scalars to have self's length 5, found 2");
  expect_error(
      [&] {
        _foreach_addcmul(a, a, List{a[0], a[1]});
      },
      "loom::_foreach_addcmul.Scalar", "expected tensor2 to have self's length 5, found 2");
  // A shape mismatch is the per-tensor op's error, and the tensors before it are updated
  // as by the loop.
  List x = {make({1, 2}, {2}), make({1, 2, 3}, {3})};
  List y = {make({1, 1}, {2}), make({1, 1}, {2})};
  EXPECT_THROW(_foreach_add_(x, y), Error);
  EXPECT_EQ(values(x[0]), (Values{2, 3}));
  // Float results can't be written into integer tensors, as for the per-tensor op.
  List ints = {make({1, 2}, {2}, ScalarType::Int64)};
  EXPECT_THROW(_foreach_mul_(ints, 0.5), Error);
  EXPECT_EQ(values(ints[0]), (Values{1, 2}));
}

}  // namespace
}  // namespace loom::testing
