// Memory formats: the orders a dense 4-D [N, C, H, W] tensor's elements can be laid out in
// (row-major, or channels last as NHWC), and the checks and strides of each.
#pragma once

#include <string_view>

#include "loom/core/tensor_impl.h"

namespace loom {

// Note [Memory formats]
// ~~~~~~~~~~~~~~~~~~~~~
// A tensor's layout is its strides; a memory format names one of the dense layouts an op
// may choose for a result, as libtorch's at::MemoryFormat does. Contiguous is row-major.
// ChannelsLast is a 4-D [N, C, H, W] tensor stored as [N, H, W, C] (strides
// [H*W*C, 1, W*C, C]): convolution libraries vectorise over channels, so oneDNN's and
// cuDNN's kernels read it without reordering. The sizes stay NCHW; only the strides tell.
// A tensor made channels last (`x.contiguous(MemoryFormat::ChannelsLast)`) stays so
// through conv2d and its backward ops, whose results follow their inputs' format
// (Note [Convolution layouts] in ops/shape_rules/conv.cc); other ops return row-major
// results and read channels-last inputs through their strides.
enum class MemoryFormat : int8_t { Contiguous, ChannelsLast };

std::string_view memory_format_name(MemoryFormat format);

// Strides of a dense tensor of `sizes` in `format` (ChannelsLast needs 4 dims).
DimVector strides_for(IntArrayRef sizes, MemoryFormat format);

// Whether (sizes, strides) is dense in `format`; size-1 dims may have any stride, and a
// tensor without elements is dense in every format it has the dims for.
bool is_dense_in(IntArrayRef sizes, IntArrayRef strides, MemoryFormat format);
bool is_dense_in(const TensorImpl& t, MemoryFormat format);

// The format whose order the strides follow, dense or not: ChannelsLast for a 4-D tensor
// whose strides fall from N over H and W to C, Contiguous otherwise. A tensor whose order
// is ambiguous (C == 1, or H == W == 1) counts as Contiguous unless its strides say
// otherwise, as libtorch's suggest_memory_format.
MemoryFormat suggest_memory_format(const TensorImpl& t);

}  // namespace loom
