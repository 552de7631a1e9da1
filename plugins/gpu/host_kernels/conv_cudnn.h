// The CUDA plugin's convolution passes through cuDNN (conv_cudnn.cc, Notes [Convolution
// plans] and [cuDNN graph plans]), over packed NCHW operands on the call's stream; conv_ops.cc
// checks the tensors and chooses between these and loom's own kernels (conv.cu).
#pragma once

#include "../kernels/conv_math.h"
#include "loom/sdk/kernel.hpp"

namespace loom::gpu {

// Which cuDNN API the passes use (Note [cuDNN graph plans]): the manifest's "cudnn" option.
enum class CudnnApi { kAuto, kGraph, kLegacy };
extern CudnnApi g_cudnn_api;
// Reads the option; a value other than "auto", "graph" or "legacy" is the plugin's
// initialisation error.
void set_cudnn_api(sdk::Registrar& r);

// out = the convolution of input with weight, plus bias (null: none).
void cudnn_conv2d(const sdk::DispatchContext& ctx, const char* op, int32_t dtype,
                  const ConvGeometry& g, LoomDevice device, void* out, const void* input,
                  const void* weight, const void* bias);
void cudnn_conv2d_backward_input(const sdk::DispatchContext& ctx, const char* op, int32_t dtype,
                                 const ConvGeometry& g, LoomDevice device, void* grad_input,
                                 const void* grad_output, const void* weight);
void cudnn_conv2d_backward_weight(const sdk::DispatchContext& ctx, const char* op, int32_t dtype,
                                  const ConvGeometry& g, LoomDevice device, void* grad_weight,
                                  const void* grad_output, const void* input);

}  // namespace loom::gpu
