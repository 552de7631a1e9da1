// DLPack dtype and device mapping.
#include "loom/dispatcher/dlpack_conversion.h"

#include "loom/core/error.h"

namespace loom::dispatch {

namespace {
constexpr uint8_t kDLBoolCode = 6;  // kDLBool in DLPack >= 0.8 (Debian ships 0.6)
}  // namespace

DLDataType to_dl_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return {kDLBoolCode, 8, 1};
    case ScalarType::UInt8:
    case ScalarType::QUInt8:
      return {kDLUInt, 8, 1};
    case ScalarType::Int8:
    case ScalarType::QInt8:
      return {kDLInt, 8, 1};
    case ScalarType::Int16:
      return {kDLInt, 16, 1};
    case ScalarType::Int32:
    case ScalarType::QInt32:
      return {kDLInt, 32, 1};
    case ScalarType::Int64:
      return {kDLInt, 64, 1};
    case ScalarType::Float16:
      return {kDLFloat, 16, 1};
    case ScalarType::BFloat16:
      return {kDLBfloat, 16, 1};
    case ScalarType::Float32:
      return {kDLFloat, 32, 1};
    case ScalarType::Float64:
      return {kDLFloat, 64, 1};
    case ScalarType::ComplexFloat:
      return {kDLComplex, 64, 1};
    case ScalarType::ComplexDouble:
      return {kDLComplex, 128, 1};
  }
  return {kDLOpaqueHandle, 8, 1};
}

ScalarType from_dl_dtype(DLDataType t) {
  LOOM_CHECK(t.lanes == 1, "dlpack", "vector dtypes (lanes ", t.lanes, ") are not supported");
  switch (t.code) {
    case kDLBoolCode:
      if (t.bits == 8) return ScalarType::Bool;
      break;
    case kDLUInt:
      if (t.bits == 8) return ScalarType::UInt8;
      if (t.bits == 1) return ScalarType::Bool;
      break;
    case kDLInt:
      if (t.bits == 8) return ScalarType::Int8;
      if (t.bits == 16) return ScalarType::Int16;
      if (t.bits == 32) return ScalarType::Int32;
      if (t.bits == 64) return ScalarType::Int64;
      break;
    case kDLFloat:
      if (t.bits == 16) return ScalarType::Float16;
      if (t.bits == 32) return ScalarType::Float32;
      if (t.bits == 64) return ScalarType::Float64;
      break;
    case kDLBfloat:
      if (t.bits == 16) return ScalarType::BFloat16;
      break;
    case kDLComplex:
      if (t.bits == 64) return ScalarType::ComplexFloat;
      if (t.bits == 128) return ScalarType::ComplexDouble;
      break;
    default:
      break;
  }
  fail("dlpack", "unsupported DLPack dtype (code ", static_cast<int>(t.code), ", bits ",
       static_cast<int>(t.bits), ")");
}

DLDevice to_dl_device(Device d) {
  int32_t index = d.index < 0 ? 0 : d.index;
  if (d.type == kCPU) return {kDLCPU, index};  // every kernel call asks: skip the registry
  switch (DeviceTypeRegistry::instance().backend(d.type)) {
    case DispatchKey::CPU:
      return {kDLCPU, index};
    case DispatchKey::CUDA:
      return {kDLCUDA, index};
    case DispatchKey::HIP:
      return {kDLROCM, index};
    default:
      return {kDLExtDev, index};
  }
}

Device from_dl_device(DLDevice d) {
  auto by_name = [&](const char* name) {
    DeviceType type = DeviceTypeRegistry::instance().find(name);
    LOOM_CHECK(type >= 0, "dlpack", "a DLPack tensor on device type ",
               static_cast<int>(d.device_type), " needs the '", name,
               "' device type, which no loaded plugin provides");
    return Device{type, static_cast<int16_t>(d.device_id)};
  };
  switch (d.device_type) {
    case kDLCPU:
      return Device{kCPU, -1};
    case kDLCUDA:
      return by_name("cuda");
    case kDLROCM:
      return by_name("hip");
    default:
      fail("dlpack", "unsupported DLPack device type ", static_cast<int>(d.device_type),
           " (expected CPU, CUDA or ROCm)");
  }
}

}  // namespace loom::dispatch
