// Tensors and argument values built from the op library's samples (Note [Op samples]),
// shared by `loom conform`, the op sweep and the autograd formula sweep: the same seeds
// give the same values in all three, on any device.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "loom/call.h"
#include "loom/loom.h"
#include "loom/ops/samples.h"

namespace loom::conform {

using ops::OpSample;
using ops::SampleArg;
using ops::TensorSpec;

enum class Layout { Contiguous, NonContiguous, Meta };

struct Built {
  std::vector<Value> args;
  Kwargs kwargs;
};

uint64_t hash_of(std::string_view text);
// An uninitialised tensor of `shape` on `device` laid out with reversed dims, stride 2 and
// a storage offset of one element (never contiguous when it has more than one element).
Tensor non_contiguous_empty(const std::vector<int64_t>& shape, ScalarType dtype,
                            Device device = Device{kCPU, -1});
// Built on the cpu, then copied to `device` (Layout::Meta ignores `device`: meta).
Tensor build_tensor(const TensorSpec& spec, uint64_t seed, Layout layout,
                    Device device = Device{kCPU, -1});
Value build_value(const SampleArg& arg, uint64_t seed, Layout layout,
                  Device device = Device{kCPU, -1});
// The arguments of `sample` (the `ordinal`-th of its op), seeded by the op's name.
Built build(const OpSample& sample, int ordinal, Layout layout, Device device = Device{kCPU, -1});

// `value` with its floating-point tensors (and tensor-list elements) below float64
// converted to float64, the same values; `upcast` is set when one was.
Value to_float64(const Value& value, bool& upcast);
// The tensors of `value` (one, or a list's), others ignored.
std::vector<Tensor> tensors_in(const Value& value);

// The dtype a sample is counted under: its first tensor's (or first dtype argument's),
// "none" when it has neither.
std::string sample_dtype(const ops::OpSample& sample);
// "[2, 3] float32, [3] float32, alpha=0.5"
std::string describe_sample(const ops::OpSample& sample);

// Note [A sweep over every k-th sample]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// LOOM_SAMPLE_STRIDE=k makes the op sweep and the formula sweep run the samples of each op
// whose ordinal is a multiple of k (the first always), every sample when unset or 1. The
// sanitizer run (ci/test-sanitizers.sh) sets it: there the sweeps look for memory and
// undefined-behaviour errors on every op's paths, which a share of the samples reaches
// (each op's first sample and a spread of its shapes, dtypes and error inputs), while all
// of them made the formula sweep its longest test (numeric Jacobians call an op once per
// input element, 5-10 times slower sanitized: 253 s for every sample, 169 s for every
// third). ci/test.sh runs them all.
// A value that is not a positive integer is an error naming the variable.
int sample_stride_from_environment();

}  // namespace loom::conform
