// Building boxed LoomValues from C++ values and taking results back out. Boxed
// arguments borrow (no refcount traffic); unbox_tensor adopts a returned reference.
#pragma once

#include <string>

#include "loom/core/device.h"
#include "loom/core/error.h"
#include "loom/core/scalar.h"
#include "loom/core/tensor_base.h"
#include "loom/plugin.h"

namespace loom::dispatch {

inline LoomValue box(const TensorBase& t) {
  LoomValue v{LOOM_VALUE_TENSOR, 0, {}};
  v.u.tensor = reinterpret_cast<LoomTensor*>(t.impl());
  return v;
}
inline LoomValue box(int64_t i) {
  LoomValue v{LOOM_VALUE_INT, 0, {}};
  v.u.i = i;
  return v;
}
inline LoomValue box(int i) {
  return box(static_cast<int64_t>(i));
}
inline LoomValue box(double d) {
  LoomValue v{LOOM_VALUE_DOUBLE, 0, {}};
  v.u.d = d;
  return v;
}
inline LoomValue box(bool b) {
  LoomValue v{LOOM_VALUE_BOOL, 0, {}};
  v.u.i = b;
  return v;
}
inline LoomValue box(const Scalar& s) {
  if (s.is_floating_point()) return box(s.to_double());
  if (s.is_bool()) return box(s.to_bool());
  return box(s.to_int());
}
// The string must outlive the call.
inline LoomValue box(const std::string& s) {
  LoomValue v{LOOM_VALUE_STRING, static_cast<uint32_t>(s.size()), {}};
  v.u.str = s.c_str();
  return v;
}
inline LoomValue box(ScalarType t) {
  LoomValue v{LOOM_VALUE_DTYPE, 0, {}};
  v.u.i = static_cast<int64_t>(t);
  return v;
}
inline LoomValue box(Device d) {
  LoomValue v{LOOM_VALUE_DEVICE, 0, {}};
  v.u.device = {d.type, d.index};
  return v;
}
// The list must outlive the call.
inline LoomValue box(IntArrayRef list) {
  LoomValue v{LOOM_VALUE_INT_LIST, static_cast<uint32_t>(list.size()), {}};
  v.u.ints = list.data();
  return v;
}
inline LoomValue none() {
  return LoomValue{LOOM_VALUE_NONE, 0, {}};
}

// Takes the owned tensor out of a returned value.
inline TensorBase unbox_tensor(LoomValue& v, std::string_view op) {
  LOOM_CHECK(v.tag == LOOM_VALUE_TENSOR && v.u.tensor != nullptr, std::string(op),
             "expected a Tensor return value, found value tag ", v.tag);
  v.tag = LOOM_VALUE_NONE;
  return TensorBase::adopt(reinterpret_cast<TensorImpl*>(v.u.tensor));
}

}  // namespace loom::dispatch
