// embedding on GPU tensors: the gather kernel picks each index's row of the weight (the
// index broadcast along the row, the weight's row stride as the indexed dim's), and the
// launch's check slot turns an index out of range into the op's error, as on the CPU
// (raised at the next wait for the device: Note [Input errors found by kernels]). Its
// gradient is the autograd formula's index_add.
#include <string>
#include <vector>

#include "../kernels/launch.h"
#include "op_support.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Tensor;

Tensor embedding_out(const DispatchContext& ctx, const Tensor& weight, const Tensor& indices,
                     int64_t, bool, bool, const Tensor& out) {
  const char* op = "loom::embedding";
  prepare(op, out, {&weight, &indices});
  if (indices.dtype() != LOOM_DTYPE_INT64 && indices.dtype() != LOOM_DTYPE_INT32) {
    throw sdk::Error(std::string("[") + op + "] expected int32 or int64 indices, found dtype " +
                     std::to_string(indices.dtype()));
  }
  if (weight.dim() != 2) {
    throw sdk::Error(std::string("[") + op + "] expected a 2-D weight, found " +
                     std::to_string(weight.dim()) + " dims");
  }
  if (out.numel() == 0) return out;
  const int64_t rows = weight.sizes()[0];
  // out [indices..., width]: the index repeats along the row, the weight moves along it
  const int64_t nd = out.dim();
  std::vector<int64_t> index_strides(static_cast<size_t>(nd), 0);
  std::vector<int64_t> weight_strides(static_cast<size_t>(nd), 0);
  for (int64_t d = 0; d < indices.dim(); ++d) {
    index_strides[static_cast<size_t>(d)] = indices.strides()[d];
  }
  weight_strides[static_cast<size_t>(nd - 1)] = weight.strides()[1];
  const int64_t* strides[3] = {out.strides().data(), index_strides.data(), weight_strides.data()};
  StridedSpace<3> space;
  if (!make_strided_space<3>(out.sizes().data(), static_cast<int>(nd), strides, &space)) {
    throw sdk::Error(std::string("[") + op +
                     "] too many dims for the " LOOM_GPU_PLATFORM_NAME " gather kernel");
  }
  int64_t* check = input_check(ctx, out, [op, rows](int64_t index) {
    return std::string("[") + op + "] index " + std::to_string(index) +
           " is out of range for a weight of " + std::to_string(rows) + " rows";
  });
  check_launch(launch_gather(out.dtype(), indices.dtype(), space, rows, weight.strides()[0],
                             out.data(), indices.data(), weight.data(), check, stream_of(ctx)),
               op);
  return out;
}

}  // namespace

void register_embedding_ops(sdk::Registrar& r, uint32_t key) {
  r.impl<&embedding_out>("loom::embedding.out", key, sdk::dtypes::all);
}

}  // namespace loom::gpu
