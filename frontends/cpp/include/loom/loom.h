// The one header an app includes: tensors, the runtime, the typed op functions and
// Tensor methods generated from the op library, call by op name, operators, factories,
// random tensors, printing, DLPack, host memory statistics, autograd.
#pragma once

#include "loom/autocast.h"
#include "loom/autograd.h"
#include "loom/call.h"
#include "loom/core/error.h"
#include "loom/core/host_memory.h"
#include "loom/core/scalar.h"
#include "loom/core/type_promotion.h"
#include "loom/core/warning.h"
#include "loom/devices.h"
#include "loom/distributed.h"
#include "loom/dlpack.h"
#include "loom/factories.h"
#include "loom/operators.h"
#include "loom/ops/generated/ops.h"
#include "loom/ops/tensor.h"
#include "loom/profiler.h"
#include "loom/quantization.h"
#include "loom/random.h"
#include "loom/runtime.h"
#include "loom/tensor_io.h"
