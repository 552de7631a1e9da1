// Multi-tensor launches (Note [Multi-tensor launches]): which block of a launch works on
// which chunk of which tensor, planned on the host into a table the kernel receives by
// value (one list, or fused Adam's lists). Host-tested (tests/gpu/multi_tensor_math_test.cc).
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
  static constexpr int kMaxTensors = kMultiTensorMaxTensors;
  int32_t num_tensors = 0;
  int32_t num_blocks = 0;
  void* data[kMultiTensorMaxTensors] = {};
  int64_t numel[kMultiTensorMaxTensors] = {};
  uint8_t block_tensor[kMultiTensorMaxBlocks] = {};
  int32_t block_chunk[kMultiTensorMaxBlocks] = {};
};

// The table of a fused Adam launch (Note [Fused Adam] in ops/decompositions/foreach.cc):
// per tensor its parameter, gradient and moments (max_exp_avg_sq null without AMSGrad)
// and its step count, read on the device (step, of dtype step_dtype) or given by value
// (step_value, when step is null). Fewer tensors than MultiTensorBatch: five pointers
// each, still under 4 KB.
struct FusedAdamTable {
  static constexpr int kMaxTensors = 24;
  int32_t num_tensors = 0;
  int32_t num_blocks = 0;
  void* param[kMaxTensors] = {};
  void* grad[kMaxTensors] = {};
  void* exp_avg[kMaxTensors] = {};
  void* exp_avg_sq[kMaxTensors] = {};
  void* max_exp_avg_sq[kMaxTensors] = {};
  const void* step[kMaxTensors] = {};
  double step_value[kMaxTensors] = {};
  int32_t step_dtype[kMaxTensors] = {};
  int64_t numel[kMaxTensors] = {};
  uint8_t block_tensor[kMultiTensorMaxBlocks] = {};
  int32_t block_chunk[kMultiTensorMaxBlocks] = {};
};

// Block b's element range [begin, end) of tensor table.block_tensor[b].
template <typename Table>
LOOM_GPU_HD void multi_tensor_block_range(const Table& table, int b, int64_t chunk, int64_t& begin,
                                          int64_t& end) {
  const int t = table.block_tensor[b];
  begin = static_cast<int64_t>(table.block_chunk[b]) * chunk;
  end = begin + chunk < table.numel[t] ? begin + chunk : table.numel[t];
}

// Plans the launches over `count` tensors of numel[i] elements (empty ones are skipped)
// with chunks of `chunk` elements: add(table, i) fills tensor i's entry at
// table.num_tensors (its pointers; numel is set here), and launch(table) runs each full
// table and the last one. A tensor cut by a full table is listed again in the next.
template <typename Table, typename Add, typename Launch>
void plan_multi_tensor_tables(const int64_t* numel, int64_t count, int64_t chunk, Add&& add,
                              Launch&& launch) {
  Table table;
  int64_t listed_index = -1;  // the caller's index of the table's last tensor
  for (int64_t i = 0; i < count; ++i) {
    if (numel[i] <= 0) continue;
    const int64_t chunks = (numel[i] + chunk - 1) / chunk;
    for (int64_t c = 0; c < chunks; ++c) {
      if (table.num_tensors == 0 || listed_index != i) {
        if (table.num_tensors == Table::kMaxTensors) {
          launch(table);
          table = Table{};
        }
        add(table, i);
        table.numel[table.num_tensors] = numel[i];
        ++table.num_tensors;
        listed_index = i;
      }
      table.block_tensor[table.num_blocks] = static_cast<uint8_t>(table.num_tensors - 1);
      table.block_chunk[table.num_blocks] = static_cast<int32_t>(c);
      ++table.num_blocks;
      if (table.num_blocks == kMultiTensorMaxBlocks) {
        launch(table);
        table = Table{};
      }
    }
  }
  if (table.num_blocks > 0) launch(table);
}

// One list of tensors (data[i], numel[i] elements) in MultiTensorBatch tables.
template <typename Launch>
void plan_multi_tensor(void* const* data, const int64_t* numel, int64_t count, int64_t chunk,
                       Launch&& launch) {
  plan_multi_tensor_tables<MultiTensorBatch>(
      numel, count, chunk,
      [&](MultiTensorBatch& batch, int64_t i) { batch.data[batch.num_tensors] = data[i]; }, launch);
}

}  // namespace loom::gpu
