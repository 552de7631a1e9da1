// The linalg family on the CUDA plugin: matmul (cuBLAS) and loom's own GEMM against
// the CPU.
#include <gtest/gtest.h>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;
using test::gpu_present;
using test::load_cuda;

TEST_F(CudaOps, MatmulMatchesTheCpu) {
  Tensor a = randn({64, 48}), b = randn({48, 80}), c = randn({80});
  expect_close(a.to(cuda()).matmul(b.to(cuda())), a.matmul(b), 1e-4);
  expect_close(a.t().to(cuda()).t().matmul(b.to(cuda())), a.matmul(b), 1e-4);
  expect_close(c.to(cuda()).addmm(a.to(cuda()), b.to(cuda())), c.addmm(a, b), 1e-4);
  Tensor x = randn({3, 16, 24}), y = randn({3, 24, 8});
  expect_close(x.to(cuda()).bmm(y.to(cuda())), x.bmm(y), 1e-4);
  Tensor u = randn({300}), v = randn({600});
  Tensor v2 = v.reshape({300, 2}).select(1, 0);  // strided
  expect_close(dot(u.to(cuda()), v2.to(cuda())), dot(u, v2), 1e-5);
  expect_close(dot(u.to(ScalarType::BFloat16).to(cuda()), u.to(ScalarType::BFloat16).to(cuda())),
               dot(u.to(ScalarType::BFloat16), u.to(ScalarType::BFloat16)), 1e-2);
  Tensor n = arange(0, 50).to(ScalarType::Int32);
  expect_close(dot(n.to(cuda()), n.to(cuda())), dot(n, n), 0);
  expect_close(a.to(ScalarType::BFloat16).to(cuda()).matmul(b.to(ScalarType::BFloat16).to(cuda())),
               a.to(ScalarType::BFloat16).matmul(b.to(ScalarType::BFloat16)), 2e-2);
}

// loom's own tiled GEMM (the ROCm plugin's matmul), chosen by the manifest's "gemm"
// option, against the CPU (and so against cuBLAS, which MatmulMatchesTheCpu checks).
TEST(CudaLoomGemm, MatchesTheCpuForEveryLayoutAndDtype) {
  if (!gpu_present()) GTEST_SKIP() << "no CUDA device here (runs on a machine with a GPU)";
  Runtime runtime = load_cuda("options { key: \"gemm\" value: \"loom\" }");
  const Device cuda = parse_device("cuda:0");
  Tensor a = randn({67, 130}), b = randn({130, 71}), c = randn({71});
  expect_close(a.to(cuda).matmul(b.to(cuda)), a.matmul(b), 1e-4);
  expect_close(a.t().to(cuda).t().matmul(b.t().to(cuda).t()), a.matmul(b),
               1e-4);  // transposed views
  expect_close(c.to(cuda).addmm(a.to(cuda), b.to(cuda), 0.5, 2.0), c.addmm(a, b, 0.5, 2.0), 1e-4);
  Tensor x = randn({3, 33, 20}), y = randn({1, 20, 9});
  expect_close(x.to(cuda).matmul(y.to(cuda)), x.matmul(y), 1e-4);
  expect_close(a.to(ScalarType::Float64).to(cuda).matmul(b.to(ScalarType::Float64).to(cuda)),
               a.to(ScalarType::Float64).matmul(b.to(ScalarType::Float64)), 1e-12);
  // 270 tiles of 128 x 128: the large tile (Note [Tiled GEMM]), with partial tiles and a
  // partial k step, plain and through transposed views
  Tensor big_a = randn({10, 300, 100}), big_b = randn({10, 100, 1100});
  expect_close(big_a.to(cuda).matmul(big_b.to(cuda)), big_a.matmul(big_b), 1e-3);
  expect_close(big_a.transpose(1, 2).to(cuda).transpose(1, 2).matmul(big_b.to(cuda)),
               big_a.matmul(big_b), 1e-3);
  Tensor ha = a.to(ScalarType::BFloat16), hb = b.to(ScalarType::BFloat16);
  expect_close(ha.to(cuda).matmul(hb.to(cuda)),
               ha.to(ScalarType::Float32).matmul(hb.to(ScalarType::Float32)), 2e-2);
  // operands staged in 16-byte runs where their layout allows (Note [Vector operand
  // loads]: 16-bit on the matrix units, float32 on the SIMT tiles): aligned rows with
  // partial tiles and a partial k step; runs that cross the end of k and of n (rows of
  // 104 and 128 elements cut to 102 and 61); a start one element off (element by
  // element); a batch, and one matrix shared by a batch (batch stride 0)
  auto on_cpu_in_float = [](const Tensor& t) {
    return t.to(parse_device("cpu")).to(ScalarType::Float32);
  };
  for (ScalarType type : {ScalarType::Float32, ScalarType::Float16, ScalarType::BFloat16}) {
    SCOPED_TRACE(testing::Message() << "dtype " << static_cast<int>(type));
    const double tol = type == ScalarType::Float32 ? 1e-4 : 2e-2;
    const Tensor p = randn({72, 136}).to(type).to(cuda), q = randn({136, 88}).to(type).to(cuda);
    expect_close(p.matmul(q), on_cpu_in_float(p).matmul(on_cpu_in_float(q)), tol);
    const Tensor cut_k = randn({40, 104}).to(type).to(cuda).narrow(1, 0, 102);
    const Tensor cut_n = randn({102, 128}).to(type).to(cuda).narrow(1, 0, 61);
    expect_close(cut_k.matmul(cut_n), on_cpu_in_float(cut_k).matmul(on_cpu_in_float(cut_n)), tol);
    const Tensor off = randn({40, 104}).to(type).to(cuda).narrow(1, 1, 102);
    expect_close(off.matmul(cut_n), on_cpu_in_float(off).matmul(on_cpu_in_float(cut_n)), tol);
    const Tensor bp = randn({3, 24, 64}).to(type).to(cuda),
                 bq = randn({3, 64, 40}).to(type).to(cuda);
    expect_close(bp.matmul(bq), on_cpu_in_float(bp).matmul(on_cpu_in_float(bq)), tol);
    const Tensor shared_q = bq.select(0, 0).unsqueeze(0).expand({3, 64, 40});  // batch stride 0
    expect_close(bp.matmul(shared_q), on_cpu_in_float(bp).matmul(on_cpu_in_float(shared_q)), tol);
  }
}

}  // namespace
}  // namespace loom
