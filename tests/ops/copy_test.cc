// The copy ops through the typed API: clone, contiguous and to (dtype, device), with
// the cases that return self.
#include <cmath>
#include <limits>

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

TEST_F(Copy, ContiguousInAMemoryFormat) {
  Tensor x = arange(0, 24, 1, TensorOptions().dtype(ScalarType::Float32)).reshape({2, 3, 2, 2});
  Tensor nhwc = x.contiguous(MemoryFormat::ChannelsLast);
  EXPECT_TRUE(nhwc.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(std::vector<int64_t>(nhwc.strides().begin(), nhwc.strides().end()),
            (std::vector<int64_t>{12, 1, 6, 3}));
  EXPECT_EQ(values(nhwc), values(x));
  // memory holds the channels innermost
  EXPECT_EQ(nhwc.data<float>()[1], x.data<float>()[4]);
  EXPECT_EQ(nhwc.contiguous(MemoryFormat::ChannelsLast).impl(), nhwc.impl());  // already
  Tensor back = nhwc.contiguous(MemoryFormat::Contiguous);
  EXPECT_TRUE(back.is_contiguous());
  EXPECT_EQ(values(back), values(x));
  expect_error(
      [&] {
        arange(0, 6).reshape({2, 3}).contiguous(MemoryFormat::ChannelsLast);
      },
      "contiguous", "expected a 4-D [N, C, H, W] tensor for channels_last, found 2 dims");
}

// Note [Scalars that overflow]: values the dtype cannot hold are refused, as in PyTorch.
TEST_F(Copy, FillRefusesValuesTheDtypeCannotHold) {
  Tensor u8 = loom::zeros({3}, TensorOptions().dtype(ScalarType::UInt8));
  // torch.zeros(3, dtype=torch.uint8).fill_(300) -> "value cannot be converted to type uint8_t
  // without overflow"
  expect_error([&] { u8.fill_(300); }, "loom::fill_.Scalar",
               "value 300 of argument 'value' cannot be converted to type uint8 without overflow");
  EXPECT_EQ(values(u8), (Values{0, 0, 0}));
  u8.fill_(-1);  // negative integers may wrap into unsigned dtypes (PyTorch allows it too)
  EXPECT_EQ(values(u8), (Values{255, 255, 255}));
  Tensor f16 = loom::zeros({2}, TensorOptions().dtype(ScalarType::Float16));
  // torch.zeros(2, dtype=torch.float16).fill_(1e6) -> refused; fill_(inf) is fine.
  expect_error([&] { f16.fill_(1e6); }, "loom::fill_.Scalar", "to type float16 without overflow");
  f16.fill_(std::numeric_limits<double>::infinity());
  EXPECT_EQ(values(f16), (Values{INFINITY, INFINITY}));
  // Floats into integers: torch.zeros(1, dtype=torch.int32).fill_(float('nan')) -> refused.
  Tensor i32 = loom::zeros({1}, TensorOptions().dtype(ScalarType::Int32));
  expect_error([&] { i32.fill_(NAN); }, "loom::fill_.Scalar", "to type int32 without overflow");
  expect_error([&] { loom::full({2}, 2, TensorOptions().dtype(ScalarType::Bool)); },
               "loom::fill_.Scalar",
               "value 2 of argument 'value' cannot be converted to type bool");
  i32.fill_(-2147483648.0);
  EXPECT_EQ(values(i32), (Values{-2147483648.0}));
}

}  // namespace
}  // namespace loom::testing
