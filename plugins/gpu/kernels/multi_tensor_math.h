// Multi-tensor launches (Note [Multi-tensor launches]): which block of a launch works on
// which chunk of which tensor, planned on the host into a table the kernel receives by
// value. Host-tested (tests/gpu/multi_tensor_math_test.cc).
#pragma once

#include <algorithm>
#include <cstdint>

#include "index_math.h"

namespace loom::gpu {

// Note [Multi-tensor launches]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// An op over a list of tensors (loss scaling's unscale of every gradient) runs as few
// launches as the list allows, not one per tensor: each tensor is cut into chunks of
// kMultiTensorChunk elements, and a launch takes up to kMultiTensorMaxTensors tensors and
// kMultiTensorMaxBlocks chunks, one block per chunk. The table (pointers, sizes, and each
// block's tensor and chunk) travels as a kernel argument of about 2.5 KB, under the 4 KB
// every CUDA and HIP device takes. A tensor whose chunks do not fit the current launch
// continues in the next one, so every element is in exactly one block of one launch.
inline constexpr int kMultiTensorMaxTensors = 48;
inline constexpr int kMultiTensorMaxBlocks = 320;
inline constexpr int64_t kMultiTensorChunk = 65536;

struct MultiTensorBatch {
  int32_t num_tensors = 0;
  int32_t num_blocks = 0;
  void* data[kMultiTensorMaxTensors] = {};
  int64_t numel[kMultiTensorMaxTensors] = {};
  uint8_t block_tensor[kMultiTensorMaxBlocks] = {};
  int32_t block_chunk[kMultiTensorMaxBlocks] = {};
};

// Block b's element range [begin, end) of tensor batch.block_tensor[b].
LOOM_GPU_HD void multi_tensor_block_range(const MultiTensorBatch& batch, int b, int64_t chunk,
                                          int64_t& begin, int64_t& end) {
  const int t = batch.block_tensor[b];
  begin = static_cast<int64_t>(batch.block_chunk[b]) * chunk;
  end = begin + chunk < batch.numel[t] ? begin + chunk : batch.numel[t];
}

// Plans the launches over `count` tensors (data[i], numel[i] elements; empty ones are
// skipped) with chunks of `chunk` elements, calling launch(batch) for each full table and
// for the last one.
template <typename Launch>
void plan_multi_tensor(void* const* data, const int64_t* numel, int64_t count, int64_t chunk,
                       Launch&& launch) {
  MultiTensorBatch batch;
  for (int64_t i = 0; i < count; ++i) {
    if (numel[i] <= 0) continue;
    const int64_t chunks = (numel[i] + chunk - 1) / chunk;
    for (int64_t c = 0; c < chunks; ++c) {
      // A new tensor entry when this tensor is not the batch's last one (it begins here, or
      // it continues after a full table was launched).
      const bool listed =
          batch.num_tensors > 0 && batch.data[batch.num_tensors - 1] == data[i] && c > 0;
      if (!listed) {
        if (batch.num_tensors == kMultiTensorMaxTensors) {
          launch(batch);
          batch = MultiTensorBatch{};
        }
        batch.data[batch.num_tensors] = data[i];
        batch.numel[batch.num_tensors] = numel[i];
        ++batch.num_tensors;
      }
      batch.block_tensor[batch.num_blocks] = static_cast<uint8_t>(batch.num_tensors - 1);
      batch.block_chunk[batch.num_blocks] = static_cast<int32_t>(c);
      ++batch.num_blocks;
      if (batch.num_blocks == kMultiTensorMaxBlocks) {
        launch(batch);
        batch = MultiTensorBatch{};
      }
    }
  }
  if (batch.num_blocks > 0) launch(batch);
}

}  // namespace loom::gpu
