// PyTorch exported programs on loom (loom/exported_program.h): every committed model of
// tests/models against PyTorch's outputs, a dynamic batch in and out of its range, the
// state and signature, the meta device, and each kind of bad archive with its message.
#include <gtest/gtest.h>
#include <zip.h>

#include <fstream>
#include <map>
#include <sstream>

#include "../frontend/frontend_test_util.h"
#include "loom/exported_program.h"
#include "loom/loom.h"

namespace loom {
namespace {

using test::expect_error;

class ExportedProgramTest : public test::LoadedRuntimeTest {};

std::string model_path(const std::string& name) {
  return std::string(LOOM_SOURCE_DIR) + "/tests/models/" + name;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The largest |a - b| / (|b| + atol / rtol) over the elements: at most `rtol` when a
// matches b within rtol relative (atol absolute near zero).
void expect_close(const Tensor& a, const Tensor& b, double rtol, double atol) {
  ASSERT_EQ(std::vector<int64_t>(a.sizes().begin(), a.sizes().end()),
            std::vector<int64_t>(b.sizes().begin(), b.sizes().end()));
  std::vector<double> x = test::values(a), y = test::values(b);
  int bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::abs(x[i] - y[i]) > atol + rtol * std::abs(y[i]) && ++bad <= 3) {
      ADD_FAILURE() << "element " << i << ": loom " << x[i] << ", PyTorch " << y[i];
    }
  }
  EXPECT_EQ(bad, 0);
}

class CommittedModel : public ExportedProgramTest,
                       public ::testing::WithParamInterface<const char*> {};

TEST_P(CommittedModel, MatchesPyTorch) {
  const std::string name = GetParam();
  ExportedProgram ep = load_exported(model_path(name + ".pt2"));
  SafetensorsFile io = load_safetensors(model_path(name + ".safetensors"));
  std::map<std::string, Tensor> tensors(io.tensors.begin(), io.tensors.end());
  std::vector<Tensor> outputs = ep({tensors.at("input_0")});
  ASSERT_EQ(outputs.size(), tensors.size() - 1);  // output_0, output_1, ... besides input_0
  // float32 within 1e-5 relative; the absolute floor covers values that cancel to ~0.
  for (size_t i = 0; i < outputs.size(); ++i) {
    SCOPED_TRACE("output_" + std::to_string(i));
    expect_close(outputs[i], tensors.at("output_" + std::to_string(i)), 1e-5, 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CommittedModel,
                         ::testing::Values("mlp", "cnn_batch_norm", "residual_block",
                                           "transformer_encoder", "lstm", "pools3d", "spectrum"));

TEST_F(ExportedProgramTest, DynamicBatchRunsAnyBatchInItsRange) {
  ExportedProgram ep = load_exported(model_path("mlp.pt2"));
  ASSERT_EQ(ep.graph().symbols().size(), 1u);
  const graph::SymbolRange& batch = ep.graph().symbols()[0];
  EXPECT_EQ(batch.min, 1);
  EXPECT_EQ(batch.max, 1024);
  for (int64_t n : {1, 37, 1024}) {
    std::vector<Tensor> out = ep({randn({n, 16})});
    EXPECT_EQ(out[0].sizes()[0], n);
    EXPECT_EQ(out[0].sizes()[1], 10);
  }
  expect_error(
      [&] {
        ep({randn({1025, 16})});
      },
      "graph",
      {"input %x has size 1025 at dimension 0, outside " + batch.symbol + "'s range [1, 1024]"});
  expect_error([&] { ep({randn({4, 15})}); }, "graph", {"found size 15 at dimension 1"});
  expect_error([&] { ep({}); }, "exported program", {"takes 1 input (x), found 0"});
}

TEST_F(ExportedProgramTest, StateSignatureAndMetaDevice) {
  ExportedProgram ep = load_exported(model_path("cnn_batch_norm.pt2"));
  EXPECT_EQ(ep.schema_major, 8);
  std::vector<std::string> names;
  for (const auto& [name, t] : ep.state()) names.push_back(name);
  EXPECT_NE(std::find(names.begin(), names.end(), "conv1.weight"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "bn1.running_var"), names.end());
  ASSERT_EQ(ep.user_inputs().size(), 1u);
  EXPECT_EQ(ep.user_inputs()[0]->name, "x");
  // Every node is served on the CPU by a kernel or a decomposition.
  for (const graph::NodeSupport& s : ep.check(Device{})) {
    EXPECT_TRUE(s.how == "kernel" || s.how == "decomposition" || s.how == "view")
        << s.node << " " << s.op << " " << s.how;
  }
  // On the meta device the program computes shapes only.
  ep.to(Device{kMeta, -1});
  std::vector<Tensor> out = ep({empty({7, 1, 28, 28}, TensorOptions().device(Device{kMeta, -1}))});
  EXPECT_EQ(out[0].device().type, kMeta);
  EXPECT_EQ(std::vector<int64_t>(out[0].sizes().begin(), out[0].sizes().end()),
            (std::vector<int64_t>{7, 10}));
}

// Copies `source` into a new archive with entries replaced (value: new bytes) or removed
// (value: nullopt); entry names are relative to the archive's folder.
std::string rewrite(const std::string& source,
                    const std::map<std::string, std::optional<std::string>>& edits) {
  std::string out_path = ::testing::TempDir() + "/rewritten.pt2";
  int error = 0;
  zip_t* in = zip_open(source.c_str(), ZIP_RDONLY, &error);
  EXPECT_NE(in, nullptr);
  std::remove(out_path.c_str());
  zip_t* out = zip_open(out_path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  EXPECT_NE(out, nullptr);
  std::vector<std::unique_ptr<std::string>> keep;
  for (zip_int64_t i = 0; i < zip_get_num_entries(in, 0); ++i) {
    std::string name = zip_get_name(in, i, 0);
    std::string relative = name.substr(name.find('/') + 1);
    std::string bytes;
    auto edit = edits.find(relative);
    if (edit != edits.end()) {
      if (!edit->second) continue;
      bytes = *edit->second;
    } else {
      zip_stat_t st;
      zip_stat_index(in, i, 0, &st);
      bytes.resize(st.size);
      zip_file_t* f = zip_fopen_index(in, i, 0);
      zip_fread(f, bytes.data(), st.size);
      zip_fclose(f);
    }
    keep.push_back(std::make_unique<std::string>(std::move(bytes)));
    zip_source_t* src = zip_source_buffer(out, keep.back()->data(), keep.back()->size(), 0);
    zip_file_add(out, name.c_str(), src, ZIP_FL_OVERWRITE);
  }
  zip_close(out);
  zip_discard(in);
  return out_path;
}

std::string entry_of(const std::string& archive, const std::string& relative) {
  int error = 0;
  zip_t* in = zip_open(archive.c_str(), ZIP_RDONLY, &error);
  std::string found;
  for (zip_int64_t i = 0; i < zip_get_num_entries(in, 0); ++i) {
    std::string name = zip_get_name(in, i, 0);
    if (name.substr(name.find('/') + 1) != relative) continue;
    zip_stat_t st;
    zip_stat_index(in, i, 0, &st);
    found.resize(st.size);
    zip_file_t* f = zip_fopen_index(in, i, 0);
    zip_fread(f, found.data(), st.size);
    zip_fclose(f);
  }
  zip_discard(in);
  return found;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST_F(ExportedProgramTest, BadArchivesGetClearErrors) {
  const std::string mlp = model_path("mlp.pt2");
  const std::string model = entry_of(mlp, "models/model.json");
  const std::string weights = entry_of(mlp, "data/weights/model_weights_config.json");
  ASSERT_FALSE(model.empty());

  expect_error([&] { load_exported("/nonexistent/model.pt2"); }, "pt2",
               {"/nonexistent/model.pt2: cannot open the file"});
  std::string bytes = read_file(mlp);
  expect_error([&] { load_exported_from_bytes("PK not really a zip", "junk.pt2"); }, "pt2",
               {"junk.pt2: not a zip archive"});
  expect_error([&] { load_exported_from_bytes(bytes.substr(0, bytes.size() / 2), "half.pt2"); },
               "pt2", {"half.pt2: not a zip archive"});
  expect_error(
      [&] {
        load_exported(rewrite(mlp, {{"models/model.json", std::nullopt}}));
      },
      "pt2", {"missing entry models/model.json"});
  expect_error(
      [&] {
        load_exported(rewrite(mlp, {{"archive_format", std::nullopt}}));
      },
      "pt2", {"not a PyTorch .pt2 archive"});
  expect_error(
      [&] {
        load_exported(rewrite(mlp, {{"models/model.json", "{\"graph_module\": "}}));
      },
      "pt2", {"models/model.json: not valid JSON"});
  expect_error(
      [&] {
        load_exported(
            rewrite(mlp, {{"models/model.json", replaced(model, "\"major\": 8", "\"major\": 9")}}));
      },
      "pt2", {"export schema version 9.", "is not one loom reads (major version 8)"});
  expect_error(
      [&] {
        load_exported(
            rewrite(mlp, {{"models/model.json", replaced(model, "torch.ops.aten.relu.default",
                                                         "torch.ops.aten.frobnicate.default")}}));
      },
      "pt2",
      {"1 node calls an operator loom does not have:\n  torch.ops.aten.frobnicate.default (node "
       "'relu')"});
  expect_error(
      [&] {
        load_exported(rewrite(mlp, {{"models/model.json", replaced(model, "\"name\": \"mat1\"",
                                                                   "\"name\": \"matrix1\"")}}));
      },
      "pt2", {"loom's loom::addmm(", "has no argument 'matrix1'"});
  expect_error(
      [&] {
        load_exported(
            rewrite(mlp, {{"models/model.json",
                           replaced(model, "\"arg\": {\"as_tensor\": {\"name\": \"relu\"}}",
                                    "\"arg\": {\"as_tensor\": {\"name\": \"nowhere\"}}")}}));
      },
      "pt2", {"reads 'nowhere', which is not defined before it"});
  expect_error(
      [&] {
        load_exported(rewrite(mlp, {{"data/weights/weight_0", std::string(100, '\0')}}));
      },
      "pt2", {"state entry 'fc1.weight': its float32 layout spans 2048 bytes, but", "holds 100"});
  expect_error(
      [&] {
        load_exported(
            rewrite(mlp, {{"data/weights/model_weights_config.json",
                           replaced(weights, "\"use_pickle\": false", "\"use_pickle\": true")}}));
      },
      "pt2", {"is pickled, which loom does not read"});
  expect_error(
      [&] {
        load_exported(rewrite(mlp, {{"data/weights/model_weights_config.json",
                                     replaced(weights, "\"dtype\": 7", "\"dtype\": 9")}}));
      },
      "pt2", {"dtype 9 of the export schema has no loom dtype"});
  // A flipped byte in a weight's data fails its CRC.
  std::string flipped = bytes;
  size_t data_at = flipped.find("weight_0");
  ASSERT_NE(data_at, std::string::npos);
  flipped[data_at + 200] = static_cast<char>(flipped[data_at + 200] ^ 0x5a);  // past the header
  expect_error([&] { load_exported_from_bytes(flipped, "flipped.pt2"); }, "pt2", {"flipped.pt2"});
}

}  // namespace
}  // namespace loom
