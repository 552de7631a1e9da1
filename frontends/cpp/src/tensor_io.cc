// item() and printing: element reads on the host, and PyTorch-style formatting with
// summarisation of large tensors.
#include "loom/tensor_io.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "loom/call.h"
#include "loom/core/error.h"
#include "loom/core/quantizer.h"
#include "loom/core/type_promotion.h"
#include "loom/dispatcher/local_dispatch_key_set.h"
#include "loom/ops/generated/ops.h"

namespace loom {
namespace {

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

float bfloat16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// Element at byte address p of a CPU tensor, as a double.
double read_element(const void* p, ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return *static_cast<const bool*>(p) ? 1.0 : 0.0;
    case ScalarType::UInt8:
    case ScalarType::QUInt8:
      return *static_cast<const uint8_t*>(p);
    case ScalarType::Int8:
    case ScalarType::QInt8:
      return *static_cast<const int8_t*>(p);
    case ScalarType::Int16:
      return *static_cast<const int16_t*>(p);
    case ScalarType::Int32:
    case ScalarType::QInt32:
      return *static_cast<const int32_t*>(p);
    case ScalarType::Int64:
      return static_cast<double>(*static_cast<const int64_t*>(p));
    case ScalarType::Float16:
      return half_to_float(*static_cast<const uint16_t*>(p));
    case ScalarType::BFloat16:
      return bfloat16_to_float(*static_cast<const uint16_t*>(p));
    case ScalarType::Float32:
      return *static_cast<const float*>(p);
    case ScalarType::Float64:
    case ScalarType::ComplexDouble:  // the real part
      return *static_cast<const double*>(p);
    case ScalarType::ComplexFloat:
      return *static_cast<const float*>(p);
  }
  return 0;
}

const void* element_address(const Tensor& t, IntArrayRef index) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset += index[d] * t.strides()[d];
  return static_cast<const char*>(t.data_ptr()) + offset * element_size(t.dtype());
}

std::string format_value(double v, ScalarType t) {
  if (t == ScalarType::Bool) return v != 0 ? "True" : "False";
  if (is_integral(t, false)) return std::to_string(static_cast<int64_t>(v));
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream out;
  out.precision(4);
  out << std::fixed << v;
  std::string s = out.str();
  while (!s.empty() && s.back() == '0') s.pop_back();  // "1.5000" -> "1.5", "2.0000" -> "2."
  return s;
}

// A complex element as "a+bj" (PyTorch's spelling), its parts printed as floats are.
std::string format_complex(const void* p, ScalarType t) {
  const bool wide = t == ScalarType::ComplexDouble;
  const double re = wide ? static_cast<const double*>(p)[0] : static_cast<const float*>(p)[0];
  const double im = wide ? static_cast<const double*>(p)[1] : static_cast<const float*>(p)[1];
  std::string imag = format_value(std::abs(im), ScalarType::Float64);
  return format_value(re, ScalarType::Float64) + (std::signbit(im) ? "-" : "+") + imag + "j";
}

constexpr int64_t kSummariseAbove = 1000;
constexpr int64_t kEdgeItems = 3;

void print_dim(std::ostringstream& out, const Tensor& t, std::vector<int64_t>& index,
               bool summarise, int indent) {
  size_t d = index.size();
  int64_t n = t.sizes()[d];
  out << "[";
  for (int64_t i = 0; i < n; ++i) {
    if (summarise && n > 2 * kEdgeItems && i == kEdgeItems) {
      out << "...";
      i = n - kEdgeItems - 1;
      out << (d + 1 == static_cast<size_t>(t.dim()) ? ", " : ",\n" + std::string(indent + 1, ' '));
      continue;
    }
    index.push_back(i);
    if (d + 1 == static_cast<size_t>(t.dim())) {
      const void* at = element_address(t, index);
      out << (is_complex(t.dtype()) ? format_complex(at, t.dtype())
                                    : format_value(read_element(at, t.dtype()), t.dtype()));
    } else {
      print_dim(out, t, index, summarise, indent + 1);
    }
    index.pop_back();
    if (i + 1 < n) {
      out << (d + 1 == static_cast<size_t>(t.dim()) ? ", " : ",\n" + std::string(indent + 1, ' '));
    }
  }
  out << "]";
}

}  // namespace

Tensor to_cpu(const Tensor& t) {
  if (t.device().type == kCPU) return t;
  LOOM_CHECK(t.device().type != kMeta, "to_cpu", "meta tensors have no data to copy");
  Tensor host = empty(t.sizes(), t.dtype(), Device{kCPU, -1});
  Tensor src = t.is_contiguous() ? t : t;  // the device's copy_ handles its own layouts
  copy_(host, src);
  return host;
}

namespace {

// Note [Host reads while capturing]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// item() reads the element directly, without an op call, except on a thread whose
// dispatches include the Tracer key (the compiler plugin capturing a function for
// loom::compile): there it calls loom::_local_scalar_dense, PyTorch's op for item(), so
// the capture sees the read and breaks its graph there (Note [Graph breaks]).
bool capturing_this_thread() {
  return (dispatch::local_dispatch_key_set().included &
          DispatchKeySet(DispatchKey::Tracer).raw()) != 0;
}

Scalar item_through_op(const Tensor& t) {
  return call("loom::_local_scalar_dense", {t}).at(0).to_scalar();
}

}  // namespace

double item_as_double(const Tensor& t) {
  LOOM_CHECK(t.defined(), "item", "the tensor is undefined");
  LOOM_CHECK(t.numel() == 1, "item", "a tensor with ", t.numel(),
             " elements cannot be converted to a scalar (expected exactly 1)");
  if (capturing_this_thread()) return item_through_op(t).to_double();
  Tensor host = to_cpu(t);
  return read_element(host.data_ptr(), host.dtype());
}

int64_t item_as_int(const Tensor& t) {
  LOOM_CHECK(t.defined(), "item", "the tensor is undefined");
  LOOM_CHECK(t.numel() == 1, "item", "a tensor with ", t.numel(),
             " elements cannot be converted to a scalar (expected exactly 1)");
  if (capturing_this_thread()) return item_through_op(t).to_int();
  Tensor host = to_cpu(t);
  if (host.dtype() == ScalarType::Int64) return *host.data<int64_t>();
  return static_cast<int64_t>(read_element(host.data_ptr(), host.dtype()));
}

namespace {

// A quantized tensor's real values, (q - zero_point) * scale, computed here so that a
// tensor prints without the quantization plugin (Note [Where the quantizer lives]).
Tensor dequantized_values(const Tensor& q) {
  const Quantizer& quantizer = *q.impl()->quantizer();
  Tensor out = empty(q.sizes(), TensorOptions().dtype(ScalarType::Float64));
  const int64_t n = q.numel(), ndim = q.dim();
  int64_t inner = 1;
  if (quantizer.scheme() == QScheme::PerChannelAffine) {
    for (int64_t d = quantizer.axis() + 1; d < ndim; ++d) inner *= q.sizes()[d];
  }
  std::vector<int64_t> index(static_cast<size_t>(ndim), 0);
  const char* base = static_cast<const char*>(q.data_ptr());
  const int64_t elem = static_cast<int64_t>(element_size(q.dtype()));
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (int64_t d = 0; d < ndim; ++d) offset += index[d] * q.strides()[d];
    const double v = read_element(base + offset * elem, q.dtype());
    double scale = quantizer.scale();
    int64_t zero_point = quantizer.zero_point();
    if (quantizer.scheme() == QScheme::PerChannelAffine) {
      const int64_t c = (i / inner) % quantizer.channels();
      scale = quantizer.channel_scale(c);
      zero_point = quantizer.channel_zero_point(c);
    }
    out.data<double>()[i] = (v - static_cast<double>(zero_point)) * scale;
    for (int64_t d = ndim - 1; d >= 0; --d) {
      if (++index[d] < q.sizes()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// PyTorch's suffix of a quantized tensor: its scheme and parameters.
std::string quantizer_suffix(const Tensor& q) {
  const Quantizer& quantizer = *q.impl()->quantizer();
  std::string s =
      str_cat(", size=", shape_to_string(q.sizes()), ", dtype=", scalar_type_name(q.dtype()),
              ", quantization_scheme=", qscheme_name(quantizer.scheme()));
  if (quantizer.scheme() == QScheme::PerTensorAffine) {
    std::ostringstream scale;
    scale << quantizer.scale();
    return s + ", scale=" + scale.str() + ", zero_point=" + std::to_string(quantizer.zero_point());
  }
  return s + ", scale=" + to_string(Tensor(quantizer.scales())) +
         ", zero_point=" + to_string(Tensor(quantizer.zero_points())) +
         ", axis=" + std::to_string(quantizer.axis());
}

}  // namespace

std::string to_string(const Tensor& t) {
  if (!t.defined()) return "tensor(undefined)";
  if (is_quantized(t.dtype()) && t.impl()->quantizer() && t.device().type == kCPU) {
    std::string values = to_string(dequantized_values(t).to(ScalarType::Float32));
    return values.substr(0, values.size() - 1) + quantizer_suffix(t) + ")";
  }
  std::ostringstream out;
  std::string suffix;
  if (t.dtype() != ScalarType::Float32 && t.dtype() != ScalarType::Int64 &&
      t.dtype() != ScalarType::Bool) {
    suffix += str_cat(", dtype=", scalar_type_name(t.dtype()));
  }
  if (t.device().type != kCPU) suffix += str_cat(", device='", t.device().to_string(), "'");
  if (t.device().type == kMeta) {
    return str_cat("tensor(..., size=", shape_to_string(t.sizes()), suffix, ")");
  }
  Tensor host = to_cpu(t);
  out << "tensor(";
  if (host.dim() == 0) {
    out << format_value(read_element(host.data_ptr(), host.dtype()), host.dtype());
  } else if (host.numel() == 0) {
    out << "[], size=" << shape_to_string(host.sizes());
  } else {
    std::vector<int64_t> index;
    print_dim(out, host, index, host.numel() > kSummariseAbove, 7);
  }
  out << suffix << ")";
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& t) {
  return out << to_string(t);
}

}  // namespace loom
