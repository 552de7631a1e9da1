// The app-facing C++ API: generated op functions and Tensor methods, operators with C++
// numbers, factories, item(), printing, DLPack exchange, the meta device, and errors.
#include <gtest/gtest.h>

#include <sstream>

#include "frontend_test_util.h"
#include "loom/loom.h"

namespace loom {
namespace {

using test::expect_error;
using test::values;

class Frontend : public test::LoadedRuntimeTest {};

TEST_F(Frontend, GeneratedFunctionsMethodsAndOperatorsAgree) {
  Tensor a = tensor({1.0, 2.0, 3.0});
  Tensor b = tensor({10.0, 20.0, 30.0}, TensorOptions().dtype(ScalarType::Float32));
  EXPECT_EQ(values(add(a, b, 2)), (std::vector<double>{21, 42, 63}));
  EXPECT_EQ(values(a.add(b)), (std::vector<double>{11, 22, 33}));
  EXPECT_EQ(values(a + b), (std::vector<double>{11, 22, 33}));
  EXPECT_EQ(values(b - a), (std::vector<double>{9, 18, 27}));
  EXPECT_EQ(values(a * 2), (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(values(6.0 / a), (std::vector<double>{6, 3, 2}));
  EXPECT_EQ(values(-a), (std::vector<double>{-1, -2, -3}));
  EXPECT_EQ(values(a > 1.5), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ((a > 1.5).dtype(), ScalarType::Bool);
  EXPECT_EQ(values(add_out(empty({3}), a, b)), (std::vector<double>{11, 22, 33}));
}

TEST_F(Frontend, InPlaceOperatorsWriteIntoTheTensor) {
  Tensor a = ones({2, 2});
  Tensor alias = a;
  a += 2;
  a *= tensor({1.0, 10.0}, TensorOptions().dtype(ScalarType::Float32));  // broadcast row
  EXPECT_EQ(values(alias), (std::vector<double>{3, 30, 3, 30}));
  Tensor i = zeros({3}, TensorOptions().dtype(ScalarType::Int64));
  expect_error([&] { i += 0.5; }, "loom::add_.Tensor", "can't be cast to the out dtype int64");
  expect_error([&] { ones({3}).add_(ones({2, 3})); }, "loom::add_.Tensor", "out has shape [3]");
}

TEST_F(Frontend, TypePromotionFollowsPyTorch) {
  Tensor i32 = full({2}, 3, TensorOptions().dtype(ScalarType::Int32));
  EXPECT_EQ((i32 + 1).dtype(), ScalarType::Int32);      // int scalar keeps int32
  EXPECT_EQ((i32 + 1.5).dtype(), ScalarType::Float32);  // float scalar: default float
  EXPECT_EQ((i32 / i32).dtype(), ScalarType::Float32);  // true division
  Tensor f64_scalar = full({}, 2.0, TensorOptions().dtype(ScalarType::Float64));
  EXPECT_EQ((i32 * f64_scalar).dtype(), ScalarType::Float64);  // 0-dim tensor of higher category
  Tensor f16 = ones({2}, TensorOptions().dtype(ScalarType::Float16));
  EXPECT_EQ((f16 + f64_scalar).dtype(), ScalarType::Float16);  // same category: dims win
  EXPECT_EQ((i32 + 1.5).select(0, 0).item<double>(), 4.5);
}

TEST_F(Frontend, FactoriesItemAndPrinting) {
  EXPECT_EQ(zeros({2, 3}).sum().item<double>(), 0.0);
  EXPECT_EQ(ones({2, 3}).sum().item<double>(), 6.0);
  EXPECT_EQ(full({4}, 2.5).sum().item<float>(), 10.0f);
  EXPECT_EQ(tensor({7}).item<int64_t>(), 7);
  expect_error([] { ones({2}).item<double>(); }, "item", "2 elements cannot be converted");
  EXPECT_EQ(to_string(tensor({1.0, 2.5, -3.0}, TensorOptions().dtype(ScalarType::Float32))),
            "tensor([1., 2.5, -3.])");
  EXPECT_EQ(to_string(tensor({1, 2})), "tensor([1, 2])");
  std::ostringstream out;
  out << (ones({2, 2}) > 0.5);
  EXPECT_EQ(out.str(), "tensor([[True, True],\n        [True, True]])");
  EXPECT_EQ(to_string(full({}, 3, TensorOptions().dtype(ScalarType::Int32))),
            "tensor(3, dtype=int32)");
  std::string big = to_string(zeros({2000}));
  EXPECT_NE(big.find("..."), std::string::npos);
  EXPECT_LT(big.size(), 100u);
}

TEST_F(Frontend, DlpackRoundTripSharesMemory) {
  Tensor a = tensor({1.0, 2.0, 3.0, 4.0}, TensorOptions().dtype(ScalarType::Float32)).view({2, 2});
  Tensor at = a.t();
  DLManagedTensor* managed = to_dlpack(at);
  EXPECT_EQ(managed->dl_tensor.ndim, 2);
  EXPECT_EQ(managed->dl_tensor.strides[0], 1);
  Tensor back = from_dlpack(managed);
  EXPECT_EQ(back.data_ptr(), at.data_ptr());
  EXPECT_EQ(values(back), (std::vector<double>{1, 3, 2, 4}));
  back.fill_(9);
  EXPECT_EQ(a.sum().item<double>(), 36.0);  // same memory
  DLManagedTensor bad = *to_dlpack(a);
  bad.dl_tensor.dtype = {5, 32, 1};  // complex32: unsupported
  expect_error([&] { from_dlpack(&bad); }, "dlpack", "unsupported DLPack dtype");
  bad.deleter(&bad);
}

TEST_F(Frontend, MetaTensorsRunOnlyTheShapeRule) {
  TensorOptions meta = TensorOptions().device(Device{kMeta, -1});
  Tensor a = empty({4, 1, 3}, meta);
  Tensor b = empty({5, 1}, meta.dtype(ScalarType::Int64));
  Tensor c = a * b;
  EXPECT_EQ(c.device().type, kMeta);
  EXPECT_EQ(std::vector<int64_t>(c.sizes().begin(), c.sizes().end()),
            (std::vector<int64_t>{4, 5, 3}));
  EXPECT_EQ(c.dtype(), ScalarType::Float32);
  EXPECT_EQ((a < b).dtype(), ScalarType::Bool);
  expect_error([&] { empty({2}, meta) + empty({3}, meta); }, "loom::add.Tensor",
               "shapes [2] and [3] cannot be broadcast");
}

TEST_F(Frontend, ErrorsNameTheOp) {
  expect_error(
      [] {
        ones({2, 3}) + ones({4});
      },
      "loom::add.Tensor", "shapes [2, 3] and [4] cannot be broadcast");
  expect_error([] { add(Tensor(), ones({1})); }, "loom", "undefined tensor");
}

}  // namespace
}  // namespace loom
