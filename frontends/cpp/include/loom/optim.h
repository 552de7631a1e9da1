// loom::optim, the optimizers of the C++ API (as torch/optim.h), learning-rate
// schedulers and gradient clipping.
#pragma once

#include "loom/grad_scaler.h"
#include "loom/optim/adafactor.h"
#include "loom/optim/adam.h"
#include "loom/optim/clip_grad.h"
#include "loom/optim/optimizer.h"
#include "loom/optim/rmsprop.h"
#include "loom/optim/schedulers.h"
#include "loom/optim/sgd.h"
#include "loom/optim/zero.h"
