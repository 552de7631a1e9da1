// The (batch, channel) planes of a 2-D pooling or sampling kernel's [N, C, H, W] or
// [C, H, W] tensor, and the loop that splits them over the thread pool; shared by
// pool.cc and pool_sampling.cc.
#pragma once

#include <cstdint>

#include "../parallel.h"
#include "loom/sdk/tensor.hpp"

namespace loom::cpu {

// The planes of `t`: count, sizes and the strides of each plane's start and its elements.
struct Planes {
  int64_t batch, channels, h, w;
  int64_t batch_stride, channel_stride, h_stride, w_stride;
};

inline Planes planes_of(const sdk::Tensor& t) {
  bool batched = t.dim() == 4;
  auto s = t.sizes();
  auto st = t.strides();
  size_t b = batched ? 1 : 0;
  return {batched ? s[0] : 1,  s[b],  s[b + 1],  s[b + 2],
          batched ? st[0] : 0, st[b], st[b + 1], st[b + 2]};
}

// Calls f(src_plane, dst_plane_index) for each (batch, channel) plane, planes split over
// the thread pool; `work` is about the operations one plane costs.
template <typename T, typename F>
void for_each_plane(const Planes& p, const T* src, int64_t work, const F& f) {
  if (p.channels == 0) return;
  parallel_for(0, p.batch * p.channels, grain_for(work), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const int64_t n = o / p.channels, c = o % p.channels;
      f(src + n * p.batch_stride + c * p.channel_stride, o);
    }
  });
}

}  // namespace loom::cpu
