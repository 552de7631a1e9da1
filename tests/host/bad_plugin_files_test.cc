// Damaged plugin files never take the process down: a section header claiming a huge
// .dynsym, a truncated file and a directory named like a plugin each get their own
// message, an optional plugin that is damaged is skipped, and a bounded, seeded mutation
// loop over real plugin files, manifests and schema strings finds no crash, no abort and
// no exception other than loom::Error (Note [Sizes read from a plugin file]).
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "../dispatcher/dispatch_test_util.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/elf_inspection.h"
#include "loom/dispatcher/function_schema.h"
#include "loom/dispatcher/manifest.h"
#include "loom/dispatcher/plugin_host.h"
#include "loom/loom.h"
#include "loom/ops/standard_library.h"

namespace loom::testing {
namespace {

namespace fs = std::filesystem;
using dispatch::PluginHost;

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A fresh directory under the system's temp dir, removed at the end of the test.
class BadPluginFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    ops::load_standard_library();
    dir_ = fs::temp_directory_path() /
           ("loom_bad_plugins_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    plugin_ = read_bytes(std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom_plugin_test_ops.so");
    ASSERT_GT(plugin_.size(), sizeof(Elf64_Ehdr));
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The section header of the test plugin's .dynsym.
  Elf64_Shdr* dynsym(std::vector<char>& bytes) {
    Elf64_Ehdr header;
    std::memcpy(&header, bytes.data(), sizeof(header));
    auto* sections = reinterpret_cast<Elf64_Shdr*>(bytes.data() + header.e_shoff);
    for (int i = 0; i < header.e_shnum; ++i) {
      if (sections[i].sh_type == SHT_DYNSYM) return &sections[i];
    }
    return nullptr;
  }

  fs::path dir_;
  std::vector<char> plugin_;
};

TEST_F(BadPluginFiles, AHugeDynsymClaimIsReportedNotAllocated) {
  std::vector<char> bytes = plugin_;
  Elf64_Shdr* table = dynsym(bytes);
  ASSERT_NE(table, nullptr);
  table->sh_size = uint64_t{3} << 30;  // 3 GiB
  const fs::path file = dir_ / "libloom_plugin_huge.so";
  write_bytes(file, bytes);
  expect_error([&] { PluginHost::instance().load(file.string()); }, "plugin-host",
               {"is damaged", ".dynsym claims 3221225472 bytes"});
  // Optional in a manifest: reported and skipped, the process goes on.
  const std::string manifest = "plugins { path: \"" + file.string() + "\" optional: true }";
  loom::Runtime runtime = loom::Runtime::load(dispatch::parse_manifest(manifest, "<test>"));
  ASSERT_EQ(runtime.report().skipped.size(), 1u);
  EXPECT_NE(runtime.report().skipped[0].second.find(".dynsym claims"), std::string::npos);
}

TEST_F(BadPluginFiles, ATruncatedFileSaysSo) {
  std::vector<char> bytes(plugin_.begin(), plugin_.begin() + plugin_.size() / 2);
  const fs::path file = dir_ / "libloom_plugin_truncated.so";
  write_bytes(file, bytes);
  expect_error([&] { PluginHost::instance().load(file.string()); }, "plugin-host",
               {"is damaged", "section header table is truncated"});
}

TEST_F(BadPluginFiles, ADirectoryNamedLikeAPluginIsNotMissing) {
  fs::create_directories(dir_ / "libloom_plugin_dirplugin.so");
  dispatch::PluginRequest request;
  request.name = "dirplugin";
  expect_error([&] { dispatch::resolve_plugin_file(request, {dir_.string()}); }, "plugin-host",
               {"is a directory, not a plugin file"});
  dispatch::PluginRequest by_path;
  by_path.path = (dir_ / "libloom_plugin_dirplugin.so").string();
  expect_error([&] { dispatch::resolve_plugin_file(by_path, {}); }, "plugin-host",
               {"is a directory, not a plugin file"});
}

// Note [Mutation loop]
// ~~~~~~~~~~~~~~~~~~~~
// A bounded, seeded loop (the same cases every run): bit flips, bytes set to boundary
// values, header fields set to huge values, and truncations. Plugin files go through the
// inspector only: a file the inspector accepts would next be mapped by the dynamic
// loader, which trusts ELF files and may crash on a hostile one (the host never maps a
// file the inspector refused). Manifests and schemas go through their parsers, which may
// only throw loom::Error.
TEST_F(BadPluginFiles, MutatedPluginsManifestsAndSchemasNeverCrash) {
  std::mt19937_64 rng(20261123);
  auto pick = [&](uint64_t n) { return n == 0 ? 0 : rng() % n; };
  const char boundary[] = {0, 1, 0x7f, static_cast<char>(0x80), static_cast<char>(0xff)};
  const fs::path file = dir_ / "libloom_plugin_mutant.so";
  int refused_files = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<char> bytes = plugin_;
    const int kind = round % 4;
    if (kind == 3) {
      bytes.resize(pick(bytes.size()));
    } else {
      Elf64_Ehdr header;
      std::memcpy(&header, bytes.data(), sizeof(header));
      // Aim at the parts the inspector reads: the header and the section header table.
      const uint64_t table = header.e_shoff;
      const uint64_t span = uint64_t{header.e_shnum} * sizeof(Elf64_Shdr);
      for (int m = 0; m < 4; ++m) {
        uint64_t at = (rng() & 1) ? pick(sizeof(Elf64_Ehdr)) : table + pick(span);
        if (at >= bytes.size()) continue;
        if (kind == 0) bytes[at] = static_cast<char>(bytes[at] ^ (1 << pick(8)));
        if (kind == 1) bytes[at] = boundary[pick(sizeof(boundary))];
        if (kind == 2 && at + 8 <= bytes.size()) std::memset(&bytes[at], 0x7f, 8);
      }
    }
    write_bytes(file, bytes);
    dispatch::ElfInspection result =
        dispatch::inspect_shared_object(file.string(), LOOM_PLUGIN_ENTRY_SYMBOL);
    // Whatever the damage: a verdict, and a reason whenever the file is refused.
    if (result.exports_symbol) {
      EXPECT_TRUE(result.is_64bit_shared);
    }
    if (!result.is_64bit_shared) {
      EXPECT_FALSE(result.problem.empty()) << "round " << round;
    }
    refused_files += result.exports_symbol && result.problem.empty() ? 0 : 1;
  }
  EXPECT_GT(refused_files, 0);
  const std::string manifest =
      "search_dirs: \"$ORIGIN/../lib\"\nplugins { name: \"cpu\" options { key: \"a\" value: "
      "\"b\" } }\nplugins { path: \"/x/libloom_plugin_y.so\" optional: true }\n";
  const std::string schema =
      "loom::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)";
  int rejected = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string text = round % 2 == 0 ? manifest : schema;
    for (int m = 0, n = 1 + static_cast<int>(pick(4)); m < n; ++m) {
      const uint64_t at = pick(text.size());
      switch (pick(4)) {
        case 0:
          text[at] = static_cast<char>(text[at] ^ (1 << pick(8)));
          break;
        case 1:
          text.erase(at, 1 + pick(8));
          break;
        case 2:
          text.insert(at, 1, "(){}[]\"\\:,*!?=-0x"[pick(17)]);
          break;
        default:
          text.resize(at);
          break;
      }
    }
    try {
      if (round % 2 == 0) {
        dispatch::parse_manifest(text, "<fuzz>");
      } else {
        dispatch::parse_schema(text);
      }
    } catch (const Error&) {
      ++rejected;  // a clear error is the expected outcome for most mutants
    }
  }
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace loom::testing
