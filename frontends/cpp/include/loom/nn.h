// loom::nn, the layers of the C++ API (as torch/nn.h): Module and its holders, parameter
// initialisation, layers, containers and losses.
#pragma once

#include "loom/nn/activation.h"
#include "loom/nn/activation_checkpoint.h"
#include "loom/nn/container.h"
#include "loom/nn/conv.h"
#include "loom/nn/distributed.h"
#include "loom/nn/dropout.h"
#include "loom/nn/embedding.h"
#include "loom/nn/init.h"
#include "loom/nn/linear.h"
#include "loom/nn/loss.h"
#include "loom/nn/module.h"
#include "loom/nn/normalization.h"
#include "loom/nn/pooling.h"
