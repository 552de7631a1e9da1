// The GPU creation kernel's positions (kernels/creation_math.h) against the SDK's sequence
// (loom/sdk/reference/sequence.hpp), which the CPU writes: the same value at every position, and
// the SDK's refusals.
#include "../../plugins/gpu/kernels/creation_math.h"
#include "../../plugins/gpu/host_kernels/sequence_spec.h"

#include <gtest/gtest.h>

namespace loom::gpu {
namespace {

TEST(GpuCreationMath, PositionsEqualTheSdksSequence) {
  const std::vector<sdk::Sequence> sequences = {
      sdk::arange_sequence(sdk::Scalar(0.5), sdk::Scalar(3.7), sdk::Scalar(0.3), false),
      sdk::arange_sequence(sdk::Scalar(10.0), sdk::Scalar(-2.0), sdk::Scalar(-1.5), false),
      sdk::linspace_sequence(sdk::Scalar(-1.0), sdk::Scalar(1.0), 7),
      sdk::linspace_sequence(sdk::Scalar(0.1), sdk::Scalar(0.7), 10),
      sdk::linspace_sequence(sdk::Scalar(3.0), sdk::Scalar(9.0), 1),
  };
  for (const sdk::Sequence& q : sequences) {
    const SequenceSpec s = spec_of(q);
    ASSERT_GT(q.length, 0);
    for (int64_t i = 0; i < q.length; ++i) {
      EXPECT_EQ(sequence_at(s, i), sdk::sequence_value(q, i)) << i;
    }
  }
  const sdk::Sequence last = sdk::linspace_sequence(sdk::Scalar(0.1), sdk::Scalar(0.7), 10);
  EXPECT_EQ(sequence_at(spec_of(last), 9), 0.7);  // the end exactly
  const sdk::Sequence ints =
      sdk::arange_sequence(sdk::Scalar(int64_t{-3}), sdk::Scalar(int64_t{8}), sdk::Scalar(2), true);
  EXPECT_TRUE(ints.integral);
  EXPECT_EQ(ints.length, 6);  // -3, -1, 1, 3, 5, 7
  for (int64_t i = 0; i < ints.length; ++i) {
    EXPECT_EQ(sequence_integer_at(spec_of(ints), i), -3 + 2 * i);
  }
}

TEST(GpuCreationMath, TheSdksSequenceRefusesWhatPyTorchRefuses) {
  EXPECT_THROW(sdk::arange_sequence(sdk::Scalar(0), sdk::Scalar(5), sdk::Scalar(0), true),
               sdk::Error);
  EXPECT_THROW(sdk::arange_sequence(sdk::Scalar(0), sdk::Scalar(5), sdk::Scalar(-1), true),
               sdk::Error);
  EXPECT_THROW(sdk::arange_sequence(sdk::Scalar(0.0), sdk::Scalar(INFINITY), sdk::Scalar(1), false),
               sdk::Error);
  EXPECT_THROW(sdk::linspace_sequence(sdk::Scalar(0), sdk::Scalar(1), -1), sdk::Error);
  try {
    sdk::arange_sequence(sdk::Scalar(0), sdk::Scalar(5), sdk::Scalar(-1), true);
  } catch (const sdk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[arange] upper bound and step have inconsistent signs"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace loom::gpu
