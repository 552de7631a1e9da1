// Memory formats: strides and density checks of the row-major and channels-last layouts
// (Note [Memory formats]).
#include "loom/core/memory_format.h"

#include <array>

#include "loom/core/error.h"

namespace loom {
namespace {

// Dims of a 4-D tensor from the innermost in memory to the outermost, per format.
constexpr std::array<size_t, 4> kChannelsLastOrder = {1, 3, 2, 0};
// The NHWC order of an NCHW tensor's dims: a channels-last tensor is a row-major one in it.
constexpr std::array<size_t, 4> kNhwc = {0, 2, 3, 1};

std::array<int64_t, 4> in_nhwc_order(IntArrayRef nchw) {
  return {nchw[kNhwc[0]], nchw[kNhwc[1]], nchw[kNhwc[2]], nchw[kNhwc[3]]};
}

}  // namespace

std::string_view memory_format_name(MemoryFormat format) {
  return format == MemoryFormat::ChannelsLast ? "channels_last" : "contiguous_format";
}

DimVector strides_for(IntArrayRef sizes, MemoryFormat format) {
  if (format == MemoryFormat::Contiguous) return contiguous_strides(sizes);
  LOOM_CHECK(sizes.size() == 4, "tensor", "channels_last needs a 4-D tensor, found ", sizes.size(),
             " dims");
  const DimVector nhwc = contiguous_strides(in_nhwc_order(sizes));
  DimVector strides(4);
  for (size_t i = 0; i < 4; ++i) strides[kNhwc[i]] = nhwc[i];
  return strides;
}

bool is_dense_in(IntArrayRef sizes, IntArrayRef strides, MemoryFormat format) {
  if (format == MemoryFormat::Contiguous) return compute_is_contiguous(sizes, strides);
  if (sizes.size() != 4) return false;
  return compute_is_contiguous(in_nhwc_order(sizes), in_nhwc_order(strides));
}

bool is_dense_in(const TensorImpl& t, MemoryFormat format) {
  if (format == MemoryFormat::Contiguous) return t.is_contiguous();
  return is_dense_in(t.sizes(), t.strides(), format);
}

MemoryFormat suggest_memory_format(const TensorImpl& t) {
  if (t.dim() != 4) return MemoryFormat::Contiguous;
  IntArrayRef sizes = t.sizes(), strides = t.strides();
  if (strides[1] == 0) return MemoryFormat::Contiguous;
  // Walk C, W, H, N: each stride at least the span of the dims inside it.
  int64_t span = 0;
  for (size_t d : kChannelsLastOrder) {
    if (sizes[d] == 0 || strides[d] < span) return MemoryFormat::Contiguous;
    // [N, 1, 1, 1] with equal strides everywhere: no order to tell, keep row-major
    if (d == 0 && span == strides[1]) return MemoryFormat::Contiguous;
    span = sizes[d] > 1 ? strides[d] * sizes[d] : strides[d];
  }
  return MemoryFormat::ChannelsLast;
}

}  // namespace loom
