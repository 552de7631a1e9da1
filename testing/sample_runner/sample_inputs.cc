// Sample inputs (sample_inputs.h).
#include "sample_inputs.h"

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <variant>

#include "absl/strings/str_join.h"

namespace loom::conform {

using ops::Fill;

uint64_t hash_of(std::string_view text) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : text) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

// One value of kind `fill` (Note [Op samples]) for element i.
namespace {

const Device kCpuDevice{kCPU, -1};
const Device kMetaDevice{kMeta, -1};

struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }  // [0, 1)
  double below(int64_t n) { return std::floor(uniform() * static_cast<double>(n)); }
};

double draw(const TensorSpec& spec, bool floating, int64_t i, Rng& rng) {
  switch (spec.fill) {
    case Fill::Special:
      if (floating) return std::array<double, 6>{NAN, INFINITY, -INFINITY, 0.0, -0.5, 1.5}[i % 6];
      [[fallthrough]];
    case Fill::Normal:
      return floating ? -2.0 + 4.0 * rng.uniform() : rng.below(11) - 5;
    case Fill::Positive:
      return floating ? 0.5 + 2.0 * rng.uniform() : 1 + rng.below(5);
    case Fill::Unit:
      return floating ? 0.05 + 0.9 * rng.uniform() : rng.below(2);
    case Fill::Index:
      return rng.below(spec.bound);
    case Fill::Bool:
      return rng.below(2);
    case Fill::SmallInt:
      return rng.below(7) - 3;
    case Fill::Distinct:
      return static_cast<double>(i);  // shuffled below
    case Fill::Zeros:
      return 0;
    case Fill::Ascending:
      return floating ? -2.0 + 0.5 * static_cast<double>(i) : static_cast<double>(i) - 2;
  }
  return 0;
}

std::vector<double> spec_values(const TensorSpec& spec, uint64_t seed) {
  int64_t n = 1;
  for (int64_t d : spec.shape) n *= d;
  Rng rng{seed};
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(draw(spec, is_floating_point(spec.dtype) || is_complex(spec.dtype), i, rng));
  if (spec.fill == Fill::Distinct) {  // Fisher-Yates
    for (int64_t i = n - 1; i > 0; --i) std::swap(v[i], v[static_cast<size_t>(rng.below(i + 1))]);
  }
  return v;
}

}  // namespace

// A tensor of `shape` whose storage holds the dims in reverse order with every element
// two apart, starting one element in: transposed (2+ dims), strided (1+ dims) and sliced
// (a storage offset), never contiguous when numel > 1.
Tensor non_contiguous_empty(const std::vector<int64_t>& shape, ScalarType dtype, Device device) {
  const TensorOptions options = TensorOptions().dtype(dtype).device(device);
  const int64_t n = static_cast<int64_t>(shape.size());
  if (n == 0) return empty({}, options);
  std::vector<int64_t> reversed(shape.rbegin(), shape.rend()), perm;
  reversed.push_back(2);
  for (int64_t i = n - 1; i >= 0; --i) perm.push_back(i);
  return empty(reversed, options).select(n, 1).permute(perm);
}

namespace {

// A quantized spec (Note [Quantized samples]): the float values of its fill quantized with
// fixed parameters. Non-contiguous per tensor: quantized inside a larger float tensor laid
// out as non_contiguous_empty's, then viewed as it does (views keep the quantizer), so the
// integers are the contiguous tensor's. Per channel stays contiguous in every layout.
Tensor build_quantized(const TensorSpec& spec, uint64_t seed, Layout layout) {
  TensorSpec float_spec = spec;
  float_spec.dtype = ScalarType::Float32;
  float_spec.channel_axis = -1;
  if (spec.channel_axis >= 0) {
    const int64_t rank = static_cast<int64_t>(spec.shape.size());
    LOOM_CHECK(spec.channel_axis < rank && spec.dtype == ScalarType::QInt8, "sample runner",
               "a per-channel sample tensor must be qint8 with its axis among its ", rank,
               " dims, found axis ", spec.channel_axis, " of ", scalar_type_name(spec.dtype));
    const int64_t channels = spec.shape[static_cast<size_t>(spec.channel_axis)];
    std::vector<double> scales;
    for (int64_t c = 0; c < channels; ++c) scales.push_back(0.01 * static_cast<double>(1 + c % 3));
    Tensor scale_tensor = empty({channels}, TensorOptions().dtype(ScalarType::Float64));
    if (channels > 0)
      std::memcpy(scale_tensor.data_ptr(), scales.data(), channels * sizeof(double));
    return quantize_per_channel(build_tensor(float_spec, seed, Layout::Contiguous), scale_tensor,
                                zeros({channels}, TensorOptions().dtype(ScalarType::Int64)),
                                spec.channel_axis, spec.dtype);
  }
  const double scale = spec.dtype == ScalarType::QUInt8  ? 0.025
                       : spec.dtype == ScalarType::QInt8 ? 0.02
                                                         : 0.001;
  const int64_t zero_point = spec.dtype == ScalarType::QUInt8 ? 128 : 0;
  const Tensor values = build_tensor(float_spec, seed, Layout::Contiguous);
  const int64_t n = static_cast<int64_t>(spec.shape.size());
  if (layout != Layout::NonContiguous || n == 0) {
    return quantize_per_tensor(values, scale, zero_point, spec.dtype);
  }
  std::vector<int64_t> reversed(spec.shape.rbegin(), spec.shape.rend()), perm;
  reversed.push_back(2);
  for (int64_t i = n - 1; i >= 0; --i) perm.push_back(i);
  Tensor wide = zeros(reversed, TensorOptions().dtype(ScalarType::Float32));
  copy_(wide.select(n, 1).permute(perm), values);
  return quantize_per_tensor(wide, scale, zero_point, spec.dtype).select(n, 1).permute(perm);
}

}  // namespace

Tensor build_tensor(const TensorSpec& spec, uint64_t seed, Layout layout, Device device) {
  if (is_quantized(spec.dtype)) {
    LOOM_CHECK(layout != Layout::Meta && device == kCpuDevice, "sample runner",
               "quantized sample tensors are built on the cpu only (Note [Quantized samples]), "
               "found a ",
               layout == Layout::Meta ? "meta" : "non-cpu", " build");
    return build_quantized(spec, seed, layout);
  }
  if (layout == Layout::Meta) {
    return empty(spec.shape, TensorOptions().dtype(spec.dtype).device(kMetaDevice));
  }
  // A complex tensor draws its real and imaginary parts as a float tensor with a last dim
  // of 2 (Note [Complex views]).
  const bool complex = is_complex(spec.dtype);
  TensorSpec drawn = spec;
  if (complex) drawn.shape.push_back(2);
  std::vector<double> v = spec_values(drawn, seed);
  Tensor f64 = empty({static_cast<int64_t>(v.size())}, TensorOptions().dtype(ScalarType::Float64));
  if (!v.empty()) std::memcpy(f64.data_ptr(), v.data(), v.size() * sizeof(double));
  if (complex) f64 = loom::view_as_complex(f64.view(drawn.shape)).reshape({-1});
  const bool on_cpu = device == kCpuDevice;
  Tensor host = layout == Layout::NonContiguous && on_cpu
                    ? non_contiguous_empty(spec.shape, spec.dtype)
                    : empty(spec.shape, TensorOptions().dtype(spec.dtype));
  copy_(host, f64.view(spec.shape));
  if (on_cpu) return host;
  // Another device gets the values in the sample's dtype, so its copy_ converts nothing.
  Tensor out = layout == Layout::NonContiguous
                   ? non_contiguous_empty(spec.shape, spec.dtype, device)
                   : empty(spec.shape, TensorOptions().dtype(spec.dtype).device(device));
  copy_(out, host);
  return out;
}

Value build_value(const SampleArg& arg, uint64_t seed, Layout layout, Device device) {
  const Device target = layout == Layout::Meta ? kMetaDevice : device;
  return std::visit(
      [&](const auto& a) -> Value {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, ops::None>) {
          return Value();
        } else if constexpr (std::is_same_v<A, TensorSpec>) {
          return build_tensor(a, seed, layout, device);
        } else if constexpr (std::is_same_v<A, std::vector<TensorSpec>>) {
          std::vector<Tensor> list;
          for (size_t i = 0; i < a.size(); ++i) {
            list.push_back(build_tensor(a[i], seed + i, layout, device));
          }
          return list;
        } else if constexpr (std::is_same_v<A, ops::SampleDevice>) {
          return target;
        } else {
          return a;
        }
      },
      arg);
}

Value to_float64(const Value& value, bool& upcast) {
  auto widen = [&](const Tensor& t) {
    const ScalarType d = t.dtype();
    if (!is_floating_point(d) || d == ScalarType::Float64) return t;
    upcast = true;
    return loom::to(t, ScalarType::Float64);
  };
  if (value.is_tensor()) return widen(value.to_tensor());
  if (value.is_tensor_list()) {
    std::vector<Tensor> list;
    for (const Tensor& t : value.to_tensor_list()) list.push_back(widen(t));
    return list;
  }
  return value;
}

std::vector<Tensor> tensors_in(const Value& value) {
  if (value.is_tensor()) return {value.to_tensor()};
  if (value.is_tensor_list()) return value.to_tensor_list();
  return {};
}

Built build(const OpSample& sample, int ordinal, Layout layout, Device device) {
  const uint64_t seed = hash_of(sample.op) * 31 + static_cast<uint64_t>(ordinal) * 1000;
  Built b;
  for (size_t i = 0; i < sample.args.size(); ++i) {
    b.args.push_back(build_value(sample.args[i], seed + i * 17, layout, device));
  }
  for (size_t i = 0; i < sample.kwargs.size(); ++i) {
    b.kwargs.emplace_back(
        sample.kwargs[i].first,
        build_value(sample.kwargs[i].second, seed + (100 + i) * 17, layout, device));
  }
  return b;
}

namespace {

std::string describe_arg(const ops::SampleArg& arg) {
  return std::visit(
      [](const auto& a) -> std::string {
        using A = std::decay_t<decltype(a)>;
        auto spec = [](const TensorSpec& t) {
          return str_cat(
              "[", absl::StrJoin(t.shape, ", "), "] ", scalar_type_name(t.dtype),
              t.channel_axis >= 0 ? str_cat(" per channel (axis ", t.channel_axis, ")") : "");
        };
        if constexpr (std::is_same_v<A, ops::None>) {
          return "None";
        } else if constexpr (std::is_same_v<A, TensorSpec>) {
          return spec(a);
        } else if constexpr (std::is_same_v<A, std::vector<TensorSpec>>) {
          std::vector<std::string> parts;
          for (const TensorSpec& t : a) parts.push_back(spec(t));
          return str_cat("(", absl::StrJoin(parts, ", "), ")");
        } else if constexpr (std::is_same_v<A, std::vector<int64_t>> ||
                             std::is_same_v<A, std::vector<double>>) {
          return str_cat("[", absl::StrJoin(a, ", "), "]");
        } else if constexpr (std::is_same_v<A, std::vector<bool>>) {
          std::vector<std::string> bits;
          for (bool b : a) bits.push_back(b ? "True" : "False");
          return str_cat("[", absl::StrJoin(bits, ", "), "]");
        } else if constexpr (std::is_same_v<A, ScalarType>) {
          return std::string(scalar_type_name(a));
        } else if constexpr (std::is_same_v<A, ops::SampleDevice>) {
          return "<device>";
        } else if constexpr (std::is_same_v<A, std::string>) {
          return "\"" + a + "\"";
        } else {
          return str_cat(a);
        }
      },
      arg);
}

}  // namespace

std::string sample_dtype(const OpSample& sample) {
  auto first = [](const std::vector<ops::SampleArg>& args) -> std::optional<ScalarType> {
    for (const ops::SampleArg& a : args) {
      if (auto* t = std::get_if<TensorSpec>(&a)) return t->dtype;
      if (auto* l = std::get_if<std::vector<TensorSpec>>(&a); l && !l->empty()) {
        return l->front().dtype;
      }
    }
    for (const ops::SampleArg& a : args) {
      if (auto* d = std::get_if<ScalarType>(&a)) return *d;
    }
    return std::nullopt;
  };
  std::optional<ScalarType> d = first(sample.args);
  if (!d) {
    std::vector<ops::SampleArg> keywords;
    for (const auto& kv : sample.kwargs) keywords.push_back(kv.second);
    d = first(keywords);
  }
  return d ? std::string(scalar_type_name(*d)) : "none";
}

std::string describe_sample(const OpSample& sample) {
  std::vector<std::string> parts;
  for (const ops::SampleArg& a : sample.args) parts.push_back(describe_arg(a));
  for (const auto& [name, value] : sample.kwargs) parts.push_back(name + "=" + describe_arg(value));
  return absl::StrJoin(parts, ", ");
}

int sample_stride_from_environment() {
  const char* text = std::getenv("LOOM_SAMPLE_STRIDE");
  if (text == nullptr || *text == '\0') return 1;
  char* end = nullptr;
  errno = 0;
  long stride = std::strtol(text, &end, 10);
  LOOM_CHECK(errno == 0 && *end == '\0' && stride >= 1 && stride <= 1000000, "sample runner",
             "LOOM_SAMPLE_STRIDE: expected a positive integer, found '", text, "'");
  return static_cast<int>(stride);
}

}  // namespace loom::conform
