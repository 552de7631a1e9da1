// Sample inputs of the standard ops (ops.def), one file per op family under ops/samples/:
// what the op sweep (tests/ops/op_sweep_test.cc) runs every op on. The model names
// tensors by shape, dtype and kind of values only, so it depends on no frontend.
//
// Note [Op samples]
// ~~~~~~~~~~~~~~~~~
// Every op of ops.def has at least one OpSample; the sweep fails, naming the ops, when
// one has none, so an op added to ops.def comes with samples. A sample is data, not
// code: the op's name with its overload exactly as ops.def spells it, positional and
// keyword arguments, and flags. Tensors are TensorSpecs (shape, dtype, what values) that
// the sweep builds from a fixed seed, on cpu or on meta, contiguous or not, so one
// sample serves every check (Note [Op sweep] in tests/ops/op_sweep_test.cc says which). Values are
// chosen so the op is well defined: positive inputs for log and sqrt, indices within bounds,
// distinct values where an op returns indices of ties. A sample that cannot run on the
// meta device (its output shape depends on tensor values) says why, and so does one whose
// result depends on the input's layout by design (as_strided, view: no strided check); one that
// shows a disagreement in loom that these files cannot fix is marked a known failure of that check,
// with the reason; the sweep reports it instead of failing (and fails once it passes, so the mark
// is removed). Samples are small (tens of elements), cover a 0-dim, a broadcast and an empty case
// where the op allows, the dtypes the op is meant for, and the keyword arguments of the schema.
// Where a sample would only show that loom refuses an input by design (integer max pooling, int32
// one_hot), it is left out of the value samples; error inputs (mismatched shapes, indices out of
// range, ...) are samples marked raises(part of the message), which must fail with a loom::Error.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "loom/core/scalar_type.h"

namespace loom::ops {

// The values a sample tensor holds (drawn from a fixed seed; integer dtypes get the
// integer version of each range).
enum class Fill : uint8_t {
  Normal,     // floats in [-2, 2); integers in [-5, 5]
  Positive,   // floats in [0.5, 2.5); integers in [1, 5]
  Unit,       // floats in [0.05, 0.95]; integers 0 or 1
  Index,      // integers in [0, bound), in any dtype
  Bool,       // 0 or 1, in any dtype
  SmallInt,   // integers in [-3, 3], in any dtype (ties and exact results)
  Distinct,   // a permutation of 0 .. numel-1 (no ties), in any dtype
  Zeros,      // all zero (outputs of in-place fills)
  Special,    // floats cycling through nan, inf, -inf, 0, -0.5, 1.5 (integers: as Normal)
  Ascending,  // strictly increasing in row-major order: -2, -1.5, -1, ... (integers -2, -1, ...)
};

// A quantized dtype (qint8, quint8, qint32) makes a quantized tensor: the float values of
// `fill` quantized with fixed parameters (Note [Quantized samples]).
struct TensorSpec {
  std::vector<int64_t> shape;
  ScalarType dtype = ScalarType::Float32;
  Fill fill = Fill::Normal;
  int64_t bound = 0;          // Fill::Index: values in [0, bound)
  int64_t channel_axis = -1;  // quantized: per-channel along this dim; -1: per tensor
};

// The device the sample runs on (cpu, or meta for the meta check), for Device arguments.
struct SampleDevice {};
struct None {};

using SampleArg = std::variant<None, TensorSpec, std::vector<TensorSpec>, int64_t, double, bool,
                               std::string, std::vector<int64_t>, std::vector<double>, ScalarType,
                               SampleDevice, std::vector<bool>>;

// The checks of the sweep, for marking known failures.
enum class Check : uint8_t { Meta, Variants, Strided };
std::string_view check_name(Check check);  // "meta", "variants", "strided"

// Note [Quantized samples]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A sample with a quantized TensorSpec runs on the Quantized key (PyTorch's QuantizedCPU),
// which `loom conform --backend quantized` checks and no other sweep runs (the op, compile and
// formula sweeps skip them: quantized tensors have no meta, out= or autograd forms). The
// tensors are the fill's float values quantized with fixed parameters: quint8 scale 0.025 and
// zero point 128, qint8 scale 0.02 and zero point 0, qint32 scale 0.001 and zero point 0; per
// channel (TensorSpec::channel_axis) qint8 with scales 0.01, 0.02, 0.03, 0.01, ... and zero
// points 0. A value sample names its reference (QuantizedReference): the float op run on the
// dequantized inputs, ReLU'd where the op fuses one, which the result must equal within one
// quantization step of its own quantizer once the reference is clamped to the quantizer's
// range, and the result's quantizer must be the output scale and zero point the op was given.
// A float result (the dynamic layer) compares within the sample's tolerance.
struct QuantizedReference {
  std::string float_op;       // empty: the op itself on dequantized inputs
  int arity = -1;             // the leading arguments the float op takes; -1: all
  int output_scale_arg = -1;  // the arguments giving the result's quantizer, if any
  int output_zero_point_arg = -1;
  int relu_arg = -1;  // a bool argument: ReLU after the float op
};

struct KnownFailure {
  Check check;
  std::string reason;  // the disagreement observed, and where loom would be fixed
};

using SampleKwargs = std::vector<std::pair<std::string, SampleArg>>;

// What the first output of a random sample must look like as a whole: every value in
// [low, high], and mean and standard deviation near these (`loom conform` allows the
// mean 6 standard errors and the deviation 10%; samples give 10,000 values).
struct Distribution {
  double mean = 0;
  double stddev = 0;
  double low = 0;
  double high = 0;
};

struct OpSample {
  OpSample(std::string op_name, std::vector<SampleArg> positional, SampleKwargs keywords = {})
      : op(std::move(op_name)), args(std::move(positional)), kwargs(std::move(keywords)) {}

  std::string op;  // "loom::add.Tensor", as in ops.def
  std::vector<SampleArg> args;
  SampleKwargs kwargs;
  std::string note;               // what the sample exercises, when not obvious
  bool meta_checkable = true;     // false: the output shape depends on values
  std::string meta_reason;        // why not meta-checkable
  bool strided_checkable = true;  // false: the result depends on the input's layout
  std::string strided_reason;     // why not (as_strided reads storage; view needs strides)
  bool deterministic = true;      // false: random; the sweep seeds before each run
  std::optional<Distribution> distribution;  // random samples checked as a whole
  bool dtype_dependent = false;  // the result depends on the dtype's range (nan_to_num's
                                 // defaults): no float64 reference in `loom conform`
  double tolerance = 0;          // relative and absolute; 0: the sweep's default
  std::vector<KnownFailure> known_failures;
  std::optional<QuantizedReference> quantized_reference;  // Note [Quantized samples]
  // Not empty: an error input. The call must raise a loom::Error whose message holds
  // this text (the sweep and `loom conform` check nothing else of the sample).
  std::string expected_error;

  // Builder-style modifiers, for the sample tables.
  OpSample&& with_note(std::string text) && {
    note = std::move(text);
    return std::move(*this);
  }
  OpSample&& no_meta(std::string reason) && {
    meta_checkable = false;
    meta_reason = std::move(reason);
    return std::move(*this);
  }
  OpSample&& no_strided(std::string reason) && {
    strided_checkable = false;
    strided_reason = std::move(reason);
    return std::move(*this);
  }
  OpSample&& random() && {
    deterministic = false;
    return std::move(*this);
  }
  OpSample&& distributed(double mean, double stddev, double low, double high) && {
    distribution = Distribution{mean, stddev, low, high};
    return std::move(*this);
  }
  OpSample&& depends_on_dtype() && {
    dtype_dependent = true;
    return std::move(*this);
  }
  OpSample&& tol(double t) && {
    tolerance = t;
    return std::move(*this);
  }
  OpSample&& raises(std::string message_part) && {
    expected_error = std::move(message_part);
    return std::move(*this);
  }
  OpSample&& against(QuantizedReference reference) && {
    quantized_reference = std::move(reference);
    return std::move(*this);
  }
  OpSample&& known_failure(Check check, std::string reason) && {
    known_failures.push_back({check, std::move(reason)});
    return std::move(*this);
  }
  const KnownFailure* known_failure_of(Check check) const {
    for (const KnownFailure& k : known_failures) {
      if (k.check == check) return &k;
    }
    return nullptr;
  }
};

// Whether a tensor of the sample is quantized (Note [Quantized samples]).
bool has_quantized_tensors(const OpSample& sample);

// --- the families: ops/samples/<family>.cc defines <family>_samples(), and the build
// lists the files it finds (Note [Op families as data]) ---
struct SampleFamily {
  std::string_view name;  // "copy", "unary", ...
  std::span<const OpSample> samples;
};
// Every family, in the order above.
std::span<const SampleFamily> sample_families();
// The samples of every family, in family order.
std::span<const OpSample> all_samples();

// --- shorthands for the sample tables ---
namespace sample_helpers {

inline constexpr ScalarType kBool = ScalarType::Bool;
inline constexpr ScalarType kU8 = ScalarType::UInt8;
inline constexpr ScalarType kI32 = ScalarType::Int32;
inline constexpr ScalarType kI64 = ScalarType::Int64;
inline constexpr ScalarType kF16 = ScalarType::Float16;
inline constexpr ScalarType kBF16 = ScalarType::BFloat16;
inline constexpr ScalarType kF32 = ScalarType::Float32;
inline constexpr ScalarType kF64 = ScalarType::Float64;
inline constexpr ScalarType kC64 = ScalarType::ComplexFloat;
inline constexpr ScalarType kC128 = ScalarType::ComplexDouble;

inline constexpr ScalarType kQI8 = ScalarType::QInt8;
inline constexpr ScalarType kQU8 = ScalarType::QUInt8;
inline constexpr ScalarType kQI32 = ScalarType::QInt32;

inline TensorSpec T(std::vector<int64_t> shape, ScalarType dtype = kF32, Fill fill = Fill::Normal) {
  return {std::move(shape), dtype, fill, 0};
}
// A quantized tensor per tensor (Note [Quantized samples]).
inline TensorSpec Q(std::vector<int64_t> shape, ScalarType dtype = kQU8, Fill fill = Fill::Normal) {
  return {std::move(shape), dtype, fill, 0};
}
// A qint8 tensor quantized per channel along `axis`.
inline TensorSpec QC(std::vector<int64_t> shape, int64_t axis) {
  return {std::move(shape), kQI8, Fill::Normal, 0, axis};
}
// Indices in [0, bound).
inline TensorSpec Idx(std::vector<int64_t> shape, int64_t bound, ScalarType dtype = kI64) {
  return {std::move(shape), dtype, Fill::Index, bound};
}
inline SampleArg I(int64_t v) {
  return v;
}
inline SampleArg D(double v) {
  return v;
}
inline SampleArg B(bool v) {
  return v;
}
inline SampleArg S(std::string v) {
  return v;
}
inline SampleArg L(std::vector<int64_t> v) {
  return v;
}
inline SampleArg DL(std::vector<double> v) {
  return v;
}
inline SampleArg BL(std::vector<bool> v) {  // a bool[N] (output_mask)
  return v;
}
inline SampleArg TL(std::vector<TensorSpec> v) {
  return v;
}
inline SampleArg none() {
  return None{};
}

// A float32 sample of an op whose sums oneDNN may block differently per layout
// (products, convolutions): compared within 1e-4.
inline OpSample blocked_sums(std::string op, std::vector<SampleArg> args,
                             SampleKwargs kwargs = {}) {
  return OpSample{std::move(op), std::move(args), std::move(kwargs)}.tol(1e-4);
}

}  // namespace sample_helpers

}  // namespace loom::ops
