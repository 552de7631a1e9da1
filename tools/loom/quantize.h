// `loom quantize`: quantizes a `loom train` checkpoint (static, QAT, dynamic or
// weight-only) and reports float against quantized test accuracy, model bytes and
// batch-1 / batch-64 latency.
#pragma once

#include <cstdint>
#include <string>

namespace loom::cli {

struct QuantizeOptions {
  std::string model_file;  // a `loom train --save` checkpoint
  std::string arch = "cnn";
  std::string method = "static";  // static | dynamic | qat | weight-only
  int64_t calibrate = 512;        // training images run through the observers
  std::string save;               // the quantized model's tensors ("" none)
  bool json = false;              // one JSON object instead of text
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  uint64_t seed = 0;
};

int run_quantize(const QuantizeOptions& options);

}  // namespace loom::cli
