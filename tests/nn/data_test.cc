// loom::data: IDX files (plain and gzip, every element type, and the corrupt cases), the
// MNIST-format loader's errors, and the DataLoader's batching, shuffling, drop_last and
// prefetching.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "../frontend/frontend_test_util.h"
#include "loom/data.h"
#include "loom/loom.h"

namespace loom {
namespace {

using test::expect_error;
using test::values;

class Data : public test::LoadedRuntimeTest {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("loom_data_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::vector<uint8_t>& bytes, bool gzip) {
    std::string path = (dir_ / name).string();
    if (gzip) {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(path, std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()),
                 static_cast<std::streamsize>(bytes.size()));
    }
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(Data, ReadsPlainAndGzipIdxOfEveryType) {
  std::vector<uint8_t> u8 = {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 255};
  for (bool gzip : {false, true}) {
    Tensor t = data::read_idx(write(gzip ? "u8.gz" : "u8", u8, gzip));
    EXPECT_EQ(t.dtype(), ScalarType::UInt8);
    EXPECT_EQ(std::vector<int64_t>(t.sizes().begin(), t.sizes().end()),
              (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(values(t), (std::vector<double>{1, 2, 3, 4, 5, 255}));
  }
  // Big-endian int32 -2 and 258, float32 1.5.
  Tensor i32 = data::read_idx(
      write("i32", {0, 0, 0x0C, 1, 0, 0, 0, 2, 0xFF, 0xFF, 0xFF, 0xFE, 0, 0, 1, 2}, false));
  EXPECT_EQ(values(i32), (std::vector<double>{-2, 258}));
  Tensor f32 = data::read_idx(write("f32", {0, 0, 0x0D, 1, 0, 0, 0, 1, 0x3F, 0xC0, 0, 0}, true));
  EXPECT_EQ(values(f32), (std::vector<double>{1.5}));
}

TEST_F(Data, CorruptIdxFilesAreErrorsNamingTheFile) {
  expect_error([&] { data::read_idx((dir_ / "none").string()); }, "read_idx", "cannot open");
  expect_error(
      [&] {
        data::read_idx(write("magic", {1, 2, 8, 1, 0, 0, 0, 0}, false));
      },
      "read_idx", {"magic", "IDX magic"});
  expect_error(
      [&] {
        data::read_idx(write("type", {0, 0, 0x07, 1, 0, 0, 0, 0}, false));
      },
      "read_idx", "element type code");
  expect_error(
      [&] {
        data::read_idx(write("short", {0, 0, 8, 2, 0, 0, 0, 2}, false));
      },
      "read_idx", "truncated header");
  expect_error(
      [&] {
        data::read_idx(write("body", {0, 0, 8, 1, 0, 0, 0, 3, 1, 2}, true));
      },
      "read_idx", {"need 3 bytes", "found 2 (truncated)"});
  expect_error(
      [&] {
        data::read_idx(write("long", {0, 0, 8, 1, 0, 0, 0, 1, 1, 2}, false));
      },
      "read_idx", "trailing data");
  expect_error(
      [&] {
        data::read_idx(
            write("huge", {0, 0, 8, 2, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, false));
      },
      "read_idx", "describe more than");
  // A gzip file cut short.
  std::string good = write("cut.gz", std::vector<uint8_t>(4000, 0), true);
  std::filesystem::resize_file(good, std::filesystem::file_size(good) / 2);
  EXPECT_THROW(data::read_idx(good), Error);
}

TEST_F(Data, MnistLoaderNamesWhatIsMissing) {
  expect_error([&] { data::load_mnist_format((dir_ / "absent").string(), data::Split::Train); },
               "data::load_mnist_format", "not a directory");
  expect_error([&] { data::load_mnist_format(dir_.string(), data::Split::Test); },
               "data::load_mnist_format", "t10k-images-idx3-ubyte");
  write("t10k-images-idx3-ubyte", {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 255}, true);
  write("t10k-labels-idx1-ubyte.gz", {0, 0, 8, 1, 0, 0, 0, 3, 1, 2, 3}, true);
  expect_error([&] { data::load_mnist_format(dir_.string(), data::Split::Test); },
               "data::load_mnist_format", "has 2 images but");
  write("t10k-labels-idx1-ubyte.gz", {0, 0, 8, 1, 0, 0, 0, 2, 7, 9}, true);
  data::TensorDataset ds = data::load_mnist_format(dir_.string(), data::Split::Test, 0.5, 0.5);
  EXPECT_EQ(values(ds.data()), (std::vector<double>{-1.0, 1.0}));
  EXPECT_EQ(values(ds.targets()), (std::vector<double>{7, 9}));
  EXPECT_EQ(ds.targets().dtype(), ScalarType::Int64);
}

std::vector<double> epoch_order(data::DataLoader& loader) {
  std::vector<double> out;
  for (const data::Example& batch : loader) {
    for (double v : values(batch.target)) out.push_back(v);
  }
  return out;
}

TEST_F(Data, LoaderBatchesShufflesAndDropsTheLastBatch) {
  data::TensorDataset ds(arange(10).view({10, 1}) * 2, arange(10));
  data::DataLoaderOptions opts;
  opts.batch_size = 4;
  opts.shuffle = false;
  data::DataLoader ordered(ds, opts);
  std::vector<int64_t> sizes;
  for (const data::Example& b : ordered) {
    sizes.push_back(b.data.size(0));
    EXPECT_EQ(values(b.data)[0], 2 * values(b.target)[0]);  // rows stay paired
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(ordered.num_batches(), 3);
  opts.drop_last = true;
  EXPECT_EQ(data::DataLoader(ds, opts).num_batches(), 2);
  EXPECT_EQ(epoch_order(*std::make_unique<data::DataLoader>(ds, opts)).size(), 8u);

  opts.drop_last = false;
  opts.shuffle = true;
  opts.seed = 7;
  data::DataLoader shuffled(ds, opts);
  std::vector<double> first = epoch_order(shuffled), second = epoch_order(shuffled);
  EXPECT_EQ(std::set<double>(first.begin(), first.end()).size(), 10u);
  EXPECT_NE(first, second);  // a new order each epoch
  data::DataLoader same_seed(ds, opts);
  EXPECT_EQ(epoch_order(same_seed), first);
  opts.prefetch = 0;  // the same order without the background thread
  data::DataLoader inline_loader(ds, opts);
  EXPECT_EQ(epoch_order(inline_loader), first);
}

TEST_F(Data, LeavingAnEpochEarlyStopsItsThread) {
  data::TensorDataset ds(zeros({1000, 3}), zeros({1000}));
  data::DataLoaderOptions opts;
  opts.batch_size = 1;
  data::DataLoader loader(ds, opts);
  int seen = 0;
  for (const data::Example& b : loader) {
    (void)b;
    if (++seen == 3) break;
  }
  EXPECT_EQ(seen, 3);
  expect_error([&] { data::DataLoader(ds, data::DataLoaderOptions{.batch_size = 0}); },
               "data::DataLoader", "batch_size > 0");
  expect_error(
      [&] {
        data::TensorDataset(zeros({3, 1}), zeros({4}));
      },
      "data::TensorDataset", "same first dimension");
}

}  // namespace
}  // namespace loom
