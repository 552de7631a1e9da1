// Memory formats (Note [Memory formats]): the strides of each format, whether a tensor is
// dense in one, and the format its strides suggest, ambiguous shapes included.
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

}  // namespace
}  // namespace loom
