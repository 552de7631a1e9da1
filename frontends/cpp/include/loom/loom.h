// The one header an app includes: tensors, the runtime, and boxed op calls.
#pragma once

#include "loom/core/error.h"
#include "loom/core/scalar.h"
#include "loom/core/tensor.h"
#include "loom/core/type_promotion.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/runtime.h"
