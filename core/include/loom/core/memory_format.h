// Memory formats: the orders a dense 4-D [N, C, H, W] tensor's elements can be laid out in
// (row-major, or channels last as NHWC), and the checks and strides of each.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
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
// (Note [Convolution layouts] in ops/shape_rules/conv.cc), through pointwise ops and
// copies (Note [Layouts of new results]), pooling and batch_norm.
enum class MemoryFormat : int8_t { Contiguous, ChannelsLast };

std::string_view memory_format_name(MemoryFormat format);

// Note [Memory format codes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// An op's `MemoryFormat` argument is an int in torch.export's numbering, the one a .pt2
// graph writes: 1 contiguous_format, 2 channels_last, 3 channels_last_3d, 4
// preserve_format (0 is unknown). A schema default may spell the name
// (`MemoryFormat memory_format=contiguous_format`); it reads as its code.
namespace memory_format_code {
inline constexpr int64_t kContiguous = 1;
inline constexpr int64_t kChannelsLast = 2;
inline constexpr int64_t kChannelsLast3d = 3;
inline constexpr int64_t kPreserve = 4;
}  // namespace memory_format_code
// torch.export's Layout numbering, of which loom has the one dense layout.
inline constexpr int64_t kStridedLayoutCode = 7;

// "contiguous_format" for 1, ...; empty for a number that is no code.
std::string_view memory_format_code_name(int64_t code);
// The code a schema name stands for, if it is one.
std::optional<int64_t> memory_format_code_of(std::string_view name);

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

// Note [Layouts of new results]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A new result that copies or combines tensors element by element takes their layout, as
// PyTorch's results do, so a channels-last (or transposed) tensor stays so through
// relu, add or clone and the next kernel reads it without a reorder:
//  * Pointwise ops (strides_following): the result's dims are laid out in the order the
//    inputs' strides give them, dense. Dims are sorted from the innermost outwards by a
//    stable insertion sort, starting from row-major order; two dims are compared by the
//    inputs in argument order, and the first input whose strides on both are nonzero
//    decides: the smaller stride goes inside, and on equal strides the smaller size (a
//    size-1 dim keeps its place otherwise). Broadcast dims (stride 0) leave the decision
//    to the next input. This is the rule of PyTorch's TensorIterator; inputs that are all
//    row-major give a row-major result without the sort.
//  * Copies of one tensor (clone, to, Tensor::contiguous keeps its own rule;
//    preserved_strides): a dense tensor without overlap keeps its strides exactly, any
//    other gets the format it suggests (suggest_memory_format), as PyTorch's
//    preserve_format.
// An out= argument or an in-place self keeps its own strides: the rule is for new results.

// Strides of a dense new result of `shape` whose dims follow the layout of `inputs` (each
// broadcast to `shape`), or an empty vector when that layout is row-major.
DimVector strides_following(IntArrayRef shape, std::span<const TensorImpl* const> inputs);

// Strides of a dense copy of `t` in its own layout, or an empty vector for row-major.
DimVector preserved_strides(const TensorImpl& t);

}  // namespace loom
