// Full reductions (sum) on CPU tensors, split over the thread pool with results that do
// not depend on the thread count.
//
// Note [Deterministic sum]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Floating-point addition is not associative, so a sum whose grouping followed the
// threads would change with LOOM_NUM_THREADS. Here the grouping is fixed by the input
// alone: the elements, in the order the strided plan visits them (memory order of the
// input: logical row-major order when it is contiguous), are cut into chunks of
// kSumChunk elements; each chunk is summed by one thread into kSumLanes accumulators
// (element j of the chunk goes to lane j % kSumLanes, so the lanes vectorize without
// reassociating anything), the lanes are added in order, and the chunks' partial sums
// are added in chunk order on the calling thread. Threads only decide who computes which
// chunk. The result is the same for any thread count and ISA level; inputs of up to
// kSumChunk elements are summed exactly as one chunk. Floats accumulate in double,
// integers in uint64 (wrapping, read back as int64).
#include <algorithm>
#include <vector>

#include "kernels.h"
#include "parallel.h"
#include "strided_loop.h"

namespace loom::cpu {
namespace {

constexpr int64_t kSumChunk = 16384;
constexpr int kSumLanes = 8;

// Adds n elements p[0], p[stride], ... to the lanes; `position` is the chunk index of
// p[0] and moves past the run.
template <typename In, typename Acc>
void accumulate(Acc (&lanes)[kSumLanes], int64_t& position, const In* p, int64_t n,
                int64_t stride) {
  Acc acc[kSumLanes];  // locals: stores to them cannot alias the input
  for (int l = 0; l < kSumLanes; ++l) acc[l] = lanes[l];
  int64_t i = 0;
  for (; i < n && (position + i) % kSumLanes != 0; ++i) {
    acc[(position + i) % kSumLanes] += static_cast<Acc>(p[i * stride]);
  }
  if (stride == 1) {
    for (; i + kSumLanes <= n; i += kSumLanes) {
      for (int l = 0; l < kSumLanes; ++l) acc[l] += static_cast<Acc>(p[i + l]);
    }
  } else {
    for (; i + kSumLanes <= n; i += kSumLanes) {
      for (int l = 0; l < kSumLanes; ++l) acc[l] += static_cast<Acc>(p[(i + l) * stride]);
    }
  }
  for (; i < n; ++i) acc[(position + i) % kSumLanes] += static_cast<Acc>(p[i * stride]);
  for (int l = 0; l < kSumLanes; ++l) lanes[l] = acc[l];
  position += n;
}

template <typename In, typename Acc>
Acc sum_all(const sdk::Tensor& self) {
  const int64_t numel = self.numel();
  if (numel == 0) return Acc{};
  const int64_t chunks = (numel + kSumChunk - 1) / kSumChunk;
  std::vector<Acc> partial(static_cast<size_t>(chunks));
  const int64_t* strides[1] = {self.strides().data()};
  const int64_t item[1] = {sizeof(In)};
  const StridedLoop loop = plan_strided_loop(self.sizes(), strides, item);
  char* base[1] = {self.data<char>()};
  const int64_t inner_stride = loop.inner_strides()[0];
  parallel_for(0, chunks, 1, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      Acc lanes[kSumLanes] = {};
      int64_t position = 0;
      const int64_t begin = c * kSumChunk, end = std::min(numel, begin + kSumChunk);
      for_each_run(loop, base, begin, end, [&](char* const* p, int64_t n) {
        accumulate<In, Acc>(lanes, position, reinterpret_cast<const In*>(p[0]), n, inner_stride);
      });
      Acc chunk_sum{};
      for (int l = 0; l < kSumLanes; ++l) chunk_sum += lanes[l];
      partial[static_cast<size_t>(c)] = chunk_sum;
    }
  });
  Acc total{};
  for (Acc v : partial) total += v;
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
    case LOOM_DTYPE_INT32:  // wraps like int64 arithmetic: accumulated in uint64
      store(static_cast<int64_t>(sum_all<int32_t, uint64_t>(self)));
      break;
    case LOOM_DTYPE_INT64:
      store(static_cast<int64_t>(sum_all<int64_t, uint64_t>(self)));
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
