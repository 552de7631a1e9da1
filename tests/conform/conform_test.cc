// `loom conform` run as a process: the faulty_npu test backend (tests/plugins/
// test_conform_plugin.cc) gets each status it deserves, expectations and baselines
// work, and bad options and files are refused naming what was wrong.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "../command_test_util.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using RunResult = loom::test::CommandResult;
using loom::test::run_command;

RunResult run(const std::string& args) {
  return run_command(std::string(LOOM_CLI) + " " + args);
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

class ConformTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("loom_conform_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write(dir_ / "faulty.textproto", std::string("plugins { path: \"") + LOOM_PLUGIN_DIR +
                                         "/libloom_plugin_cpu.so\" }\n" + "plugins { path: \"" +
                                         LOOM_TEST_PLUGIN_DIR +
                                         "/libloom_plugin_test_conform.so\" }\n");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string faulty(const std::string& ops, const std::string& more = "") {
    return "conform --manifest " + (dir_ / "faulty.textproto").string() +
           " --backend faulty_npu --timeout 3 --jobs 2 --ops '" + ops + "' " + more;
  }

  fs::path dir_;
};

// The statuses of the results of (op, dtype, check), each once.
std::multimap<std::string, std::string> statuses(const json& report) {
  std::multimap<std::string, std::string> out;
  for (const json& r : report["results"]) {
    const std::string key = r["op"].get<std::string>() + " " + r["dtype"].get<std::string>() + " " +
                            r["check"].get<std::string>();
    out.emplace(key, r["status"].get<std::string>());
  }
  return out;
}

bool has(const std::multimap<std::string, std::string>& s, const std::string& key,
         const std::string& status) {
  auto [begin, end] = s.equal_range(key);
  for (auto it = begin; it != end; ++it) {
    if (it->second == status) return true;
  }
  return false;
}

TEST_F(ConformTest, FaultyBackendGetsEachStatus) {
  const RunResult r = run(faulty("loom::(neg|abs|exp|relu|sqrt)", "--report " + dir_.string()));
  EXPECT_EQ(r.status, 1) << r.output;
  const json report = read_json(dir_ / "report.json");
  EXPECT_EQ(report["backend"], "faulty_npu");
  const auto s = statuses(report);
  // A wrong kernel: FAIL, with the worst element and the error.
  EXPECT_TRUE(has(s, "loom::neg float32 values", "FAIL")) << r.output;
  for (const json& x : report["results"]) {
    if (x["op"] == "loom::neg" && x["status"] == "FAIL" && x["check"] == "values") {
      EXPECT_GT(x["maxAbsError"].get<double>(), 0);
      EXPECT_NE(x["worstElement"].get<std::string>().find("expected"), std::string::npos);
    }
  }
  // A crashing kernel: CRASH naming the signal (or, under AddressSanitizer, whose SEGV
  // handler exits instead, the exit status) and the sample; the run went on.
  bool crash_named = false;
  for (const json& x : report["results"]) {
    if (x["op"] == "loom::abs" && x["status"] == "CRASH") {
      const std::string message = x["message"];
      crash_named = (message.find("signal 11") != std::string::npos ||
                     message.find("exited with status") != std::string::npos) &&
                    message.find("during sample") != std::string::npos;
    }
  }
  EXPECT_TRUE(crash_named) << r.output;
  // A hanging kernel: TIMEOUT.
  EXPECT_TRUE(has(s, "loom::exp float32 values", "TIMEOUT")) << r.output;
  // A kernel that claims float64 but computes float32 only: float64 fails, float32 passes.
  EXPECT_TRUE(has(s, "loom::relu float64 values", "FAIL")) << r.output;
  EXPECT_TRUE(has(s, "loom::relu float32 values", "PASS"));
  EXPECT_FALSE(has(s, "loom::relu float32 values", "FAIL"));
  // An unclaimed dtype is refused with the dispatcher's error: skipped, not failed.
  EXPECT_TRUE(has(s, "loom::sqrt float64 claims", "SKIPPED")) << r.output;
  // A right kernel passes every check it gets.
  EXPECT_TRUE(has(s, "loom::sqrt float32 values", "PASS"));
  EXPECT_FALSE(has(s, "loom::sqrt float32 values", "FAIL"));
  // The other reports.
  std::ifstream md(dir_ / "coverage.md"), html(dir_ / "report.html");
  std::string md_text((std::istreambuf_iterator<char>(md)), {}),
      html_text((std::istreambuf_iterator<char>(html)), {});
  EXPECT_NE(md_text.find("| `loom::neg` | kernel |"), std::string::npos) << md_text;
  EXPECT_NE(html_text.find("<table id=\"results\">"), std::string::npos);
  EXPECT_NE(html_text.find("loom::abs"), std::string::npos);
}

// The HTML report's filter run by a real browser: Debian's chromium, headless, opens the
// page with #filter= and dumps the DOM after the script ran.
TEST_F(ConformTest, HtmlReportFiltersInABrowser) {
  if (!fs::exists("/usr/bin/chromium"))
    GTEST_SKIP() << "no /usr/bin/chromium (apt install chromium)";
  const RunResult r = run(faulty("loom::(neg|sqrt)", "--dtypes float32 --report " + dir_.string()));
  ASSERT_TRUE(fs::exists(dir_ / "report.html")) << r.output;
  const RunResult dom =
      run_command("chromium --headless --no-sandbox --disable-gpu --user-data-dir=" +
                  (dir_ / "chromium").string() + " --dump-dom 'file://" +
                  (dir_ / "report.html").string() + "#filter=loom::neg%20values'");
  int shown = 0, hidden = 0;
  size_t at = 0;
  while ((at = dom.output.find("<tr data-status=", at)) != std::string::npos) {
    const size_t end = dom.output.find("</tr>", at);
    const std::string row = dom.output.substr(at, end - at);
    const bool is_hidden = row.find("display: none") != std::string::npos;
    const bool matches =
        row.find("loom::neg") != std::string::npos && row.find(">values<") != std::string::npos;
    EXPECT_EQ(is_hidden, !matches) << row;
    (is_hidden ? hidden : shown)++;
    at = end;
  }
  EXPECT_GT(shown, 0) << dom.output.substr(0, 2000);
  EXPECT_GT(hidden, 0);
}

TEST_F(ConformTest, ExpectedFailuresAndUnexpectedPasses) {
  write(dir_ / "xfail.json", R"({"backend": "faulty_npu", "xfail": [
    {"op": "loom::neg", "check": "values", "reason": "drops the sign"},
    {"op": "loom::neg", "check": "variants", "reason": "agrees with its own functional call"},
    {"op": "loom::sqrt", "dtype": "float32", "reason": "thought broken"}]})");
  const RunResult r = run(faulty("loom::(neg|sqrt)", "--report " + dir_.string() + " --xfail " +
                                                         (dir_ / "xfail.json").string()));
  EXPECT_EQ(r.status, 1) << r.output;  // the unexpected pass fails the run
  const auto s = statuses(read_json(dir_ / "report.json"));
  EXPECT_TRUE(has(s, "loom::neg float32 values", "XFAIL"));
  EXPECT_FALSE(has(s, "loom::neg float32 values", "FAIL"));
  EXPECT_TRUE(has(s, "loom::sqrt float32 values", "XPASS"));
  EXPECT_TRUE(has(s, "loom::neg float32 variants", "XPASS"));

  // The variants agree with the (wrong) functional call, so only values is expected to fail.
  write(dir_ / "xfail.json", R"({"xfail": [
    {"op": "loom::neg", "check": "values", "reason": "drops the sign"}]})");
  const RunResult clean = run(faulty(
      "loom::(neg|sqrt)", "--dtypes float32,float64 --xfail " + (dir_ / "xfail.json").string()));
  EXPECT_EQ(clean.status, 0) << clean.output;
}

TEST_F(ConformTest, BaselineListsRegressions) {
  const RunResult cpu = run("conform --manifest " + (dir_ / "faulty.textproto").string() +
                            " --backend cpu --ops 'loom::(neg|sqrt)' --report " + dir_.string());
  ASSERT_EQ(cpu.status, 0) << cpu.output;
  fs::rename(dir_ / "report.json", dir_ / "baseline.json");
  const RunResult r =
      run(faulty("loom::(neg|sqrt)",
                 "--baseline " + (dir_ / "baseline.json").string() + " --report " + dir_.string()));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("regression: loom::neg float32 sample 0 values: PASS -> FAIL"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("regression: loom::sqrt float32"), std::string::npos) << r.output;
  // Against its own report nothing regressed.
  const RunResult same =
      run(faulty("loom::(neg|sqrt)", "--baseline " + (dir_ / "report.json").string()));
  EXPECT_EQ(same.status, 0) << same.output;
}

TEST_F(ConformTest, BadOptionsAndFilesAreRefused) {
  const std::string manifest = " --manifest " + (dir_ / "faulty.textproto").string();
  struct Case {
    std::string args, message;
  };
  write(dir_ / "syntax.json", "{\"xfail\": [");
  write(dir_ / "unknown_op.json", R"({"xfail": [{"op": "loom::nope", "reason": "r"}]})");
  write(dir_ / "no_reason.json", R"({"xfail": [{"op": "loom::neg"}]})");
  write(dir_ / "other_backend.json", R"({"backend": "cpu", "xfail": []})");
  write(dir_ / "bad_check.json",
        R"({"xfail": [{"op": "loom::neg", "check": "speed", "reason": "r"}]})");
  write(dir_ / "not_a_report.json", R"({"results": 3})");
  const std::vector<Case> cases = {
      {"conform" + manifest, "[conform] expected --backend"},
      {"conform" + manifest + " --backend nope",
       "[conform] --backend: no device type 'nope' in the loaded plugins (expected cpu, "
       "faulty_npu)"},
      {"conform" + manifest + " --backend meta", "[conform] --backend: meta holds no values"},
      {"conform" + manifest + " --backend quantized",
       "[conform] --backend quantized: no loaded plugin has kernels at the Quantized key"},
      {"conform" + manifest + " --backend cpu --ops '('",
       "[conform] --ops: expected a regular expression"},
      {"conform" + manifest + " --backend cpu --ops 'loom::nothing'", "matches no op"},
      {"conform" + manifest + " --backend cpu --jobs 0", "[conform] --jobs: expected at least 1"},
      {"conform" + manifest + " --backend cpu --dtypes float99", "float99"},
      {"conform" + manifest + " --backend faulty_npu --xfail " + (dir_ / "syntax.json").string(),
       "expected JSON"},
      {"conform" + manifest + " --backend faulty_npu --xfail " +
           (dir_ / "unknown_op.json").string(),
       "'loom::nope' is not an op of the library"},
      {"conform" + manifest + " --backend faulty_npu --xfail " + (dir_ / "no_reason.json").string(),
       "expected a non-empty 'reason'"},
      {"conform" + manifest + " --backend faulty_npu --xfail " +
           (dir_ / "other_backend.json").string(),
       "written for backend 'cpu'"},
      {"conform" + manifest + " --backend faulty_npu --xfail " + (dir_ / "bad_check.json").string(),
       "unknown check 'speed'"},
      {"conform" + manifest + " --backend faulty_npu --baseline " +
           (dir_ / "not_a_report.json").string(),
       "expected a report of loom conform"},
      {"conform" + manifest + " --backend faulty_npu --xfail " + (dir_ / "missing.json").string(),
       "cannot read the expectation file"},
  };
  for (const Case& c : cases) {
    const RunResult r = run(c.args);
    EXPECT_NE(r.status, 0) << c.args;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.find("terminate"), std::string::npos) << r.output;
  }
}

}  // namespace
