// `loom train`: trains a classifier on Fashion-MNIST (or any MNIST-format directory)
// and reports loss, accuracy and throughput per epoch.
#pragma once

#include <cstdint>
#include <string>

namespace loom::cli {

struct TrainOptions {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string model = "cnn";  // cnn | mlp
  int64_t epochs = 2;
  int64_t batch_size = 64;
  double lr = 1e-3;
  std::string optimizer = "adam";  // adam | adamw | sgd | rmsprop
  uint64_t seed = 0;
  std::string device = "cpu";
  int64_t limit = 0;     // train on the first `limit` examples only (0: all)
  std::string save;      // checkpoint written after each epoch ("" none)
  std::string resume;    // checkpoint to continue from ("" none)
  std::string profile;   // Chrome trace of a few steps ("" none; Note [Profiling a run])
  bool compile = false;  // forward and backward through loom::compile
  // "gloo": one rank of a data-parallel job under `loom launch` (DDP, each rank a share of
  // every global batch of batch_size; rank 0 reports and saves). "" trains alone.
  std::string distributed;
  // Quantization-aware training: fake-quantized weights and activations, the int8 model's
  // accuracy reported at the end.
  bool qat = false;
  // Mixed precision: "bf16" or "fp16" runs the forward and the loss under autocast in that
  // dtype (loom/autocast.h), fp16 with dynamic loss scaling (loom/grad_scaler.h); ""
  // trains in float32.
  std::string amp;
  // Activation checkpointing: the model in sqrt(layers) segments, each recomputed in
  // backward instead of keeping its activations (nn::checkpoint_sequential).
  bool checkpoint = false;
};

// Checks the options (a bad one is a loom::Error naming it), trains, returns 0.
int run_train(const TrainOptions& options);

}  // namespace loom::cli
