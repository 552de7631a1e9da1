// Binary pointwise kernels (add, mul) over strided and broadcast operands.
#include <cstring>

#include "kernels.h"
#include "strided_loop.h"

namespace loom::cpu {
namespace {

template <typename T, typename Op>
void binary_loop(std::span<const int64_t> shape, const sdk::Tensor& out, const sdk::Tensor& a,
                 const sdk::Tensor& b, Op op) {
  const sdk::Tensor* operands[3] = {&out, &a, &b};
  for_each_element(shape, operands, [&](char* const* p) {
    *reinterpret_cast<T*>(p[0]) =
        op(*reinterpret_cast<const T*>(p[1]), *reinterpret_cast<const T*>(p[2]));
  });
}

// Runs `op` on a and b broadcast together into a new tensor of their dtype.
template <typename OpFactory>
sdk::Tensor binary(const char* name, const sdk::Tensor& a, const sdk::Tensor& b,
                   OpFactory make_op) {
  if (a.dtype() != b.dtype()) {
    throw sdk::Error(std::string("[") + name + "] expected operands of one dtype, found " +
                     dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
  }
  std::span<const int64_t> shapes[2] = {a.sizes(), b.sizes()};
  std::vector<int64_t> shape = broadcast_shape(shapes, name);
  sdk::Tensor out = sdk::empty(shape, a.dtype(), a.device());
  switch (a.dtype()) {
    case LOOM_DTYPE_FLOAT32:
      binary_loop<float>(shape, out, a, b, make_op.template operator()<float>());
      break;
    case LOOM_DTYPE_FLOAT64:
      binary_loop<double>(shape, out, a, b, make_op.template operator()<double>());
      break;
    case LOOM_DTYPE_INT32:
      binary_loop<int32_t>(shape, out, a, b, make_op.template operator()<int32_t>());
      break;
    case LOOM_DTYPE_INT64:
      binary_loop<int64_t>(shape, out, a, b, make_op.template operator()<int64_t>());
      break;
    default:
      throw sdk::Error(std::string("[") + name + "] dtype " + dtype_name(a.dtype()) +
                           " is not supported by the cpu plugin yet (expected float32, float64, "
                           "int32 or int64)",
                       LOOM_STATUS_UNIMPLEMENTED);
  }
  return out;
}

sdk::Tensor add(const sdk::Tensor& a, const sdk::Tensor& b, sdk::Scalar alpha) {
  return binary("add", a, b, [&]<typename T>() {
    T scale = static_cast<T>(alpha.is_floating_point() ? alpha.d : static_cast<double>(alpha.i));
    return [scale](T x, T y) { return static_cast<T>(x + scale * y); };
  });
}

sdk::Tensor mul(const sdk::Tensor& a, const sdk::Tensor& b) {
  return binary("mul", a, b,
                []<typename T>() { return [](T x, T y) { return static_cast<T>(x * y); }; });
}

}  // namespace

std::vector<int64_t> broadcast_shape(std::span<const std::span<const int64_t>> shapes,
                                     const char* op) {
  size_t ndim = 0;
  for (auto s : shapes) ndim = std::max(ndim, s.size());
  std::vector<int64_t> out(ndim, 1);
  for (auto s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[ndim - s.size() + i];
      if (s[i] == o || s[i] == 1) continue;
      if (o != 1) {
        throw sdk::Error(std::string("[") + op + "] shapes " + shape_string(shapes[0]) + " and " +
                         shape_string(shapes[1]) + " cannot be broadcast");
      }
      o = s[i];
    }
  }
  return out;
}

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const char* dtype_name(LoomDType t) {
  static const char* kNames[] = {"bool",  "uint8",   "int8",     "int16",   "int32",
                                 "int64", "float16", "bfloat16", "float32", "float64",
                                 "qint8", "quint8",  "qint32"};
  return t >= 0 && t < LOOM_DTYPE_COUNT ? kNames[t] : "invalid";
}

void register_binary_kernels(sdk::Registrar& r) {
  r.impl<&add>("loom::add.Tensor", LOOM_KEY_CPU);
  r.impl<&mul>("loom::mul.Tensor", LOOM_KEY_CPU);
  for (const char* op : {"loom::add.Tensor", "loom::mul.Tensor"}) {
    r.capability(op, LOOM_KEY_CPU,
                 {LOOM_DTYPE_FLOAT32, LOOM_DTYPE_FLOAT64, LOOM_DTYPE_INT32, LOOM_DTYPE_INT64});
  }
}

}  // namespace loom::cpu
