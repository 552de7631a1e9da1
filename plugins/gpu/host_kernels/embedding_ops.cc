// embedding on GPU tensors: the gather kernel picks each index's row of the weight (the
// index broadcast along the row, the weight's row stride as the indexed dim's), and the
// launch's check slot turns an index out of range into the op's error, as on the CPU
// (raised at the next wait for the device: Note [Input errors found by kernels]; a weight of
// width 0 has its indices' ends read back and checked instead). Its
// gradient is the autograd formula's index_add. one_hot: zeros, then the scatter kernel
// writes each class's 1 (num_classes -1 reads the largest class back, a wait, as in
// PyTorch).
#include <algorithm>
#include <string>
#include <vector>

#include "../kernels/launch.h"
#include "loom/sdk/ops.hpp"
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
  const int64_t rows = weight.sizes()[0];
  if (out.numel() == 0) {
    // Nothing to gather (a weight of width 0), but the indices are checked as the CPU
    // checks them: their smallest and largest, read back (a wait, on this rare path only).
    if (indices.numel() > 0) {
      const LoomDevice host{LOOM_DEVICE_CPU, -1};
      for (const Tensor& end : {sdk::op::min(indices), sdk::op::max(indices)}) {
        const int64_t index = *sdk::op::to(end, host, LOOM_DTYPE_INT64).data<int64_t>();
        if (index < 0 || index >= rows) {
          throw sdk::Error(std::string("[") + op + "] index " + std::to_string(index) +
                           " is out of range for a weight of " + std::to_string(rows) + " rows");
        }
      }
    }
    return out;
  }
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
  const InputCheck check = input_check(ctx, out, [op, rows](int64_t index) {
    return std::string("[") + op + "] index " + std::to_string(index) +
           " is out of range for a weight of " + std::to_string(rows) + " rows";
  });
  check_launch(
      launch_gather(out.dtype(), indices.dtype(), space, rows, weight.strides()[0], out.data(),
                    indices.data(), weight.data(), check.slot(), stream_of(ctx)),
      op);
  return out;
}

// The largest element of an int64 tensor, read back to the host.
int64_t largest(const DispatchContext& ctx, const char* op, const Tensor& self) {
  Tensor top = sdk::empty({}, LOOM_DTYPE_INT64, self.device());
  reduce(ctx, op, ReduceOp::Max, self, {}, top);
  int64_t value = 0;
  check(gpuMemcpyAsync(&value, top.data(), sizeof(value), gpuMemcpyDeviceToHost, stream_of(ctx)),
        "one_hot: reading the largest class");
  check(gpuStreamSynchronize(stream_of(ctx)), "one_hot: waiting for the largest class");
  return value;
}

Tensor one_hot(const DispatchContext& ctx, const Tensor& self, int64_t num_classes) {
  const char* op = "loom::one_hot";
  if (self.dtype() != LOOM_DTYPE_INT64) {
    throw sdk::Error(std::string("[") + op + "] expected an int64 input, found " +
                     sdk::dtype_name(self.dtype()));
  }
  if (num_classes < -1) {
    throw sdk::Error(std::string("[") + op +
                     "] expected num_classes >= 0 (or -1 to infer it), found " +
                     std::to_string(num_classes));
  }
  use_device(self.device().index);
  if (num_classes == -1) {
    if (self.numel() == 0) {
      throw sdk::Error(std::string("[") + op +
                       "] can't infer num_classes from an empty input; pass num_classes");
    }
    num_classes = std::max<int64_t>(0, largest(ctx, op, self) + 1);
  }
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  sizes.push_back(num_classes);
  Tensor out = sdk::empty(sizes, LOOM_DTYPE_INT64, self.device());
  const Tensor* operands[1] = {&out};
  check_launch(launch_fill(LOOM_DTYPE_INT64, false, 0.0, 0, space_of(op, out, operands), out.data(),
                           stream_of(ctx)),
               op);
  if (self.numel() == 0) return out;
  // The scatter's space: self's shape and a last dim of 1, out's class dim at stride 0.
  std::vector<int64_t> space_sizes(self.sizes().begin(), self.sizes().end());
  std::vector<int64_t> out_strides(out.strides().begin(), out.strides().end() - 1);
  std::vector<int64_t> self_strides(self.strides().begin(), self.strides().end());
  space_sizes.push_back(1);
  out_strides.push_back(0);
  self_strides.push_back(0);
  const int64_t* strides[3] = {out_strides.data(), self_strides.data(), self_strides.data()};
  StridedSpace<3> space;
  if (!make_strided_space<3>(space_sizes.data(), static_cast<int>(space_sizes.size()), strides,
                             &space)) {
    throw sdk::Error(std::string("[") + op +
                     "] too many dims for the " LOOM_GPU_PLATFORM_NAME " scatter kernel");
  }
  const InputCheck check = input_check(ctx, out, [num_classes](int64_t c) {
    return "[loom::one_hot] class " + std::to_string(c) + " is out of range for " +
           std::to_string(num_classes) + " classes";
  });
  check_launch(launch_scatter(ScatterMode::Value, LOOM_DTYPE_INT64, space, num_classes,
                              out.strides()[out.dim() - 1], out.data(), self.data(), nullptr,
                              ScalarArg{false, 1.0, 1}, check.slot(), stream_of(ctx)),
               op);
  return out;
}

}  // namespace

void register_embedding_ops(sdk::Registrar& r, uint32_t key) {
  r.impl<&embedding_out>("loom::embedding.out", key, sdk::dtypes::all);
  r.impl<&one_hot>("loom::one_hot", key, sdk::DTypeSet{LOOM_DTYPE_INT64});
}

}  // namespace loom::gpu
