// Full reductions (sum) on CPU tensors.
#include "kernels.h"
#include "strided_loop.h"

namespace loom::cpu {
namespace {

template <typename In, typename Acc>
Acc sum_all(const sdk::Tensor& self) {
  Acc total{};
  const sdk::Tensor* operands[1] = {&self};
  for_each_element(self.sizes(), operands, [&](char* const* p) {
    total += static_cast<Acc>(*reinterpret_cast<const In*>(p[0]));
  });
  return total;
}

sdk::Tensor sum(const sdk::Tensor& self, std::optional<LoomDType> dtype) {
  LoomDType in = self.dtype();
  LoomDType out_type =
      dtype.value_or(in == LOOM_DTYPE_FLOAT32 || in == LOOM_DTYPE_FLOAT64 ? in : LOOM_DTYPE_INT64);
  sdk::Tensor out = sdk::empty({}, out_type);
  auto store = [&](auto v) {
    switch (out_type) {
      case LOOM_DTYPE_FLOAT32:
        *out.data<float>() = static_cast<float>(v);
        break;
      case LOOM_DTYPE_FLOAT64:
        *out.data<double>() = static_cast<double>(v);
        break;
      case LOOM_DTYPE_INT64:
        *out.data<int64_t>() = static_cast<int64_t>(v);
        break;
      default:
        throw sdk::Error(std::string("[sum] output dtype ") + dtype_name(out_type) +
                         " is not supported by the cpu plugin yet");
    }
  };
  switch (in) {
    case LOOM_DTYPE_FLOAT32:
      store(sum_all<float, double>(self));
      break;
    case LOOM_DTYPE_FLOAT64:
      store(sum_all<double, double>(self));
      break;
    case LOOM_DTYPE_INT32:
      store(sum_all<int32_t, int64_t>(self));
      break;
    case LOOM_DTYPE_INT64:
      store(sum_all<int64_t, int64_t>(self));
      break;
    default:
      throw sdk::Error(
          std::string("[sum] dtype ") + dtype_name(in) + " is not supported by the cpu plugin yet",
          LOOM_STATUS_UNIMPLEMENTED);
  }
  return out;
}

}  // namespace

void register_reduce_kernels(sdk::Registrar& r) {
  r.impl<&sum>("loom::sum", LOOM_KEY_CPU);
}

}  // namespace loom::cpu
