// Tensors to and from safetensors files (the format of Hugging Face's `safetensors`
// package): an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the little-endian, row-major bytes.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "loom/ops/tensor.h"

namespace loom {

using NamedTensorList = std::vector<std::pair<std::string, Tensor>>;

// Writes `tensors` (any device and layout; names unique) and string metadata to `path`
// atomically: into a temporary file in the same directory, fsync'ed, then renamed over
// `path`, so a crash leaves either the old file or the new one.
void save_safetensors(const std::string& path, const NamedTensorList& tensors,
                      const std::map<std::string, std::string>& metadata = {});

struct SafetensorsFile {
  NamedTensorList tensors;  // in the order of their bytes in the file
  std::map<std::string, std::string> metadata;
};

// Reads a safetensors file into CPU tensors. Nothing is trusted before it is checked:
// the header length against the file size, the JSON, each entry's dtype, shape and byte
// range (inside the data, of the size the shape needs, not overlapping another), and
// the data covering exactly the ranges. Errors name the file and the entry.
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace loom
