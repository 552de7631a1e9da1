// Memory formats: strides and density checks of the row-major and channels-last layouts
// (Note [Memory formats]).
#include "loom/core/memory_format.h"

#include <algorithm>
#include <array>

#include "absl/container/inlined_vector.h"

#include "loom/core/error.h"
#include "loom/core/memory_overlap.h"

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

namespace {
constexpr std::pair<int64_t, std::string_view> kCodeNames[] = {
    {memory_format_code::kContiguous, "contiguous_format"},
    {memory_format_code::kChannelsLast, "channels_last"},
    {memory_format_code::kChannelsLast3d, "channels_last_3d"},
    {memory_format_code::kPreserve, "preserve_format"},
};
}  // namespace

std::string_view memory_format_code_name(int64_t code) {
  for (const auto& [c, name] : kCodeNames) {
    if (c == code) return name;
  }
  return {};
}

std::optional<int64_t> memory_format_code_of(std::string_view name) {
  for (const auto& [c, spelled] : kCodeNames) {
    if (spelled == name) return c;
  }
  return std::nullopt;
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

namespace {

// An input's element strides aligned with the trailing dims of `shape`: 0 on missing dims
// and on size-1 dims stretched by broadcasting.
DimVector aligned_strides(IntArrayRef shape, const TensorImpl& t) {
  DimVector strides(shape.size(), 0);
  const size_t lead = shape.size() - t.sizes().size();
  for (size_t d = 0; d < t.sizes().size(); ++d) {
    const bool stretched = t.sizes()[d] == 1 && shape[lead + d] != 1;
    strides[lead + d] = stretched ? 0 : t.strides()[d];
  }
  return strides;
}

// Dense strides for `shape` with its dims laid out as `inner_first` lists them.
DimVector dense_strides(IntArrayRef shape, IntArrayRef inner_first) {
  DimVector strides(shape.size());
  int64_t running = 1;
  for (int64_t d : inner_first) {
    strides[static_cast<size_t>(d)] = running;
    running *= std::max<int64_t>(shape[static_cast<size_t>(d)], 1);
  }
  return strides;
}

}  // namespace

DimVector strides_following(IntArrayRef shape, std::span<const TensorImpl* const> inputs) {
  const size_t ndim = shape.size();
  bool all_row_major = true;
  for (const TensorImpl* t : inputs) all_row_major &= t->is_contiguous();
  if (ndim < 2 || all_row_major) return {};
  absl::InlinedVector<DimVector, 4> strides;
  for (const TensorImpl* t : inputs) strides.push_back(aligned_strides(shape, *t));
  // > 0: `outer` belongs inside `inner` (swap them); < 0: keep; 0: no input tells.
  auto order = [&](int64_t inner, int64_t outer) {
    for (const DimVector& s : strides) {
      const int64_t a = s[static_cast<size_t>(inner)], b = s[static_cast<size_t>(outer)];
      if (a == 0 || b == 0) continue;
      if (a != b) return a < b ? -1 : 1;
      if (shape[static_cast<size_t>(inner)] > shape[static_cast<size_t>(outer)]) return 1;
    }
    return 0;
  };
  DimVector inner_first(ndim);  // inner_first[i]: the dim at position i, innermost first
  for (size_t i = 0; i < ndim; ++i) inner_first[i] = static_cast<int64_t>(ndim - 1 - i);
  for (size_t i = 1; i < ndim; ++i) {
    size_t moving = i;
    for (size_t j = i; j-- > 0;) {
      const int comparison = order(inner_first[j], inner_first[moving]);
      if (comparison < 0) break;
      if (comparison > 0) {
        std::swap(inner_first[j], inner_first[moving]);
        moving = j;
      }
    }
  }
  bool row_major = true;
  for (size_t i = 0; i < ndim; ++i)
    row_major &= inner_first[i] == static_cast<int64_t>(ndim - 1 - i);
  if (row_major) return {};
  return dense_strides(shape, inner_first);
}

DimVector preserved_strides(const TensorImpl& t) {
  if (t.is_contiguous()) return {};
  if (is_non_overlapping_and_dense(t)) return DimVector(t.strides().begin(), t.strides().end());
  if (suggest_memory_format(t) == MemoryFormat::ChannelsLast) {
    return strides_for(t.sizes(), MemoryFormat::ChannelsLast);
  }
  return {};
}

}  // namespace loom
