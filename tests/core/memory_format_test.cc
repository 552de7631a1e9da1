// Memory formats (Note [Memory formats]): the strides of each format, whether a tensor is
// dense in one, and the format its strides suggest, ambiguous shapes included; the
// layouts of new results (Note [Layouts of new results]).
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "loom/core/error.h"
#include "loom/core/memory_format.h"
#include "loom/core/tensor_base.h"
#include "loom_error_assertions.h"

namespace loom {
namespace {

using Shape = std::vector<int64_t>;

Shape ToVec(IntArrayRef r) {
  return Shape(r.begin(), r.end());
}

// Note [Memory formats]: the dense layouts and the order strides suggest.
TEST(MemoryFormat, StridesDensityAndSuggestion) {
  const Shape nchw{2, 3, 4, 5};
  EXPECT_EQ(ToVec(strides_for(nchw, MemoryFormat::Contiguous)), (Shape{60, 20, 5, 1}));
  EXPECT_EQ(ToVec(strides_for(nchw, MemoryFormat::ChannelsLast)), (Shape{60, 1, 15, 3}));
  TensorBase rows = empty(nchw, ScalarType::Float32);
  TensorBase nhwc = empty_strided(nchw, Shape{60, 1, 15, 3}, ScalarType::Float32);
  EXPECT_TRUE(nhwc.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_FALSE(nhwc.is_contiguous(MemoryFormat::Contiguous));
  EXPECT_FALSE(rows.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(nhwc.suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_EQ(rows.suggest_memory_format(), MemoryFormat::Contiguous);
  // a channels-last tensor cut along W is not dense, but its strides still read NHWC
  TensorBase cut = nhwc.narrow(3, 1, 3);
  EXPECT_FALSE(cut.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(cut.suggest_memory_format(), MemoryFormat::ChannelsLast);
  // one channel, or a 1x1 plane: dense both ways, and row-major is what it suggests
  TensorBase one_channel = empty(Shape{2, 1, 4, 5}, ScalarType::Float32);
  EXPECT_TRUE(one_channel.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(one_channel.suggest_memory_format(), MemoryFormat::Contiguous);
  // unless the strides of the size-1 dims tell: [4, 8, 1, 1] made channels last
  TensorBase pixels = empty(Shape{4, 8, 1, 1}, ScalarType::Float32);
  EXPECT_TRUE(pixels.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(pixels.suggest_memory_format(), MemoryFormat::Contiguous);
  TensorBase pixels_nhwc =
      empty_strided(Shape{4, 8, 1, 1}, strides_for(Shape{4, 8, 1, 1}, MemoryFormat::ChannelsLast),
                    ScalarType::Float32);
  EXPECT_TRUE(pixels_nhwc.is_contiguous());
  EXPECT_EQ(pixels_nhwc.suggest_memory_format(), MemoryFormat::ChannelsLast);
  // other ranks have no channels-last layout; no elements is dense in it
  EXPECT_FALSE(
      empty(Shape{3, 4, 5}, ScalarType::Float32).is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(
      empty(Shape{0, 3, 4, 5}, ScalarType::Float32).is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_LOOM_ERROR(strides_for(Shape{3, 4, 5}, MemoryFormat::ChannelsLast), "tensor",
                    "channels_last needs a 4-D tensor, found 3 dims");
}

// Note [Layouts of new results]: a pointwise result follows its inputs' order of dims,
// the first input that tells deciding; broadcast dims leave it to the next input.
TEST(MemoryFormat, PointwiseResultsFollowTheirInputs) {
  const Shape nchw{2, 3, 4, 5};
  const Shape channels_last{60, 1, 15, 3};
  auto following = [](IntArrayRef shape, std::initializer_list<const TensorBase*> inputs) {
    std::vector<const TensorImpl*> impls;
    for (const TensorBase* t : inputs) impls.push_back(t->impl());
    return ToVec(strides_following(shape, impls));
  };
  TensorBase rows = empty(nchw, ScalarType::Float32);
  TensorBase nhwc = empty_strided(nchw, channels_last, ScalarType::Float32);
  EXPECT_EQ(following(nchw, {&rows, &rows}), Shape{});  // row-major: no strides given
  EXPECT_EQ(following(nchw, {&nhwc}), channels_last);
  EXPECT_EQ(following(nchw, {&nhwc, &rows}), channels_last);  // the first input decides
  EXPECT_EQ(following(nchw, {&rows, &nhwc}), Shape{});
  // a per-channel [1, C, 1, 1] operand is broadcast on N, H and W: nhwc decides those
  TensorBase per_channel = empty(Shape{1, 3, 1, 1}, ScalarType::Float32);
  EXPECT_EQ(following(nchw, {&per_channel, &nhwc}), channels_last);
  // a [C, 1, 1] operand, one dim short, is aligned with the trailing dims
  TensorBase bias = empty(Shape{3, 1, 1}, ScalarType::Float32);
  EXPECT_EQ(following(nchw, {&bias, &nhwc}), channels_last);
  // any order of dims, not only named formats: a transposed matrix gives a transposed result
  TensorBase columns = empty(Shape{5, 4}, ScalarType::Float32).transpose(0, 1);
  EXPECT_EQ(following(Shape{4, 5}, {&columns}), (Shape{1, 4}));
  // a broadcast row [1, 5] against a transposed [4, 5]: the row cannot tell, columns do
  TensorBase row = empty(Shape{1, 5}, ScalarType::Float32);
  EXPECT_EQ(following(Shape{4, 5}, {&row, &columns}), (Shape{1, 4}));
  // equal strides: the smaller dim goes inside (an expanded-then-permuted input)
  TensorBase equal = empty_strided(Shape{2, 3}, Shape{1, 1}, ScalarType::Float32);
  EXPECT_EQ(following(Shape{2, 3}, {&equal}), (Shape{1, 2}));
  // a non-dense input still gives its order: a channels-last tensor cut along W
  TensorBase cut = nhwc.narrow(3, 1, 3);
  EXPECT_EQ(following(Shape{2, 3, 4, 3}, {&cut}), (Shape{36, 1, 9, 3}));
}

// Copies keep a dense tensor's strides and give other tensors the format they suggest.
TEST(MemoryFormat, CopiesPreserveTheLayout) {
  const Shape nchw{2, 3, 4, 5};
  EXPECT_EQ(ToVec(preserved_strides(*empty(nchw, ScalarType::Float32).impl())), Shape{});
  TensorBase nhwc = empty_strided(nchw, Shape{60, 1, 15, 3}, ScalarType::Float32);
  EXPECT_EQ(ToVec(preserved_strides(*nhwc.impl())), (Shape{60, 1, 15, 3}));
  TensorBase columns = empty(Shape{5, 4}, ScalarType::Float32).transpose(0, 1);
  EXPECT_EQ(ToVec(preserved_strides(*columns.impl())), (Shape{1, 4}));
  // not dense: channels last if the strides suggest it, else row-major
  EXPECT_EQ(ToVec(preserved_strides(*nhwc.narrow(3, 1, 3).impl())), (Shape{36, 1, 9, 3}));
  EXPECT_EQ(ToVec(preserved_strides(*columns.narrow(0, 0, 2).impl())), Shape{});
}

}  // namespace
}  // namespace loom
