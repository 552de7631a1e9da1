// TensorDataset, the MNIST-format loader and DataLoader with its prefetch thread.
#include "loom/data/dataloader.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>

#include "loom/autograd.h"
#include "loom/core/device_runtime.h"
#include "loom/core/error.h"
#include "loom/core/read_section.h"
#include "loom/core/type_promotion.h"
#include "loom/data/idx.h"
#include "loom/factories.h"
#include "loom/operators.h"
#include "loom/ops/generated/ops.h"

namespace loom::data {

TensorDataset::TensorDataset(Tensor data, Tensor targets)
    : data_(std::move(data)), targets_(std::move(targets)) {
  LOOM_CHECK(data_.defined() && targets_.defined() && data_.dim() >= 1 && targets_.dim() >= 1,
             "data::TensorDataset", "expected defined data and targets of at least 1 dimension");
  LOOM_CHECK(data_.size(0) == targets_.size(0), "data::TensorDataset",
             "expected data and targets with the same first dimension, found ",
             shape_to_string(data_.sizes()), " and ", shape_to_string(targets_.sizes()));
  LOOM_CHECK(data_.device().type == kCPU && targets_.device().type == kCPU, "data::TensorDataset",
             "expected CPU tensors (move batches to the device)");
  data_ = loom::contiguous(data_);
  targets_ = loom::contiguous(targets_);
}

namespace {

std::string find_file(const std::string& root, const std::string& stem) {
  for (const std::string& name : {stem + ".gz", stem}) {
    std::filesystem::path p = std::filesystem::path(root) / name;
    if (std::filesystem::exists(p)) return p.string();
  }
  fail_with(ErrorCode::NotFound, "data::load_mnist_format", "neither ", stem, ".gz nor ", stem,
            " is in '", root, "'");
}

}  // namespace

TensorDataset load_mnist_format(const std::string& root, Split split, double mean, double std) {
  const char* what = "data::load_mnist_format";
  LOOM_CHECK(std::filesystem::is_directory(root), what, "'", root,
             "' is not a directory (Debian's dataset-fashion-mnist installs "
             "/usr/share/datasets/fashion-mnist)");
  LOOM_CHECK(std > 0, what, "expected std > 0, found ", std);
  const std::string prefix = split == Split::Train ? "train" : "t10k";
  const std::string images_path = find_file(root, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(root, prefix + "-labels-idx1-ubyte");
  Tensor images = read_idx(images_path);
  Tensor labels = read_idx(labels_path);
  LOOM_CHECK(images.dtype() == ScalarType::UInt8 && images.dim() == 3, what, "'", images_path,
             "': expected uint8 images [N, H, W], found ", scalar_type_name(images.dtype()), " ",
             shape_to_string(images.sizes()));
  LOOM_CHECK(labels.dtype() == ScalarType::UInt8 && labels.dim() == 1, what, "'", labels_path,
             "': expected uint8 labels [N], found ", scalar_type_name(labels.dtype()), " ",
             shape_to_string(labels.sizes()));
  LOOM_CHECK(images.size(0) == labels.size(0), what, "'", images_path, "' has ", images.size(0),
             " images but '", labels_path, "' has ", labels.size(0), " labels");
  NoGradGuard no_grad;
  Tensor x = loom::to(images, ScalarType::Float32);
  x = (x * (1.0 / 255.0) - mean) * (1.0 / std);
  x = loom::unsqueeze(x, 1);
  return TensorDataset(x, loom::to(labels, ScalarType::Int64));
}

// Note [Prefetching batches]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// An epoch's batches are assembled on one background thread into a queue of at most
// `prefetch` batches; the consumer pops them in order. Assembly is a row gather with
// memcpy from the contiguous dataset (no ops: ops on a second thread would start a second
// team of compute threads beside the training's). The producer stops when the epoch ends,
// when the consumer leaves (the epoch's destructor sets `stop` and joins), or on an error,
// which the consumer rethrows.
class DataLoader::Epoch {
 public:
  Epoch(const TensorDataset& dataset, const DataLoaderOptions& options, uint64_t epoch)
      : dataset_(dataset), options_(options) {
    order_.resize(static_cast<size_t>(dataset.size()));
    std::iota(order_.begin(), order_.end(), 0);
    if (options.shuffle) {
      std::mt19937_64 rng(options.seed * 0x9E3779B97F4A7C15ull + epoch);
      // Fisher-Yates with our own bounded draw (the standard distributions differ
      // between library versions; this order must not).
      for (size_t i = order_.size(); i > 1; --i) {
        size_t j = static_cast<size_t>(rng() % i);
        std::swap(order_[i - 1], order_[j]);
      }
    }
    if (options.sampler) {
      // This rank's share: padded (or cut) to a multiple of the replicas, every
      // num_replicas-th index from its rank.
      const DistributedSampler& s = *options.sampler;
      const size_t total = static_cast<size_t>(s.samples_per_rank(dataset.size()) * s.num_replicas);
      std::vector<int64_t> all = order_;
      for (size_t i = 0; all.size() < total; ++i) all.push_back(order_[i % order_.size()]);
      all.resize(total);
      order_.clear();
      for (size_t i = static_cast<size_t>(s.rank); i < total;
           i += static_cast<size_t>(s.num_replicas)) {
        order_.push_back(all[i]);
      }
    }
    const int64_t n = static_cast<int64_t>(order_.size()), b = options.batch_size;
    num_batches_ = options.drop_last ? n / b : (n + b - 1) / b;
    if (options.prefetch > 0) worker_ = std::thread([this] { produce(); });
  }

  ~Epoch() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

  // The next batch, or false at the end of the epoch.
  bool next(Example& out) {
    if (options_.prefetch == 0) {
      if (next_batch_ >= num_batches_) return false;
      out = assemble(next_batch_++);
      return true;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !queue_.empty() || finished_ || error_; });
    if (error_) std::rethrow_exception(error_);
    if (queue_.empty()) return false;
    out = std::move(queue_.front());
    queue_.pop_front();
    changed_.notify_all();
    return true;
  }

 private:
  Example assemble(int64_t batch) const {
    const int64_t begin = batch * options_.batch_size;
    const int64_t end = std::min<int64_t>(begin + options_.batch_size, dataset_.size());
    return {gather(dataset_.data(), begin, end), gather(dataset_.targets(), begin, end)};
  }

  Tensor gather(const Tensor& source, int64_t begin, int64_t end) const {
    std::vector<int64_t> sizes(source.sizes().begin(), source.sizes().end());
    sizes[0] = end - begin;
    Tensor out = loom::empty(
        sizes, TensorOptions().dtype(source.dtype()).pinned_memory(options_.pin_memory));
    const size_t row = static_cast<size_t>(source.numel() / std::max<int64_t>(source.size(0), 1)) *
                       element_size(source.dtype());
    const auto* src = static_cast<const uint8_t*>(source.data_ptr());
    auto* dst = static_cast<uint8_t*>(out.data_ptr());
    for (int64_t i = begin; i < end; ++i) {
      std::memcpy(dst + static_cast<size_t>(i - begin) * row,
                  src + static_cast<size_t>(order_[static_cast<size_t>(i)]) * row, row);
    }
    return out;
  }

  void produce() {
    try {
      for (int64_t b = 0; b < num_batches_; ++b) {
        Example e = assemble(b);
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(
            lock, [&] { return stop_ || static_cast<int64_t>(queue_.size()) < options_.prefetch; });
        if (stop_) return;
        queue_.push_back(std::move(e));
        changed_.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_ = true;
    }
    changed_.notify_all();
  }

  TensorDataset dataset_;  // two tensor handles: the loader may go first
  DataLoaderOptions options_;
  std::vector<int64_t> order_;
  int64_t num_batches_ = 0;
  int64_t next_batch_ = 0;  // without prefetch
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Example> queue_;
  bool stop_ = false, finished_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

DataLoader::DataLoader(TensorDataset dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  LOOM_CHECK(options.batch_size > 0, "data::DataLoader", "expected batch_size > 0, found ",
             options.batch_size);
  LOOM_CHECK(options.prefetch >= 0, "data::DataLoader", "expected prefetch >= 0, found ",
             options.prefetch);
  if (options.sampler) {
    const DistributedSampler& s = *options.sampler;
    LOOM_CHECK(s.num_replicas >= 1 && s.rank >= 0 && s.rank < s.num_replicas,
               "data::DistributedSampler", "expected 0 <= rank < num_replicas, found rank ", s.rank,
               " of ", s.num_replicas);
    LOOM_CHECK(dataset_.size() > 0 || s.drop_last, "data::DistributedSampler",
               "expected a non-empty dataset");
  }
  if (options.pin_memory) {
    ReadSection section;
    (void)pinned_host_allocator(-1, "data::DataLoader");  // throws when nothing lends it
  }
}

int64_t DataLoader::num_batches() const {
  const int64_t n =
      options_.sampler ? options_.sampler->samples_per_rank(dataset_.size()) : dataset_.size();
  const int64_t b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

DataLoader::Iterator DataLoader::begin() {
  Iterator it;
  it.epoch_ = std::make_shared<Epoch>(dataset_, options_, epoch_++);
  it.done_ = !it.epoch_->next(it.current_);
  if (it.done_) it.epoch_.reset();
  return it;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  done_ = !epoch_->next(current_);
  if (done_) epoch_.reset();
  return *this;
}

}  // namespace loom::data
