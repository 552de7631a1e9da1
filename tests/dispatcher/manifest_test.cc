// Tests for deployment manifests: text-format parsing, error positions, semantic checks,
// the embedded default, search-path construction and plugin file resolution.
#include "loom/dispatcher/manifest.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loom/core/error.h"

namespace loom::dispatch {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Runs `fn`, expects it to throw loom::Error with `component`, returns the message.
template <typename Fn>
std::string ErrorFrom(Fn&& fn, const std::string& component) {
  try {
    fn();
  } catch (const loom::Error& e) {
    EXPECT_EQ(e.component(), component) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a loom::Error from component " << component;
  return "";
}

std::string ParseError(const std::string& text, const std::string& source = "deploy.textproto") {
  return ErrorFrom([&] { parse_manifest(text, source); }, "manifest");
}

fs::path ExecutableDir() {
  return fs::read_symlink("/proc/self/exe").parent_path();
}

// Sets (or unsets, for nullopt) an environment variable for the lifetime of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), /*overwrite=*/1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A fresh directory under the system temp dir, removed afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            ("loom_manifest_test_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // Creates root_/relative (and its parents) as a file with `contents`; returns its path.
  std::string MakeFile(const std::string& relative, const std::string& contents = "") {
    fs::path p = root_ / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << contents;
    return p.string();
  }
  std::string MakeDir(const std::string& relative) {
    fs::create_directories(root_ / relative);
    return (root_ / relative).string();
  }

  fs::path root_;
};

// --- Parsing valid manifests -------------------------------------------------------------

TEST(ParseManifestTest, ParsesAllFields) {
  constexpr char kText[] = R"(
    # Comments are allowed.
    search_dirs: "/opt/loom/plugins"
    search_dirs: "$ORIGIN/plugins"
    plugins {
      name: "cuda_12"
      options { key: "stream_pool" value: "4" }
      options { key: "device" value: "0" }
      options: { key: "arch", value: "sm_90" }
    }
    plugins { path: "/opt/vendor/libaccel.so" optional: true }
  )";
  DeploymentManifest m = parse_manifest(kText, "<string>");
  EXPECT_EQ(m.source, "<string>");
  EXPECT_THAT(m.search_dirs, ElementsAre("/opt/loom/plugins", "$ORIGIN/plugins"));
  ASSERT_EQ(m.plugins.size(), 2u);

  EXPECT_EQ(m.plugins[0].name, "cuda_12");
  EXPECT_EQ(m.plugins[0].path, "");
  EXPECT_TRUE(m.plugins[0].required);
  using Option = std::pair<std::string, std::string>;
  EXPECT_THAT(m.plugins[0].options, ElementsAre(Option("arch", "sm_90"), Option("device", "0"),
                                                Option("stream_pool", "4")));

  EXPECT_EQ(m.plugins[1].name, "");
  EXPECT_EQ(m.plugins[1].path, "/opt/vendor/libaccel.so");
  EXPECT_FALSE(m.plugins[1].required);
  EXPECT_TRUE(m.plugins[1].options.empty());
}

TEST(ParseManifestTest, PluginsAreRequiredUnlessMarkedOptional) {
  constexpr char kText[] = R"(
    plugins { name: "a" }
    plugins { name: "b" optional: false }
    plugins { name: "c" optional: true }
  )";
  DeploymentManifest m = parse_manifest(kText, "<string>");
  ASSERT_EQ(m.plugins.size(), 3u);
  EXPECT_TRUE(m.plugins[0].required);
  EXPECT_TRUE(m.plugins[1].required);
  EXPECT_FALSE(m.plugins[2].required);
}

TEST(ParseManifestTest, EmptyManifestAndEmptySourceName) {
  DeploymentManifest m = parse_manifest("", "");
  EXPECT_EQ(m.source, "<string>");
  EXPECT_TRUE(m.search_dirs.empty());
  EXPECT_TRUE(m.plugins.empty());
}

TEST(ParseManifestTest, RelativeEntriesAreRebasedOntoTheManifestDirectory) {
  constexpr char kText[] = R"(
    search_dirs: "plugins"
    search_dirs: "/abs/dir"
    search_dirs: "$ORIGIN/../lib"
    search_dirs: "$ORIGIN"
    search_dirs: "$ORIGINAL"
    plugins { path: "vendor/libx.so" }
    plugins { path: "/abs/liby.so" }
    plugins { path: "$ORIGIN/libz.so" }
  )";
  DeploymentManifest m = parse_manifest(kText, "/etc/loom/deploy.textproto");
  EXPECT_EQ(m.source, "/etc/loom/deploy.textproto");
  EXPECT_THAT(m.search_dirs, ElementsAre("/etc/loom/plugins", "/abs/dir", "$ORIGIN/../lib",
                                         "$ORIGIN", "/etc/loom/$ORIGINAL"));
  ASSERT_EQ(m.plugins.size(), 3u);
  EXPECT_EQ(m.plugins[0].path, "/etc/loom/vendor/libx.so");
  EXPECT_EQ(m.plugins[1].path, "/abs/liby.so");
  EXPECT_EQ(m.plugins[2].path, "$ORIGIN/libz.so");
}

TEST(ParseManifestTest, StringSourcesKeepRelativeEntries) {
  DeploymentManifest m =
      parse_manifest(R"(search_dirs: "plugins" plugins { path: "libx.so" })", "<string>");
  EXPECT_THAT(m.search_dirs, ElementsAre("plugins"));
  EXPECT_EQ(m.plugins[0].path, "libx.so");

  // A bare file name has no directory part: entries stay relative to the working directory.
  m = parse_manifest(R"(search_dirs: "plugins")", "deploy.textproto");
  EXPECT_THAT(m.search_dirs, ElementsAre("plugins"));
}

TEST(DefaultManifestTest, SearchesNextToTheExecutableAndRequiresCpuAndAutograd) {
  const DeploymentManifest& m = default_manifest();
  EXPECT_EQ(m.source, "<embedded default>");
  EXPECT_THAT(m.search_dirs, ElementsAre("$ORIGIN/../lib/loom/plugins", "$LIBDIR/loom/plugins"));
  ASSERT_EQ(m.plugins.size(), 7u);
  EXPECT_EQ(m.plugins[0].name, "cpu");
  EXPECT_EQ(m.plugins[1].name, "autograd");
  // optional: an install without them still runs
  EXPECT_EQ(m.plugins[2].name, "profiler");
  EXPECT_EQ(m.plugins[3].name, "compiler");
  EXPECT_EQ(m.plugins[4].name, "distributed");
  EXPECT_EQ(m.plugins[5].name, "quantization");
  EXPECT_EQ(m.plugins[6].name, "autocast");
  for (const auto& p : m.plugins) {
    EXPECT_EQ(p.path, "");
    EXPECT_EQ(p.required, p.name == "cpu" || p.name == "autograd");
    EXPECT_TRUE(p.options.empty());
  }
  EXPECT_EQ(&default_manifest(), &m);
}

// --- Syntax errors: positions are 1-based line and byte column of the bad token -----------

TEST(ManifestSyntaxErrorTest, UnknownFieldReportsTheFieldNamePosition) {
  // "bogus" starts on line 3, column 5.
  EXPECT_EQ(ParseError("search_dirs: \"a\"\n"
                       "plugins {\n"
                       "    bogus: 1\n"
                       "}\n"),
            "[manifest] deploy.textproto:3:5: Message type \"loom.manifest.PluginSpec\" has no "
            "field named \"bogus\".");
}

TEST(ManifestSyntaxErrorTest, UnknownFieldAtStartOfInputAndBeforeComments) {
  EXPECT_THAT(ParseError("bogus: 1"), StartsWith("[manifest] deploy.textproto:1:1: "));
  EXPECT_THAT(ParseError("bogus"), StartsWith("[manifest] deploy.textproto:1:1: "));
  EXPECT_THAT(ParseError("# header\n"
                         "  bogus # comment\n"
                         "  : 1\n"),
              StartsWith("[manifest] deploy.textproto:2:3: "));
  // Unknown nested message field.
  EXPECT_THAT(ParseError("plugins { name: \"a\" }\n"
                         "plugins { nested { x: 1 } }\n"),
              StartsWith("[manifest] deploy.textproto:2:11: Message type "
                         "\"loom.manifest.PluginSpec\" has no field named \"nested\"."));
}

TEST(ManifestSyntaxErrorTest, UnknownFieldInsideOptionsEntry) {
  EXPECT_THAT(ParseError("plugins {\n"
                         "  options { key: \"a\" colour: \"b\" }\n"
                         "}\n"),
              StartsWith("[manifest] deploy.textproto:2:22: Message type "
                         "\"loom.manifest.PluginSpec.OptionsEntry\" has no field named "
                         "\"colour\"."));
}

TEST(ManifestSyntaxErrorTest, TabsCountAsOneColumn) {
  EXPECT_THAT(ParseError("plugins {\n"
                         "\tbogus: 1\n"
                         "}\n"),
              StartsWith("[manifest] deploy.textproto:2:2: "));
  EXPECT_THAT(ParseError("plugins {\n"
                         "\t\toptional: \"yes\"\n"
                         "}\n"),
              StartsWith("[manifest] deploy.textproto:2:13: "));
}

TEST(ManifestSyntaxErrorTest, MissingClosingBraceReportsEndOfInput) {
  // The input ends right after the newline on line 2: the end is line 3, column 1.
  EXPECT_EQ(ParseError("plugins {\n"
                       "  name: \"cpu\"\n"),
            "[manifest] deploy.textproto:3:1: Expected identifier, got: end of input");
  // Without a trailing newline the end is just past the last character.
  EXPECT_THAT(ParseError("plugins {\n"
                         "  name: \"cpu\""),
              StartsWith("[manifest] deploy.textproto:2:14: Expected identifier"));
}

TEST(ManifestSyntaxErrorTest, StrayClosingBrace) {
  EXPECT_THAT(ParseError("plugins { name: \"cpu\" }\n"
                         "}\n"),
              StartsWith("[manifest] deploy.textproto:2:1: Expected identifier, got: }"));
}

TEST(ManifestSyntaxErrorTest, StringWhereBoolExpected) {
  // The string literal starts on line 3, column 13.
  EXPECT_EQ(ParseError("plugins {\n"
                       "  name: \"cpu\"\n"
                       "  optional: \"yes\"\n"
                       "}\n"),
            "[manifest] deploy.textproto:3:13: Expected identifier, got: \"yes\"");
}

TEST(ManifestSyntaxErrorTest, InvalidBoolLiteralReportsTheLiteral) {
  EXPECT_EQ(ParseError("plugins { optional: maybe }"),
            "[manifest] deploy.textproto:1:21: Invalid value for boolean field \"optional\". "
            "Value: \"maybe\".");
  EXPECT_THAT(ParseError("plugins { optional: 2 }"),
              StartsWith("[manifest] deploy.textproto:1:21: Integer out of range"));
}

TEST(ManifestSyntaxErrorTest, NumberWhereStringExpected) {
  EXPECT_EQ(ParseError("search_dirs: \"a\"\nsearch_dirs: 5\n"),
            "[manifest] deploy.textproto:2:14: Expected string, got: 5");
}

TEST(ManifestSyntaxErrorTest, FieldGivenTwiceReportsTheSecondOccurrence) {
  EXPECT_THAT(ParseError("plugins {\n"
                         "  name: \"a\"\n"
                         "  name: \"b\"\n"
                         "}\n"),
              StartsWith("[manifest] deploy.textproto:3:3: Non-repeated field \"name\" is "
                         "specified multiple times."));
}

TEST(ManifestSyntaxErrorTest, UnknownExtensionReportsTheOpeningBracket) {
  EXPECT_THAT(ParseError("search_dirs: \"a\"\n  [foo.bar]: 1\n"),
              StartsWith("[manifest] deploy.textproto:2:3: Extension \"foo.bar\""));
}

TEST(ManifestSyntaxErrorTest, MissingColonAndBadEscape) {
  EXPECT_THAT(ParseError("plugins { name \"x\" }"),
              StartsWith("[manifest] deploy.textproto:1:16: Expected \":\""));
  // The tokenizer points at the bad escape character itself.
  EXPECT_THAT(ParseError("plugins { name: \"\\q\" }"),
              StartsWith("[manifest] deploy.textproto:1:19: Invalid escape sequence"));
}

TEST(ManifestSyntaxErrorTest, NamesTheSource) {
  EXPECT_THAT(ParseError("bogus: 1", "<string>"), StartsWith("[manifest] <string>:1:1: "));
  EXPECT_THAT(ParseError("bogus: 1", "/srv/app/manifest.textproto"),
              StartsWith("[manifest] /srv/app/manifest.textproto:1:1: "));
}

// --- Semantic errors -------------------------------------------------------------------

TEST(ManifestSemanticErrorTest, PluginWithNeitherNameNorPath) {
  EXPECT_EQ(ParseError("plugins { name: \"cpu\" }\nplugins { optional: true }\n"),
            "[manifest] deploy.textproto: plugins[1] has neither a name nor a path; set exactly "
            "one of them");
}

TEST(ManifestSemanticErrorTest, PluginWithBothNameAndPath) {
  EXPECT_EQ(ParseError("plugins { name: \"cpu\" path: \"/x/libcpu.so\" }"),
            "[manifest] deploy.textproto: plugins[0] has both name 'cpu' and path "
            "'/x/libcpu.so'; set exactly one of them");
}

TEST(ManifestSemanticErrorTest, InvalidPluginNames) {
  for (const char* name : {"CPU", "my-plugin", "a.b", "lib/x", "caf\xc3\xa9", " cpu"}) {
    std::string message =
        ParseError(std::string("plugins { name: \"ok\" }\nplugins { name: \"") + name + "\" }");
    EXPECT_EQ(message,
              std::string("[manifest] deploy.textproto: plugins[1]: invalid plugin name '") + name +
                  "'; names may only contain a-z, 0-9 and '_'");
  }
  // All allowed characters.
  EXPECT_EQ(parse_manifest("plugins { name: \"abc_xyz_0189\" }", "<string>").plugins[0].name,
            "abc_xyz_0189");
}

TEST(ManifestSemanticErrorTest, DuplicatePluginName) {
  EXPECT_EQ(ParseError("plugins { name: \"cpu\" }\n"
                       "plugins { path: \"/x/libother.so\" }\n"
                       "plugins { name: \"cpu\" optional: true }\n"),
            "[manifest] deploy.textproto: plugins[2]: plugin name 'cpu' is already used by "
            "plugins[0]");
}

TEST(ManifestSemanticErrorTest, EmptySearchDir) {
  EXPECT_EQ(ParseError("search_dirs: \"/a\" search_dirs: \"\""),
            "[manifest] deploy.textproto: search_dirs[1] is empty");
}

// --- load_manifest_file ----------------------------------------------------------------

class LoadManifestFileTest : public TempDirTest {};

TEST_F(LoadManifestFileTest, MissingFile) {
  std::string path = (root_ / "missing.textproto").string();
  EXPECT_EQ(ErrorFrom([&] { load_manifest_file(path); }, "manifest"),
            "[manifest] cannot read manifest '" + path + "': No such file or directory");
}

TEST_F(LoadManifestFileTest, DirectoryIsNotAManifest) {
  std::string path = MakeDir("a_directory");
  EXPECT_EQ(ErrorFrom([&] { load_manifest_file(path); }, "manifest"),
            "[manifest] cannot read manifest '" + path + "': Is a directory");
}

TEST_F(LoadManifestFileTest, LoadsAndRebasesRelativeEntries) {
  std::string path = MakeFile("conf/deploy.textproto", R"(
    search_dirs: "plugins"
    plugins { name: "cpu" }
    plugins {
      path: "vendor/libaccel.so"
      optional: true
      options { key: "k" value: "v" }
    }
  )");
  DeploymentManifest m = load_manifest_file(path);
  EXPECT_EQ(m.source, path);
  EXPECT_THAT(m.search_dirs, ElementsAre((root_ / "conf" / "plugins").string()));
  ASSERT_EQ(m.plugins.size(), 2u);
  EXPECT_EQ(m.plugins[0].name, "cpu");
  EXPECT_EQ(m.plugins[1].path, (root_ / "conf" / "vendor" / "libaccel.so").string());
  EXPECT_FALSE(m.plugins[1].required);
  EXPECT_THAT(m.plugins[1].options, ElementsAre(std::pair<std::string, std::string>("k", "v")));
}

TEST_F(LoadManifestFileTest, ErrorsNameTheFile) {
  std::string path = MakeFile("bad.textproto", "plugins { name: \"cpu\" }\n  unknown_field: 3\n");
  EXPECT_THAT(ErrorFrom([&] { load_manifest_file(path); }, "manifest"),
              StartsWith("[manifest] " + path + ":2:3: Message type"));
  path = MakeFile("dup.textproto", "plugins { name: \"x\" }\nplugins { name: \"x\" }\n");
  EXPECT_EQ(ErrorFrom([&] { load_manifest_file(path); }, "manifest"),
            "[manifest] " + path + ": plugins[1]: plugin name 'x' is already used by plugins[0]");
}

// --- plugin_search_dirs ----------------------------------------------------------------

TEST(PluginSearchDirsTest, ManifestDirsOnlyWithoutEnvironment) {
  ScopedEnv env("LOOM_PLUGIN_PATH", std::nullopt);
  DeploymentManifest m;
  m.search_dirs = {"/b", "/a", "relative"};
  EXPECT_THAT(plugin_search_dirs(m), ElementsAre("/b", "/a", "relative"));
}

TEST(PluginSearchDirsTest, EnvironmentEntriesComeFirstAndEmptyOnesAreIgnored) {
  ScopedEnv env("LOOM_PLUGIN_PATH", "::/env/one::/env/two:");
  DeploymentManifest m;
  m.search_dirs = {"/manifest/one", "/manifest/two"};
  EXPECT_THAT(plugin_search_dirs(m),
              ElementsAre("/env/one", "/env/two", "/manifest/one", "/manifest/two"));
}

TEST(PluginSearchDirsTest, EmptyEnvironmentVariable) {
  ScopedEnv env("LOOM_PLUGIN_PATH", "");
  DeploymentManifest m;
  m.search_dirs = {"/m"};
  EXPECT_THAT(plugin_search_dirs(m), ElementsAre("/m"));
}

TEST(PluginSearchDirsTest, ExpandsOriginAtTheStartOfEntries) {
  const std::string exe_dir = ExecutableDir().string();
  ScopedEnv env("LOOM_PLUGIN_PATH", "$ORIGIN/env:/x/$ORIGIN");
  DeploymentManifest m;
  m.search_dirs = {"$ORIGIN/../lib/loom/plugins", "$ORIGIN", "$ORIGINAL/dir", "/y/$ORIGIN/z"};
  EXPECT_THAT(plugin_search_dirs(m),
              ElementsAre(exe_dir + "/env", "/x/$ORIGIN", exe_dir + "/../lib/loom/plugins", exe_dir,
                          "$ORIGINAL/dir", "/y/$ORIGIN/z"));
}

TEST(PluginSearchDirsTest, DefaultManifest) {
  ScopedEnv env("LOOM_PLUGIN_PATH", std::nullopt);
  // $LIBDIR: the directory of libloom_dispatcher.so, build/lib beside this test's build/bin
  const std::string lib_dir = std::filesystem::canonical(ExecutableDir() / "../lib").string();
  EXPECT_THAT(
      plugin_search_dirs(default_manifest()),
      ElementsAre(ExecutableDir().string() + "/../lib/loom/plugins", lib_dir + "/loom/plugins"));
  // A manifest may use the token too; it is never rebased onto the manifest's directory.
  DeploymentManifest m = parse_manifest("search_dirs: \"$LIBDIR/vendor\"", "/etc/app/x.textproto");
  EXPECT_THAT(plugin_search_dirs(m), ElementsAre(lib_dir + "/vendor"));
}

// --- resolve_plugin_file ---------------------------------------------------------------

class ResolvePluginFileTest : public TempDirTest {};

PluginRequest Named(const std::string& name) {
  PluginRequest r;
  r.name = name;
  return r;
}

PluginRequest AtPath(const std::string& path) {
  PluginRequest r;
  r.path = path;
  return r;
}

TEST_F(ResolvePluginFileTest, FirstDirectoryContainingTheLibraryWins) {
  std::string a = MakeDir("a");
  std::string b = MakeDir("b");
  std::string c = MakeDir("c");
  MakeFile("b/libloom_plugin_foo.so");
  MakeFile("c/libloom_plugin_foo.so");
  EXPECT_EQ(resolve_plugin_file(Named("foo"), {a, b, c}), b + "/libloom_plugin_foo.so");
  EXPECT_EQ(resolve_plugin_file(Named("foo"), {c, b}), c + "/libloom_plugin_foo.so");
  // A trailing slash does not double up; missing directories are skipped.
  EXPECT_EQ(resolve_plugin_file(Named("foo"), {(root_ / "nope").string(), b + "/"}),
            b + "/libloom_plugin_foo.so");
}

TEST_F(ResolvePluginFileTest, DirectoriesNamedLikeThePluginAreSkipped) {
  std::string a = MakeDir("a");
  std::string b = MakeDir("b");
  MakeDir("a/libloom_plugin_foo.so");
  MakeFile("b/libloom_plugin_foo.so");
  EXPECT_EQ(resolve_plugin_file(Named("foo"), {a, b}), b + "/libloom_plugin_foo.so");
}

TEST_F(ResolvePluginFileTest, NotFoundListsTheSearchedDirectories) {
  std::string a = MakeDir("a");
  std::string b = (root_ / "b_missing").string();
  MakeFile("a/libloom_plugin_other.so");
  EXPECT_EQ(ErrorFrom(
                [&] {
                  resolve_plugin_file(Named("foo"), {a, b});
                },
                "plugin-host"),
            "[plugin-host] plugin 'foo': no file libloom_plugin_foo.so in the search path "
            "(searched: " +
                a + ", " + b + "; set LOOM_PLUGIN_PATH or the manifest's search_dirs)");
  EXPECT_EQ(ErrorFrom([&] { resolve_plugin_file(Named("foo"), {}); }, "plugin-host"),
            "[plugin-host] plugin 'foo': no file libloom_plugin_foo.so in the search path "
            "(searched: no directories; set LOOM_PLUGIN_PATH or the manifest's search_dirs)");
}

TEST_F(ResolvePluginFileTest, ExplicitPathIsUsedAsIs) {
  std::string file = MakeFile("vendor/libaccel.so");
  std::string other = MakeDir("other");
  MakeFile("other/libloom_plugin_accel.so");
  EXPECT_EQ(resolve_plugin_file(AtPath(file), {other}), file);
}

TEST_F(ResolvePluginFileTest, ExplicitPathMustExist) {
  std::string missing = (root_ / "vendor" / "libmissing.so").string();
  EXPECT_EQ(ErrorFrom([&] { resolve_plugin_file(AtPath(missing), {}); }, "plugin-host"),
            "[plugin-host] plugin '" + missing + "': file '" + missing + "' does not exist");
}

TEST_F(ResolvePluginFileTest, ExplicitPathExpandsOrigin) {
  // The test binary itself stands in for a library next to the executable.
  const fs::path exe = fs::read_symlink("/proc/self/exe");
  const std::string path = "$ORIGIN/" + exe.filename().string();
  EXPECT_EQ(resolve_plugin_file(AtPath(path), {}), exe.string());
  EXPECT_THAT(
      ErrorFrom([&] { resolve_plugin_file(AtPath("$ORIGIN/libnope_xyz.so"), {}); }, "plugin-host"),
      HasSubstr("file '" + exe.parent_path().string() + "/libnope_xyz.so' does not exist"));
}

TEST_F(ResolvePluginFileTest, ManifestEnvironmentAndResolutionTogether) {
  std::string manifest_path = MakeFile("deploy/manifest.textproto", R"(
    search_dirs: "plugins"
    plugins { name: "cpu" }
    plugins { name: "gpu" optional: true }
  )");
  MakeFile("deploy/plugins/libloom_plugin_cpu.so");
  MakeFile("deploy/plugins/libloom_plugin_gpu.so");
  std::string override_dir = MakeDir("override");
  MakeFile("override/libloom_plugin_gpu.so");

  ScopedEnv env("LOOM_PLUGIN_PATH", override_dir);
  DeploymentManifest m = load_manifest_file(manifest_path);
  std::vector<std::string> dirs = plugin_search_dirs(m);
  EXPECT_EQ(resolve_plugin_file(m.plugins[0], dirs),
            (root_ / "deploy" / "plugins" / "libloom_plugin_cpu.so").string());
  EXPECT_EQ(resolve_plugin_file(m.plugins[1], dirs), override_dir + "/libloom_plugin_gpu.so");
}

}  // namespace
}  // namespace loom::dispatch
