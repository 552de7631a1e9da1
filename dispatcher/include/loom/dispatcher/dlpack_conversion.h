// Mapping loom dtypes and devices to and from DLPack's (the ABI's tensor views and the
// frontend's zero-copy exchange both use it).
#pragma once

#include <dlpack/dlpack.h>

#include "loom/core/device.h"
#include "loom/core/scalar_type.h"

namespace loom::dispatch {

// Bool maps to code 6 (kDLBool of DLPack >= 0.8); quantized types to their storage ints.
DLDataType to_dl_dtype(ScalarType t);
// Throws loom::Error("dlpack") for types loom has no equivalent of.
ScalarType from_dl_dtype(DLDataType t);
// cpu -> kDLCPU, devices on the CUDA/HIP backends -> kDLCUDA/kDLROCM, others kDLExtDev.
DLDevice to_dl_device(Device d);
// kDLCPU -> cpu, kDLCUDA -> "cuda", kDLROCM -> "hip" (registered by a plugin); throws
// loom::Error("dlpack") otherwise.
Device from_dl_device(DLDevice d);

}  // namespace loom::dispatch
