// Loss scaling's ops (Note [Loss scaling ops]): the CPU plugin's one-pass unscale gives the
// per-tensor multiply's bits and finds every inf and NaN (contiguous, non-contiguous,
// reduced-precision gradients), found_inf is never cleared, and the scale update grows,
// backs off and keeps a non-finite growth out as PyTorch's.
#include <cmath>
#include <cstring>
#include <limits>

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class AmpOps : public OpsTest {};

Tensor one(float v) {
  Tensor t = loom::empty({1}, TensorOptions().dtype(ScalarType::Float32));
  t.fill_(v);
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || shape(a) != shape(b)) return false;
  if (a.numel() == 0) return true;
  Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.numel() * element_size(x.dtype())) == 0;
}

TEST_F(AmpOps, UnscaleMultipliesEveryGradientAsMulDoes) {
  const Tensor inv = one(1.0f / 1024.0f + 1e-7f);
  for (ScalarType dtype :
       {ScalarType::Float32, ScalarType::Float64, ScalarType::BFloat16, ScalarType::Float16}) {
    std::vector<Tensor> grads{random({300, 257}, ScalarType::Float64).to(dtype),
                              random({7}, ScalarType::Float64).to(dtype),
                              random({6, 4}, ScalarType::Float64).to(dtype).t()};
    std::vector<Tensor> want;
    for (const Tensor& g : grads) want.push_back(loom::mul(g, inv.reshape({})));
    Tensor found = one(0);
    loom::_amp_foreach_non_finite_check_and_unscale_(grads, found, inv);
    for (size_t i = 0; i < grads.size(); ++i) {
      EXPECT_TRUE(same_bits(grads[i], want[i])) << scalar_type_name(dtype) << " tensor " << i;
    }
    EXPECT_EQ(found.item<float>(), 0.0f) << scalar_type_name(dtype);
  }
}

TEST_F(AmpOps, AnyInfOrNanSetsFoundInfWhichStaysSet) {
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    Tensor g = random({300, 257}, ScalarType::Float32);
    g.view({-1}).select(0, 77000).fill_(bad);
    Tensor strided = random({8, 6}, ScalarType::Float32).t();
    Tensor found = one(0);
    loom::_amp_foreach_non_finite_check_and_unscale_({strided, g}, found, one(0.5f));
    EXPECT_EQ(found.item<float>(), 1.0f) << bad;
    // A later call over finite gradients leaves it set (optimizers may share it).
    loom::_amp_foreach_non_finite_check_and_unscale_({strided}, found, one(0.5f));
    EXPECT_EQ(found.item<float>(), 1.0f);
  }
  Tensor strided = random({8, 6}, ScalarType::Float32).t();
  strided.select(0, 3).select(0, 5).fill_(std::numeric_limits<float>::infinity());
  Tensor found = one(0);
  loom::_amp_foreach_non_finite_check_and_unscale_({strided}, found, one(0.5f));
  EXPECT_EQ(found.item<float>(), 1.0f) << "an inf in a non-contiguous gradient";
}

TEST_F(AmpOps, TheScaleGrowsAfterIntervalCleanStepsAndBacksOffOnInf) {
  Tensor scale = one(65536.0f);
  Tensor tracker = loom::zeros({1}, TensorOptions().dtype(ScalarType::Int32));
  for (int step = 1; step <= 3; ++step) {
    loom::_amp_update_scale_(scale, tracker, one(0), 2.0, 0.5, 3);
  }
  EXPECT_EQ(scale.item<float>(), 131072.0f);
  EXPECT_EQ(tracker.item<int64_t>(), 0);
  loom::_amp_update_scale_(scale, tracker, one(0), 2.0, 0.5, 3);
  EXPECT_EQ(tracker.item<int64_t>(), 1);
  loom::_amp_update_scale_(scale, tracker, one(1), 2.0, 0.5, 3);
  EXPECT_EQ(scale.item<float>(), 65536.0f);
  EXPECT_EQ(tracker.item<int64_t>(), 0);
  // A growth past float32's range is not taken; the tracker restarts anyway.
  Tensor huge = one(3e38f);
  Tensor t2 = loom::full({1}, 1, TensorOptions().dtype(ScalarType::Int32));
  loom::_amp_update_scale_(huge, t2, one(0), 2.0, 0.5, 2);
  EXPECT_EQ(huge.item<float>(), 3e38f);
  EXPECT_EQ(t2.item<int64_t>(), 0);
}

}  // namespace
}  // namespace loom::testing
