// Datasets and the DataLoader of the C++ API: a TensorDataset (inputs and targets
// indexed along their first dimension), Fashion-MNIST/MNIST from IDX files, and a loader
// that shuffles (seeded, a new order each epoch), batches, drops the last partial batch
// on request and assembles the next batches on a background thread while the current
// one is used.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "loom/ops/tensor.h"

namespace loom::data {

// A batch (or one example): inputs and targets.
struct Example {
  Tensor data;
  Tensor target;
};

// Inputs and targets on the CPU with the same first dimension.
class TensorDataset {
 public:
  TensorDataset(Tensor data, Tensor targets);
  int64_t size() const { return data_.size(0); }
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_, targets_;
};

// Fashion-MNIST or MNIST from a directory holding the four IDX files
// (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-...): images as
// float32 [N, 1, 28, 28] scaled to [0, 1] then normalised with (x - mean) / std, labels
// as int64 [N]. Errors name the missing or bad file.
enum class Split { Train, Test };
TensorDataset load_mnist_format(const std::string& root, Split split, double mean = 0.0,
                                double std = 1.0);

// A rank's share of each epoch, as torch.utils.data.DistributedSampler: the epoch's order
// (the same on every rank: it depends on the seed and the epoch only) padded with its first
// indices to a multiple of num_replicas (or cut to one, with drop_last), and this rank
// takes every num_replicas-th index from `rank`.
struct DistributedSampler {
  int64_t num_replicas = 1;
  int64_t rank = 0;
  bool drop_last = false;
  // The number of samples each rank gets from a dataset of `size`.
  int64_t samples_per_rank(int64_t size) const {
    return drop_last ? size / num_replicas : (size + num_replicas - 1) / num_replicas;
  }
};

struct DataLoaderOptions {
  int64_t batch_size = 64;
  bool shuffle = true;
  bool drop_last = false;
  uint64_t seed = 0;     // the shuffle order of epoch e comes from (seed, e)
  int64_t prefetch = 2;  // batches assembled ahead on a background thread; 0: none
  // Batches assembled in pinned host memory (Note [Pinned host memory]), so that
  // `batch.data.to(device, /*non_blocking=*/true)` is queued without a wait; needs a loaded
  // device plugin that lends it (refused at construction otherwise).
  bool pin_memory = false;
  std::optional<DistributedSampler> sampler;  // set: this rank's share of each epoch
};

// for (const Example& batch : loader) { ... } runs one epoch; each loop is the next
// epoch (a new order when shuffling). Leaving the loop early stops the background thread.
class DataLoader {
 public:
  DataLoader(TensorDataset dataset, DataLoaderOptions options);
  int64_t num_batches() const;
  const DataLoaderOptions& options() const { return options_; }
  const TensorDataset& dataset() const { return dataset_; }

  class Epoch;
  class Iterator {
   public:
    using value_type = Example;
    using difference_type = std::ptrdiff_t;
    const Example& operator*() const { return current_; }
    const Example* operator->() const { return &current_; }
    Iterator& operator++();
    bool operator==(const Iterator& o) const { return done_ == o.done_; }

   private:
    friend class DataLoader;
    std::shared_ptr<Epoch> epoch_;
    Example current_;
    bool done_ = true;
  };
  // Starts the next epoch.
  Iterator begin();
  // The number of epochs begun; set it to resume a run (epoch e's order depends on e).
  uint64_t epoch() const { return epoch_; }
  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  Iterator end() { return Iterator(); }

 private:
  TensorDataset dataset_;
  DataLoaderOptions options_;
  uint64_t epoch_ = 0;
};

}  // namespace loom::data
