// The embedding family's argument checks (Note [Argument checks]): embedding_bag's
// arguments and its offsets, which every backend's kernel reads before anything else.
#include <string>
#include <vector>

#include "argument_check.h"
#include "loom/core/device.h"
#include "loom/core/type_promotion.h"
#include "loom/ops/generated/ops.h"
#include "loom/ops/tensor.h"

namespace loom::ops {
namespace {

enum BagMode : int64_t { kSum = 0, kMean = 1, kMax = 2 };

// The int64 values of a 1-D integer tensor, on the host (a copy from a device).
std::vector<int64_t> host_ints(const TensorImpl& impl) {
  Tensor t = Tensor::borrow(const_cast<TensorImpl*>(&impl));
  Tensor host = loom::to(t, Device{kCPU, -1}, ScalarType::Int64, false, true).contiguous();
  const int64_t* p = host.data<int64_t>();
  return std::vector<int64_t>(p, p + host.numel());
}

// embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
//               per_sample_weights, include_last_offset, padding_idx): PyTorch's checks,
// and offsets that start at 0 and do not decrease within the indices (read on the host,
// except for meta tensors, which have no values).
void embedding_bag_check(const ShapeArgs& args) {
  const TensorImpl& weight = args.tensor(0);
  const TensorImpl& indices = args.tensor(1);
  const TensorImpl& offsets = args.tensor(2);
  const int64_t mode = args.integer(4);
  const TensorImpl* per_sample_weights = args.optional_tensor(6);
  const bool include_last_offset = args.boolean(7);
  if (weight.dim() != 2 || !is_floating_point(weight.dtype())) {
    args.fail("expected a 2-D floating point weight, found ", shape_to_string(weight.sizes()), " ",
              scalar_type_name(weight.dtype()));
  }
  for (const auto& [t, name] : {std::pair{&indices, "indices"}, std::pair{&offsets, "offsets"}}) {
    if (t->dim() != 1 || (t->dtype() != ScalarType::Int64 && t->dtype() != ScalarType::Int32)) {
      args.fail("expected 1-D int64 or int32 ", name, ", found ", shape_to_string(t->sizes()), " ",
                scalar_type_name(t->dtype()));
    }
  }
  if (mode != kSum && mode != kMean && mode != kMax) {
    args.fail("expected mode 0 (sum), 1 (mean) or 2 (max), found ", mode);
  }
  const int64_t n = indices.sizes()[0];
  if (per_sample_weights != nullptr) {
    if (mode != kSum) {
      args.fail(
          "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
          "supported for mode='sum' (got mode ",
          mode, ")");
    }
    if (per_sample_weights->dim() != 1 || per_sample_weights->sizes()[0] != n ||
        per_sample_weights->dtype() != weight.dtype()) {
      args.fail("expected per_sample_weights of shape [", n, "] and dtype ",
                scalar_type_name(weight.dtype()), ", found ",
                shape_to_string(per_sample_weights->sizes()), " ",
                scalar_type_name(per_sample_weights->dtype()));
    }
  }
  if (include_last_offset && offsets.sizes()[0] == 0) {
    args.fail("expected at least one offset with include_last_offset=True, found none");
  }
  if (offsets.device().type == kMeta) return;
  check_bag_offsets(args.op(), host_ints(offsets), n);
}

constexpr ArgumentCheckEntry kChecks[] = {
    {"loom::embedding_bag", &embedding_bag_check},
};

}  // namespace

void check_bag_offsets(std::string_view op, std::span<const int64_t> starts, int64_t n) {
  if (!starts.empty() && starts[0] != 0) {
    fail(std::string(op),
         "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
         "from position 0. However, got ",
         starts[0]);
  }
  for (size_t b = 0; b < starts.size(); ++b) {
    if (starts[b] > n || (b > 0 && starts[b] < starts[b - 1])) {
      fail(std::string(op), "expected non-decreasing offsets within the ", n,
           " indices, found offsets[", b, "] = ", starts[b]);
    }
  }
}

std::span<const ArgumentCheckEntry> embedding_argument_checks() {
  return kChecks;
}

}  // namespace loom::ops
