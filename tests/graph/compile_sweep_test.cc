// Every op's samples (Note [Op samples]) through loom::compile: captured, fused where the
// compiler plugin can generate the op (each fusible op becomes a kernel of its own,
// min_fused_ops = 1), run again compiled, and compared with the eager result within the
// conformance tolerances (Note [Conformance tolerances]). Graph breaks are counted and
// reported with the number of ops that ran through generated kernels.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "comparison.h"
#include "loom/compile.h"
#include "loom/compiler_api.h"
#include "loom/core/read_section.h"
#include "loom/dispatcher/extensions.h"
#include "loom/loom.h"
#include "op_calls.h"
#include "sample_inputs.h"

namespace loom {
namespace {

using conform::Built;
using conform::Layout;

// `b` with its tensors (and tensor-list elements) replaced by `inputs`, in order.
Built substitute(const Built& b, const std::vector<Tensor>& inputs) {
  Built out = b;
  size_t next = 0;
  auto swap_in = [&](Value& v) {
    if (v.is_tensor()) {
      v = Value(inputs.at(next++));
    } else if (v.is_tensor_list()) {
      std::vector<Tensor> list = v.to_tensor_list();
      for (Tensor& t : list) t = inputs.at(next++);
      v = Value(std::move(list));
    }
  };
  for (Value& v : out.args) swap_in(v);
  for (auto& [name, v] : out.kwargs) swap_in(v);
  return out;
}

std::vector<Tensor> tensors_of(const Built& b) {
  std::vector<Tensor> out;
  auto add = [&](const Value& v) {
    if (v.is_tensor()) out.push_back(v.to_tensor());
    if (v.is_tensor_list()) {
      for (const Tensor& t : v.to_tensor_list()) out.push_back(t);
    }
  };
  for (const Value& v : b.args) add(v);
  for (const auto& [name, v] : b.kwargs) add(v);
  return out;
}

bool returns_tensors(const std::string& op) {
  for (const std::string& schema : schemas(op)) {
    std::string returns = schema.substr(schema.rfind("->") + 2);
    return returns.find("Tensor") != std::string::npos;
  }
  return false;
}

// Each kernel program the sweep made once per set of ops, as `target` (cuda or hip),
// through NVRTC or hiprtc: the GPU generator's code for every fusible op compiles (it runs
// on a GPU in the GPU plugins' tests). Returns the number built; fails naming each
// program the runtime compiler refused.
int build_for_gpu(const std::filesystem::path& programs, const std::string& target) {
  const auto* api =
      static_cast<const LoomCompilerApi*>(dispatch::find_extension(LOOM_COMPILER_EXTENSION_NAME));
  std::set<std::string> op_sets;
  int built = 0;
  for (const auto& entry : std::filesystem::directory_iterator(programs)) {
    if (entry.path().extension() != ".program") continue;
    std::ifstream in(entry.path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string ops;
    for (size_t at = text.find(" = "); at != std::string::npos; at = text.find(" = ", at + 1))
      ops += text.substr(at + 3, text.find(' ', at + 3) - at - 3) + ",";
    if (!op_sets.insert(ops).second) continue;
    const std::string program =
        "loom-kernel 1\ntarget " + target + "\n" + text.substr(text.find('\n') + 1);
    LoomKernelBuildArgs args{};
    args.struct_size = sizeof(args);
    args.program = program.c_str();
    args.cache_dir = "";
    ReadSection section;
    try {
      dispatch::check_table_error(api->build_kernel(&args), "compiler");
      ++built;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::Unimplemented) ADD_FAILURE() << program << e.what();
    }
  }
  return built;
}

TEST(CompileSweep, EverySampleMatchesEager) {
  setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 1);
  Runtime::load_default();
  const std::filesystem::path programs =
      std::filesystem::temp_directory_path() / ("loom-compile-sweep-" + std::to_string(::getpid()));
  std::filesystem::remove_all(programs);
  setenv("LOOM_COMPILE_DEBUG", programs.c_str(), 1);
  CompileOptions options;
  options.min_fused_ops = 1;
  options.dynamic = false;
  int checked = 0, fused = 0, broken = 0;
  std::set<std::string> fused_ops;
  std::map<std::string, std::string> failures;  // op -> the first failure
  std::map<std::string, int> ordinals;
  const int stride =
      conform::sample_stride_from_environment();  // Note [A sweep over every k-th sample]
  for (const ops::OpSample& s : ops::all_samples()) {
    const int ordinal = ordinals[s.op]++;
    if (ordinal % stride != 0) continue;
    if (!s.expected_error.empty() || !s.deterministic || !returns_tensors(s.op)) continue;
    if (ops::has_quantized_tensors(s)) continue;  // Note [Quantized samples]
    if (failures.count(s.op)) continue;
    const Built built = conform::build(s, ordinal, Layout::Contiguous);
    std::vector<Tensor> inputs = tensors_of(built);
    const std::string op = s.op;
    auto fn = [&](const std::vector<Tensor>& in) {
      std::vector<Tensor> ins = in;
      for (Tensor& t : ins) t = t.clone();  // in-place ops write to copies, not the inputs
      return conform::tensors_of(conform::run(op, substitute(built, ins)));
    };
    std::vector<Tensor> expected;
    try {
      expected = fn(inputs);
    } catch (const Error&) {
      continue;  // the op sweep reports eager failures
    }
    auto compiled = compile(fn, options);
    std::vector<Tensor> actual;
    try {
      compiled(inputs);           // captures
      actual = compiled(inputs);  // runs the compiled graph
    } catch (const Error& e) {
      failures[s.op] = std::string("threw: ") + e.what();
      continue;
    }
    ++checked;
    compiler::Explanation e = compiled.explanation();
    broken += static_cast<int>(e.breaks.size());
    if (e.kernels > 0) {
      ++fused;
      fused_ops.insert(s.op);
    }
    conform::Comparison c = conform::compare_outputs(expected, expected, actual, s.tolerance);
    if (!c.agrees) failures[s.op] = conform::describe_sample(s) + ": " + c.message;
  }
  std::printf(
      "compile sweep: %d samples checked, %d through fused kernels (%zu ops), %d graph breaks\n",
      checked, fused, fused_ops.size(), broken);
  std::string report;
  for (const auto& [op, why] : failures) report += "\n  " + op + ": " + why;
  EXPECT_TRUE(failures.empty()) << failures.size()
                                << " ops differ from eager when compiled:" << report;
  EXPECT_GT(fused, 100 / stride);
  unsetenv("LOOM_COMPILE_DEBUG");
  for (const std::string target : {"cuda", "hip"}) {
    std::string why_not;
    try {
      ReadSection section;
      const auto* api = static_cast<const LoomCompilerApi*>(
          dispatch::find_extension(LOOM_COMPILER_EXTENSION_NAME));
      const std::string probe = "loom-kernel 1\ntarget " + target +
                                "\nin a0 float32 dense\nv0 float32 float32 = loom::neg a0\n"
                                "out v0\n";
      LoomKernelBuildArgs args{};
      args.struct_size = sizeof(args);
      args.program = probe.c_str();
      args.cache_dir = "";
      dispatch::check_table_error(api->build_kernel(&args), "compiler");
    } catch (const Error& e) {
      why_not = e.what();
    }
    if (why_not.empty()) {
      std::printf("compile sweep: %d kernel programs built for %s\n",
                  build_for_gpu(programs, target), target.c_str());
    } else {
      std::printf("compile sweep: no %s programs built (%s)\n", target.c_str(), why_not.c_str());
    }
  }
  std::filesystem::remove_all(programs);
}

}  // namespace
}  // namespace loom
