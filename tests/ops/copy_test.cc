// The copy ops through the typed API: clone, contiguous and to (dtype, device), with
// the cases that return self.
#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Copy : public OpsTest {};

TEST_F(Copy, CloneContiguousTo) {
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor t = x.t();
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(values(c), (Values{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(x.contiguous().impl(), x.impl());  // already contiguous: itself
  Tensor k = x.clone();
  EXPECT_NE(k.data_ptr(), x.data_ptr());
  EXPECT_EQ(values(k), values(x));
  Tensor d = x.to(ScalarType::Float64);
  EXPECT_EQ(d.dtype(), ScalarType::Float64);
  EXPECT_EQ(values(d), values(x));
  EXPECT_EQ(x.to(ScalarType::Float32).impl(), x.impl());
  EXPECT_NE(x.to(ScalarType::Float32, false, true).impl(), x.impl());  // copy=true
  EXPECT_EQ(values(make({1.7, -1.7}, {2}).to(ScalarType::Int32)), (Values{1, -1}));
  Tensor on_cpu = x.to(Device{kCPU, -1}, ScalarType::Int64);
  EXPECT_EQ(on_cpu.dtype(), ScalarType::Int64);
}

}  // namespace
}  // namespace loom::testing
