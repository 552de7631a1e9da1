// Zero-copy exchange with other frameworks through DLPack (Debian's libdlpack-dev 0.6).
#pragma once

#include <dlpack/dlpack.h>

#include "loom/ops/tensor.h"

namespace loom {

// A DLManagedTensor viewing t's memory; it keeps t alive until its deleter runs. The
// receiver calls managed->deleter(managed) exactly once.
DLManagedTensor* to_dlpack(const Tensor& t);

// A tensor viewing the DLPack tensor's memory; the DLPack deleter runs when the last
// view of it dies. Throws loom::Error("dlpack") for unsupported dtypes or devices (and
// then the caller still owns `managed`).
Tensor from_dlpack(DLManagedTensor* managed);

}  // namespace loom
