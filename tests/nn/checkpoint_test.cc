// Checkpoints: safetensors round trips of every dtype, a model and its optimizer restored
// exactly, and the refusals (truncated, corrupt, mismatched files) that leave the model
// and optimizer unchanged; writes are atomic (no temporary file left behind).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../frontend/frontend_test_util.h"
#include "loom/checkpoint.h"
#include "loom/loom.h"
#include "loom/nn.h"
#include "loom/optim.h"
#include "loom/safetensors.h"

namespace loom {
namespace {

using test::expect_error;
using test::values;

class Checkpoint : public test::LoadedRuntimeTest {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("loom_checkpoint_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

// A model after two Adam steps, so the optimizer has state.
struct Trained {
  nn::Sequential net{nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 2)};
  optim::Adam adam{net->parameters(), optim::AdamOptions(0.01)};
  Trained() {
    for (int i = 0; i < 2; ++i) {
      adam.zero_grad();
      net(ones({5, 3})).sum().backward();
      adam.step();
    }
  }
};

TEST_F(Checkpoint, SafetensorsRoundTripsEveryDtypeAndLayout) {
  NamedTensorList in = {
      {"f32", arange(6, TensorOptions().dtype(ScalarType::Float32)).view({2, 3}).t()},
      {"i64", tensor({int64_t{-3}, int64_t{7}})},
      {"u8", full({3}, 200, TensorOptions().dtype(ScalarType::UInt8))},
      {"f64_scalar", full({}, 2.5, TensorOptions().dtype(ScalarType::Float64))},
      {"empty", zeros({0, 4})}};
  save_safetensors(path("t.safetensors"), in, {{"k", "v"}});
  SafetensorsFile out = load_safetensors(path("t.safetensors"));
  ASSERT_EQ(out.tensors.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out.tensors[i].first, in[i].first);
    EXPECT_EQ(out.tensors[i].second.dtype(), in[i].second.dtype());
    EXPECT_EQ(values(out.tensors[i].second), values(in[i].second)) << in[i].first;
  }
  EXPECT_EQ(out.metadata.at("k"), "v");
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir_))
    files.push_back(e.path().filename());
  EXPECT_EQ(files, (std::vector<std::string>{"t.safetensors"}));  // no temporary left
  expect_error(
      [&] {
        save_safetensors(path("d"), {{"a", zeros({1})}, {"a", zeros({1})}});
      },
      "safetensors", "given twice");
}

TEST_F(Checkpoint, ModelAndOptimizerResumeExactly) {
  Trained a;
  save_checkpoint(path("ck"), *a.net, &a.adam, {{"epoch", "3"}});
  manual_seed(123);  // other initial values
  nn::Sequential fresh(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 2));
  optim::Adam adam(fresh->parameters(), optim::AdamOptions(0.5));
  EXPECT_EQ(load_checkpoint(path("ck"), *fresh, &adam).at("epoch"), "3");
  EXPECT_EQ(adam.lr(0), 0.01);
  EXPECT_EQ(adam.state(0, 0).step, 2);
  // One more step on both gives the same parameters, bit for bit.
  a.adam.zero_grad();
  a.net(ones({5, 3})).sum().backward();
  a.adam.step();
  adam.zero_grad();
  fresh(ones({5, 3})).sum().backward();
  adam.step();
  auto want = a.net->named_parameters(), got = fresh->named_parameters();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(values(got[i].second), values(want[i].second));
}

TEST_F(Checkpoint, BadFilesAreRefusedAndChangeNothing) {
  Trained a;
  save_checkpoint(path("ck"), *a.net, &a.adam);
  Trained b;
  const std::vector<double> before = values(b.net->named_parameters()[0].second);
  const int64_t steps_before = b.adam.state(0, 0).step;
  auto unchanged = [&] {
    EXPECT_EQ(values(b.net->named_parameters()[0].second), before);
    EXPECT_EQ(b.adam.state(0, 0).step, steps_before);
  };
  // Truncated: the data ends early.
  std::filesystem::copy_file(path("ck"), path("cut"));
  std::filesystem::resize_file(path("cut"), std::filesystem::file_size(path("cut")) - 10);
  expect_error([&] { load_checkpoint(path("cut"), *b.net, &b.adam); }, "safetensors",
               "outside the");
  unchanged();
  // A corrupt header.
  {
    std::fstream f(path("ck"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    f.write("#", 1);
  }
  expect_error([&] { load_checkpoint(path("ck"), *b.net, &b.adam); }, "safetensors",
               "not a JSON object");
  expect_error([&] { load_checkpoint(path("absent"), *b.net); }, "safetensors", "cannot open");
  { std::ofstream(path("tiny")) << "abc"; }
  expect_error([&] { load_checkpoint(path("tiny"), *b.net); }, "safetensors", "8-byte");
  {
    std::ofstream f(path("huge"), std::ios::binary);
    f.write("\xff\xff\xff\xff\xff\xff\xff\x7f", 8);
  }
  expect_error([&] { load_checkpoint(path("huge"), *b.net); }, "safetensors", "does not fit");
  unchanged();
  // A model of another shape.
  nn::Sequential other(nn::Linear(3, 5), nn::ReLU(), nn::Linear(5, 2));
  save_checkpoint(path("other"), *other);
  expect_error([&] { load_checkpoint(path("other"), *b.net); }, "load_state_dict",
               {"'0.weight'", "expected shape [4, 3], found [5, 3]"});
  unchanged();
  // A model without optimizer state, loaded with an optimizer.
  save_checkpoint(path("model_only"), *a.net);
  expect_error([&] { load_checkpoint(path("model_only"), *b.net, &b.adam); }, "load_checkpoint",
               "no optimizer state");
  unchanged();
  // Optimizer state of another model: refused before the model changes.
  optim::Adam other_adam(other->parameters());
  other_adam.zero_grad();
  other(ones({1, 3})).sum().backward();
  other_adam.step();
  NamedTensorList mixed;
  for (auto& [k, t] : a.net->state_dict()) mixed.emplace_back("model." + k, t);
  for (auto& [k, t] : other_adam.state_dict()) mixed.emplace_back("optimizer." + k, t);
  save_safetensors(path("mixed"), mixed);
  expect_error(
      [&] { load_checkpoint(path("mixed"), *b.net, &b.adam); }, "Adam",
      {"state.0.0.exp_avg", "expected float32 [4, 3] (its parameter's), found float32 [5, 3]"});
  unchanged();
}

}  // namespace
}  // namespace loom
