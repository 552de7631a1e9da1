// The creation family on the CUDA plugin: arange and linspace equal the CPU's.
#include <gtest/gtest.h>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

// arange and linspace written on the device: the SDK's sequence, so the CPU's values.
TEST_F(CudaOps, ArangeAndLinspaceEqualTheCpus) {
  for (ScalarType dtype :
       {ScalarType::Float32, ScalarType::Float64, ScalarType::Int64, ScalarType::BFloat16}) {
    TensorOptions on_gpu = TensorOptions().dtype(dtype).device(cuda());
    TensorOptions on_cpu = TensorOptions().dtype(dtype);
    expect_close(arange(-3, 17, 3, on_gpu), arange(-3, 17, 3, on_cpu), 0);
    expect_close(linspace(-1.5, 2.0, 9, on_gpu), linspace(-1.5, 2.0, 9, on_cpu), 0);
  }
  expect_close(arange(0.25, 4.0, 0.35, TensorOptions().device(cuda())), arange(0.25, 4.0, 0.35), 0);
  test::expect_error([&] { (void)arange(0, 5, 0, TensorOptions().device(cuda())); }, "arange",
                     "step must be nonzero");
}

}  // namespace
}  // namespace loom
