// loom::optim, the optimizers of the C++ API (as torch/optim.h).
#pragma once

#include "loom/optim/adam.h"
#include "loom/optim/optimizer.h"
#include "loom/optim/rmsprop.h"
#include "loom/optim/sgd.h"
