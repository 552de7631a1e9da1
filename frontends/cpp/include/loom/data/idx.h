// The IDX file format of MNIST and Fashion-MNIST (gzip-compressed or plain): a magic
// number (two zero bytes, the element type, the number of dimensions), the big-endian
// uint32 sizes, then the elements, big-endian.
#pragma once

#include <string>

#include "loom/ops/tensor.h"

namespace loom::data {

// Reads an IDX file (gzip is detected from its magic bytes) into a CPU tensor of the
// file's element type (uint8, int8, int16, int32, float32, float64). Everything read is
// checked first: a missing file, a bad magic, an unknown type, sizes that overflow, and
// a body shorter or longer than the sizes say are errors naming the file.
Tensor read_idx(const std::string& path);

}  // namespace loom::data
